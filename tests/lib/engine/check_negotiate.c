/*
 * check_negotiate.c - protocol negotiation (lib/engine/negotiate.c)
 * through aur__app_connect against a scripted fake transport
 * (check_negotiate_fake.c): revision 2026-07-28 accepted from the
 * server/discover probe, every answer that falls back to the legacy
 * initialize handshake on the same connection, the -32022 retry, what
 * each era sends (the _meta envelope, initialize's params), capability
 * parsing on both eras, extensions declaring and accepting capabilities,
 * the event modes bound to an era, and aur__app_call on a modern
 * connection.  check_negotiate_fail.c covers reopen, outages, version
 * mismatches, malformed replies and deadlines.  This file holds main().
 */
#include "check_negotiate_fake.h"

#include "log.h"
#include "support/check_main.h"

#define MODERN "2026-07-28"
#define DISCOVER_MODERN                                                       \
    "\"result\":{\"supportedVersions\":[\"2025-11-25\",\"" MODERN "\"],"      \
    "\"capabilities\":{\"tools\":{\"listChanged\":true}}}"
#define INIT_OK(v)                                                            \
    "\"result\":{\"protocolVersion\":\"" v "\",\"capabilities\":"             \
    "{\"logging\":{}},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}"
#define ERR(code) "\"error\":{\"code\":" #code ",\"message\":\"m\"}"

static const char *str_at(struct json_object *o)
{
    ck_assert_msg(json_object_is_type(o, json_type_string), "not a string");
    return json_object_get_string(o);
}

/* ---- modern ------------------------------------------------------ */

START_TEST(modern_accepted)
{
    static const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", DISCOVER_MODERN)};
    struct json_object *m, *meta;
    struct aur_error err;

    nf_setup(s, 1, true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_OK);
    ck_assert(nf.app.modern);
    ck_assert_str_eq(nf.app.version, MODERN);
    ck_assert(json_object_get_boolean(
        nf_get(nf.app.server_caps, "tools", "listChanged", NULL)));
    ck_assert_uint_eq(nf_nsent(), 1);
    m = nf_sent(0);
    ck_assert_str_eq(str_at(nf_get(m, "id", NULL)), "aur-probe-1");
    meta = nf_get(m, "params", "_meta", NULL);
    ck_assert_str_eq(
        str_at(nf_get(meta, "io.modelcontextprotocol/protocolVersion", NULL)),
        MODERN);
    ck_assert_str_eq(str_at(nf_get(meta, "io.modelcontextprotocol/clientInfo",
                                   "name", NULL)),
                     "aurora-mcp");
    ck_assert(json_object_is_type(
        nf_get(meta, "io.modelcontextprotocol/clientCapabilities", NULL),
        json_type_object));
    json_object_put(m);
    ck_assert_int_eq(nf.set_protocol_calls, 1);
    ck_assert_int_eq(nf.proto_modern, 1);
    ck_assert_str_eq(nf.proto_version, MODERN);
    ck_assert_ptr_nonnull(nf.app.envelope_text);
    ck_assert_ptr_nonnull(strstr(nf.app.envelope_text,
                                 "\"io.modelcontextprotocol/protocolVersion\":"
                                 "\"" MODERN "\""));
    ck_assert_int_eq(nf.reopens, 0);
    nf_teardown();
}
END_TEST

/* -32022 listing our version: probe once more, and accept. */
START_TEST(retry_after_32022_listing_modern)
{
    static const struct nf_step s[] = {
        NF_STEP_REPLY(
            "server/discover",
            "\"error\":{\"code\":-32022,\"message\":\"Unsupported protocol "
            "version\",\"data\":{\"supported\":[\"" MODERN "\"]}}"),
        NF_STEP_REPLY("server/discover", DISCOVER_MODERN)};
    struct json_object *m;
    struct aur_error err;

    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_OK);
    ck_assert(nf.app.modern);
    ck_assert_uint_eq(nf_nsent(), 2);
    m = nf_sent(1);
    ck_assert_str_eq(str_at(nf_get(m, "id", NULL)), "aur-probe-2");
    json_object_put(m);
    nf_teardown();
}
END_TEST

/* Modern requests carry the envelope; a result must be an object of
 * resultType complete (or none); an error keeps the server's object
 * and code, its message made printable. */
START_TEST(modern_call_results)
{
    static const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", DISCOVER_MODERN),
        NF_STEP_REPLY("tools/list",
                      "\"result\":{\"tools\":[],\"resultType\":\"complete\"}"),
        NF_STEP_REPLY("tools/list", "\"result\":{\"resultType\":\"task\"}"),
        NF_STEP_REPLY("tools/list", "\"error\":{\"code\":-32000,\"message\":"
                                    "\"bad\\u0001news\\nhere\"}"),
        NF_STEP_REPLY("tools/list", "\"result\":[]"),
    };
    struct json_object *res = NULL, *m;
    struct aur_error err;

    nf_setup(s, AUR__ARRAY_LEN(s), true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_OK);
    aur_deadline dl = aur__now_ms() + 2000;
    ck_assert_int_eq(
        aur__app_call(&nf.app, "tools/list", NULL, NULL, dl, &res, NULL, &err),
        AUR_OK);
    ck_assert(
        json_object_is_type(nf_get(res, "tools", NULL), json_type_array));
    json_object_put(res);
    m = nf_sent(1);
    ck_assert(json_object_is_type(nf_get(m, "id", NULL), json_type_int));
    ck_assert_str_eq(
        str_at(nf_get(m, "params", "_meta",
                      "io.modelcontextprotocol/protocolVersion", NULL)),
        MODERN);
    json_object_put(m);

    res = NULL;
    ck_assert_int_eq(
        aur__app_call(&nf.app, "tools/list", NULL, NULL, dl, &res, NULL, &err),
        AUR_E_PROTOCOL);
    ck_assert_ptr_null(res);
    ck_assert_int_eq(
        aur__app_call(&nf.app, "tools/list", NULL, NULL, dl, &res, NULL, &err),
        AUR_E_RPC);
    ck_assert_int_eq(err.detail, -32000);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad news here"));
    ck_assert_int_eq(json_object_get_int(nf_get(res, "code", NULL)), -32000);
    json_object_put(res);
    res = NULL;
    ck_assert_int_eq(
        aur__app_call(&nf.app, "tools/list", NULL, NULL, dl, &res, NULL, &err),
        AUR_E_PROTOCOL);
    ck_assert_ptr_null(res);
    nf_teardown();
}
END_TEST

/* ---- legacy fallback on the same connection ----------------------- */

/* Answers to the probe that are era evidence for a legacy server: the
 * handshake follows on the same connection (no reopen). */
static const struct {
    bool stream;
    struct nf_step discover;
} legacy_rows[] = {
    {true, NF_STEP_REPLY("server/discover", "\"result\":{}")},
    {true,
     NF_STEP_REPLY("server/discover",
                   "\"result\":{\"supportedVersions\":[\"2025-06-18\"]}")},
    {true, NF_STEP_REPLY("server/discover",
                         "\"result\":{\"supportedVersions\":\"" MODERN "\"}")},
    {true, NF_STEP_REPLY("server/discover",
                         "\"result\":{\"supportedVersions\":[\"" MODERN
                         "\\u0000\"]}")},
    {true, NF_STEP_REPLY("server/discover", ERR(-32601))},
    {true, NF_STEP_REPLY("server/discover", ERR(-32602))},
    {true,
     NF_STEP_REPLY("server/discover",
                   "\"error\":{\"code\":-32022,\"message\":\"m\",\"data\":"
                   "{\"supported\":[\"2025-06-18\"]}}")},
    {true,
     NF_STEP_REPLY("server/discover",
                   "\"error\":{\"code\":-32022,\"message\":\"m\",\"data\":"
                   "{\"supported\":[\"2024-10-07\"]}}")},
    {true, NF_STEP_REPLY("server/discover", ERR(-32022))},
    {false, NF_STEP_REPLY("server/discover", "\"result\":{}")},
    {false, NF_STEP_END("server/discover", NULL, AUR_E_PROTOCOL, 404, 1)},
    {false, NF_STEP_END("server/discover", NULL, AUR_E_PROTOCOL, 400, 1)},
    {false, NF_STEP_END("server/discover", NULL, AUR_E_IO, 405, 1)},
    {false,
     NF_STEP_END("server/discover", "{\"code\":-32600,\"message\":\"m\"}",
                 AUR_E_RPC, 400, 1)},
};

START_TEST(legacy_fallback)
{
    const struct nf_step s[] = {
        legacy_rows[_i].discover,
        NF_STEP_REPLY("initialize", INIT_OK("2025-06-18")),
    };
    struct json_object *m, *p;
    struct aur_error err;

    nf_setup(s, 2, legacy_rows[_i].stream, true);
    ck_assert_msg(nf_connect(5000, &err) == AUR_OK, "row %d: %s", _i, err.msg);
    ck_assert(!nf.app.modern);
    ck_assert_str_eq(nf.app.version, "2025-06-18");
    ck_assert_ptr_nonnull(nf_get(nf.app.server_caps, "logging", NULL));
    ck_assert_int_eq(nf.reopens, 0);
    ck_assert_uint_eq(nf_nsent(), 3);
    nf_assert_method(0, "server/discover");
    nf_assert_method(1, "initialize");
    nf_assert_method(2, "notifications/initialized");
    m = nf_sent(1);
    ck_assert(json_object_is_type(nf_get(m, "id", NULL), json_type_int));
    p = nf_get(m, "params", NULL);
    ck_assert_str_eq(str_at(nf_get(p, "protocolVersion", NULL)), "2025-11-25");
    ck_assert(json_object_is_type(nf_get(p, "capabilities", NULL),
                                  json_type_object));
    ck_assert_str_eq(str_at(nf_get(p, "clientInfo", "name", NULL)),
                     "aurora-mcp");
    ck_assert_ptr_null(nf_get(p, "_meta", NULL));
    json_object_put(m);
    m = nf_sent(2);
    ck_assert_ptr_null(nf_get(m, "id", NULL));
    json_object_put(m);
    ck_assert_int_eq(nf.proto_modern, 0);
    ck_assert_str_eq(nf.proto_version, "2025-06-18");
    ck_assert_ptr_null(nf.app.envelope_text);
    nf_teardown();
}
END_TEST

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18",
                                              "2025-03-26", "2024-11-05"};

START_TEST(legacy_versions_accepted)
{
    char body[256];
    const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", ERR(-32601)),
        NF_STEP_REPLY("initialize", body),
    };
    struct aur_error err;

    snprintf(body, sizeof body, "\"result\":{\"protocolVersion\":\"%s\"}",
             legacy_versions[_i]);
    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_OK);
    ck_assert_str_eq(nf.app.version, legacy_versions[_i]);
    ck_assert(!nf.app.modern);
    nf_teardown();
}
END_TEST

/* Capabilities that are missing or not an object read as {}. */
static const char *const caps_bodies[] = {
    "\"result\":{\"supportedVersions\":[\"" MODERN "\"]}",
    "\"result\":{\"supportedVersions\":[\"" MODERN "\"],\"capabilities\":5}",
    "\"result\":{\"supportedVersions\":[\"" MODERN "\"],\"capabilities\":[]}",
    "\"result\":{\"protocolVersion\":\"2025-06-18\"}",
    "\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":\"x\"}",
};

START_TEST(capabilities_default_to_empty)
{
    bool legacy = strstr(caps_bodies[_i], "protocolVersion") != NULL;
    const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover",
                      legacy ? "\"result\":{}" : caps_bodies[_i]),
        NF_STEP_REPLY("initialize", caps_bodies[_i]),
    };
    struct aur_error err;

    nf_setup(s, legacy ? 2 : 1, true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_OK);
    ck_assert_int_eq(nf.app.modern, !legacy);
    ck_assert(json_object_is_type(nf.app.server_caps, json_type_object));
    ck_assert_int_eq(json_object_object_length(nf.app.server_caps), 0);
    nf_teardown();
}
END_TEST

/* ---- extensions and event modes ------------------------------------ */

struct ext_state {
    int declare_rc, accept_rc;
    int accepted;
    int seen_modern;
    char seen_version[16];
    bool saw_server_ext;
};
static int session_marker;

static int ext_declare(void *st, const struct aur_app_info *app,
                       struct json_object *caps, struct aur_error *err)
{
    struct ext_state *x = st;
    struct json_object *o = json_object_new_object();
    if (x->declare_rc < 0) {
        json_object_put(o);
        return aur_fail(err, x->declare_rc, 0, "declare refused");
    }
    json_object_object_add(o, "version", json_object_new_int(1));
    json_object_object_add(caps, "org.test/x", o);
    return AUR_OK;
}

static int ext_accept(void *st, const struct aur_app_info *app,
                      struct json_object *server_caps, void **session,
                      struct aur_error *err)
{
    struct ext_state *x = st;
    x->accepted++;
    x->seen_modern = app->modern;
    snprintf(x->seen_version, sizeof x->seen_version, "%s",
             app->version ? app->version : "");
    x->saw_server_ext =
        nf_get(server_caps, "extensions", "org.test/x", NULL) != NULL;
    *session = &session_marker;
    if (x->accept_rc < 0)
        return aur_fail(err, x->accept_rc, 0, "accept refused");
    return x->accept_rc;
}

static const struct aur_extension_ops ext_ops = {
    .struct_size = sizeof(struct aur_extension_ops),
    .cap_key = "org.test/x",
    .declare_caps = ext_declare,
    .accept_server = ext_accept,
};

/* rows: {modern, accept_rc, connect rc, active} */
static const struct {
    bool modern;
    int accept_rc, want_rc;
    bool active;
} ext_rows[] = {
    {true, AUR_OK, AUR_OK, true},
    {false, AUR_OK, AUR_OK, true},
    {true, AUR_DECLINE, AUR_OK, false},
    {true, AUR_E_CONFIG, AUR_E_CONFIG, false},
};

START_TEST(extension_capabilities)
{
    const char *caps = "\"capabilities\":{\"extensions\":{\"org.test/x\":{}}}";
    char disc[256], init[256];
    const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", disc),
        NF_STEP_REPLY("initialize", init),
    };
    struct ext_state x = {.accept_rc = ext_rows[_i].accept_rc};
    struct json_object *m, *e;
    struct aur_error err;

    if (ext_rows[_i].modern)
        snprintf(disc, sizeof disc,
                 "\"result\":{\"supportedVersions\":[\"" MODERN "\"],%s}",
                 caps);
    else
        snprintf(disc, sizeof disc, "\"result\":{}");
    snprintf(init, sizeof init,
             "\"result\":{\"protocolVersion\":\"2025-06-18\",%s}", caps);
    nf_setup(s, 2, true, true);
    nf_add_ext(&ext_ops, &x);
    ck_assert_int_eq(nf_connect(5000, &err), ext_rows[_i].want_rc);
    ck_assert_int_eq(x.accepted, 1);
    ck_assert(x.saw_server_ext);
    ck_assert_int_eq(x.seen_modern, ext_rows[_i].modern);
    ck_assert_str_eq(x.seen_version,
                     ext_rows[_i].modern ? MODERN : "2025-06-18");
    ck_assert_int_eq(nf.app.ext[0].active, ext_rows[_i].active);
    if (ext_rows[_i].want_rc == AUR_OK)
        ck_assert_ptr_eq(nf.app.ext[0].session, &session_marker);
    /* What we declared travels in the era's own place. */
    m = nf_sent(ext_rows[_i].modern ? 0 : 1);
    e = ext_rows[_i].modern
            ? nf_get(m, "params", "_meta",
                     "io.modelcontextprotocol/clientCapabilities", NULL)
            : nf_get(m, "params", "capabilities", NULL);
    ck_assert_int_eq(json_object_get_int(nf_get(e, "extensions", "org.test/x",
                                                "version", NULL)),
                     1);
    json_object_put(m);
    nf_teardown();
}
END_TEST

START_TEST(extension_declare_failure_opens_nothing)
{
    struct ext_state x = {.declare_rc = AUR_E_PLUGIN};
    struct aur_error err;

    nf_setup(NULL, 0, true, true);
    nf_add_ext(&ext_ops, &x);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_E_PLUGIN);
    ck_assert_ptr_null(nf.app.rpc);
    ck_assert_uint_eq(nf_nsent(), 0);
    ck_assert_int_eq(x.accepted, 0);
    nf_teardown();
}
END_TEST

/* docs/protocol.md: world_events only with 2026-07-28, legacy_aurora_event only with
 * the handshake era. */
static const struct {
    enum aur__event_mode mode;
    bool modern;
    int want;
} mode_rows[] = {
    {AUR__EV_WORLD, true, AUR_OK},
    {AUR__EV_WORLD, false, AUR_E_NEGOTIATION},
    {AUR__EV_LEGACY, false, AUR_OK},
    {AUR__EV_LEGACY, true, AUR_E_NEGOTIATION},
    {AUR__EV_DISABLED, false, AUR_OK},
};

START_TEST(event_mode_bound_to_era)
{
    const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", mode_rows[_i].modern
                                             ? DISCOVER_MODERN
                                             : "\"result\":{}"),
        NF_STEP_REPLY("initialize", INIT_OK("2025-06-18")),
    };
    struct aur_error err;

    nf_setup(s, 2, true, true);
    nf.cfg.event_mode = mode_rows[_i].mode;
    ck_assert_int_eq(nf_connect(5000, &err), mode_rows[_i].want);
    nf_teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("negotiate");
    TCase *t = tcase_create("modern");

    aur__log_set_level(NULL, AUR_LOG_ERROR);
    tcase_add_test(t, modern_accepted);
    tcase_add_test(t, retry_after_32022_listing_modern);
    tcase_add_test(t, modern_call_results);
    suite_add_tcase(s, t);

    t = tcase_create("legacy");
    tcase_add_loop_test(t, legacy_fallback, 0,
                        (int)AUR__ARRAY_LEN(legacy_rows));
    tcase_add_loop_test(t, legacy_versions_accepted, 0,
                        (int)AUR__ARRAY_LEN(legacy_versions));
    tcase_add_loop_test(t, capabilities_default_to_empty, 0,
                        (int)AUR__ARRAY_LEN(caps_bodies));
    suite_add_tcase(s, t);

    t = tcase_create("extensions");
    tcase_add_loop_test(t, extension_capabilities, 0,
                        (int)AUR__ARRAY_LEN(ext_rows));
    tcase_add_test(t, extension_declare_failure_opens_nothing);
    tcase_add_loop_test(t, event_mode_bound_to_era, 0,
                        (int)AUR__ARRAY_LEN(mode_rows));
    suite_add_tcase(s, t);

    negotiate_add_fail(s);
    return aur_check_main(s, NULL);
}
