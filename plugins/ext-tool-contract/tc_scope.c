/*
 * tc_scope.c - scope grammar, tool-contract template validation and
 * call-time rendering (docs/protocol.md, Names and scopes, Extensions).
 *
 * A template is literal text with placeholders {name}, name matching
 * [A-Za-z_][A-Za-z0-9_]* and naming a top-level key of the tool's
 * inputSchema.properties.  Validation happens once at discovery; rendering
 * is a single left-to-right pass per call, so a substituted value is never
 * scanned for placeholders again.
 *
 * Messages never quote argument values: they are tool arguments.
 */
#define _GNU_SOURCE
#include "tc_int.h"
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* Longest rendered scope worth building: 256 code points of at most 4
 * bytes.  Anything longer is invalid whatever it holds. */
#define RENDER_CAP (TC_MAX_SCOPE_CP * 4)
/* Bytes of a template, key or name quoted in a message. */
#define SHOW_MAX 96
/* More decimal digits than any valid scope can hold. */
#define INT_TEXT_MAX (TC_MAX_SCOPE_CP + 8)

/* ------------------------------------------------------------------ */
/* Scope grammar                                                      */
/* ------------------------------------------------------------------ */

bool tc_valid_scope(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    uint32_t cp = 0, first = 0;
    size_t i = 0, ncp = 0;

    if (!s || len == 0)
        return false;
    while (i < len) {
        size_t k = aur__utf8_next(u + i, len - i, &cp);
        if (k == 0 || cp < 0x20)
            return false;
        i += k;
        if (ncp++ == 0)
            first = cp;
        if (ncp > TC_MAX_SCOPE_CP)
            return false;
    }
    return !aur__py_space(first) && !aur__py_space(cp);
}

/* A one-line, bounded rendering of server text for a message. */
static const char *show(const char *s, size_t len, char *buf, size_t size)
{
    size_t n = len < SHOW_MAX ? len : SHOW_MAX, o = 0;

    if (n < len) /* do not cut a UTF-8 sequence */
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    for (size_t i = 0; i < n && o + 4 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (n < len && o + 4 < size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

/* ------------------------------------------------------------------ */
/* Placeholders                                                       */
/* ------------------------------------------------------------------ */

static bool name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* If t[i] opens a well-formed placeholder, its name is t[i+1..*end) and
 * t[*end] is the closing brace. */
static bool placeholder_at(const char *t, size_t len, size_t i, size_t *end)
{
    size_t j = i + 1;
    if (t[i] != '{' || j >= len || !name_start(t[j]))
        return false;
    while (j < len && name_char(t[j]))
        j++;
    if (j >= len || t[j] != '}')
        return false;
    *end = j;
    return true;
}

/* Every brace belongs to a placeholder.  *n = how many placeholders. */
static bool syntax_ok(const char *t, size_t len, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        size_t end;
        if (t[i] == '}')
            return false;
        if (t[i] != '{')
            continue;
        if (!placeholder_at(t, len, i, &end))
            return false;
        (*n)++;
        i = end;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Discovery-time validation                                          */
/* ------------------------------------------------------------------ */

static int check_template(const char *id, const char *t, size_t len,
                          struct json_object *props, struct aur_error *err)
{
    char shown[SHOW_MAX + 8];
    size_t n;

    if (len == 0)
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "%.120s: MCP scope template must not be empty", id);
    if (!syntax_ok(t, len, &n))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "%.120s: MCP scope template syntax is invalid: %s",
                        id, show(t, len, shown, sizeof shown));
    for (size_t i = 0; i < len; i++) {
        size_t end;
        char *name;
        bool known;
        if (t[i] != '{' || !placeholder_at(t, len, i, &end))
            continue;
        name = strndup(t + i + 1, end - i - 1);
        if (!name)
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        known = props && json_object_object_get_ex(props, name, NULL);
        if (!known)
            aur_fail(err, AUR_E_CATALOG, 0,
                     "%.120s: MCP scope template references an unknown "
                     "top-level argument: %.100s",
                     id, name);
        free(name);
        if (!known)
            return AUR_E_CATALOG;
        i = end;
    }
    if (n == 0 && !tc_valid_scope(t, len))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "%.120s: invalid MCP scope: template \"%s\"", id,
                        show(t, len, shown, sizeof shown));
    return AUR_OK;
}

struct piece {
    const char *s;
    size_t len;
};

static int piece_cmp(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static bool has_duplicate(struct json_object *arr)
{
    size_t n = json_object_array_length(arr);
    struct piece *p;
    bool dup = false;

    if (n < 2)
        return false;
    p = calloc(n, sizeof *p);
    if (!p)
        return true; /* cannot tell; refusing is the safe side */
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        p[i].s = json_object_get_string(v);
        p[i].len = (size_t)json_object_get_string_len(v);
    }
    qsort(p, n, sizeof *p, piece_cmp);
    for (size_t i = 1; i < n && !dup; i++)
        dup = piece_cmp(&p[i - 1], &p[i]) == 0;
    free(p);
    return dup;
}

static bool nonempty_string_array(struct json_object *v)
{
    size_t n;
    if (!json_object_is_type(v, json_type_array))
        return false;
    n = json_object_array_length(v);
    for (size_t i = 0; i < n; i++)
        if (!json_object_is_type(json_object_array_get_idx(v, i),
                                 json_type_string))
            return false;
    return n > 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys other than observe/publish, sorted, as "[a, b]". */
static int unknown_keys(const char *id, struct json_object *meta,
                        struct aur_error *err)
{
    size_t n = 0, cap = (size_t)json_object_object_length(meta), o;
    const char **names;
    char list[200], shown[SHOW_MAX + 8];

    names = calloc(cap ? cap : 1, sizeof *names);
    if (!names)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    json_object_object_foreach(meta, key, val) {
        (void)val;
        if (strcmp(key, "observe") != 0 && strcmp(key, "publish") != 0 &&
            n < cap)
            names[n++] = key;
    }
    if (n == 0) {
        free(names);
        return AUR_OK;
    }
    qsort(names, n, sizeof *names, name_cmp);
    o = (size_t)snprintf(list, sizeof list, "[");
    for (size_t i = 0; i < n && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s",
                              i ? ", " : "",
                              show(names[i], strlen(names[i]), shown,
                                   sizeof shown));
    if (o < sizeof list)
        snprintf(list + o, sizeof list - o, "]");
    free(names);
    return aur_fail(err, AUR_E_CATALOG, 0,
                    "%.120s: MCP tool contract metadata has unknown fields: "
                    "%s",
                    id, list);
}

static int copy_dir(struct tc_dir *d, struct json_object *arr,
                    struct aur_error *err)
{
    size_t n = json_object_array_length(arr);
    d->text = calloc(n, sizeof *d->text);
    d->len = calloc(n, sizeof *d->len);
    if (!d->text || !d->len)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    for (; d->n < n; d->n++) {
        struct json_object *v = json_object_array_get_idx(arr, d->n);
        size_t len = (size_t)json_object_get_string_len(v);
        d->text[d->n] = malloc(len + 1);
        if (!d->text[d->n])
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        memcpy(d->text[d->n], json_object_get_string(v), len + 1);
        d->len[d->n] = len;
    }
    return AUR_OK;
}

static int check_contract(const char *id, struct json_object *tool_json,
                          struct json_object *meta, struct json_object **dirs,
                          struct aur_error *err)
{
    struct json_object *schema, *props = NULL;
    int rc;

    if (!json_object_is_type(meta, json_type_object))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "%.120s: MCP tool contract metadata must be an "
                        "object",
                        id);
    if ((rc = unknown_keys(id, meta, err)) != AUR_OK)
        return rc;
    for (size_t d = 0; d < 2; d++) {
        if (!json_object_object_get_ex(meta, tc_dir_names[d], &dirs[d]))
            continue;
        if (!nonempty_string_array(dirs[d]))
            return aur_fail(err, AUR_E_CATALOG, 0,
                            "%.120s: MCP tool contract %s must be a "
                            "non-empty array of strings",
                            id, tc_dir_names[d]);
        if (has_duplicate(dirs[d]))
            return aur_fail(err, AUR_E_CATALOG, 0,
                            "%.120s: MCP tool contract %s must not contain "
                            "duplicate templates",
                            id, tc_dir_names[d]);
    }
    if (json_object_object_get_ex(tool_json, "inputSchema", &schema) &&
        json_object_object_get_ex(schema, "properties", &props) &&
        !json_object_is_type(props, json_type_object))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "%.120s: MCP tool input schema properties must be "
                        "an object",
                        id);
    for (size_t d = 0; d < 2; d++) {
        size_t n = dirs[d] ? json_object_array_length(dirs[d]) : 0;
        for (size_t i = 0; i < n; i++) {
            struct json_object *v = json_object_array_get_idx(dirs[d], i);
            rc = check_template(id, json_object_get_string(v),
                                (size_t)json_object_get_string_len(v), props,
                                err);
            if (rc != AUR_OK)
                return rc;
        }
    }
    return AUR_OK;
}

int tc_validate_tool(void *st, void *session, const struct aur_tool_ref *tool,
                     struct json_object *tool_json, struct json_object *scopes,
                     struct aur_error *err)
{
    struct json_object *m, *meta = NULL, *dirs[2] = {NULL, NULL};
    struct tc_tool *t;
    int rc;

    (void)st;
    if (!session || !tool || !tool->raw_name)
        return AUR_OK;
    /* A _meta that is not an object holds no contract: defaults. */
    if (json_object_object_get_ex(tool_json, "_meta", &m) &&
        json_object_is_type(m, json_type_object))
        json_object_object_get_ex(m, TC_KEY, &meta);
    if (meta) {
        rc = check_contract(tool->id ? tool->id : tool->raw_name, tool_json,
                            meta, dirs, err);
        if (rc != AUR_OK)
            return rc;
    }
    t = calloc(1, sizeof *t);
    if (!t || !(t->raw = strdup(tool->raw_name))) {
        free(t);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    for (size_t d = 0; d < 2; d++) {
        if (dirs[d] && (rc = copy_dir(&t->dir[d], dirs[d], err)) != AUR_OK) {
            tc_tool_free(t);
            return rc;
        }
    }
    if ((rc = tc_session_put(session, t, err)) != AUR_OK)
        return rc;
    for (size_t d = 0; d < 2; d++) {
        struct json_object *copy = NULL;
        if (!dirs[d])
            continue;
        if (json_object_deep_copy(dirs[d], &copy, NULL) != 0 ||
            json_object_object_add(scopes, tc_dir_names[d], copy) != 0) {
            json_object_put(copy);
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        }
    }
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* Call-time rendering                                                */
/* ------------------------------------------------------------------ */

struct out {
    char buf[RENDER_CAP + 1];
    size_t len;
    bool overflow; /* longer than any valid scope */
};

static void put(struct out *o, const char *s, size_t len)
{
    if (o->overflow || len > RENDER_CAP - o->len) {
        o->overflow = true;
        return;
    }
    memcpy(o->buf + o->len, s, len);
    o->len += len;
}

static int substitute(const struct tc_state *st, struct json_object *args,
                      const char *name, struct out *o, struct aur_error *err)
{
    struct json_object *v;
    char num[INT_TEXT_MAX];
    int rc;

    if (!json_object_is_type(args, json_type_object) ||
        !json_object_object_get_ex(args, name, &v))
        return aur_fail(err, AUR_E_SCOPE, 0, "scope argument missing: %.100s",
                        name);
    switch (json_object_get_type(v)) {
    case json_type_string:
        if (json_object_get_string_len(v) == 0)
            return aur_fail(err, AUR_E_SCOPE, 0,
                            "scope argument must not be empty: %.100s", name);
        put(o, json_object_get_string(v),
            (size_t)json_object_get_string_len(v));
        return AUR_OK;
    case json_type_int:
    case json_type_double:
        /* A kept big integer is a double too; the host tells them apart. */
        rc = st->host->json_integer_text(v, num, sizeof num);
        if (rc == AUR_OK)
            put(o, num, strlen(num));
        else if (rc == AUR_E_INVAL)
            break;
        else
            o->overflow = true; /* an integer too long for any scope */
        return AUR_OK;
    default:
        break;
    }
    return aur_fail(err, AUR_E_SCOPE, 0,
                    "scope argument must be text or integer: %.100s", name);
}

static int render(const struct tc_state *st, const char *t, size_t len,
                  struct json_object *args, struct out *o,
                  struct aur_error *err)
{
    o->len = 0;
    o->overflow = false;
    for (size_t i = 0; i < len;) {
        size_t end, lit = i;
        char *name;
        int rc;
        while (lit < len && t[lit] != '{')
            lit++;
        put(o, t + i, lit - i);
        if (lit >= len)
            break;
        if (!placeholder_at(t, len, lit, &end)) /* validated: cannot be */
            return aur_fail(err, AUR_E_SCOPE, 0, "invalid MCP scope");
        name = strndup(t + lit + 1, end - lit - 1);
        if (!name)
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        rc = substitute(st, args, name, o, err);
        free(name);
        if (rc != AUR_OK)
            return rc;
        i = end + 1;
    }
    if (o->overflow || !tc_valid_scope(o->buf, o->len))
        return aur_fail(err, AUR_E_SCOPE, 0, "invalid MCP scope");
    return AUR_OK;
}

static bool array_has(struct json_object *arr, const char *s, size_t len)
{
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        if ((size_t)json_object_get_string_len(v) == len &&
            memcmp(json_object_get_string(v), s, len) == 0)
            return true;
    }
    return false;
}

int tc_resolve_scope(void *st, void *session, const struct aur_tool_ref *tool,
                     struct json_object *arguments, struct json_object *scopes,
                     struct aur_error *err)
{
    const struct tc_tool *t;
    struct json_object *rendered[2] = {NULL, NULL};
    struct out *o;
    int rc = AUR_OK;

    if (!session || !tool)
        return AUR_OK;
    t = tc_session_find(session, tool->raw_name);
    if (!t)
        return AUR_OK; /* never validated: the core's scopes stand */
    o = malloc(sizeof *o);
    if (!o)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    for (size_t d = 0; d < 2 && rc == AUR_OK; d++) {
        if (t->dir[d].n == 0)
            continue; /* the App default, already in scopes */
        rendered[d] = json_object_new_array();
        if (!rendered[d]) {
            rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
            break;
        }
        for (size_t i = 0; i < t->dir[d].n && rc == AUR_OK; i++) {
            rc = render(st, t->dir[d].text[i], t->dir[d].len[i], arguments, o,
                        err);
            if (rc == AUR_OK && !array_has(rendered[d], o->buf, o->len))
                json_object_array_add(
                    rendered[d],
                    json_object_new_string_len(o->buf, (int)o->len));
        }
    }
    free(o);
    for (size_t d = 0; d < 2; d++) {
        if (!rendered[d])
            continue;
        if (rc == AUR_OK)
            json_object_object_add(scopes, tc_dir_names[d], rendered[d]);
        else
            json_object_put(rendered[d]);
    }
    return rc;
}
