/*
 * check_ext_tool_contract.c - ext-tool-contract through its ABI: the
 * suite dlopens the built plugin and drives its hooks with a small test
 * host whose JSON services are the core's own (strict parser, exact big
 * integers).  Covers negotiation, template validation and rendering,
 * and result classification (docs/protocol.md, Extensions).
 *
 * The integration half (the real host against the fixture server and the
 * SDK v2/v1 peers) is in check_ext_tool_contract_host.c; main() runs both.
 * The test host is tc_unit_host.c, the rendering tests are in
 * check_ext_tool_contract_render.c.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include "tc_unit_host.h"
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aurora/aur_host.h>
#include <json-c/json.h>

#include "jsonx.h"


Suite *tc_host_suite(void); /* check_ext_tool_contract_host.c */

/* ------------------------------------------------------------------ */
/* Descriptor and negotiation                                         */
/* ------------------------------------------------------------------ */

START_TEST(descriptor_is_an_extension)
{
    ck_assert_uint_eq(D->magic, AUR_PLUGIN_MAGIC);
    ck_assert_uint_eq(D->kind, AUR_KIND_EXTENSION);
    ck_assert_str_eq(D->name, "ext-tool-contract");
    ck_assert_uint_eq(AUR_ABI_MAJOR_OF(D->abi_version), AUR_ABI_MAJOR);
    ck_assert_str_eq(OPS->cap_key, KEY);
    ck_assert(OPS->methods == NULL || OPS->methods[0] == NULL);
    ck_assert_ptr_null(OPS->on_notify);
    ck_assert_ptr_nonnull(OPS->declare_caps);
    ck_assert_ptr_nonnull(OPS->accept_server);
    ck_assert_ptr_nonnull(OPS->validate_tool);
    ck_assert_ptr_nonnull(OPS->resolve_scope);
    ck_assert_ptr_nonnull(OPS->classify);
    ck_assert_ptr_nonnull(OPS->end_session);
}
END_TEST

START_TEST(init_needs_integer_text)
{
    struct aur_host h = H;
    struct aur_error err;
    void *st = NULL;
    h.json_integer_text = NULL;
    ck_assert_int_eq(D->init(&h, NULL, NULL, &st, &err), AUR_E_PLUGIN);
    ck_assert_ptr_null(st);
}
END_TEST

START_TEST(declare_caps_writes_version_1)
{
    struct json_object *caps = J("{\"other/ext\":{}}"), *v, *ver;
    struct aur_error err;
    ck_assert_int_eq(OPS->declare_caps(ST, &APP, caps, &err), AUR_OK);
    ck_assert(json_object_object_get_ex(caps, KEY, &v));
    ck_assert(json_object_object_get_ex(v, "version", &ver));
    ck_assert(json_object_is_type(ver, json_type_int));
    ck_assert_str_eq(T(caps),
                     "{\"other/ext\":{},\"" KEY "\":{\"version\":1}}");
    json_object_put(caps);
}
END_TEST

struct neg_row {
    const char *caps;
    int rc;
};

static const struct neg_row neg_rows[] = {
    {"{}", AUR_DECLINE},
    {"{\"tools\":{}}", AUR_DECLINE},
    {"{\"extensions\":{}}", AUR_DECLINE},
    {"{\"extensions\":[]}", AUR_DECLINE},
    {"{\"extensions\":{\"org.aurorabot/other\":{\"version\":1}}}",
     AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":\"1\"}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":true}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":2}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":0}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":-1}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":1.0}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":1e0}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":"
     "100000000000000000000000000001}}}",
     AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":18446744073709551617}}}",
     AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":null}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":1,\"extra\":true}}}",
     AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"Version\":1}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{}}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":[1]}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":1}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":true}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":null}}", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":\"{\\\"version\\\":1}\"}}", AUR_DECLINE},
    {"[]", AUR_DECLINE},
    {"{\"extensions\":{\"" KEY "\":{\"version\":1}}}", AUR_OK},
    {"{\"tools\":{\"listChanged\":true},\"extensions\":{\"a.b/c\":{},\"" KEY
     "\":{\"version\":1}}}",
     AUR_OK},
};

START_TEST(negotiation_table)
{
    const struct neg_row *r = &neg_rows[_i];
    struct json_object *caps = J(r->caps);
    struct aur_error err;
    void *s = NULL;
    aur_error_clear(&err);
    int rc = OPS->accept_server(ST, &APP, caps, &s, &err);
    ck_assert_msg(rc == r->rc, "row %d %s: rc %d", _i, r->caps, rc);
    if (rc == AUR_OK) {
        ck_assert_ptr_nonnull(s);
        OPS->end_session(ST, s);
    } else {
        ck_assert_ptr_null(s);
        ck_assert_str_eq(err.msg, "");
    }
    json_object_put(caps);
}
END_TEST

START_TEST(negotiation_without_caps_declines)
{
    struct aur_error err;
    void *s = NULL;
    ck_assert_int_eq(OPS->accept_server(ST, &APP, NULL, &s, &err),
                     AUR_DECLINE);
    ck_assert_ptr_null(s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Discovery-time validation                                          */
/* ------------------------------------------------------------------ */

struct bad_row {
    const char *props;    /* NULL = absent */
    const char *contract; /* the value under _meta[KEY] */
    const char *needle;   /* in err.msg */
};

static const struct bad_row bad_rows[] = {
    {PROPS, "\"x\"", "metadata must be an object"},
    {PROPS, "[]", "metadata must be an object"},
    {PROPS, "[{\"observe\":[\"a\"]}]", "metadata must be an object"},
    {PROPS, "1", "metadata must be an object"},
    {PROPS, "false", "metadata must be an object"},
    {PROPS, "{\"observe\":[\"a\"],\"zeta\":1,\"alpha\":2}",
     "unknown fields: [alpha, zeta]"},
    {PROPS, "{\"Observe\":[\"a\"]}", "unknown fields: [Observe]"},
    {PROPS, "{\"scopes\":{}}", "unknown fields: [scopes]"},
    {PROPS, "{\"observe\":[]}", "observe must be a non-empty array of strings"},
    {PROPS, "{\"observe\":\"a\"}",
     "observe must be a non-empty array of strings"},
    {PROPS, "{\"observe\":null}",
     "observe must be a non-empty array of strings"},
    {PROPS, "{\"observe\":[\"a\",1]}",
     "observe must be a non-empty array of strings"},
    {PROPS, "{\"observe\":[[\"a\"]]}",
     "observe must be a non-empty array of strings"},
    {PROPS, "{\"observe\":[\"a\"],\"publish\":{}}",
     "publish must be a non-empty array of strings"},
    {PROPS, "{\"publish\":[null]}",
     "publish must be a non-empty array of strings"},
    {PROPS, "{\"observe\":[\"a\",\"b\",\"a\"]}",
     "observe must not contain duplicate templates"},
    {PROPS, "{\"publish\":[\"q:{x}\",\"q:{x}\"]}",
     "publish must not contain duplicate templates"},
    {"[]", "{}", "input schema properties must be an object"},
    {"null", "{\"observe\":[\"a\"]}",
     "input schema properties must be an object"},
    {"\"x\"", "{\"observe\":[\"q:{x}\"]}",
     "input schema properties must be an object"},
    {PROPS, "{\"observe\":[\"\"]}", "template must not be empty"},
    {PROPS, "{\"publish\":[\"ok\",\"\"]}", "template must not be empty"},
    {PROPS, "{\"observe\":[\"qq:{group.id}\"]}",
     "syntax is invalid: qq:{group.id}"},
    {PROPS, "{\"observe\":[\"{{x}}\"]}", "syntax is invalid: {{x}}"},
    {PROPS, "{\"observe\":[\"q:{}\"]}", "syntax is invalid: q:{}"},
    {PROPS, "{\"observe\":[\"{1a}\"]}", "syntax is invalid: {1a}"},
    {PROPS, "{\"observe\":[\"a}\"]}", "syntax is invalid: a}"},
    {PROPS, "{\"observe\":[\"a{\"]}", "syntax is invalid: a{"},
    {PROPS, "{\"observe\":[\"{x\"]}", "syntax is invalid: {x"},
    {PROPS, "{\"observe\":[\"{ x}\"]}", "syntax is invalid: { x}"},
    {PROPS, "{\"observe\":[\"{x-y}\"]}", "syntax is invalid: {x-y}"},
    {PROPS, "{\"observe\":[\"{x}}\"]}", "syntax is invalid: {x}}"},
    {PROPS, "{\"observe\":[\"{x[0]}\"]}", "syntax is invalid: {x[0]}"},
    {PROPS, "{\"observe\":[\"{x|d}\"]}", "syntax is invalid: {x|d}"},
    {PROPS, "{\"observe\":[\"{\\u00e9}\"]}", "syntax is invalid: {\xc3\xa9}"},
    {PROPS, "{\"observe\":[\"ok:{x}\",\"a\\n{\"]}", "syntax is invalid: a?{"},
    {PROPS, "{\"observe\":[\"qq:{nope}\"]}",
     "unknown top-level argument: nope"},
    {PROPS, "{\"observe\":[\"qq:{x}:{Group_id}\"]}",
     "unknown top-level argument: Group_id"},
    {PROPS, "{\"observe\":[\"qq:{x}\"],\"publish\":[\"{x}{zz}\"]}",
     "unknown top-level argument: zz"},
    {NULL, "{\"observe\":[\"qq:{x}\"]}", "unknown top-level argument: x"},
    {"{}", "{\"publish\":[\"{group_id}\"]}",
     "unknown top-level argument: group_id"},
    {PROPS, "{\"observe\":[\" qq:fixed\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"qq:fixed \"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"\\tqq\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"scope\\nline\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"a\\u0000b\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"a\\u001fb\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"\\u3000x\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"x\\u00a0\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"x\\u0085\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"\\u2028x\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\"x\\u205f\"]}", "invalid MCP scope"},
    {PROPS, "{\"observe\":[\" \"]}", "invalid MCP scope"},
};

START_TEST(validation_errors)
{
    const struct bad_row *r = &bad_rows[_i];
    void *s = session_up();
    struct aur_error err;
    char sc[1024];
    int rc = validate(s, r->props, r->contract, sc, sizeof sc, &err);
    ck_assert_msg(rc == AUR_E_CATALOG, "row %d %s: rc %d", _i, r->contract,
                  rc);
    ck_assert_int_eq(err.code, AUR_E_CATALOG);
    ck_assert_msg(strstr(err.msg, r->needle) != NULL, "row %d: msg '%s'", _i,
                  err.msg);
    ck_assert_msg(strstr(err.msg, TOOL_ID) != NULL, "row %d: msg '%s'", _i,
                  err.msg);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    OPS->end_session(ST, s);
}
END_TEST

START_TEST(scope_length_limit_at_discovery)
{
    char contract[1200], sc[2048];
    struct aur_error err;
    void *s = session_up();
    char s256[300], s257[300], cjk[800];
    memset(s256, 's', 256);
    s256[256] = '\0';
    memset(s257, 's', 257);
    s257[257] = '\0';
    /* 256 three-byte code points: 768 bytes, still 256 code points */
    for (int i = 0; i < 256; i++)
        memcpy(cjk + 3 * i, "\xe4\xb8\x80", 3);
    cjk[768] = '\0';
    snprintf(contract, sizeof contract, "{\"observe\":[\"%s\"]}", s256);
    ck_assert_int_eq(validate(s, PROPS, contract, sc, sizeof sc, &err),
                     AUR_OK);
    snprintf(contract, sizeof contract, "{\"observe\":[\"%s\"]}", cjk);
    ck_assert_int_eq(validate(s, PROPS, contract, sc, sizeof sc, &err),
                     AUR_OK);
    snprintf(contract, sizeof contract, "{\"observe\":[\"%s\"]}", s257);
    ck_assert_int_eq(validate(s, PROPS, contract, sc, sizeof sc, &err),
                     AUR_E_CATALOG);
    ck_assert_ptr_nonnull(strstr(err.msg, "invalid MCP scope"));
    /* the message quotes at most a prefix of the template */
    ck_assert_ptr_nonnull(strstr(err.msg, "..."));
    OPS->end_session(ST, s);
}
END_TEST

struct good_row {
    const char *props;
    const char *contract; /* NULL = no _meta */
    const char *scopes;   /* the edited scopes object */
};

static const struct good_row good_rows[] = {
    {PROPS, NULL, "{\"observe\":" DFLT ",\"publish\":" DFLT "}"},
    {PROPS, "null", "{\"observe\":" DFLT ",\"publish\":" DFLT "}"},
    {PROPS, "{}", "{\"observe\":" DFLT ",\"publish\":" DFLT "}"},
    {NULL, "{}", "{\"observe\":" DFLT ",\"publish\":" DFLT "}"},
    {PROPS,
     "{\"observe\":[\"qq:group:{group_id}\",\"qq:private:{user_id}\"],"
     "\"publish\":[\"qq:group:{group_id}\"]}",
     "{\"observe\":[\"qq:group:{group_id}\",\"qq:private:{user_id}\"],"
     "\"publish\":[\"qq:group:{group_id}\"]}"},
    {PROPS, "{\"publish\":[\"fixed:1\"]}",
     "{\"observe\":" DFLT ",\"publish\":[\"fixed:1\"]}"},
    {PROPS, "{\"observe\":[\"{x}\"]}",
     "{\"observe\":[\"{x}\"],\"publish\":" DFLT "}"},
    /* fixed scopes: anything but the scope-rule faults is fine */
    {"{}", "{\"observe\":[\"a b\",\"\\u9891\\u9053:\\u4e00\",\"x\\u007fy\","
           "\"a\\u0085b\",\":\"]}",
     "{\"observe\":[\"a b\",\"\xe9\xa2\x91\xe9\x81\x93:\xe4\xb8\x80\","
     "\"x\x7fy\",\"a\xc2\x85" "b\",\":\"],\"publish\":" DFLT "}"},
    /* templates with placeholders are checked only when rendered */
    {PROPS, "{\"observe\":[\" {x}\",\"{x}\\n\"]}",
     "{\"observe\":[\" {x}\",\"{x}\\n\"],\"publish\":" DFLT "}"},
    /* an observe and a publish template may be equal */
    {PROPS, "{\"observe\":[\"a\"],\"publish\":[\"a\"]}",
     "{\"observe\":[\"a\"],\"publish\":[\"a\"]}"},
};

START_TEST(validation_accepts)
{
    const struct good_row *r = &good_rows[_i];
    void *s = session_up();
    struct aur_error err;
    char sc[2048];
    int rc = validate(s, r->props, r->contract, sc, sizeof sc, &err);
    ck_assert_msg(rc == AUR_OK, "row %d: rc %d %s", _i, rc, err.msg);
    ck_assert_str_eq(sc, r->scopes);
    OPS->end_session(ST, s);
}
END_TEST

START_TEST(non_object_tool_meta_means_defaults)
{
    struct json_object *tj = J("{\"name\":\"send\",\"inputSchema\":{\"type\":"
                               "\"object\"},\"_meta\":\"" KEY "\"}");
    struct json_object *sc = default_scopes();
    struct aur_error err;
    void *s = session_up();
    ck_assert_int_eq(OPS->validate_tool(ST, s, &REF, tj, sc, &err), AUR_OK);
    ck_assert_str_eq(T(sc), "{\"observe\":" DFLT ",\"publish\":" DFLT "}");
    json_object_put(tj);
    json_object_put(sc);
    OPS->end_session(ST, s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Result classification                                              */
/* ------------------------------------------------------------------ */

#define INVALID_META                                                         \
    "MCP tool contract result metadata is invalid; the effect of the call "  \
    "cannot be confirmed"

struct cls_row {
    const char *result;
    enum aur_outcome out;
    const char *msg;
};

static const struct cls_row cls_rows[] = {
    {"{\"content\":[]}", AUR_OUTCOME_UNSET, ""},
    {"{\"content\":[],\"isError\":false}", AUR_OUTCOME_UNSET, ""},
    {"{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":true}",
     AUR_OUTCOME_FAILED, ""},
    {"{\"content\":[],\"isError\":true,\"_meta\":{\"other/key\":1}}",
     AUR_OUTCOME_FAILED, ""},
    {"{\"content\":[],\"isError\":true,\"_meta\":\"x\"}", AUR_OUTCOME_FAILED,
     ""},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":{\"status\":\"unknown\"}}}",
     AUR_OUTCOME_UNKNOWN, ""},
    {"{\"content\":[],\"isError\":true,\"_meta\":{\"" KEY
     "\":{\"status\":\"unknown\"}}}",
     AUR_OUTCOME_UNKNOWN, ""},
    {"{\"content\":[],\"isError\":false,\"_meta\":{\"" KEY
     "\":{\"status\":\"unknown\"}}}",
     AUR_OUTCOME_UNKNOWN, ""},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":{}}}", AUR_OUTCOME_UNKNOWN,
     INVALID_META},
    {"{\"content\":[],\"isError\":true,\"_meta\":{\"" KEY
     "\":{\"status\":\"failed\"}}}",
     AUR_OUTCOME_UNKNOWN, INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY
     "\":{\"status\":\"unknown\",\"why\":1}}}",
     AUR_OUTCOME_UNKNOWN, INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":{\"status\":\"UNKNOWN\"}}}",
     AUR_OUTCOME_UNKNOWN, INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":{\"status\":\"unknown\\u0000\"}}}",
     AUR_OUTCOME_UNKNOWN, INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":{\"status\":[\"unknown\"]}}}",
     AUR_OUTCOME_UNKNOWN, INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":[]}}", AUR_OUTCOME_UNKNOWN,
     INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":null}}", AUR_OUTCOME_UNKNOWN,
     INVALID_META},
    {"{\"content\":[],\"_meta\":{\"" KEY "\":\"unknown\"}}",
     AUR_OUTCOME_UNKNOWN, INVALID_META},
};

START_TEST(classify_table)
{
    const struct cls_row *r = &cls_rows[_i];
    struct json_object *res = J(r->result);
    enum aur_outcome out = AUR_OUTCOME_UNSET;
    struct aur_error err;
    void *s = session_up();
    snprintf(err.msg, sizeof err.msg, "stale");
    ck_assert_int_eq(OPS->classify(ST, s, &REF, res, &out, &err), AUR_OK);
    ck_assert_msg(out == r->out, "row %d: outcome %d", _i, (int)out);
    ck_assert_str_eq(err.msg, r->msg);
    json_object_put(res);
    OPS->end_session(ST, s);
}
END_TEST

static Suite *unit_suite(void)
{
    Suite *s = suite_create("ext_tool_contract");
    TCase *neg = tcase_create("negotiation");
    TCase *val = tcase_create("validation");
    TCase *ren = tcase_create("rendering");
    TCase *cls = tcase_create("classify");
    TCase *all[] = {neg, val, ren, cls};
    for (size_t i = 0; i < 4; i++) {
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 30);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(neg, descriptor_is_an_extension);
    tcase_add_test(neg, init_needs_integer_text);
    tcase_add_test(neg, declare_caps_writes_version_1);
    tcase_add_loop_test(neg, negotiation_table, 0,
                        (int)(sizeof neg_rows / sizeof neg_rows[0]));
    tcase_add_test(neg, negotiation_without_caps_declines);
    tcase_add_loop_test(val, validation_errors, 0,
                        (int)(sizeof bad_rows / sizeof bad_rows[0]));
    tcase_add_test(val, scope_length_limit_at_discovery);
    tcase_add_loop_test(val, validation_accepts, 0,
                        (int)(sizeof good_rows / sizeof good_rows[0]));
    tcase_add_test(val, non_object_tool_meta_means_defaults);
    tc_render_tests(ren);
    tcase_add_loop_test(cls, classify_table, 0,
                        (int)(sizeof cls_rows / sizeof cls_rows[0]));
    return s;
}

int main(void) { return aur_check_main(unit_suite(), tc_host_suite()); }
