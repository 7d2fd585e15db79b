/*
 * fuzz_scope.c - libFuzzer target for the tool-contract scope templates
 * (plugins/ext-tool-contract/tc_scope.c and its session store in
 * tc_plugin.c, compiled in), docs/protocol.md (scopes, tool-contract).
 *
 * Input: TEMPLATE \0 PROPERTIES \0 ARGUMENTS, the last two JSON texts
 * parsed by the core's strict parser (missing or unparsable: {}).
 * TEMPLATE may hold several templates separated by \x1e (each goes into
 * observe; the first also into publish).  The tool is validated as at
 * discovery; if accepted, its scopes are rendered against ARGUMENTS as
 * at call time.
 *
 * Properties, checked against an independent reading of the rules here;
 * any violation aborts:
 *  - validation accepts iff every template is non-empty, every brace
 *    belongs to a {name} placeholder naming a key of PROPERTIES (an
 *    object), and a template without placeholders is a valid scope;
 *  - rendering succeeds iff every placeholder's argument is a non-empty
 *    string or an integer and every rendered template is a valid scope
 *    (the scope rule); then the scopes are exactly the reference renderings, in
 *    order, duplicates dropped;
 *  - a failure is AUR_E_CATALOG / AUR_E_SCOPE with a message, and leaves
 *    the scopes object as it was.
 *
 * Fuzzing build: see fuzz/run.sh.  With -DAUR_FUZZ_REPLAY (CMake target
 * fuzz_scope_replay, CTest fuzz_scope_corpus) main() replays files.
 */
#define _GNU_SOURCE
#include "tc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jsonx.h"

#define FUZZ_NAME "fuzz_scope"
#define MAX_TEMPLATES 8
#define REF_CAP 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- an independent reading of the scope and template rules ------- */

/* Strict UTF-8 to code points; -1 when malformed. */
static long decode(const unsigned char *s, size_t len, uint32_t *cps,
                   size_t max)
{
    size_t i = 0, n = 0;

    while (i < len) {
        uint32_t c = s[i], v;
        size_t k;
        if (c < 0x80)
            v = c, k = 0;
        else if ((c & 0xe0) == 0xc0)
            v = c & 0x1f, k = 1;
        else if ((c & 0xf0) == 0xe0)
            v = c & 0x0f, k = 2;
        else if ((c & 0xf8) == 0xf0)
            v = c & 0x07, k = 3;
        else
            return -1;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= len || (s[i + j] & 0xc0) != 0x80)
                return -1;
            v = v << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 1 && v < 0x80) || (k == 2 && v < 0x800) ||
            (k == 3 && v < 0x10000) || v > 0x10ffff ||
            (v >= 0xd800 && v <= 0xdfff))
            return -1;
        if (n < max)
            cps[n] = v;
        n++;
        i += k + 1;
    }
    return (long)n;
}

static bool strip_space(uint32_t c)
{
    static const uint32_t set[] = {0x20,   0x85,   0xa0,   0x1680, 0x2028,
                                   0x2029, 0x202f, 0x205f, 0x3000, 0};
    if ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) ||
        (c >= 0x2000 && c <= 0x200a))
        return true;
    for (size_t i = 0; set[i]; i++)
        if (c == set[i])
            return true;
    return false;
}

static bool ref_valid_scope(const char *s, size_t len)
{
    uint32_t cps[257];
    long n = decode((const unsigned char *)s, len, cps, 257);

    if (n <= 0 || n > 256)
        return false;
    for (long i = 0; i < n; i++)
        if (cps[i] <= 0x1f)
            return false;
    return !strip_space(cps[0]) && !strip_space(cps[n - 1]);
}

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/* Placeholders of t as (start, length of name) pairs; false on a stray
 * brace. */
static bool ref_parse(const char *t, size_t len, size_t *at, size_t *nlen,
                      size_t *n, size_t max)
{
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        size_t j;
        if (t[i] == '}')
            return false;
        if (t[i] != '{')
            continue;
        if (i + 1 >= len || !ident_start(t[i + 1]))
            return false;
        for (j = i + 1; j < len && ident(t[j]); j++)
            ;
        if (j >= len || t[j] != '}')
            return false;
        if (*n < max) {
            at[*n] = i;
            nlen[*n] = j - i - 1;
        }
        (*n)++;
        i = j;
    }
    return true;
}

/* Inputs longer than run.sh's -max_len are skipped, so every template
 * fits and holds at most MAX_INPUT / 3 placeholders ("{a}" each): the
 * rules set no count limit, so neither may the reference. */
#define MAX_INPUT 4096
#define MAX_PH (MAX_INPUT / 3 + 1)

static bool ref_validate(const char *t, size_t len, struct json_object *props)
{
    size_t at[MAX_PH], nlen[MAX_PH], n;
    char name[MAX_INPUT];

    if (len == 0 || !ref_parse(t, len, at, nlen, &n, MAX_PH))
        return false;
    if (n > MAX_PH)
        abort(); /* the input cap rules this out */
    for (size_t i = 0; i < n; i++) {
        if (!props || nlen[i] >= sizeof name)
            return false;
        memcpy(name, t + at[i] + 1, nlen[i]);
        name[nlen[i]] = '\0';
        if (!json_object_object_get_ex(props, name, NULL))
            return false;
    }
    return n > 0 || ref_valid_scope(t, len);
}

/* 1 = rendered into out, 0 = the call must fail. */
static int ref_render(const char *t, size_t len, struct json_object *args,
                      char *out, size_t *olen)
{
    size_t at[MAX_PH], nlen[MAX_PH], n, o = 0, from = 0;
    char name[MAX_INPUT], num[512];

    if (!ref_parse(t, len, at, nlen, &n, MAX_PH) || n > MAX_PH)
        abort(); /* validated before */
    for (size_t i = 0; i <= n; i++) {
        size_t lit = (i < n ? at[i] : len) - from;
        const char *v;
        size_t vl;
        struct json_object *a;
        if (o + lit > REF_CAP)
            return 0;
        memcpy(out + o, t + from, lit);
        o += lit;
        if (i == n)
            break;
        memcpy(name, t + at[i] + 1, nlen[i]);
        name[nlen[i]] = '\0';
        if (!json_object_is_type(args, json_type_object) ||
            !json_object_object_get_ex(args, name, &a))
            return 0;
        if (json_object_is_type(a, json_type_string)) {
            v = json_object_get_string(a);
            vl = (size_t)json_object_get_string_len(a);
            if (vl == 0)
                return 0;
        } else if (aur__json_integer_text(a, num, sizeof num) == AUR_OK) {
            v = num;
            vl = strlen(num);
        } else {
            return 0; /* float, bool, null, object, array, huge integer */
        }
        if (o + vl > REF_CAP)
            return 0;
        memcpy(out + o, v, vl);
        o += vl;
        from = at[i] + nlen[i] + 2;
    }
    *olen = o;
    return ref_valid_scope(out, o);
}

/* ---- the target ---------------------------------------------------- */

static void host_log(struct aur_self *self, int level, const char *fmt, ...)
{
    (void)self;
    (void)level;
    (void)fmt;
}

static struct json_object *parse_or_empty(const char *s, size_t len)
{
    struct json_object *v = NULL;
    struct aur_error err;

    if (len && aur__json_parse(s, len, 64, &v, &err) == AUR_OK)
        return v;
    return json_object_new_object();
}

static bool array_holds(struct json_object *arr, const char *s, size_t len)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *v = json_object_array_get_idx(arr, i);
        if ((size_t)json_object_get_string_len(v) == len &&
            memcmp(json_object_get_string(v), s, len) == 0)
            return true;
    }
    return false;
}

/* Reference scopes of one direction: NULL when the call must fail. */
static struct json_object *ref_direction(struct json_object *templates,
                                         struct json_object *args)
{
    struct json_object *want = json_object_new_array();
    static char buf[REF_CAP + 1];
    size_t blen;

    for (size_t i = 0; i < json_object_array_length(templates); i++) {
        struct json_object *t = json_object_array_get_idx(templates, i);
        if (!ref_render(json_object_get_string(t),
                        (size_t)json_object_get_string_len(t), args, buf,
                        &blen)) {
            json_object_put(want);
            return NULL;
        }
        if (!array_holds(want, buf, blen))
            json_object_array_add(want,
                                  json_object_new_string_len(buf, (int)blen));
    }
    return want;
}

static void same_strings(struct json_object *a, struct json_object *b)
{
    size_t n = json_object_array_length(a);
    if (!json_object_is_type(b, json_type_array) ||
        json_object_array_length(b) != n)
        abort();
    for (size_t i = 0; i < n; i++) {
        struct json_object *x = json_object_array_get_idx(a, i);
        struct json_object *y = json_object_array_get_idx(b, i);
        if (json_object_get_string_len(x) != json_object_get_string_len(y) ||
            memcmp(json_object_get_string(x), json_object_get_string(y),
                   (size_t)json_object_get_string_len(x)) != 0)
            abort();
        /* Whatever the reference thinks, what is sent obeys the scope
         * rule. */
        if (!ref_valid_scope(json_object_get_string(y),
                             (size_t)json_object_get_string_len(y)))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct aur_host host;
    static struct tc_state st;
    const char *s = (const char *)data, *end = s + size, *p2, *p3;
    const char *n1, *n2, *tend, *pend;
    struct json_object *props, *args, *tool, *schema, *meta, *contract;
    struct json_object *obs, *pub, *scopes, *called, *want[2];
    struct tc_session *session;
    struct aur_tool_ref ref = {sizeof ref, "aur.mcp.org.fuzz.t", "t"};
    struct aur_error err;
    bool ok_ref = true, dup = false;
    int rc;

    if (size > MAX_INPUT)
        return 0;
    host.struct_size = sizeof host;
    host.log = host_log;
    host.json_integer_text = aur__json_integer_text;
    st.host = &host;

    n1 = memchr(s, '\0', size);
    tend = n1 ? n1 : end;
    p2 = n1 ? n1 + 1 : end;
    n2 = p2 < end ? memchr(p2, '\0', (size_t)(end - p2)) : NULL;
    pend = n2 ? n2 : end;
    p3 = n2 ? n2 + 1 : end;
    props = parse_or_empty(p2, (size_t)(pend - p2));
    args = parse_or_empty(p3, (size_t)(end - p3));

    /* Templates: the first segment, split at \x1e. */
    obs = json_object_new_array();
    pub = json_object_new_array();
    for (const char *t = s; json_object_array_length(obs) < MAX_TEMPLATES;) {
        const char *sep = memchr(t, 0x1e, (size_t)(tend - t));
        const char *te = sep ? sep : tend;
        json_object_array_add(obs,
                              json_object_new_string_len(t, (int)(te - t)));
        if (!sep)
            break;
        t = sep + 1;
    }
    json_object_array_add(
        pub, json_object_get(json_object_array_get_idx(obs, 0)));

    tool = json_object_new_object();
    schema = json_object_new_object();
    json_object_object_add(schema, "type", json_object_new_string("object"));
    json_object_object_add(schema, "properties", json_object_get(props));
    json_object_object_add(tool, "name", json_object_new_string("t"));
    json_object_object_add(tool, "inputSchema", schema);
    meta = json_object_new_object();
    contract = json_object_new_object();
    json_object_object_add(contract, "observe", json_object_get(obs));
    json_object_object_add(contract, "publish", json_object_get(pub));
    json_object_object_add(meta, TC_KEY, contract);
    json_object_object_add(tool, "_meta", meta);

    /* What validation must say. */
    for (size_t i = 0; i < json_object_array_length(obs); i++) {
        struct json_object *t = json_object_array_get_idx(obs, i);
        for (size_t j = 0; j < i; j++) {
            struct json_object *u = json_object_array_get_idx(obs, j);
            if (json_object_get_string_len(t) ==
                    json_object_get_string_len(u) &&
                memcmp(json_object_get_string(t), json_object_get_string(u),
                       (size_t)json_object_get_string_len(t)) == 0)
                dup = true;
        }
        if (!ref_validate(json_object_get_string(t),
                          (size_t)json_object_get_string_len(t),
                          json_object_is_type(props, json_type_object)
                              ? props
                              : NULL))
            ok_ref = false;
    }
    if (dup || !json_object_is_type(props, json_type_object))
        ok_ref = false;

    session = calloc(1, sizeof *session);
    scopes = json_object_new_object();
    aur_error_clear(&err);
    rc = tc_validate_tool(&st, session, &ref, tool, scopes, &err);
    if ((rc == AUR_OK) != ok_ref)
        abort();
    if (rc != AUR_OK) {
        if (rc != AUR_E_CATALOG || !err.msg[0] ||
            json_object_object_length(scopes) != 0)
            abort();
        goto out;
    }

    /* Call time. */
    want[0] = ref_direction(obs, args);
    want[1] = want[0] ? ref_direction(pub, args) : NULL;
    called = json_object_new_object();
    json_object_object_add(called, "observe", json_object_new_string("x"));
    aur_error_clear(&err);
    rc = tc_resolve_scope(&st, session, &ref, args, called, &err);
    if ((rc == AUR_OK) != (want[0] && want[1]))
        abort();
    if (rc == AUR_OK) {
        struct json_object *v;
        if (!json_object_object_get_ex(called, "observe", &v))
            abort();
        same_strings(want[0], v);
        if (!json_object_object_get_ex(called, "publish", &v))
            abort();
        same_strings(want[1], v);
    } else {
        struct json_object *v;
        /* The core's scopes are left alone on failure. */
        if (rc != AUR_E_SCOPE || !err.msg[0] ||
            json_object_object_length(called) != 1 ||
            !json_object_object_get_ex(called, "observe", &v) ||
            strcmp(json_object_get_string(v), "x") != 0)
            abort();
    }
    json_object_put(want[0]);
    json_object_put(want[1]);
    json_object_put(called);
out:
    for (size_t i = 0; i < session->nbucket; i++)
        while (session->bucket[i]) {
            struct tc_tool *t = session->bucket[i];
            session->bucket[i] = t->next;
            tc_tool_free(t);
        }
    free(session->bucket);
    free(session);
    json_object_put(scopes);
    json_object_put(tool);
    json_object_put(obs);
    json_object_put(pub);
    json_object_put(props);
    json_object_put(args);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif
