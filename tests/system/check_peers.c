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

#define PEER(tool) "aur.mcp.org.test.peer." tool

static char *dir, *logpath, *script2, *script1;

static void setup(void)
{
    h_need_peers("@modelcontextprotocol/server");
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
    struct aur_mcp *h;
    h_add_logged_app(dir, "peer.ini", "org.test.peer", 20, NULL, "node",
                     script, logpath, opts);
    *rc = h_start(dir, &h, serr);
    return h;
}

START_TEST(sdk2_modern_discovery_and_calls)
{
    const char *opts[] = {"--tools", "40", "--page-size", "6", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    char *c;
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(h_negotiated_version(h), "2026-07-28");
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

    h_expect(h, PEER("echo"), "{\"text\":\"hi\"}", AUR_CALL_SUCCEEDED, "hi");
    h_expect(h, PEER("add"), "{\"a\":2,\"b\":40}", AUR_CALL_SUCCEEDED,
             "{\"sum\":42}");
    h_expect(h, PEER("fail"), "{}", AUR_CALL_UNKNOWN, "boom");
    ck_assert_int_eq(h_call(h, PEER("image"), "{}", &c), AUR_CALL_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(c, "image"));
    free(c);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(sdk1_legacy_discovery_and_calls)
{
    const char *opts[] = {"--tools", "12", "--page-size", "5", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    struct aur_mcp *h = start_peer(script1, opts, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(h_negotiated_version(h), "2025-11-25");
    ck_assert_uint_eq(aur_mcp_tool_count(h), 17);
    h_expect(h, PEER("echo"), "{\"text\":\"yo\"}", AUR_CALL_SUCCEEDED, "yo");
    h_expect(h, PEER("nope"), "{}", AUR_CALL_FAILED, NULL);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(sdk2_change_during_startup_repages)
{
    const char *opts[] = {"--tools", "12", "--page-size", "4",
                          "--change-during-list", "1", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
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
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_int_eq(rc, AUR_OK);
    size_t before = aur_mcp_tool_count(h);
    h_expect(h, PEER("echo"), "{\"text\":\"x\"}", AUR_CALL_SUCCEEDED, NULL);
    ck_assert(h_wait_restart_required(h, 4000));
    ck_assert_uint_eq(aur_mcp_tool_count(h), before);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(sdk2_exit_during_call_is_unknown)
{
    const char *opts[] = {"--exit-on-call", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    struct aur_mcp *h = start_peer(script2, opts, &serr, &rc);
    ck_assert_int_eq(rc, AUR_OK);
    h_expect(h, PEER("echo"), "{\"text\":\"x\"}", AUR_CALL_UNKNOWN, NULL);
    h_wait_restart_required(h, 4000);
    h_expect(h, PEER("echo"), "{\"text\":\"x\"}", AUR_CALL_FAILED, NULL);
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
    return aur_check_main(suite(), NULL);
}
