/*
 * check_peers.c - the host against the official MCP TypeScript SDK
 * servers over stdio (tests/peers: SDK v2 2.4.0 speaks 2026-07-28, SDK v1
 * 1.32.2 the legacy revisions).  Needs `npm ci` in tests/peers.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/harness.h"

static char *dir, *logpath, *script2, *script1;

static void setup(void)
{
    char *mods = h_src("tests/peers/node_modules/@modelcontextprotocol/server");
    ck_assert_msg(access(mods, F_OK) == 0,
                  "run `npm ci` in tests/peers first (missing %s)", mods);
    free(mods);
    dir = h_mkconfig(NULL, NULL);
    ck_assert(asprintf(&logpath, "%s/peer.log", dir) > 0);
    script2 = h_src("tests/peers/sdk2-server.mjs");
    script1 = h_src("tests/peers/sdk1-server.mjs");
}

static void teardown(void)
{
    h_rmtree(dir);
    free(dir);
    free(logpath);
    free(script2);
    free(script1);
}

static struct aur_mcp *start_peer(const char *script, const char *const *opts,
                                  struct aur_startup_error *serr, int *rc)
{
    const char *args[32];
    size_t n = 0;
    struct aur_error err;
    struct aur_mcp *h = NULL;
    args[n++] = script;
    args[n++] = "--log";
    args[n++] = logpath;
    for (size_t i = 0; opts && opts[i] && n < 30; i++)
        args[n++] = opts[i];
    args[n] = NULL;
    h_add_app(dir, "peer.ini", "org.test.peer", 20, NULL, "node", args);
    memset(serr, 0, sizeof *serr);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, serr, &err), AUR_OK);
    *rc = aur_mcp_start(h, serr, &err);
    return h;
}

static const char *version_of(struct aur_mcp *h)
{
    static char buf[32];
    struct json_object *st = aur_mcp_status_json(h, 0), *apps, *v;
    json_object_object_get_ex(st, "apps", &apps);
    json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                              "negotiated_version", &v);
    snprintf(buf, sizeof buf, "%s", v ? json_object_get_string(v) : "");
    json_object_put(st);
    return buf;
}

static enum aur_call_status call(struct aur_mcp *h, const char *tool,
                                 const char *args, char **content)
{
    struct json_object *a = json_tokener_parse(args);
    struct aur_tool_output out;
    aur_mcp_call(h, tool, a, -1, &out);
    json_object_put(a);
    *content = strdup(out.content);
    enum aur_call_status s = out.status;
    aur_tool_output_clear(&out);
    return s;
}

START_TEST(sdk2_modern_discovery_and_calls)
{
    const char *opts[] = {"--tools", "40", "--page-size", "6", NULL};
    struct aur_startup_error serr;
    char *c;
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(version_of(h), "2026-07-28");
    ck_assert_uint_eq(aur_mcp_tool_count(h), 45);
    /* listen acknowledged before the first page, in the server's log */
    int listen = h_first_line(logpath, "{\"dir\":\"in\",\"pid\"");
    ck_assert_int_ge(listen, 0);
    char *log = h_slurp(logpath);
    char *l = strstr(log, "subscriptions/listen"), *t = strstr(log, "tools/list");
    ck_assert_ptr_nonnull(l);
    ck_assert_ptr_nonnull(t);
    ck_assert(l < t);
    free(log);

    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.echo", "{\"text\":\"hi\"}", &c),
                     AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(c, "hi");
    free(c);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.add", "{\"a\":2,\"b\":40}", &c),
                     AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(c, "{\"sum\":42}");
    free(c);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.fail", "{}", &c),
                     AUR_CALL_UNKNOWN);
    ck_assert_str_eq(c, "boom");
    free(c);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.image", "{}", &c),
                     AUR_CALL_FAILED);
    ck_assert_ptr_nonnull(strstr(c, "image"));
    free(c);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(sdk1_legacy_discovery_and_calls)
{
    const char *opts[] = {"--tools", "12", "--page-size", "5", NULL};
    struct aur_startup_error serr;
    char *c;
    int rc;
    struct aur_mcp *h = start_peer(script1, opts, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(version_of(h), "2025-11-25");
    ck_assert_uint_eq(aur_mcp_tool_count(h), 17);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.echo", "{\"text\":\"yo\"}", &c),
                     AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(c, "yo");
    free(c);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.nope", "{}", &c),
                     AUR_CALL_FAILED);
    free(c);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(sdk2_change_during_startup_repages)
{
    const char *opts[] = {"--tools", "12", "--page-size", "4",
                          "--change-during-list", "1", NULL};
    struct aur_startup_error serr;
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 17);
    ck_assert(!aur_mcp_restart_required(h));
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(sdk2_runtime_change_only_flags_restart)
{
    const char *opts[] = {"--change-on-call", NULL};
    struct aur_startup_error serr;
    char *c;
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_int_eq(rc, AUR_OK);
    size_t before = aur_mcp_tool_count(h);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.echo", "{\"text\":\"x\"}", &c),
                     AUR_CALL_SUCCEEDED);
    free(c);
    for (int i = 0; i < 200 && !aur_mcp_restart_required(h); i++)
        usleep(20000);
    ck_assert(aur_mcp_restart_required(h));
    ck_assert_uint_eq(aur_mcp_tool_count(h), before);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(sdk2_exit_during_call_is_unknown)
{
    const char *opts[] = {"--exit-on-call", NULL};
    struct aur_startup_error serr;
    char *c;
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_int_eq(rc, AUR_OK);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.echo", "{\"text\":\"x\"}", &c),
                     AUR_CALL_UNKNOWN);
    free(c);
    for (int i = 0; i < 200 && !aur_mcp_restart_required(h); i++)
        usleep(20000);
    ck_assert_int_eq(call(h, "aur.mcp.org.test.peer.echo", "{\"text\":\"x\"}", &c),
                     AUR_CALL_FAILED);
    free(c);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("peers");
    TCase *tc = tcase_create("sdk");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sdk2_modern_discovery_and_calls);
    tcase_add_test(tc, sdk1_legacy_discovery_and_calls);
    tcase_add_test(tc, sdk2_change_during_startup_repages);
    tcase_add_test(tc, sdk2_runtime_change_only_flags_restart);
    tcase_add_test(tc, sdk2_exit_during_call_is_unknown);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
