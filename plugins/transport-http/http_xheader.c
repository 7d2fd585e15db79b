/*
 * http_xheader.c - `x-mcp-header` tool annotations (SEP-2243; docs/
 * protocol.md, "HTTP request headers"), modern era over HTTP only.
 *
 * A modern tools/list result passes through http_xh_on_list before it
 * reaches the sink: every tool whose annotations break a rule is removed
 * from the result (so the core never freezes it) with a warning, and the
 * (header name, property path) pairs of the valid tools are collected.
 * One listing is a run of pages: the first page (no cursor) starts a new
 * pending table, later pages add to it, and the page without nextCursor
 * makes it the table that tools/call uses.  A listing that breaks off
 * leaves the previous table in place until the next complete one.
 *
 * Bounds: at most XH_MAX_PARAMS annotations per tool, property paths of at
 * most XH_MAX_DEPTH keys, schemas walked to XH_MAX_NEST levels, and at
 * most XH_MAX_TOOLS annotated tools per listing - the ceiling of the core's
 * max_tools, so this never drops a tool the core would keep.
 *
 * Logs and errors name tools, properties and annotations (schema text,
 * with bytes outside printable ASCII replaced), never argument values.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#define XH_MAX_PARAMS 64
#define XH_MAX_DEPTH 32
#define XH_MAX_NEST 256
#define XH_MAX_NAME 200
#define XH_MAX_TOOLS 1000000
#define XH_SAFE_INT 9007199254740991LL /* 2^53 - 1 */

/* One tool's mirrored arguments. */
struct xh_param {
    char *name;   /* the annotation: an RFC 9110 token */
    char **path;  /* property keys from the root of arguments */
    size_t depth;
};

struct xh_tool {
    char *tool;
    struct xh_param *p;
    size_t n, cap;
};

struct xh_table {
    struct xh_tool **v;
    size_t n, cap;
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */
/* ------------------------------------------------------------------ */

/* s for a log line or an error: printable ASCII, at most 60 bytes. */
static const char *safe(const char *s, char buf[72])
{
    size_t i = 0;
    for (; s[i] && i < 60; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[i] = ch >= 0x20 && ch <= 0x7E ? (char)ch : '?';
    }
    if (s[i])
        memcpy(buf + i, "...", 4);
    else
        buf[i] = '\0';
    return buf;
}

/* RFC 9110 §5.6.2 tchar. */
static bool is_tchar(unsigned char ch)
{
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
        (ch >= 'A' && ch <= 'Z'))
        return true;
    return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static void tool_free(struct xh_tool *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        for (size_t k = 0; k < t->p[i].depth; k++)
            free(t->p[i].path[k]);
        free(t->p[i].path);
        free(t->p[i].name);
    }
    free(t->p);
    free(t->tool);
    free(t);
}

static void table_free(struct xh_table *tb)
{
    if (!tb)
        return;
    for (size_t i = 0; i < tb->n; i++)
        tool_free(tb->v[i]);
    free(tb->v);
    free(tb);
}

void http_xh_conn_free(struct aur_conn *c)
{
    table_free(c->xh);
    table_free(c->xh_pending);
    c->xh = c->xh_pending = NULL;
}

/* ------------------------------------------------------------------ */
/* Schema validation                                                  */
/* ------------------------------------------------------------------ */

struct walk {
    struct xh_tool *t;
    const char *keys[XH_MAX_DEPTH]; /* property path while reachable */
    size_t nkeys;
    size_t over; /* properties levels beyond XH_MAX_DEPTH */
    const char *via; /* the first keyword other than properties, or NULL */
    struct aur_error *err;
};

/* Keywords whose value is one schema, an array of schemas, or an object
 * whose member values are schemas.  Everything else (const, default,
 * enum, examples, unknown keywords) is data and is not searched. */
static const char *const ONE[] = {
    "additionalProperties", "unevaluatedProperties", "items",
    "additionalItems", "unevaluatedItems", "contains", "propertyNames",
    "not", "if", "then", "else", NULL};
static const char *const MANY[] = {"allOf", "anyOf", "oneOf", "prefixItems",
                                   "items", NULL};
static const char *const MAP[] = {"patternProperties", "$defs",
                                  "definitions", "dependentSchemas",
                                  "dependencies", NULL};

static bool in(const char *const *set, const char *k)
{
    for (; *set; set++)
        if (strcmp(*set, k) == 0)
            return true;
    return false;
}

/* "a.b.c" of the current property path, for messages. */
static const char *path_text(const struct walk *w, char buf[72])
{
    char tmp[256];
    size_t len = 0;
    tmp[0] = '\0';
    for (size_t i = 0; i < w->nkeys && len < sizeof tmp - 1; i++)
        len += (size_t)snprintf(tmp + len, sizeof tmp - len, "%s%s",
                                i ? "." : "", w->keys[i]);
    return safe(tmp, buf);
}

static int add_param(struct walk *w, const char *name)
{
    struct xh_tool *t = w->t;
    struct xh_param *p, *grown;

    grown = aur__grow(t->p, &t->cap, t->n + 1, sizeof *grown, 4, SIZE_MAX);
    if (!grown)
        return aur_fail(w->err, AUR_E_NOMEM, 0, "out of memory");
    t->p = grown;
    p = &t->p[t->n];
    memset(p, 0, sizeof *p);
    p->name = strdup(name);
    p->path = calloc(w->nkeys, sizeof *p->path);
    t->n++; /* tool_free can clean up a half-made entry */
    if (!p->name || !p->path)
        return aur_fail(w->err, AUR_E_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < w->nkeys; i++) {
        if (!(p->path[i] = strdup(w->keys[i])))
            return aur_fail(w->err, AUR_E_NOMEM, 0, "out of memory");
        p->depth++;
    }
    return AUR_OK;
}

/* The annotation on a node that is a property reachable through
 * properties alone (nkeys > 0, via == NULL). */
static int check_annotation(struct walk *w, struct json_object *node,
                            struct json_object *ann)
{
    char pb[72], nb[72], ob[72];
    struct json_object *type = NULL;
    const char *name, *ty;
    size_t len;

    if (!json_object_is_type(ann, json_type_string))
        return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header on property "
                        "\"%s\" is not a string", path_text(w, pb));
    name = json_object_get_string(ann);
    len = (size_t)json_object_get_string_len(ann);
    if (len == 0)
        return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header on property "
                        "\"%s\" is empty", path_text(w, pb));
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch < 0x20 || ch == 0x7F)
            return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header on "
                            "property \"%s\" contains a control character",
                            path_text(w, pb));
        if (!is_tchar(ch))
            return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header \"%s\" on "
                            "property \"%s\" is not an HTTP token",
                            safe(name, nb), path_text(w, pb));
    }
    if (len > XH_MAX_NAME)
        return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header on property "
                        "\"%s\" is longer than %d bytes", path_text(w, pb),
                        XH_MAX_NAME);
    /* Only a declared string, integer or boolean can be mirrored; number
     * is excluded because its text form is not unique (1 vs 1.0). */
    if (!json_object_object_get_ex(node, "type", &type) ||
        !json_object_is_type(type, json_type_string))
        return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header \"%s\" on "
                        "property \"%s\" needs \"type\": string, integer or "
                        "boolean", safe(name, nb), path_text(w, pb));
    ty = json_object_get_string(type);
    if (strcmp(ty, "string") != 0 && strcmp(ty, "integer") != 0 &&
        strcmp(ty, "boolean") != 0)
        return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header \"%s\" on "
                        "property \"%s\" of type %s (only string, integer "
                        "or boolean)", safe(name, nb), path_text(w, pb),
                        safe(ty, ob));
    for (size_t i = 0; i < w->t->n; i++)
        if (strcasecmp(w->t->p[i].name, name) == 0)
            return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header \"%s\" on "
                            "property \"%s\" repeats \"%s\" (names are "
                            "case-insensitive)", safe(name, nb),
                            path_text(w, pb), safe(w->t->p[i].name, ob));
    if (w->t->n >= XH_MAX_PARAMS)
        return aur_fail(w->err, AUR_E_INVAL, 0, "more than %d x-mcp-header "
                        "annotations", XH_MAX_PARAMS);
    return add_param(w, name);
}

static int walk(struct walk *w, struct json_object *node, int nest);

static int walk_sub(struct walk *w, const char *kw, struct json_object *sub,
                    int nest)
{
    const char *saved = w->via;
    int rc;
    if (!w->via)
        w->via = kw;
    rc = walk(w, sub, nest + 1);
    w->via = saved;
    return rc;
}

static int walk(struct walk *w, struct json_object *node, int nest)
{
    struct json_object *ann;
    char pb[72], kb[72];
    int rc;

    if (!json_object_is_type(node, json_type_object))
        return AUR_OK; /* true/false schemas carry nothing */
    if (nest > XH_MAX_NEST)
        return aur_fail(w->err, AUR_E_INVAL, 0, "input schema nested deeper "
                        "than %d levels", XH_MAX_NEST);
    if (json_object_object_get_ex(node, "x-mcp-header", &ann)) {
        if (w->via)
            return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header under "
                            "\"%s\" is not reachable through properties "
                            "alone", safe(w->via, kb));
        if (w->nkeys == 0)
            return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header on the "
                            "root of the input schema");
        if (w->over)
            return aur_fail(w->err, AUR_E_INVAL, 0, "x-mcp-header below "
                            "property \"%s\" is nested deeper than %d "
                            "properties", path_text(w, pb), XH_MAX_DEPTH);
        if ((rc = check_annotation(w, node, ann)) != AUR_OK)
            return rc;
    }
    json_object_object_foreach(node, k, v)
    {
        if (strcmp(k, "properties") == 0 &&
            json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, pk, pv)
            {
                bool pushed = false;
                if (!w->via) {
                    if (w->nkeys < XH_MAX_DEPTH)
                        w->keys[w->nkeys++] = pk;
                    else
                        w->over++; /* fails only if an annotation is met */
                    pushed = true;
                }
                rc = walk(w, pv, nest + 2);
                if (pushed && w->over)
                    w->over--;
                else if (pushed)
                    w->nkeys--;
                if (rc != AUR_OK)
                    return rc;
            }
        } else if (in(MANY, k) && json_object_is_type(v, json_type_array)) {
            size_t n = json_object_array_length(v);
            for (size_t i = 0; i < n; i++)
                if ((rc = walk_sub(w, k, json_object_array_get_idx(v, i),
                                   nest + 1)) != AUR_OK)
                    return rc;
        } else if (in(MAP, k) && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, mk, mv)
            {
                (void)mk;
                if ((rc = walk_sub(w, k, mv, nest + 1)) != AUR_OK)
                    return rc;
            }
        } else if (in(ONE, k)) {
            if ((rc = walk_sub(w, k, v, nest)) != AUR_OK)
                return rc;
        }
    }
    return AUR_OK;
}

int http_xh_parse(const char *tool, struct json_object *schema,
                  struct xh_tool **out, struct aur_error *err)
{
    struct walk w;
    int rc;

    *out = NULL;
    memset(&w, 0, sizeof w);
    w.err = err;
    if (!(w.t = calloc(1, sizeof *w.t)) || !(w.t->tool = strdup(tool))) {
        tool_free(w.t);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    rc = walk(&w, schema, 0);
    if (rc != AUR_OK || w.t->n == 0) {
        tool_free(w.t);
        return rc;
    }
    *out = w.t;
    return AUR_OK;
}

void http_xh_tool_free(struct xh_tool *t)
{
    tool_free(t);
}

/* ------------------------------------------------------------------ */
/* tools/list                                                         */
/* ------------------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
    const struct xh_tool *x = *(struct xh_tool *const *)a;
    const struct xh_tool *y = *(struct xh_tool *const *)b;
    return strcmp(x->tool, y->tool);
}

/* Caller holds c->mu.  Takes t; false when out of room. */
static bool pending_add(struct aur_conn *c, struct xh_tool *t)
{
    struct xh_table *tb = c->xh_pending;
    struct xh_tool **v = aur__grow(tb->v, &tb->cap, tb->n + 1, sizeof *v, 16,
                                   XH_MAX_TOOLS);
    if (!v)
        return false;
    tb->v = v;
    tb->v[tb->n++] = t;
    return true;
}

void http_xh_on_list(struct aur_conn *c, bool first_page,
                     struct json_object *result)
{
    struct json_object *tools = NULL, *next = NULL;
    struct xh_tool **keep = NULL;
    bool *drop = NULL;
    size_t n, nkeep = 0;
    bool last;

    if (!json_object_object_get_ex(result, "tools", &tools) ||
        !json_object_is_type(tools, json_type_array))
        return; /* the core refuses such a page */
    last = !json_object_object_get_ex(result, "nextCursor", &next) ||
           !json_object_is_type(next, json_type_string);
    n = json_object_array_length(tools);
    keep = calloc(n ? n : 1, sizeof *keep);
    drop = calloc(n ? n : 1, sizeof *drop);
    for (size_t i = 0; i < n; i++) {
        struct json_object *tj = json_object_array_get_idx(tools, i);
        struct json_object *name = NULL, *schema = NULL;
        const char *tname = "?";
        struct aur_error why;
        struct xh_tool *t = NULL;
        char nb[72];
        int rc;

        if (!json_object_is_type(tj, json_type_object) ||
            !json_object_object_get_ex(tj, "inputSchema", &schema))
            continue; /* the core judges tools without a schema */
        if (json_object_object_get_ex(tj, "name", &name) &&
            json_object_is_type(name, json_type_string))
            tname = json_object_get_string(name);
        rc = http_xh_parse(tname, schema, &t, &why);
        if (rc == AUR_OK && t && (!keep || !drop)) {
            tool_free(t);
            rc = aur_fail(&why, AUR_E_NOMEM, 0, "out of memory");
        }
        if (rc == AUR_OK) {
            if (t)
                keep[nkeep++] = t;
            continue;
        }
        HTTP_LOG(c, AUR_LOG_WARN, "%s: tool %s dropped: %s", c->package,
                 safe(tname, nb), why.msg);
        if (drop)
            drop[i] = true;
        else
            json_object_array_put_idx(tools, i, NULL); /* core refuses */
    }
    /* From the end, so the indexes ahead stay put. */
    for (size_t i = n; drop && i-- > 0;)
        if (drop[i])
            json_object_array_del_idx(tools, i, 1);
    free(drop);
    pthread_mutex_lock(&c->mu);
    if (first_page || !c->xh_pending) {
        table_free(c->xh_pending);
        c->xh_pending = calloc(1, sizeof *c->xh_pending);
    }
    for (size_t i = 0; i < nkeep; i++) {
        if (c->xh_pending && pending_add(c, keep[i]))
            continue;
        /* Cannot remember its headers: a call would be refused by the
         * server, so the tool is not offered at all. */
        for (size_t k = 0; k < json_object_array_length(tools); k++) {
            struct json_object *tj = json_object_array_get_idx(tools, k);
            struct json_object *name = NULL;
            if (json_object_object_get_ex(tj, "name", &name) &&
                json_object_is_type(name, json_type_string) &&
                strcmp(json_object_get_string(name), keep[i]->tool) == 0) {
                json_object_array_del_idx(tools, k, 1);
                break;
            }
        }
        char nb[72];
        HTTP_LOG(c, AUR_LOG_WARN, "%s: tool %s dropped: more than %d tools "
                 "with x-mcp-header, or out of memory", c->package,
                 safe(keep[i]->tool, nb), XH_MAX_TOOLS);
        tool_free(keep[i]);
    }
    if (last && c->xh_pending) {
        struct xh_table *tb = c->xh_pending;
        if (tb->n > 1)
            qsort(tb->v, tb->n, sizeof *tb->v, by_name);
        table_free(c->xh);
        c->xh = tb;
        c->xh_pending = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(keep);
}

/* ------------------------------------------------------------------ */
/* tools/call                                                         */
/* ------------------------------------------------------------------ */

/* Why v cannot be mirrored, or NULL when it can (or is omitted). */
static const char *unsendable(const struct aur_host *h, struct json_object *v)
{
    char num[64];
    int64_t i;

    switch (json_object_get_type(v)) {
    case json_type_null:
    case json_type_string:
    case json_type_boolean:
        return NULL;
    case json_type_int:
        /* Saturated at INT64_MIN/INT64_MAX, both far outside the range. */
        i = json_object_get_int64(v);
        return i < -XH_SAFE_INT || i > XH_SAFE_INT
                   ? "is an integer outside +-(2^53-1)"
                   : NULL;
    case json_type_double:
        if (AUR_HAS(h, json_integer_text) &&
            h->json_integer_text(v, num, sizeof num) == AUR_OK)
            return "is an integer outside +-(2^53-1)";
        return "is a number with a fraction or exponent, not an integer";
    default:
        return "is not a string, integer or boolean";
    }
}

int http_xh_call_headers(struct aur_conn *c, struct json_object *params,
                         struct curl_slist **l, struct aur_error *err)
{
    struct json_object *name = NULL, *args = NULL;
    struct xh_tool key, *kp = &key, **hit;
    char hname[16 + XH_MAX_NAME], pb[72], tb[72];
    int rc;

    if (!c->xh || c->xh->n == 0 ||
        !json_object_object_get_ex(params, "name", &name) ||
        !json_object_is_type(name, json_type_string))
        return AUR_OK;
    key.tool = (char *)json_object_get_string(name);
    hit = bsearch(&kp, c->xh->v, c->xh->n, sizeof *c->xh->v, by_name);
    if (!hit)
        return AUR_OK;
    json_object_object_get_ex(params, "arguments", &args);
    for (size_t i = 0; i < (*hit)->n; i++) {
        const struct xh_param *p = &(*hit)->p[i];
        struct json_object *v = args;
        const char *why;

        for (size_t k = 0; v && k < p->depth; k++)
            if (!json_object_is_type(v, json_type_object) ||
                !json_object_object_get_ex(v, p->path[k], &v))
                v = NULL;
        if (!v)
            continue; /* absent: no header */
        /*
         * SEP-2243 allows only string, integer and boolean values, and
         * integers within +-(2^53-1).  Any other value cannot be sent
         * correctly: without the header the request breaks the MUST to
         * mirror it, with a made-up text it breaks the encoding rule.  So
         * the call is not sent at all (send fails; the core reports it as
         * failed, certainly without effect) instead of being sent wrong.
         */
        if ((why = unsendable(HTTP_HOST(c), v))) {
            char tmp[256] = "";
            size_t len = 0;
            for (size_t k = 0; k < p->depth && len < sizeof tmp - 1; k++)
                len += (size_t)snprintf(tmp + len, sizeof tmp - len, "%s%s",
                                        k ? "." : "", p->path[k]);
            return aur_fail(err, AUR_E_INVAL, 0, "tools/call %s: argument "
                            "\"%s\" %s and cannot be sent in Mcp-Param-%s",
                            safe((*hit)->tool, tb), safe(tmp, pb), why,
                            p->name);
        }
        snprintf(hname, sizeof hname, "Mcp-Param-%s", p->name);
        rc = http_add_encoded(l, hname, v);
        if (rc == AUR_E_NOMEM)
            return aur_fail(err, rc, 0, "out of memory");
        if (rc != AUR_OK)
            return aur_fail(err, rc, 0, "tools/call %s: the value for "
                            "Mcp-Param-%s is too long for a header",
                            safe((*hit)->tool, tb), p->name);
    }
    return AUR_OK;
}
