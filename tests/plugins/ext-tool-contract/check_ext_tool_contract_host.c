/*
 * check_ext_tool_contract_host.c - ext-tool-contract inside the real host
 * (libaurora-mcp, transport-stdio) against our C fixture server and the
 * official SDK peers: status, result mapping with and without
 * negotiation, tool-metadata failures in phase tools/list, scope
 * resolution before sending, and what the server receives as client
 * capabilities.  Linked into check_ext_tool_contract (see its main).
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/harness.h"

#define KEY "org.aurorabot/tool-contract"
#define PKG "org.test.tch"
#define TOOL "aur.mcp." PKG ".t0000"
#define NEGOTIATED "{\"" KEY "\":{\"version\":1}}"
#define SCOPED_META                                                          \
    "{\"" KEY "\":{\"observe\":[\"chan:{text}\",\"fixed:o\"],"               \
    "\"publish\":[\"pub:{text}\"]}}"
#define TEXT_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define BAD_META "{\"" KEY "\":{\"observe\":\"chan:{text}\"}}"

Suite *tc_host_suite(void);

static char *dir, *fixture, *logpath;

static void write_host_ini(void)
{
    char *text;
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio ext-tool-contract\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = warn\n"
                       "[mcp]\n"
                       "enabled = true\n",
                       AUR_TEST_BIN_DIR) > 0);
    h_write(dir, "host.ini", text);
    free(text);
}

static void setup(void)
{
    h_fixture_env(&dir, &fixture, &logpath);
    write_host_ini();
}

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

/* Start one fixture App; *rc = aur_mcp_start's result. */
static struct aur_mcp *start_fx(const char *era, const char *const *opts,
                                struct aur_startup_error *serr, int *rc)
{
    const char *args[40];
    size_t n = 0;
    struct aur_error err;
    struct aur_mcp *h = NULL;
    args[n++] = "--log";
    args[n++] = logpath;
    args[n++] = "--era";
    args[n++] = era;
    for (size_t i = 0; opts && opts[i] && n < 38; i++)
        args[n++] = opts[i];
    args[n] = NULL;
    h_add_app(dir, "a.ini", PKG, 5, NULL, fixture, args);
    memset(serr, 0, sizeof *serr);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, serr, &err), AUR_OK);
    *rc = aur_mcp_start(h, serr, &err);
    return h;
}

static struct aur_mcp *start_ok(const char *era, const char *const *opts)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    struct aur_mcp *h = start_fx(era, opts, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    return h;
}

/* The status' extensions[KEY] of App 0: 1, 0, or -1 when absent. */
static int ext_active(struct aur_mcp *h)
{
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *ex, *v;
    int r = -1;
    json_object_object_get_ex(st, "apps", &apps);
    if (json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                                  "extensions", &ex) &&
        json_object_object_get_ex(ex, KEY, &v) &&
        json_object_is_type(v, json_type_boolean))
        r = json_object_get_boolean(v);
    json_object_put(st);
    return r;
}

static enum aur_call_status call(struct aur_mcp *h, const char *args_json,
                                 char **content, char **scopes)
{
    struct json_object *args = args_json ? json_tokener_parse(args_json) : NULL;
    struct aur_tool_output out = {.struct_size = sizeof out};
    enum aur_call_status s;
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, args, -1, &out), AUR_OK);
    json_object_put(args);
    ck_assert_ptr_nonnull(out.content);
    s = out.status;
    *content = strdup(out.content);
    if (scopes)
        *scopes = h_scopes_json(&out);
    aur_tool_output_clear(&out);
    return s;
}

struct neg_row {
    const char *era;
    const char *extensions; /* NULL = none advertised */
    int active;
};

static const struct neg_row neg_rows[] = {
    {"modern", NEGOTIATED, 1},
    {"modern", NULL, 0},
    {"modern", "{\"" KEY "\":{\"version\":1.0}}", 0},
    {"modern", "{\"" KEY "\":{\"version\":1,\"extra\":true}}", 0},
    {"modern", "{\"" KEY "\":{\"version\":2}}", 0},
    {"legacy", NEGOTIATED, 1},
    {"legacy", "{\"" KEY "\":{\"version\":\"1\"}}", 0},
};

START_TEST(status_reports_negotiation)
{
    const struct neg_row *r = &neg_rows[_i];
    const char *opts[] = {"--extensions", r->extensions, NULL};
    struct aur_mcp *h = start_ok(r->era, r->extensions ? opts : NULL);
    ck_assert_msg(ext_active(h) == r->active, "row %d: %d", _i, ext_active(h));
    aur_mcp_destroy(h);
}
END_TEST

struct call_row {
    bool negotiated;
    const char *result;
    enum aur_call_status status;
    const char *content; /* exact, or "~substring" */
};

static const struct call_row call_rows[] = {
    /* isError: vouched for only when negotiated */
    {true,
     "{\"content\":[{\"type\":\"text\",\"text\":\"boom\"}],\"isError\":true}",
     AUR_CALL_FAILED, "boom"},
    {false,
     "{\"content\":[{\"type\":\"text\",\"text\":\"boom\"}],\"isError\":true}",
     AUR_CALL_UNKNOWN, "boom"},
    {true, "{\"content\":[],\"isError\":true}", AUR_CALL_FAILED,
     "MCP server returned isError"},
    /* status unknown wins even without isError */
    {true,
     "{\"content\":[{\"type\":\"text\",\"text\":\"sent?\"}],\"_meta\":{\""
     KEY "\":{\"status\":\"unknown\"}}}",
     AUR_CALL_UNKNOWN, "sent?"},
    {true,
     "{\"content\":[{\"type\":\"text\",\"text\":\"no\"}],\"isError\":true,"
     "\"_meta\":{\"" KEY "\":{\"status\":\"unknown\"}}}",
     AUR_CALL_UNKNOWN, "no"},
    /* malformed result metadata */
    {true,
     "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"_meta\":{\"" KEY
     "\":{\"status\":\"failed\"}}}",
     AUR_CALL_UNKNOWN, "~result metadata is invalid"},
    {true,
     "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":true,"
     "\"_meta\":{\"" KEY "\":{}}}",
     AUR_CALL_UNKNOWN, "~result metadata is invalid"},
    /* ... which means nothing without negotiation */
    {false,
     "{\"content\":[{\"type\":\"text\",\"text\":\"fine\"}],\"_meta\":{\""
     KEY "\":{\"status\":\"failed\"}}}",
     AUR_CALL_SUCCEEDED, "fine"},
    {false,
     "{\"content\":[{\"type\":\"text\",\"text\":\"fine\"}],\"_meta\":{\""
     KEY "\":{\"status\":\"unknown\"}}}",
     AUR_CALL_SUCCEEDED, "fine"},
    /* plain success is untouched */
    {true, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}",
     AUR_CALL_SUCCEEDED, "ok"},
    {true,
     "{\"content\":[{\"type\":\"image\",\"data\":\"AA\",\"mimeType\":"
     "\"image/png\"}]}",
     AUR_CALL_UNKNOWN, "~image"},
};

START_TEST(result_mapping)
{
    const struct call_row *r = &call_rows[_i];
    const char *opts[] = {"--call-result", r->result, "--extensions",
                          NEGOTIATED, NULL};
    struct aur_mcp *h;
    char *content;
    if (!r->negotiated)
        opts[2] = NULL;
    h = start_ok("modern", opts);
    ck_assert_int_eq(ext_active(h), r->negotiated);
    enum aur_call_status s = call(h, "{\"text\":\"hi\"}", &content, NULL);
    ck_assert_msg(s == r->status, "row %d: %s (%s)", _i,
                  aur_call_status_word(s), content);
    if (r->content[0] == '~')
        ck_assert_msg(strstr(content, r->content + 1), "row %d: %s", _i,
                      content);
    else
        ck_assert_str_eq(content, r->content);
    free(content);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(legacy_is_error_is_failed_when_negotiated)
{
    const char *opts[] = {"--extensions", NEGOTIATED, "--call-result",
                          "{\"content\":[{\"type\":\"text\",\"text\":\"no\"}],"
                          "\"isError\":true}",
                          NULL};
    struct aur_mcp *h = start_ok("legacy", opts);
    char *content;
    ck_assert_int_eq(call(h, NULL, &content, NULL), AUR_CALL_FAILED);
    ck_assert_str_eq(content, "no");
    free(content);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(bad_tool_meta_fails_tools_list_when_negotiated)
{
    const char *opts[] = {"--extensions", NEGOTIATED, "--tool-meta", BAD_META,
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    struct aur_mcp *h = start_fx("modern", opts, &serr, &rc);
    ck_assert_int_lt(rc, 0);
    ck_assert_str_eq(serr.phase, "tools/list");
    ck_assert_str_eq(serr.app, PKG);
    ck_assert_msg(strstr(serr.message, TOOL) &&
                      strstr(serr.message, "observe must be a non-empty"),
                  "message: %s", serr.message);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

START_TEST(bad_tool_meta_ignored_when_not_negotiated)
{
    const char *metas[] = {BAD_META, "{\"" KEY "\":\"x\"}",
                           "{\"" KEY "\":{\"observe\":[\"{nope}\"]}}"};
    for (size_t i = 0; i < 3; i++) {
        const char *opts[] = {"--tool-meta", metas[i], NULL};
        struct aur_mcp *h = start_ok("modern", opts);
        char *content, *scopes;
        ck_assert_int_eq(ext_active(h), 0);
        ck_assert_uint_eq(aur_mcp_tool_count(h), 1);
        ck_assert_int_eq(call(h, "{}", &content, &scopes),
                         AUR_CALL_SUCCEEDED);
        ck_assert_str_eq(scopes, "{\"observe\":[\"aurora:mcp:" PKG
                                 "\"],\"publish\":[\"aurora:mcp:" PKG "\"]}");
        free(content);
        free(scopes);
        aur_mcp_destroy(h);
        h_rmtree(dir);
        free(dir);
        dir = h_mkconfig(NULL, NULL);
        write_host_ini();
        free(logpath);
        ck_assert(asprintf(&logpath, "%s/server.log", dir) > 0);
    }
}
END_TEST

START_TEST(resolved_scopes_in_the_output)
{
    const char *opts[] = {"--extensions", NEGOTIATED, "--tool-meta",
                          SCOPED_META, NULL};
    struct aur_mcp *h = start_ok("modern", opts);
    const struct aur_tool_info *ti;
    char *content, *scopes;
    ck_assert_int_eq(ext_active(h), 1);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 1);
    ti = aur_mcp_tool_at(h, 0);
    ck_assert_str_eq(json_object_to_json_string_ext(ti->scopes, TEXT_FLAGS),
                     "{\"observe\":[\"chan:{text}\",\"fixed:o\"],"
                     "\"publish\":[\"pub:{text}\"]}");
    ck_assert_int_eq(call(h, "{\"text\":\"abc\"}", &content, &scopes),
                     AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(content, "abc");
    ck_assert_str_eq(scopes, "{\"observe\":[\"chan:abc\",\"fixed:o\"],"
                             "\"publish\":[\"pub:abc\"]}");
    free(content);
    free(scopes);
    ck_assert_int_eq(call(h, "{\"text\":\"fixed:o\"}", &content, &scopes),
                     AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(scopes, "{\"observe\":[\"chan:fixed:o\",\"fixed:o\"],"
                             "\"publish\":[\"pub:fixed:o\"]}");
    free(content);
    free(scopes);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 2);
}
END_TEST

/* Tools without a contract share the App's default scopes (one object):
 * a contract declared on one tool must not show on the others, in any
 * order of the catalog. */
START_TEST(a_contract_stays_on_its_own_tool)
{
    const char *opts[] = {
        "--extensions", NEGOTIATED, "--tools", "2", "--tool-json",
        "{\"name\":\"scoped\",\"inputSchema\":{\"type\":\"object\","
        "\"properties\":{\"text\":{\"type\":\"string\"}}},\"_meta\":"
        SCOPED_META "}",
        NULL};
    const char *defaults = "{\"observe\":[\"aurora:mcp:" PKG "\"],"
                           "\"publish\":[\"aurora:mcp:" PKG "\"]}";
    struct aur_mcp *h = start_ok("modern", opts);
    size_t scoped = 0;

    ck_assert_uint_eq(aur_mcp_tool_count(h), 3);
    for (size_t i = 0; i < 3; i++) {
        const struct aur_tool_info *ti = aur_mcp_tool_at(h, i);
        const char *got =
            json_object_to_json_string_ext(ti->scopes, TEXT_FLAGS);
        if (strcmp(ti->raw_name, "scoped") == 0) {
            scoped++;
            ck_assert_str_eq(got, "{\"observe\":[\"chan:{text}\","
                                  "\"fixed:o\"],\"publish\":[\"pub:{text}\"]}");
        } else {
            ck_assert_str_eq(got, defaults);
        }
    }
    ck_assert_uint_eq(scoped, 1);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(unresolvable_scope_is_failed_and_not_sent)
{
    const char *opts[] = {"--extensions", NEGOTIATED, "--tool-meta",
                          SCOPED_META, NULL};
    const char *args[] = {"{}", "{\"text\":\"\"}", "{\"text\":2.5}",
                          "{\"text\":\"a\\nb\"}", NULL};
    const char *why[] = {"scope argument missing: text",
                         "scope argument must not be empty: text",
                         "scope argument must be text or integer: text",
                         "invalid MCP scope"};
    struct aur_mcp *h = start_ok("modern", opts);
    for (size_t i = 0; i < 5; i++) {
        char *content, *scopes, expect[200];
        ck_assert_int_eq(call(h, args[i], &content, &scopes),
                         AUR_CALL_FAILED);
        snprintf(expect, sizeof expect,
                 "MCP tool scope resolution failed: %s", why[i < 4 ? i : 0]);
        ck_assert_str_eq(content, expect);
        ck_assert_ptr_null(scopes);
        free(content);
    }
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
    ck_assert_int_ge(h_count_lines(logpath, "tools/list"), 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* What a real SDK server receives                                    */
/* ------------------------------------------------------------------ */

static struct aur_mcp *start_peer(const char *script, const char *const *opts)
{
    const char *args[32];
    size_t n = 0;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    char *path = h_src(script);
    char *mods = h_src("tests/peers/node_modules/@modelcontextprotocol");
    ck_assert_msg(access(mods, F_OK) == 0,
                  "run `npm ci` in tests/peers first (missing %s)", mods);
    free(mods);
    args[n++] = path;
    args[n++] = "--log";
    args[n++] = logpath;
    for (size_t i = 0; opts && opts[i] && n < 30; i++)
        args[n++] = opts[i];
    args[n] = NULL;
    h_add_app(dir, "peer.ini", PKG, 20, NULL, "node", args);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    ck_assert_msg(aur_mcp_start(h, &serr, &err) == AUR_OK, "start: %s %s",
                  serr.phase, serr.message);
    free(path);
    return h;
}

/* Requests in the peer log that name method, and how many of them carry
 * exactly {KEY: {"version": 1}} as client extensions. */
static void count_declared(const char *method, int *requests, int *declared)
{
    FILE *f = fopen(logpath, "r");
    char *line = NULL;
    size_t cap = 0;
    *requests = *declared = 0;
    ck_assert_ptr_nonnull(f);
    while (getline(&line, &cap, f) > 0) {
        struct json_object *o = json_tokener_parse(line), *m, *ex;
        if (o && json_object_object_get_ex(o, "method", &m) &&
            strcmp(json_object_get_string(m), method) == 0) {
            (*requests)++;
            if (json_object_object_get_ex(o, "extensions", &ex) &&
                strcmp(json_object_to_json_string_ext(ex, TEXT_FLAGS),
                       NEGOTIATED) == 0)
                (*declared)++;
        }
        json_object_put(o);
    }
    free(line);
    fclose(f);
}

START_TEST(sdk2_server_receives_the_declaration)
{
    const char *opts[] = {"--extensions", NEGOTIATED, "--tool-meta",
                          "{\"" KEY "\":{\"observe\":[\"peer:fixed\"]}}",
                          NULL};
    const char *methods[] = {"server/discover", "subscriptions/listen",
                             "tools/list", "tools/call"};
    struct aur_mcp *h = start_peer("tests/peers/sdk2-server.mjs", opts);
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *a = json_tokener_parse("{\"text\":\"hi\"}");
    ck_assert_int_eq(ext_active(h), 1);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, "aur.mcp." PKG ".echo", a, -1, &out),
                     AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_uint_ge(out.n_observe, 1);
    ck_assert_str_eq(out.observe[0], "peer:fixed");
    aur_tool_output_clear(&out);
    json_object_put(a);
    aur_mcp_destroy(h);
    for (size_t i = 0; i < 4; i++) {
        int req, decl;
        count_declared(methods[i], &req, &decl);
        ck_assert_msg(req >= 1, "%s never reached the server", methods[i]);
        ck_assert_msg(decl == req, "%s: %d of %d declare the extension",
                      methods[i], decl, req);
    }
}
END_TEST

START_TEST(sdk1_legacy_initialize_carries_the_declaration)
{
    const char *opts[] = {"--extensions", NEGOTIATED, NULL};
    struct aur_mcp *h = start_peer("tests/peers/sdk1-server.mjs", opts);
    int req, decl;
    ck_assert_int_eq(ext_active(h), 1);
    aur_mcp_destroy(h);
    count_declared("initialize", &req, &decl);
    ck_assert_int_ge(req, 1);
    ck_assert_int_eq(decl, req);
}
END_TEST

START_TEST(sdk2_float_version_is_not_negotiated)
{
    /* JS cannot write 1.0: rewrite the token on the wire. */
    const char *opts[] = {"--extensions", NEGOTIATED, "--wire-replace",
                          "[[\"\\\"version\\\":1}\",\"\\\"version\\\":1.0}\"]]",
                          "--tool-meta", BAD_META, NULL};
    struct aur_mcp *h = start_peer("tests/peers/sdk2-server.mjs", opts);
    ck_assert_int_eq(ext_active(h), 0);
    aur_mcp_destroy(h);
}
END_TEST

Suite *tc_host_suite(void)
{
    Suite *s = suite_create("ext_tool_contract_host");
    TCase *fx = tcase_create("fixture");
    TCase *peer = tcase_create("peers");
    tcase_add_checked_fixture(fx, setup, teardown);
    tcase_add_checked_fixture(peer, setup, teardown);
    tcase_set_timeout(fx, 60);
    tcase_set_timeout(peer, 90);
    tcase_add_loop_test(fx, status_reports_negotiation, 0,
                        (int)(sizeof neg_rows / sizeof neg_rows[0]));
    tcase_add_loop_test(fx, result_mapping, 0,
                        (int)(sizeof call_rows / sizeof call_rows[0]));
    tcase_add_test(fx, legacy_is_error_is_failed_when_negotiated);
    tcase_add_test(fx, bad_tool_meta_fails_tools_list_when_negotiated);
    tcase_add_test(fx, bad_tool_meta_ignored_when_not_negotiated);
    tcase_add_test(fx, resolved_scopes_in_the_output);
    tcase_add_test(fx, a_contract_stays_on_its_own_tool);
    tcase_add_test(fx, unresolvable_scope_is_failed_and_not_sent);
    tcase_add_test(peer, sdk2_server_receives_the_declaration);
    tcase_add_test(peer, sdk1_legacy_initialize_carries_the_declaration);
    tcase_add_test(peer, sdk2_float_version_is_not_negotiated);
    suite_add_tcase(s, fx);
    suite_add_tcase(s, peer);
    return s;
}
