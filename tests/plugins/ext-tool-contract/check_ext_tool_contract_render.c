/*
 * check_ext_tool_contract_render.c - call-time rendering of scope
 * templates (docs/protocol.md, tool-contract): the table of templates and
 * arguments, length limits, defaults, revalidation, many tools in one
 * session and concurrent rendering.  Part of check_ext_tool_contract.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include "tc_unit_host.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aurora/aur_host.h>
#include <json-c/json.h>

#include "jsonx.h"

/* ------------------------------------------------------------------ */
/* Call-time rendering                                                */
/* ------------------------------------------------------------------ */

/* Validate contract on s for raw name REF, then render args; returns rc
 * and fills out with the scopes text or the message. */
static int render_with(void *s, const struct aur_tool_ref *ref,
                       const char *contract, const char *args, char *out,
                       size_t size)
{
    struct json_object *tj = tool(PROPS, contract), *sc = default_scopes();
    struct json_object *a = J(args);
    struct aur_error err;
    int rc;
    aur_error_clear(&err);
    ck_assert_int_eq(OPS->validate_tool(ST, s, ref, tj, sc, &err), AUR_OK);
    rc = OPS->resolve_scope(ST, s, ref, a, sc, &err);
    snprintf(out, size, "%s", rc == AUR_OK ? T(sc) : err.msg);
    if (rc != AUR_OK)
        ck_assert_int_eq(err.code, rc);
    json_object_put(tj);
    json_object_put(sc);
    json_object_put(a);
    return rc;
}

struct render_row {
    const char *contract;
    const char *args; /* NULL = no arguments */
    int rc;
    const char *expect; /* scopes text, or the exact message */
};

#define EXAMPLE                                                              \
    "{\"observe\":[\"qq:group:{group_id}\",\"qq:private:{user_id}\"],"       \
    "\"publish\":[\"qq:group:{group_id}\"]}"
#define ONE "{\"observe\":[\"qq:group:{group_id}\"]}"
#define TYPE_ERR "scope argument must be text or integer: group_id"

static const struct render_row render_rows[] = {
    /* a group and a private scope, as in the README */
    {EXAMPLE, "{\"group_id\":10001,\"user_id\":\"20002\"}", AUR_OK,
     "{\"observe\":[\"qq:group:10001\",\"qq:private:20002\"],"
     "\"publish\":[\"qq:group:10001\"]}"},
    /* integers of any size, in plain decimal */
    {ONE, "{\"group_id\":123456789012345678901234567890}", AUR_OK,
     "{\"observe\":[\"qq:group:123456789012345678901234567890\"],"
     "\"publish\":" DFLT "}"},
    {ONE, "{\"group_id\":-5}", AUR_OK,
     "{\"observe\":[\"qq:group:-5\"],\"publish\":" DFLT "}"},
    {ONE, "{\"group_id\":0}", AUR_OK,
     "{\"observe\":[\"qq:group:0\"],\"publish\":" DFLT "}"},
    {ONE, "{\"group_id\":-0}", AUR_OK,
     "{\"observe\":[\"qq:group:0\"],\"publish\":" DFLT "}"},
    {ONE, "{\"group_id\":18446744073709551615}", AUR_OK,
     "{\"observe\":[\"qq:group:18446744073709551615\"],\"publish\":" DFLT
     "}"},
    {ONE, "{\"group_id\":-9223372036854775808}", AUR_OK,
     "{\"observe\":[\"qq:group:-9223372036854775808\"],\"publish\":" DFLT
     "}"},
    {ONE, "{\"group_id\":-99999999999999999999999}", AUR_OK,
     "{\"observe\":[\"qq:group:-99999999999999999999999\"],\"publish\":" DFLT
     "}"},
    /* text verbatim, never scanned again */
    {ONE, "{\"group_id\":\"a:{user_id} b\",\"user_id\":\"x\"}", AUR_OK,
     "{\"observe\":[\"qq:group:a:{user_id} b\"],\"publish\":" DFLT "}"},
    {ONE, "{\"group_id\":\"\\u9891\\u9053\"}", AUR_OK,
     "{\"observe\":[\"qq:group:\xe9\xa2\x91\xe9\x81\x93\"],\"publish\":" DFLT
     "}"},
    {"{\"observe\":[\"{x}{y}{x}\"],\"publish\":[\"p\"]}",
     "{\"x\":\"1\",\"y\":2}", AUR_OK,
     "{\"observe\":[\"121\"],\"publish\":[\"p\"]}"},
    /* sets: duplicates collapse, first-seen order kept */
    {"{\"observe\":[\"a:{x}\",\"b\",\"a:{y}\"],\"publish\":[\"{x}\",\"{y}\"]}",
     "{\"x\":7,\"y\":\"7\"}", AUR_OK,
     "{\"observe\":[\"a:7\",\"b\"],\"publish\":[\"7\"]}"},
    /* refused values */
    {ONE, "{\"group_id\":1.0}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":1e3}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":1E+2}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":0.5}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":1e400}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":true}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":false}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":null}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":{}}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":[1]}", AUR_E_SCOPE, TYPE_ERR},
    {ONE, "{\"group_id\":\"\"}", AUR_E_SCOPE,
     "scope argument must not be empty: group_id"},
    {ONE, "{}", AUR_E_SCOPE, "scope argument missing: group_id"},
    {ONE, NULL, AUR_E_SCOPE, "scope argument missing: group_id"},
    {ONE, "[\"group_id\"]", AUR_E_SCOPE, "scope argument missing: group_id"},
    {ONE, "{\"Group_id\":1}", AUR_E_SCOPE,
     "scope argument missing: group_id"},
    /* the rendered string must be a scope */
    {ONE, "{\"group_id\":\"a\\nb\"}", AUR_E_SCOPE, "invalid MCP scope"},
    {ONE, "{\"group_id\":\"a\\u0000b\"}", AUR_E_SCOPE, "invalid MCP scope"},
    {ONE, "{\"group_id\":\"x \"}", AUR_E_SCOPE, "invalid MCP scope"},
    {ONE, "{\"group_id\":\"x\\u3000\"}", AUR_E_SCOPE, "invalid MCP scope"},
    {"{\"observe\":[\"{x}:a\"]}", "{\"x\":\" lead\"}", AUR_E_SCOPE,
     "invalid MCP scope"},
    {"{\"observe\":[\" {x}\"]}", "{\"x\":\"a\"}", AUR_E_SCOPE,
     "invalid MCP scope"},
    /* first error wins: observe before publish, list order, left to right */
    {"{\"observe\":[\"{x}\",\"{y}\"],\"publish\":[\"{group_id}\"]}",
     "{\"x\":true,\"group_id\":\"\"}", AUR_E_SCOPE,
     "scope argument must be text or integer: x"},
    {"{\"observe\":[\"{x}\",\"{y}\"]}", "{\"x\":1}", AUR_E_SCOPE,
     "scope argument missing: y"},
    {"{\"observe\":[\"ok\"],\"publish\":[\"{y}{x}\"]}", "{\"x\":1.5}",
     AUR_E_SCOPE, "scope argument missing: y"},
    {"{\"observe\":[\"{x}\\n\",\"{y}\"]}", "{\"x\":1}", AUR_E_SCOPE,
     "invalid MCP scope"},
};

START_TEST(render_table)
{
    const struct render_row *r = &render_rows[_i];
    void *s = session_up();
    char out[2048];
    int rc = render_with(s, &REF, r->contract, r->args, out, sizeof out);
    ck_assert_msg(rc == r->rc, "row %d: rc %d (%s)", _i, rc, out);
    ck_assert_msg(strcmp(out, r->expect) == 0, "row %d: got %s", _i, out);
    OPS->end_session(ST, s);
}
END_TEST

/* args = {"x": <value text>} rendered through template t. */
static int render_long(const char *t, const char *value, char *out,
                       size_t size)
{
    size_t n = strlen(t) + strlen(value) + 64;
    char *contract = malloc(n), *args = malloc(n);
    void *s = session_up();
    int rc;
    snprintf(contract, n, "{\"observe\":[\"%s\"]}", t);
    snprintf(args, n, "{\"x\":%s,\"y\":1}", value);
    rc = render_with(s, &REF, contract, args, out, size);
    OPS->end_session(ST, s);
    free(contract);
    free(args);
    return rc;
}

START_TEST(render_length_limits)
{
    char out[4096], *v = malloc(6000);
    /* 256 code points exactly: "a:" + 254 */
    v[0] = '"';
    memset(v + 1, 'z', 254);
    strcpy(v + 255, "\"");
    ck_assert_int_eq(render_long("a:{x}", v, out, sizeof out), AUR_OK);
    /* 257 */
    ck_assert_int_eq(render_long("ab:{x}", v, out, sizeof out), AUR_E_SCOPE);
    ck_assert_str_eq(out, "invalid MCP scope");
    /* 256 four-byte code points */
    strcpy(v, "\"");
    for (int i = 0; i < 255; i++)
        strcat(v, "\xf0\x9f\x98\x80");
    strcat(v, "\"");
    ck_assert_int_eq(render_long("a{x}", v, out, sizeof out), AUR_OK);
    ck_assert_int_eq(render_long("ab{x}", v, out, sizeof out), AUR_E_SCOPE);
    /* far beyond any scope */
    v[0] = '"';
    memset(v + 1, 'q', 5000);
    strcpy(v + 5001, "\"");
    ck_assert_int_eq(render_long("{x}", v, out, sizeof out), AUR_E_SCOPE);
    ck_assert_str_eq(out, "invalid MCP scope");
    /* an integer too long for a scope is still an integer: a later
     * placeholder's own error comes first */
    memset(v, '7', 2000);
    v[2000] = '\0';
    ck_assert_int_eq(render_long("{x}", v, out, sizeof out), AUR_E_SCOPE);
    ck_assert_str_eq(out, "invalid MCP scope");
    ck_assert_int_eq(render_long("{x}{group_id}", v, out, sizeof out),
                     AUR_E_SCOPE);
    ck_assert_str_eq(out, "scope argument missing: group_id");
    free(v);
}
END_TEST

START_TEST(defaults_are_left_alone)
{
    void *s = session_up();
    char out[1024];
    /* no contract: the pre-filled scopes come back untouched */
    ck_assert_int_eq(render_with(s, &REF, "null", "{}", out, sizeof out),
                     AUR_OK);
    ck_assert_str_eq(out, "{\"observe\":" DFLT ",\"publish\":" DFLT "}");
    ck_assert_int_eq(render_with(s, &REF, "{\"publish\":[\"p:{x}\"]}",
                                 "{\"x\":\"1\"}", out, sizeof out),
                     AUR_OK);
    ck_assert_str_eq(out, "{\"observe\":" DFLT ",\"publish\":[\"p:1\"]}");
    OPS->end_session(ST, s);
}
END_TEST

START_TEST(revalidation_replaces_the_contract)
{
    /* A catalog paged again binds the same raw name again. */
    void *s = session_up();
    char out[1024];
    ck_assert_int_eq(render_with(s, &REF, "{\"observe\":[\"old:{x}\"]}",
                                 "{\"x\":1}", out, sizeof out),
                     AUR_OK);
    ck_assert_str_eq(out, "{\"observe\":[\"old:1\"],\"publish\":" DFLT "}");
    ck_assert_int_eq(render_with(s, &REF, "{\"observe\":[\"new:{x}\"]}",
                                 "{\"x\":1}", out, sizeof out),
                     AUR_OK);
    ck_assert_str_eq(out, "{\"observe\":[\"new:1\"],\"publish\":" DFLT "}");
    ck_assert_int_eq(render_with(s, &REF, NULL, "{}", out, sizeof out),
                     AUR_OK);
    ck_assert_str_eq(out, "{\"observe\":" DFLT ",\"publish\":" DFLT "}");
    OPS->end_session(ST, s);
}
END_TEST

#define MANY 700

START_TEST(many_tools_in_one_session)
{
    void *s = session_up();
    static char ids[MANY][40], raws[MANY][16];
    struct aur_tool_ref refs[MANY];
    struct aur_error err;
    for (int i = 0; i < MANY; i++) {
        char contract[64];
        struct json_object *tj, *sc = default_scopes();
        snprintf(raws[i], sizeof raws[i], "t%d", i);
        snprintf(ids[i], sizeof ids[i], "aur.mcp." PKG ".t%d", i);
        refs[i] = (struct aur_tool_ref){sizeof refs[i], ids[i], raws[i]};
        snprintf(contract, sizeof contract, "{\"observe\":[\"t%d:{x}\"]}", i);
        tj = tool(PROPS, contract);
        ck_assert_int_eq(OPS->validate_tool(ST, s, &refs[i], tj, sc, &err),
                         AUR_OK);
        json_object_put(tj);
        json_object_put(sc);
    }
    for (int i = 0; i < MANY; i++) {
        struct json_object *sc = J("{\"observe\":[\"t:{x}\"],\"publish\":[]}");
        struct json_object *a = J("{\"x\":\"v\"}"), *o;
        char expect[32];
        ck_assert_int_eq(OPS->resolve_scope(ST, s, &refs[i], a, sc, &err),
                         AUR_OK);
        ck_assert(json_object_object_get_ex(sc, "observe", &o));
        snprintf(expect, sizeof expect, "t%d:v", i);
        ck_assert_str_eq(json_object_get_string(
                             json_object_array_get_idx(o, 0)),
                         expect);
        json_object_put(sc);
        json_object_put(a);
    }
    /* a raw name never validated: the given scopes stand */
    struct aur_tool_ref other = {sizeof other, "aur.mcp." PKG ".zz", "zz"};
    struct json_object *sc = default_scopes();
    ck_assert_int_eq(OPS->resolve_scope(ST, s, &other, NULL, sc, &err),
                     AUR_OK);
    ck_assert_str_eq(T(sc), "{\"observe\":" DFLT ",\"publish\":" DFLT "}");
    json_object_put(sc);
    OPS->end_session(ST, s);
}
END_TEST

struct worker {
    void *s;
    int id, ok;
};

static void *render_worker(void *p)
{
    struct worker *w = p;
    for (int i = 0; i < 300; i++) {
        char args[64], expect[64];
        struct json_object *sc = default_scopes(), *a, *o;
        struct aur_error err;
        snprintf(args, sizeof args, "{\"group_id\":%d,\"user_id\":\"u%d\"}",
                 w->id, i);
        snprintf(expect, sizeof expect, "qq:private:u%d", i);
        a = json_tokener_parse(args);
        if (OPS->resolve_scope(ST, w->s, &REF, a, sc, &err) == AUR_OK &&
            json_object_object_get_ex(sc, "observe", &o) &&
            json_object_array_length(o) == 2 &&
            strcmp(json_object_get_string(json_object_array_get_idx(o, 1)),
                   expect) == 0)
            w->ok++;
        json_object_put(a);
        json_object_put(sc);
    }
    return NULL;
}

START_TEST(concurrent_rendering)
{
    void *s = session_up();
    struct json_object *tj = tool(PROPS, EXAMPLE), *sc = default_scopes();
    struct aur_error err;
    pthread_t t[8];
    struct worker w[8];
    ck_assert_int_eq(OPS->validate_tool(ST, s, &REF, tj, sc, &err), AUR_OK);
    json_object_put(tj);
    json_object_put(sc);
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){s, i, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, render_worker, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].ok, 300);
    }
    OPS->end_session(ST, s);
}
END_TEST

void tc_render_tests(TCase *ren)
{
    tcase_add_loop_test(ren, render_table, 0,
                        (int)(sizeof render_rows / sizeof render_rows[0]));
    tcase_add_test(ren, render_length_limits);
    tcase_add_test(ren, defaults_are_left_alone);
    tcase_add_test(ren, revalidation_replaces_the_contract);
    tcase_add_test(ren, many_tools_in_one_session);
    tcase_add_test(ren, concurrent_rendering);
}
