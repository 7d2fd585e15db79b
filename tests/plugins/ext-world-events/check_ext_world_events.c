/*
 * check_ext_world_events.c - unit tests of plugins/ext-world-events
 * through its aur_extension_ops and the in-memory test host of
 * we_host.c: declaration, negotiation, validation (docs/protocol.md,
 * org.aurorabot/world-events), the commit
 * mapping and idempotency, routing.  The writer's batching is in
 * check_ext_world_events_batch.c, in the same binary.
 */
#define _GNU_SOURCE 1

#include "we_host.h"
#include "support/check_main.h"

#include <check.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Suite *we_batch_suite(void);

/* ---------------------------------------------------------------- */
/* Descriptor and declaration                                       */
/* ---------------------------------------------------------------- */

START_TEST(descriptor_shape)
{
    ck_assert_uint_eq(D->kind, AUR_KIND_EXTENSION);
    ck_assert_str_eq(D->name, "ext-world-events");
    ck_assert_str_eq(OPS->cap_key, "org.aurorabot/world-events");
    ck_assert_str_eq(OPS->methods[0], EV_METHOD);
    ck_assert_str_eq(OPS->methods[1], "notifications/message");
    ck_assert_ptr_null(OPS->methods[2]);
    ck_assert_ptr_nonnull(OPS->declare_caps);
    ck_assert_ptr_nonnull(OPS->accept_server);
    ck_assert_ptr_nonnull(OPS->on_notify);
    ck_assert_ptr_nonnull(OPS->end_session);
}
END_TEST

START_TEST(declares_only_for_world_events)
{
    static const char *const modes[] = {"world_events", "legacy_aurora_event",
                                        "disabled"};
    struct aur_app_info a = app_info(PKG, modes[_i], _i != 1);
    struct json_object *caps = json_object_new_object(), *want;
    struct aur_error err;
    a.version = NULL;
    int rc = OPS->declare_caps(ST, &a, caps, &err);
    if (_i == 0) {
        ck_assert_int_eq(rc, AUR_OK);
        want = json_tokener_parse(
            "{\"org.aurorabot/world-events\":{\"version\":1}}");
        ck_assert_msg(json_object_equal(caps, want), "declared %s",
                      json_object_to_json_string(caps));
        json_object_put(want);
    } else {
        ck_assert_int_eq(rc, AUR_DECLINE);
        ck_assert_int_eq(json_object_object_length(caps), 0);
    }
    json_object_put(caps);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Negotiation                                                      */
/* ---------------------------------------------------------------- */

struct neg_row {
    const char *caps;
    int rc;
};

static const struct neg_row neg_rows[] = {
    {"{}", AUR_E_NEGOTIATION},
    {"{\"extensions\":{}}", AUR_E_NEGOTIATION},
    {"{\"extensions\":[]}", AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":1}}", AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{}}}", AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":\"1\"}}}",
     AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":true}}}",
     AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":2}}}",
     AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":1.0}}}",
     AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":1,"
     "\"extra\":true}}}",
     AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-events\":{\"Version\":1}}}",
     AUR_E_NEGOTIATION},
    {"{\"extensions\":{\"org.aurorabot/world-event\":{\"version\":1}}}",
     AUR_E_NEGOTIATION},
    {"{\"world-events\":{\"version\":1}}", AUR_E_NEGOTIATION},
    {CAPS_OK, AUR_OK},
    {"{\"tools\":{},\"extensions\":{\"org.aurorabot/tool-contract\":{"
     "\"version\":1},\"org.aurorabot/world-events\":{\"version\":1}}}",
     AUR_OK},
};

START_TEST(negotiation_table)
{
    const struct neg_row *r = &neg_rows[_i];
    struct aur_error err;
    void *s;
    int rc = accept_mode(PKG, "world_events", 1, r->caps, &s, &err);
    ck_assert_msg(rc == r->rc, "caps %s: rc %d", r->caps, rc);
    if (rc == AUR_OK) {
        ck_assert_ptr_nonnull(s);
    } else {
        ck_assert_ptr_null(s);
        ck_assert_int_eq(err.code, AUR_E_NEGOTIATION);
        ck_assert_str_eq(err.msg, "MCP server did not strictly negotiate the "
                                  "event extension: "
                                  "org.aurorabot/world-events");
    }
}
END_TEST

START_TEST(modes_and_eras)
{
    struct aur_error err;
    void *s;
    /* legacy: no extension needed, handshake era only */
    ck_assert_int_eq(accept_mode(PKG, "legacy_aurora_event", 0, NULL, &s, &err),
                     AUR_OK);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(accept_mode(PKG, "legacy_aurora_event", 1, CAPS_OK, &s,
                                 &err),
                     AUR_E_NEGOTIATION);
    ck_assert_ptr_null(s);
    /* world_events never with a handshake-era server */
    ck_assert_int_eq(accept_mode(PKG, "world_events", 0, CAPS_OK, &s, &err),
                     AUR_E_NEGOTIATION);
    /* disabled: inactive, even when the server offers the extension */
    ck_assert_int_eq(accept_mode(PKG, "disabled", 1, CAPS_OK, &s, &err),
                     AUR_DECLINE);
    ck_assert_ptr_null(s);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Validation                                                       */
/* ---------------------------------------------------------------- */


struct bad_row {
    const char *payload;
    const char *field; /* must be named in the message */
};

static const struct bad_row bad_rows[] = {
    {"[]", "not a JSON object"},
    {"\"SECRET\"", "not a JSON object"},
    {"null", "not a JSON object"},
    {"42", "not a JSON object"},
    /* keys */
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"source\":\"SECRET\""), "source"},
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"_meta\":{}"), "_meta"},
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"Data\":{}"), "Data"},
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"SECRET key\\n\":1"),
     "unexpected key"},
    {"{\"scope\":" D_SC ",\"kind\":" D_KI ",\"occurred_at\":" D_AT
     ",\"summary\":" D_SU "}",
     "event_id"},
    {"{\"event_id\":" D_ID ",\"kind\":" D_KI ",\"occurred_at\":" D_AT
     ",\"summary\":" D_SU "}",
     "scope"},
    {"{\"event_id\":" D_ID ",\"scope\":" D_SC ",\"occurred_at\":" D_AT
     ",\"summary\":" D_SU "}",
     "kind"},
    {"{\"event_id\":" D_ID ",\"scope\":" D_SC ",\"kind\":" D_KI
     ",\"summary\":" D_SU "}",
     "occurred_at"},
    {"{\"event_id\":" D_ID ",\"scope\":" D_SC ",\"kind\":" D_KI
     ",\"occurred_at\":" D_AT "}",
     "summary"},
    /* strings must be JSON strings */
    {EV("12", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV(D_ID, "1", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, D_SC, "null", D_AT, D_SU, ""), "kind is not a JSON string"},
    {EV(D_ID, D_SC, D_KI, "1777622400", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, D_AT, "true", ""), "summary"},
    {EV(D_ID, D_SC, D_KI, D_AT, "[\"SECRET\"]", ""), "summary"},
    /* event id */
    {EV("\"\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV("\"contains space\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV("\"-lead\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV("\"a/b\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV("\"\xc3\xa9v\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV("\"e\\u0000x\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    {EV("\"x" ID150 "1234567890\"", D_SC, D_KI, D_AT, D_SU, ""), "event_id"},
    /* scope */
    {EV(D_ID, "\"\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\" qq:1\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"qq:1 \"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"qq:1\\u3000\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"\\u00a0qq:1\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"scope\\nline\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"sc\\u001fope\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"qq:1\\t\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"\\u001cqq:1\"", D_KI, D_AT, D_SU, ""), "scope"},
    {EV(D_ID, "\"qq:1\\u0085\"", D_KI, D_AT, D_SU, ""), "scope"},
    /* kind */
    {EV(D_ID, D_SC, "\"\"", D_AT, D_SU, ""), "kind"},
    {EV(D_ID, D_SC, "\" \\t\\u3000 \"", D_AT, D_SU, ""), "kind"},
    {EV(D_ID, D_SC, "\"qq\\tmessage\"", D_AT, D_SU, ""), "kind"},
    {EV(D_ID, D_SC, "\"qq.message\\u0000\"", D_AT, D_SU, ""), "kind"},
    {EV(D_ID, D_SC, "\"\\u001e\"", D_AT, D_SU, ""), "kind"},
    {EV(D_ID, D_SC, "\"engine.x\"", D_AT, D_SU, ""), "engine."},
    {EV(D_ID, D_SC, "\"tool.x\"", D_AT, D_SU, ""), "tool."},
    {EV(D_ID, D_SC, "\"output.x\"", D_AT, D_SU, ""), "output."},
    {EV(D_ID, D_SC, "\"cadence.x\"", D_AT, D_SU, ""), "cadence."},
    {EV(D_ID, D_SC, "\"ops.x\"", D_AT, D_SU, ""), "ops."},
    {EV(D_ID, D_SC, "\"mcp.event.received\"", D_AT, D_SU, ""), "mcp."},
    /* summary */
    {EV(D_ID, D_SC, D_KI, D_AT, "\"\"", ""), "summary"},
    {EV(D_ID, D_SC, D_KI, D_AT, "\" \\n\\u2028\\u3000\"", ""), "summary"},
    {EV(D_ID, D_SC, D_KI, D_AT, "\"SECRET\\u0000\"", ""), "summary"},
    {EV(D_ID, D_SC, D_KI, D_AT, "\"\\u001f\"", ""), "summary"},
    /* occurred_at */
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T08:30:00\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-02-29T00:00:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-13-01T00:00:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T24:00:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:60:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:00:60Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01 12:00:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:00:00+0800\"", D_SU, ""),
     "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:00:00+24:00\"", D_SU, ""),
     "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:00:00+08\"", D_SU, ""),
     "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:00:00.Z\"", D_SU, ""),
     "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T12:00:00Z \"", D_SU, ""),
     "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"2026-5-01T12:00:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"0000-01-01T00:00:00Z\"", D_SU, ""), "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"0001-01-01T00:00:00+01:00\"", D_SU, ""),
     "occurred_at"},
    {EV(D_ID, D_SC, D_KI, "\"9999-12-31T23:59:59-01:00\"", D_SU, ""),
     "occurred_at"},
    /* data */
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"data\":null"), "data"},
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"data\":[\"SECRET\"]"), "data"},
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"data\":\"SECRET\""), "data"},
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"data\":1"), "data"},
    /* a repeated key: the last one is the member */
    {EV(D_ID, D_SC, D_KI, D_AT, D_SU, ",\"data\":{},\"data\":null"), "data"},
    {"{\"event_id\":" D_ID ",\"scope\":" D_SC ",\"kind\":" D_KI
     ",\"occurred_at\":" D_AT ",\"summary\":" D_SU ",\"kind\":null}",
     "kind"},
};

START_TEST(rejects_table)
{
    const struct bad_row *r = &bad_rows[_i];
    void *s = world_session(PKG);
    struct json_object *p = json_tokener_parse(r->payload);
    struct aur_error err;
    ck_assert_msg(p != NULL || strcmp(r->payload, "null") == 0,
                  "bad test JSON %s", r->payload);
    aur_error_clear(&err);
    int rc = OPS->on_notify(ST, s, EV_METHOD, p, 1, &err);
    json_object_put(p);
    ck_assert_msg(rc == AUR_E_EVENT, "row %d: rc %d (%s)", _i, rc, err.msg);
    ck_assert_int_eq(err.code, AUR_E_EVENT);
    ck_assert_msg(strstr(err.msg, r->field) != NULL, "row %d: %s lacks %s",
                  _i, err.msg, r->field);
    ck_assert_msg(strstr(err.msg, "SECRET") == NULL, "row %d leaks: %s", _i,
                  err.msg);
    ck_assert_int_eq(write_calls, 0);
    ck_assert_uint_eq(ncommits, 0);
    ck_assert_uint_eq(loglen, 0);
}
END_TEST

/* The first violation, in the order docs/protocol.md lists, is the one
 * reported. */
START_TEST(validation_order)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV("\"bad id\"", "\" s\"", "\"tool.x\"",
                               "\"2026\"", "\"\"", ",\"data\":1,\"x\":1"),
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "unexpected key x"));
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV("\"bad id\"", "\" s\"", "\"tool.x\"",
                               "\"2026\"", "\"\"", ",\"data\":1"),
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "event_id"));
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, "\" s\"", "\"tool.x\"", "\"2026\"", "\"\"",
                               ",\"data\":1"),
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "scope"));
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, D_SC, "\"tool.x\"", "\"2026\"", "\"\"",
                               ",\"data\":1"),
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "kind"));
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, D_SC, D_KI, "\"2026\"", "\"\"",
                               ",\"data\":1"),
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "summary"));
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, D_SC, D_KI, "\"2026\"", D_SU,
                               ",\"data\":1"),
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "occurred_at"));
    ck_assert_uint_eq(ncommits, 0);
}
END_TEST

/* Boundaries that must pass, and what they commit. */
struct good_row {
    const char *payload;
    const char *occurred_at; /* expected UTC */
};

static const struct good_row good_rows[] = {
    /* kind with surrounding spaces is accepted as-is; case matters */
    {EV(D_ID, D_SC, "\" qq.message \"", D_AT, D_SU, ""),
     "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, "\"Engine.x\"", D_AT, D_SU, ""), "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, "\"console.x\"", D_AT, D_SU, ""), "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, "\"aurora.x\"", D_AT, D_SU, ""), "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, "\"engine\"", D_AT, D_SU, ""), "2026-05-01T08:30:00Z"},
    /* DEL is neither space nor control; a non-ASCII space inside */
    {EV(D_ID, D_SC, "\"qq\\u007fmessage\"", D_AT, D_SU, ""),
     "2026-05-01T08:30:00Z"},
    {EV(D_ID, "\"qq:\\u3000group\"", D_KI, D_AT, "\"x\\u001f \"", ""),
     "2026-05-01T08:30:00Z"},
    /* 160-character id, every allowed punctuation */
    {EV("\"A._:-" ID150 "12345\"", D_SC, D_KI, D_AT, D_SU, ""),
     "2026-05-01T08:30:00Z"},
    /* scopes: inner spaces, non-ASCII, 256 code points of 3 bytes each */
    {EV(D_ID, "\"a b\"", D_KI, D_AT, D_SU, ""), "2026-05-01T08:30:00Z"},
    {EV(D_ID, "\"\xe9\xa2\x91\xe9\x81\x93:\xe4\xb8\x80\"", D_KI, D_AT, D_SU,
        ""),
     "2026-05-01T08:30:00Z"},
    /* times: lower case, -00:00, fractions, day and year rollover */
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01t08:30:00z\"", D_SU, ""),
     "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T08:30:00-00:00\"", D_SU, ""),
     "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T08:30:00+08:00\"", D_SU, ""),
     "2026-05-01T00:30:00Z"},
    {EV(D_ID, D_SC, D_KI, "\"2026-01-01T02:00:00.5+08:00\"", D_SU, ""),
     "2025-12-31T18:00:00.500000Z"},
    {EV(D_ID, D_SC, D_KI, "\"2024-02-28T20:00:00.1234567-05:30\"", D_SU, ""),
     "2024-02-29T01:30:00.123456Z"},
    {EV(D_ID, D_SC, D_KI, "\"2026-05-01T08:30:00.000Z\"", D_SU, ""),
     "2026-05-01T08:30:00Z"},
    {EV(D_ID, D_SC, D_KI, "\"2026-12-31T23:59:59-23:59\"", D_SU, ""),
     "2027-01-01T23:58:59Z"},
    {EV(D_ID, D_SC, D_KI, "\"0001-01-01T00:00:00Z\"", D_SU, ""),
     "0001-01-01T00:00:00Z"},
};

START_TEST(accepts_boundaries)
{
    const struct good_row *r = &good_rows[_i];
    void *s = world_session(PKG);
    struct aur_error err;
    int rc = notify(s, EV_METHOD, r->payload, 1, &err);
    ck_assert_msg(rc == AUR_OK, "row %d: %d %s", _i, rc, err.msg);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_str_eq(commits[0].occurred_at, r->occurred_at);
}
END_TEST

START_TEST(scope_length_limit)
{
    /* 256 code points pass, 257 fail, counted in three spellings: "频"
     * (3 bytes, 1 code point), ASCII, and ASCII ending in "频" */
    static const struct {
        const char *unit, *last;
    } kinds[] = {{"\xe9\xa2\x91", "\xe9\xa2\x91"}, {"a", "a"},
                 {"a", "\xe9\xa2\x91"}};
    char sc[1024], payload[2048];
    struct aur_error err;
    void *s = world_session(PKG);
    for (size_t t = 0; t < (sizeof kinds / sizeof kinds[0]); t++) {
        for (int n = 256; n <= 257; n++) {
            size_t k = 0;
            for (int i = 0; i < n; i++) {
                const char *u = i + 1 == n ? kinds[t].last : kinds[t].unit;
                memcpy(sc + k, u, strlen(u));
                k += strlen(u);
            }
            sc[k] = '\0';
            snprintf(payload, sizeof payload,
                     EV("\"ev-%zu-%d\"", "\"%s\"", D_KI, D_AT, D_SU, ""), t, n,
                     sc);
            int rc = notify(s, EV_METHOD, payload, 1, &err);
            ck_assert_msg(rc == (n == 256 ? AUR_OK : AUR_E_EVENT),
                          "spelling %zu, %d code points: %d", t, n, rc);
        }
    }
    ck_assert_uint_eq(ncommits, (sizeof kinds / sizeof kinds[0]));
}
END_TEST

/* ---------------------------------------------------------------- */
/* The commit                                                       */
/* ---------------------------------------------------------------- */

START_TEST(commit_mapping_exact)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    struct rec *r = &commits[0];
    ck_assert_str_eq(r->commit_id, "mcp:" PKG ":event:ev-1");
    ck_assert_str_eq(r->kind, "mcp.event.received");
    ck_assert_str_eq(r->source, "mcp:" PKG);
    ck_assert_str_eq(r->summary, "SECRET summary");
    ck_assert_str_eq(r->occurred_at, "2026-05-01T00:30:00Z");
    ck_assert_uint_eq(r->n_scopes, 2);
    ck_assert_str_eq(r->scopes[0], "aurora:mcp:" PKG);
    ck_assert_str_eq(r->scopes[1], "qq:group:1");
    struct json_object *want = json_tokener_parse(
        "{\"event_id\":\"ev-1\",\"event_kind\":\"qq.message.group\","
        "\"data\":{\"text\":\"SECRET data\"}}");
    ck_assert_msg(json_object_equal(r->data, want), "data %s",
                  json_object_to_json_string(r->data));
    ck_assert_int_eq(json_object_object_length(r->data), 3);
    json_object_put(want);
    /* nothing of the event reaches the log */
    ck_assert_ptr_null(strstr(logbuf, "SECRET"));
}
END_TEST

/* The data object prints (as the journal stores it) exactly as json-c
 * prints the same tree built key by key, also for a kind that needs
 * escaping: a commit made by an earlier version compares equal byte for
 * byte, and the tree and its text agree. */
START_TEST(commit_data_text_exact)
{
    static const char kind[] = "qq.\"quoted\"\\kind/\xc3\xa9";
    static const char data[] =
        "{\"f\":1.5,\"a\":[1,{\"x\":null}],\"s\":\"a/b\\u00e9\\n\\\"\","
        "\"t\":true,\"o\":{}}";
    void *s = world_session(PKG);
    struct aur_error err;
    struct json_object *o = json_object_new_object();

    ck_assert_int_eq(
        notify(s, EV_METHOD,
               EV(D_ID, D_SC, "\"qq.\\\"quoted\\\"\\\\kind/\xc3\xa9\"", D_AT,
                  D_SU, ",\"data\":{\"f\":1.5,\"a\":[1,{\"x\":null}],"
                        "\"s\":\"a/b\\u00e9\\n\\\"\",\"t\":true,\"o\":{}}"),
               1, &err),
        AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    json_object_object_add(o, "event_id", json_object_new_string("ev-1"));
    json_object_object_add(o, "event_kind", json_object_new_string(kind));
    json_object_object_add(o, "data", json_tokener_parse(data));
    ck_assert_str_eq(commits[0].data_text,
                     json_object_to_json_string_ext(
                         o, JSON_C_TO_STRING_PLAIN |
                                JSON_C_TO_STRING_NOSLASHESCAPE));
    ck_assert(json_object_equal(commits[0].data, o));
    json_object_put(o);
}
END_TEST

START_TEST(app_scope_collapses_and_data_defaults)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, "\"aurora:mcp:" PKG "\"", D_KI, D_AT,
                               D_SU, ""),
                            1, &err),
                     AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_uint_eq(commits[0].n_scopes, 1);
    ck_assert_str_eq(commits[0].scopes[0], "aurora:mcp:" PKG);
    struct json_object *d;
    ck_assert(json_object_object_get_ex(commits[0].data, "data", &d));
    ck_assert(json_object_is_type(d, json_type_object));
    ck_assert_int_eq(json_object_object_length(d), 0);
}
END_TEST

START_TEST(idempotent_by_event_id)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_OK);
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    /* occurred_at is not content */
    ck_assert_int_eq(
        notify(s, EV_METHOD,
               EV(D_ID, D_SC, "\"qq.message.group\"",
                  "\"2026-06-01T00:00:00Z\"", D_SU,
                  ",\"data\":{\"text\":\"SECRET data\"}"),
               1, &err),
        AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_int_eq(count_of(s, "committed"), 1);
    ck_assert_int_eq(count_of(s, "duplicates"), 2);
    /* same id, other content: accepted for the journal, which refuses it:
     * a conflict, nothing written, no values in the log; the line is out
     * before the count says so (log_watch) */
    log_watch = s;
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, D_SC, "\"qq.message.group\"", D_AT,
                               "\"SECRET other\"",
                               ",\"data\":{\"text\":\"SECRET data\"}"),
                            1, &err),
                     AUR_OK);
    ck_assert_int_eq(count_of(s, "rejected"), 1);
    ck_assert_int_eq(rejected_at_log, 0);
    log_watch = NULL;
    ck_assert_int_eq(count_of(s, "commit_conflict"), 1);
    ck_assert_int_eq(count_of(s, "journal_error"), 0);
    ck_assert_ptr_nonnull(strstr(logbuf, "1 rejected: event_id already "
                                         "committed with different content"));
    ck_assert_ptr_null(strstr(logbuf, "ev-1"));
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_str_eq(commits[0].summary, "SECRET summary");
    /* another App, same event id: its own commit */
    void *s2 = world_session("org.test.other");
    ck_assert_int_eq(notify(s2, EV_METHOD, VALID, 1, &err), AUR_OK);
    ck_assert_uint_eq(ncommits, 2);
    ck_assert_str_eq(commits[1].commit_id, "mcp:org.test.other:event:ev-1");
    ck_assert_str_eq(commits[1].source, "mcp:org.test.other");
    ck_assert_str_eq(commits[1].scopes[0], "aurora:mcp:org.test.other");
    OPS->end_session(ST, s);
    OPS->end_session(ST, s2);
    ck_assert_ptr_nonnull(
        strstr(logbuf, "1 accepted, 2 duplicates, 1 rejected"));
    ck_assert_ptr_null(strstr(logbuf, "SECRET"));
}
END_TEST

/* ---------------------------------------------------------------- */
/* Activation and routing                                           */
/* ---------------------------------------------------------------- */

START_TEST(dropped_before_activation)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 0, &err), AUR_DECLINE);
    ck_assert_int_eq(write_calls, 0);
    ck_assert_ptr_nonnull(strstr(logbuf, "1 event dropped: host not active"));
    ck_assert_ptr_null(strstr(logbuf, "SECRET"));
    /* even an invalid one is only dropped: nothing is looked at */
    ck_assert_int_eq(notify(s, EV_METHOD, "[]", 0, &err), AUR_DECLINE);
    /* not queued: activation replays nothing */
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV("\"ev-2\"", D_SC, D_KI, D_AT, D_SU, ""), 1,
                            &err),
                     AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_str_eq(commits[0].commit_id, "mcp:" PKG ":event:ev-2");
}
END_TEST

START_TEST(dropped_after_end_session)
{
    void *s = world_session(PKG);
    struct aur_error err;
    OPS->end_session(ST, s);
    /* a dispatch thread racing the close still finds the session alive */
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_DECLINE);
    ck_assert_int_eq(write_calls, 0);
    ck_assert_ptr_nonnull(strstr(logbuf, "event dropped: host not active"));
}
END_TEST

START_TEST(legacy_logger_routing)
{
    void *s = legacy_session();
    struct aur_error err;
    char buf[1024];
    /* other loggers, no logger, non-string logger: silently ignored */
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"level\":\"info\",\"logger\":\"app\",\"data\":"
                            VALID "}",
                            1, &err),
                     AUR_DECLINE);
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"level\":\"info\",\"data\":" VALID "}", 1, &err),
                     AUR_DECLINE);
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"level\":\"info\",\"logger\":1,\"data\":" VALID
                            "}",
                            1, &err),
                     AUR_DECLINE);
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"logger\":\"Aurora/event\",\"data\":" VALID "}",
                            1, &err),
                     AUR_DECLINE);
    /* the modern method is not a legacy route */
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_DECLINE);
    ck_assert_int_eq(write_calls, 0);
    ck_assert_uint_eq(loglen, 0);
    /* aurora/event: data is the payload; the level does not matter */
    snprintf(buf, sizeof buf,
             "{\"level\":\"debug\",\"logger\":\"aurora/event\",\"data\":%s}",
             VALID);
    ck_assert_int_eq(notify(s, "notifications/message", buf, 1, &err), AUR_OK);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_str_eq(commits[0].commit_id, "mcp:" PKG ":event:ev-1");
    ck_assert_str_eq(commits[0].occurred_at, "2026-05-01T00:30:00Z");
    /* same validation */
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"level\":\"info\",\"logger\":\"aurora/event\","
                            "\"data\":{\"event_id\":\"x\"}}",
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"level\":\"info\",\"logger\":\"aurora/event\"}",
                            1, &err),
                     AUR_E_EVENT);
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"logger\":\"aurora/event\",\"data\":" VALID "}",
                            0, &err),
                     AUR_DECLINE);
    ck_assert_uint_eq(ncommits, 1);
}
END_TEST

START_TEST(world_mode_ignores_log_messages)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, "notifications/message",
                            "{\"level\":\"info\",\"logger\":\"aurora/event\","
                            "\"data\":" VALID "}",
                            1, &err),
                     AUR_DECLINE);
    ck_assert_int_eq(notify(s, "notifications/other", VALID, 1, &err),
                     AUR_DECLINE);
    ck_assert_int_eq(write_calls, 0);
    ck_assert_uint_eq(loglen, 0);
}
END_TEST

static Suite *we_suite(void)
{
    Suite *su = suite_create("ext_world_events");
    TCase *tc;

    tc = tcase_create("declare");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, descriptor_shape);
    tcase_add_loop_test(tc, declares_only_for_world_events, 0, 3);
    suite_add_tcase(su, tc);

    tc = tcase_create("negotiate");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, negotiation_table, 0,
                        (int)(sizeof neg_rows / sizeof neg_rows[0]));
    tcase_add_test(tc, modes_and_eras);
    suite_add_tcase(su, tc);

    tc = tcase_create("validate");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, rejects_table, 0,
                        (int)(sizeof bad_rows / sizeof bad_rows[0]));
    tcase_add_test(tc, validation_order);
    tcase_add_loop_test(tc, accepts_boundaries, 0,
                        (int)(sizeof good_rows / sizeof good_rows[0]));
    tcase_add_test(tc, scope_length_limit);
    suite_add_tcase(su, tc);

    tc = tcase_create("commit");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, commit_mapping_exact);
    tcase_add_test(tc, commit_data_text_exact);
    tcase_add_test(tc, app_scope_collapses_and_data_defaults);
    tcase_add_test(tc, idempotent_by_event_id);
    suite_add_tcase(su, tc);

    tc = tcase_create("routing");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, dropped_before_activation);
    tcase_add_test(tc, dropped_after_end_session);
    tcase_add_test(tc, legacy_logger_routing);
    tcase_add_test(tc, world_mode_ignores_log_messages);
    suite_add_tcase(su, tc);

    return su;
}

int main(void) { return aur_check_main(we_suite(), we_batch_suite()); }
