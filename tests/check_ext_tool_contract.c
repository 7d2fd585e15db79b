/*
 * check_ext_tool_contract.c - ext-tool-contract through its ABI: the
 * suite dlopens the built plugin and drives its hooks with a small test
 * host whose JSON services are the core's own (strict parser, exact big
 * integers).  Covers aurora-semantics §4.3 (negotiation), §6.2/§6.3
 * (template validation and rendering) and §7.3 (result classification).
 *
 * The integration half (the real host against the fixture server and the
 * SDK v2/v1 peers) is in check_ext_tool_contract_host.c; main() runs both.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aurora/aur_host.h>
#include <json-c/json.h>

#include "jsonx.h"

#define TC_SO AUR_TEST_BIN_DIR "/plugins/ext-tool-contract.so"
#define KEY "org.aurorabot/tool-contract"
#define PKG "org.test.tc"
#define TOOL_ID "aur.mcp." PKG ".send"

Suite *tc_host_suite(void); /* check_ext_tool_contract_host.c */

/* ------------------------------------------------------------------ */
/* Test host                                                          */
/* ------------------------------------------------------------------ */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[8192];

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
    AUR_PRINTF(3, 4);
static void t_log(struct aur_self *self, int level, const char *fmt, ...)
{
    va_list ap;
    size_t n;
    (void)self;
    (void)level;
    pthread_mutex_lock(&log_mu);
    n = strlen(log_buf);
    va_start(ap, fmt);
    if (n + 2 < sizeof log_buf) {
        vsnprintf(log_buf + n, sizeof log_buf - n - 1, fmt, ap);
        strcat(log_buf, "\n");
    }
    va_end(ap);
    pthread_mutex_unlock(&log_mu);
}

static int64_t t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *t_cfg_str(const struct aur_cfg *c, const char *k,
                             const char *d)
{
    (void)c;
    (void)k;
    return d;
}

static size_t t_cfg_count(const struct aur_cfg *c, const char *k)
{
    (void)c;
    (void)k;
    return 0;
}

static const char *t_cfg_str_at(const struct aur_cfg *c, const char *k,
                                size_t i)
{
    (void)c;
    (void)k;
    (void)i;
    return NULL;
}

static int t_cfg_int(const struct aur_cfg *c, const char *k, int64_t d,
                     int64_t *out, struct aur_error *err)
{
    (void)c;
    (void)k;
    (void)err;
    *out = d;
    return AUR_OK;
}

static int t_cfg_bool(const struct aur_cfg *c, const char *k, int d, int *out,
                      struct aur_error *err)
{
    (void)c;
    (void)k;
    (void)err;
    *out = d;
    return AUR_OK;
}

static int t_world_write(struct aur_self *self, const struct aur_commit *c,
                         struct aur_error *err)
{
    (void)self;
    (void)c;
    return aur_fail(err, AUR_E_STATE, 0, "no world in this test");
}

static int t_json_parse(const char *buf, size_t len, struct json_object **out,
                        struct aur_error *err)
{
    return aur__json_parse(buf, len, 128, out, err);
}

static const struct aur_host H = {
    .struct_size = sizeof(struct aur_host),
    .abi_version = AUR_ABI_VERSION,
    .log = t_log,
    .now_ms = t_now,
    .cfg_str = t_cfg_str,
    .cfg_count = t_cfg_count,
    .cfg_str_at = t_cfg_str_at,
    .cfg_int = t_cfg_int,
    .cfg_bool = t_cfg_bool,
    .world_write = t_world_write,
    .json_parse = t_json_parse,
    .json_integer_text = aur__json_integer_text,
};

static int self_tag;
static void *dl;
static const struct aur_plugin_desc *D;
static const struct aur_extension_ops *OPS;
static void *ST;

static const struct aur_app_info APP = {
    sizeof(struct aur_app_info), PKG, "stdio", "disabled", "2026-07-28", 1,
    (struct aur_self *)&self_tag,
};

static const struct aur_tool_ref REF = {sizeof(struct aur_tool_ref), TOOL_ID,
                                        "send"};

/* Parse with the host's strict parser; NULL text = NULL. */
static struct json_object *J(const char *text)
{
    struct json_object *v = NULL;
    struct aur_error err;
    if (!text)
        return NULL;
    ck_assert_msg(aur__json_parse(text, strlen(text), 128, &v, &err) == AUR_OK,
                  "bad fixture JSON %s: %s", text, err.msg);
    return v;
}

/* Compact text of v, in a static buffer (test thread only). */
static const char *T(struct json_object *v)
{
    static char buf[4096];
    char *s = aur__json_compact(v);
    snprintf(buf, sizeof buf, "%s", s ? s : "(null)");
    free(s);
    return buf;
}

static void up(void)
{
    struct aur_error err;
    aur_entry_fn *entry;
    dl = dlopen(TC_SO, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl != NULL, "dlopen %s: %s", TC_SO, dlerror());
    *(void **)&entry = dlsym(dl, AUR_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    D = entry(AUR_ABI_VERSION);
    ck_assert_ptr_nonnull(D);
    OPS = D->ops;
    ck_assert_int_eq(D->init(&H, (struct aur_self *)&self_tag, NULL, &ST,
                             &err),
                     AUR_OK);
}

static void down(void)
{
    if (D && ST)
        D->fini(ST);
    ST = NULL;
    D = NULL;
    OPS = NULL;
    if (dl)
        dlclose(dl);
    dl = NULL;
}

/* A session for a server that negotiated the contract. */
static void *session_up(void)
{
    struct json_object *caps =
        J("{\"extensions\":{\"" KEY "\":{\"version\":1}}}");
    struct aur_error err;
    void *s = NULL;
    ck_assert_int_eq(OPS->accept_server(ST, &APP, caps, &s, &err), AUR_OK);
    ck_assert_ptr_nonnull(s);
    json_object_put(caps);
    return s;
}

static struct json_object *default_scopes(void)
{
    return J("{\"observe\":[\"aurora:mcp:" PKG "\"],\"publish\":[\"aurora:mcp:"
             PKG "\"]}");
}

/* A tool with this inputSchema.properties (NULL = absent) and this value
 * under _meta[KEY] (NULL = no _meta at all). */
static struct json_object *tool(const char *props, const char *contract)
{
    char buf[8192];
    size_t o = (size_t)snprintf(buf, sizeof buf,
                                "{\"name\":\"send\",\"inputSchema\":{\"type\":"
                                "\"object\"");
    if (props)
        o += (size_t)snprintf(buf + o, sizeof buf - o, ",\"properties\":%s",
                              props);
    o += (size_t)snprintf(buf + o, sizeof buf - o, "}");
    if (contract)
        o += (size_t)snprintf(buf + o, sizeof buf - o,
                              ",\"_meta\":{\"" KEY "\":%s}", contract);
    ck_assert_uint_lt(o + 2, sizeof buf);
    snprintf(buf + o, sizeof buf - o, "}");
    return J(buf);
}

#define PROPS "{\"group_id\":{},\"user_id\":{},\"x\":{},\"y\":{}}"

/* validate_tool on a fresh session; returns rc, fills scopes text. */
static int validate(void *s, const char *props, const char *contract,
                    char *scopes_out, size_t size, struct aur_error *err)
{
    struct json_object *tj = tool(props, contract), *sc = default_scopes();
    int rc;
    aur_error_clear(err);
    rc = OPS->validate_tool(ST, s, &REF, tj, sc, err);
    if (scopes_out && snprintf(scopes_out, size, "%s", T(sc)) >= (int)size)
        ck_abort_msg("scopes text longer than %zu bytes", size);
    json_object_put(tj);
    json_object_put(sc);
    return rc;
}

static void setup(void)
{
    log_buf[0] = '\0';
    up();
}

static void teardown(void)
{
    down();
}

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

#define DFLT "[\"aurora:mcp:" PKG "\"]"

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
    /* fixed scopes: anything but the §1.5 faults is fine */
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
    /* §6.3's example */
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
    tcase_add_loop_test(ren, render_table, 0,
                        (int)(sizeof render_rows / sizeof render_rows[0]));
    tcase_add_test(ren, render_length_limits);
    tcase_add_test(ren, defaults_are_left_alone);
    tcase_add_test(ren, revalidation_replaces_the_contract);
    tcase_add_test(ren, many_tools_in_one_session);
    tcase_add_test(ren, concurrent_rendering);
    tcase_add_loop_test(cls, classify_table, 0,
                        (int)(sizeof cls_rows / sizeof cls_rows[0]));
    return s;
}

int main(void) { return aur_check_main(unit_suite(), tc_host_suite()); }
