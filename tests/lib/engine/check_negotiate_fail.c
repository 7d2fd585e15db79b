/*
 * check_negotiate_fail.c - negotiation (lib/engine/negotiate.c) when
 * the probe gets no usable answer: silence or EOF on a stream transport
 * (half the deadline, then a fresh connection through reopen, or a
 * failure without it), outages that are no era evidence (HTTP auth and
 * 5xx, network errors, a broken budget, silence on request/response
 * transports), incompatible versions on either era, malformed replies
 * (failing at once, not at the deadline), the old HTTP+SSE transport,
 * the App's one deadline, and a legacy handshake whose connection ends
 * (reopened once).
 */
#include "check_negotiate_fake.h"

#define MODERN "2026-07-28"
#define INIT_OK "\"result\":{\"protocolVersion\":\"2025-06-18\"}"

static int64_t ms_since(int64_t t0)
{
    return aur__now_ms() - t0;
}

/* ---- stream transports: silence or EOF means legacy --------------- */

/* The probe costs half of what is left (at most PROBE_MAX_MS); the
 * handshake then runs on a fresh connection. */
START_TEST(stream_silent_probe_reopens)
{
    static const struct nf_step s[] = {
        NF_STEP_SILENT("server/discover"),
        NF_STEP_REPLY("initialize", INIT_OK),
    };
    struct aur_error err;
    int64_t t0 = aur__now_ms(), took;

    /* 2 s: the probe gets 1 s; the whole deadline would be 2 s. */
    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(2000, &err), AUR_OK);
    took = ms_since(t0);
    ck_assert_int_ge(took, 950);
    ck_assert_int_lt(took, 1800);
    ck_assert(!nf.app.modern);
    ck_assert_str_eq(nf.app.version, "2025-06-18");
    ck_assert_int_eq(nf.reopens, 1);
    ck_assert_uint_eq(nf.sent_at_reopen, 1); /* between probe and handshake */
    nf_assert_method(1, "initialize");
    nf_teardown();
}
END_TEST

START_TEST(stream_eof_at_probe_reopens)
{
    static const struct nf_step s[] = {
        NF_STEP_CLOSE("server/discover", 0),
        NF_STEP_REPLY("initialize", INIT_OK),
    };
    struct aur_error err;
    int64_t t0 = aur__now_ms();

    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_OK);
    ck_assert_int_lt(ms_since(t0), 1000);
    ck_assert_int_eq(nf.reopens, 1);
    ck_assert_str_eq(nf.app.version, "2025-06-18");
    nf_teardown();
}
END_TEST

/* Without reopen a connection that is only silent is kept: the
 * handshake runs on it (mcp-wire.md allows it), after the same probe
 * window. */
START_TEST(stream_silent_probe_without_reopen_initializes_in_place)
{
    static const struct nf_step s[] = {
        NF_STEP_SILENT("server/discover"),
        NF_STEP_REPLY("initialize", INIT_OK),
    };
    struct aur_error err;

    nf_setup(s, 2, true, false);
    ck_assert_msg(nf_connect(2000, &err) == AUR_OK, "%s", err.msg);
    ck_assert(!nf.app.modern);
    ck_assert_str_eq(nf.app.version, "2025-06-18");
    ck_assert_int_eq(nf.reopens, 0);
    nf_assert_method(1, "initialize");
    nf_assert_method(2, "notifications/initialized");
    nf_teardown();
}
END_TEST

/* ... but one that ended cannot be used again: the App fails saying
 * why, without a handshake. */
START_TEST(stream_eof_at_probe_without_reopen_fails)
{
    static const struct nf_step s[] = {NF_STEP_CLOSE("server/discover", 0)};
    struct aur_error err;

    nf_setup(s, 1, true, false);
    ck_assert_int_eq(nf_connect(2000, &err), AUR_E_STATE);
    ck_assert_msg(strstr(err.msg, "cannot reopen"), "%s", err.msg);
    ck_assert_uint_eq(nf_nsent(), 1);
    nf_teardown();
}
END_TEST

/* ---- no era evidence: the App fails in connect --------------------- */

/* On request/response transports silence is an outage, and the probe
 * has the whole deadline. */
START_TEST(silence_without_stream_is_outage)
{
    static const struct nf_step s[] = {NF_STEP_SILENT("server/discover")};
    struct aur_error err;
    int64_t t0 = aur__now_ms();

    nf_setup(s, 1, false, true);
    ck_assert_int_eq(nf_connect(300, &err), AUR_E_TIMEOUT);
    ck_assert_int_ge(ms_since(t0), 300);
    ck_assert_uint_eq(nf_nsent(), 1);
    ck_assert_int_eq(nf.reopens, 0);
    nf_teardown();
}
END_TEST

#define E32022(list)                                                          \
    "\"error\":{\"code\":-32022,\"message\":\"m\",\"data\":{"                 \
    "\"supported\":" list "}}"

static const struct {
    bool stream;
    struct nf_step discover;
    int want_rc, want_detail;
} outage_rows[] = {
    {false, NF_STEP_END("server/discover", NULL, AUR_E_IO, 401, 1), AUR_E_IO,
     401},
    {false, NF_STEP_END("server/discover", NULL, AUR_E_IO, 403, 1), AUR_E_IO,
     403},
    {false, NF_STEP_END("server/discover", NULL, AUR_E_IO, 500, 1), AUR_E_IO,
     500},
    {false, NF_STEP_END("server/discover", NULL, AUR_E_IO, 0, 0), AUR_E_IO, 0},
    {false,
     NF_STEP_END("server/discover", "{\"code\":-32603,\"message\":\"m\"}",
                 AUR_E_RPC, 503, 1),
     AUR_E_NEGOTIATION, 503},
    {false,
     NF_STEP_END("server/discover", "{\"code\":-32001,\"message\":\"m\"}",
                 AUR_E_RPC, 401, 1),
     AUR_E_NEGOTIATION, 401},
    {false, NF_STEP_CLOSE("server/discover", 0), AUR_E_CLOSED, 0},
    /* A budget the server broke is no era evidence, even on a stream. */
    {true, NF_STEP_CLOSE("server/discover", AUR_E_LIMIT), AUR_E_CLOSED,
     AUR_E_LIMIT},
    /* The transport's own end (not silence) is no evidence either. */
    {true, NF_STEP_END("server/discover", NULL, AUR_E_TIMEOUT, 0, 1),
     AUR_E_TIMEOUT, 0},
    /* Version mismatch: a modern server without ours. */
    {true, NF_STEP_REPLY("server/discover", E32022("[\"2027-01-01\"]")),
     AUR_E_NEGOTIATION, -32022},
    {false,
     NF_STEP_REPLY("server/discover",
                   E32022("[\"2024-10-07\",\"2027-01-01\"]")),
     AUR_E_NEGOTIATION, -32022},
};

START_TEST(outage_fails_connect)
{
    const struct nf_step s[] = {outage_rows[_i].discover};
    struct aur_error err;

    nf_setup(s, 1, outage_rows[_i].stream, true);
    ck_assert_int_eq(nf_connect(3000, &err), outage_rows[_i].want_rc);
    ck_assert_int_eq(err.code, outage_rows[_i].want_rc);
    ck_assert_int_eq(err.detail, outage_rows[_i].want_detail);
    ck_assert_uint_eq(nf_nsent(), 1); /* no initialize */
    ck_assert_int_eq(nf.reopens, 0);
    ck_assert(!nf.app.modern);
    nf_teardown();
}
END_TEST

/* Listed as supported, refused twice: the server contradicts itself. */
START_TEST(rejected_twice_fails)
{
    static const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", E32022("[\"" MODERN "\"]")),
        NF_STEP_REPLY("server/discover", E32022("[\"" MODERN "\"]")),
    };
    struct aur_error err;

    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(3000, &err), AUR_E_NEGOTIATION);
    ck_assert_int_eq(err.detail, -32022);
    ck_assert_uint_eq(nf_nsent(), 2);
    nf_teardown();
}
END_TEST

/* ---- the legacy handshake ------------------------------------------ */

/* initialize must answer a legacy version we know, else no
 * notifications/initialized. */
static const char *const bad_versions[] = {
    "\"result\":{\"protocolVersion\":\"2030-01-01\"}",
    "\"result\":{\"protocolVersion\":\"" MODERN "\"}",
    "\"result\":{\"protocolVersion\":\"2025-06-18\\u0000x\"}",
    "\"result\":{\"protocolVersion\":\"\"}",
    "\"result\":{\"protocolVersion\":20250618}",
    "\"result\":{}",
};

START_TEST(initialize_version_mismatch)
{
    const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", "\"result\":{}"),
        NF_STEP_REPLY("initialize", bad_versions[_i]),
    };
    struct aur_error err;

    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(3000, &err), AUR_E_NEGOTIATION);
    ck_assert_uint_eq(nf_nsent(), 2);
    nf_teardown();
}
END_TEST

START_TEST(initialize_error_response)
{
    static const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", "\"result\":{}"),
        NF_STEP_REPLY(
            "initialize",
            "\"error\":{\"code\":-32603,\"message\":\"bad\\u0001thing\"}"),
    };
    struct aur_error err;

    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(3000, &err), AUR_E_RPC);
    ck_assert_int_eq(err.detail, -32603);
    ck_assert_ptr_nonnull(strstr(err.msg, "initialize"));
    ck_assert_ptr_nonnull(strstr(err.msg, "bad thing"));
    ck_assert_uint_eq(nf_nsent(), 2);
    nf_teardown();
}
END_TEST

/* No JSON-RPC answer to either era, only 400/404/405: the deprecated
 * HTTP+SSE transport, named as such; another status is just the end. */
START_TEST(old_http_sse_transport_named)
{
    const struct nf_step s[] = {
        NF_STEP_END("server/discover", NULL, AUR_E_PROTOCOL, 404, 1),
        NF_STEP_END("initialize", NULL, AUR_E_PROTOCOL, _i ? 502 : 405, 1),
    };
    struct aur_error err;
    int rc;

    nf_setup(s, 2, false, true);
    rc = nf_connect(3000, &err);
    if (_i == 0) {
        ck_assert_int_eq(rc, AUR_E_NEGOTIATION);
        ck_assert_int_eq(err.detail, 405);
        ck_assert_ptr_nonnull(strstr(err.msg, "HTTP+SSE"));
    } else {
        ck_assert_int_eq(rc, AUR_E_PROTOCOL);
        ck_assert_ptr_null(strstr(err.msg, "HTTP+SSE"));
    }
    nf_teardown();
}
END_TEST

/* The handshake's connection ended: one fresh connection, once. */
START_TEST(initialize_eof_reopens_once)
{
    const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", "\"result\":{}"),
        NF_STEP_CLOSE("initialize", 0),
        {"initialize", _i ? NF_CLOSE : NF_REPLY, _i ? NULL : INIT_OK, 0, 0, 0},
    };
    struct aur_error err;

    nf_setup(s, 3, true, true);
    ck_assert_int_eq(nf_connect(3000, &err), _i ? AUR_E_CLOSED : AUR_OK);
    ck_assert_int_eq(nf.reopens, 1);
    ck_assert_uint_eq(nf.sent_at_reopen, 2);
    nf_teardown();
}
END_TEST

/* ---- malformed replies and the deadline ----------------------------- */

/* A reply the layer or the probe cannot use ends the App's connect at
 * once: neither the deadline nor the fallback is spent on it. */
static const struct {
    const char *method;
    struct nf_step step;
} malformed_rows[] = {
    {"server/discover", NF_STEP_REPLY("server/discover", "\"result\":[]")},
    {"server/discover", NF_STEP_REPLY("server/discover", "\"result\":\"x\"")},
    {"server/discover",
     NF_STEP_TEXT("server/discover",
                  "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{")},
    {"server/discover",
     NF_STEP_TEXT("server/discover",
                  "{\"jsonrpc\":\"1.0\",\"id\":@,\"result\":{}}")},
    {"server/discover",
     NF_STEP_TEXT(
         "server/discover",
         "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{},\"error\":{}}")},
    {"initialize", NF_STEP_REPLY("initialize", "\"result\":[]")},
    {"initialize",
     NF_STEP_TEXT("initialize",
                  "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{\"a\":}")},
};

START_TEST(malformed_reply_fails_at_once)
{
    bool at_init = strcmp(malformed_rows[_i].method, "initialize") == 0;
    const struct nf_step s[] = {
        at_init
            ? (struct nf_step)NF_STEP_REPLY("server/discover", "\"result\":{}")
            : malformed_rows[_i].step,
        malformed_rows[_i].step,
    };
    struct aur_error err;
    int64_t t0 = aur__now_ms();

    nf_setup(s, at_init ? 2 : 1, true, true);
    ck_assert_int_eq(nf_connect(5000, &err), AUR_E_PROTOCOL);
    ck_assert_int_lt(ms_since(t0), 1000);
    ck_assert_uint_eq(nf_nsent(), at_init ? 2 : 1);
    ck_assert_int_eq(nf.reopens, 0);
    nf_teardown();
}
END_TEST

/* The App's one deadline bounds the whole negotiation. */
START_TEST(deadline_bounds_handshake)
{
    static const struct nf_step s[] = {
        NF_STEP_REPLY("server/discover", "\"result\":{}"),
        NF_STEP_SILENT("initialize"),
    };
    struct aur_error err;
    int64_t t0 = aur__now_ms(), took;

    nf_setup(s, 2, true, true);
    ck_assert_int_eq(nf_connect(300, &err), AUR_E_TIMEOUT);
    took = ms_since(t0);
    ck_assert_int_ge(took, 300);
    ck_assert_int_lt(took, 2000);
    nf_teardown();
}
END_TEST

void negotiate_add_fail(Suite *s)
{
    TCase *t = tcase_create("fallback");
    tcase_add_test(t, stream_silent_probe_reopens);
    tcase_add_test(t, stream_eof_at_probe_reopens);
    tcase_add_test(t, stream_silent_probe_without_reopen_initializes_in_place);
    tcase_add_test(t, stream_eof_at_probe_without_reopen_fails);
    tcase_add_test(t, silence_without_stream_is_outage);
    tcase_add_loop_test(t, outage_fails_connect, 0,
                        (int)AUR__ARRAY_LEN(outage_rows));
    tcase_add_test(t, rejected_twice_fails);
    suite_add_tcase(s, t);

    t = tcase_create("handshake");
    tcase_add_loop_test(t, initialize_version_mismatch, 0,
                        (int)AUR__ARRAY_LEN(bad_versions));
    tcase_add_test(t, initialize_error_response);
    tcase_add_loop_test(t, old_http_sse_transport_named, 0, 2);
    tcase_add_loop_test(t, initialize_eof_reopens_once, 0, 2);
    tcase_add_loop_test(t, malformed_reply_fails_at_once, 0,
                        (int)AUR__ARRAY_LEN(malformed_rows));
    tcase_add_test(t, deadline_bounds_handshake);
    suite_add_tcase(s, t);
}
