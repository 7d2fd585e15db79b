/*
 * check_startup.c - startup against real child processes (our C fixture
 * server): negotiation per era, listen before list, deadlines, cleanup.
 * The catalog (pagination, changes during startup, naming failures) is
 * check_startup_catalog.c; what a startup leaves in agents.ini checks and
 * the world is check_startup_world.c (same binary, same fixture:
 * check_startup.h).
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <dirent.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_startup.h"
#include "rpc_pool.h" /* AUR__POOL_WORKERS */
#include "support/harness.h"

char *dir;
char *fixture;
char *logpath;

void setup(void)
{
    dir = h_mkconfig(NULL, NULL);
    fixture = h_bin("bin/aur-fixture-server");
    ck_assert(asprintf(&logpath, "%s/server.log", dir) > 0);
}

void teardown(void)
{
    h_rmtree(dir);
    free(dir);
    free(fixture);
    free(logpath);
}

/* The fixture with --log <logpath> and then the given options. */
void add_fixture(const char *file, const char *pkg, double timeout,
                        const char *const *opts)
{
    h_add_logged_app(dir, file, pkg, timeout, NULL, fixture, NULL, logpath,
                     opts);
}

/* A fresh config directory: extra_host lines added to [host] (NULL =
 * none), [mcp] holding mcp. */
void remake_config(const char *extra_host, const char *mcp)
{
    h_rmtree(dir);
    free(dir);
    dir = h_mkconfig(extra_host, mcp);
    free(logpath);
    ck_assert(asprintf(&logpath, "%s/server.log", dir) > 0);
}

int start(struct aur_mcp **h, struct aur_startup_error *serr)
{
    return h_start(dir, h, serr);
}

START_TEST(modern_listen_before_list)
{
    const char *opts[] = {"--era", "modern", "--tools", "3", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.alpha", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "negotiated_version"), "2026-07-28");
    ck_assert_str_eq(h_str(a, "state"), "ready");
    json_object_put(a);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 3);
    ck_assert_str_eq(aur_mcp_tool_at(h, 0)->id, "aur.mcp.org.test.alpha.t0000");
    /* The change observer is acknowledged before the first page. */
    int listen = h_first_line(logpath, "subscriptions/listen");
    int list = h_first_line(logpath, "tools/list");
    ck_assert_int_ge(listen, 0);
    ck_assert_int_gt(list, listen);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(legacy_server_negotiates_legacy)
{
    const char *opts[] = {"--era", "legacy", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.legacy", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "negotiated_version"), "2025-11-25");
    json_object_put(a);
    ck_assert_int_eq(h_count_lines(logpath, "initialize"), 1);
    ck_assert_int_eq(h_count_lines(logpath, "notifications/initialized"), 1);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(older_legacy_version_accepted)
{
    const char *opts[] = {"--era", "legacy", "--legacy-version", "2024-11-05",
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.legacy", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "negotiated_version"), "2024-11-05");
    json_object_put(a);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(unknown_legacy_version_fails_connect)
{
    const char *opts[] = {"--era", "legacy", "--legacy-version", "2023-01-01",
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.legacy", 5, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.phase, "connect");
    ck_assert_str_eq(serr.app, "org.test.legacy");
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(probe_exit_respawns_for_initialize)
{
    const char *opts[] = {"--era", "legacy", "--probe-exit", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.rmcp", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "negotiated_version"), "2025-11-25");
    json_object_put(a);
    ck_assert_int_eq(h_count_lines(logpath, "server/discover"), 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(probe_silence_is_legacy)
{
    const char *opts[] = {"--era", "legacy", "--probe-silent", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    /* The App's deadline stretches with the tools' time scale: half of
     * it must leave a fresh process room to start and answer (3 s was
     * too little under TSan on a slow machine). */
    int64_t t0 = h_now_ms(), deadline = h_slack(3000);
    add_fixture("a.ini", "org.test.silent", (double)deadline / 1000, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    /* The probe gets half the deadline, then a fresh process answers. */
    ck_assert_int_lt(h_now_ms() - t0, deadline / 2 + h_slack(1500));
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "negotiated_version"), "2025-11-25");
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* A modern-only server that misses the probe window on its first start
 * (an npx fetch): the fresh process refuses initialize with -32022
 * listing 2026-07-28, so it is modern after all (mcp-wire.md, stdio
 * step 6): server/discover again on that process, never initialized. */
START_TEST(initialize_refused_32022_is_modern_after_all)
{
    char *state;
    ck_assert(asprintf(&state, "%s/first-start", dir) > 0);
    const char *opts[] = {"--era", "modern", "--probe-silent-first", state,
                          "--tools", "2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t deadline = h_slack(3000);
    add_fixture("a.ini", "org.test.slow", (double)deadline / 1000, opts);
    ck_assert_msg(start(&h, &serr) == AUR_OK, "%s: %s", serr.phase,
                  serr.message);
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "negotiated_version"), "2026-07-28");
    ck_assert_str_eq(h_str(a, "state"), "ready");
    json_object_put(a);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 2);
    ck_assert_int_eq(h_count_lines(logpath, "start "), 2);
    ck_assert_int_eq(h_count_lines(logpath, "initialize "), 1);
    ck_assert_int_eq(h_count_lines(logpath, "notifications/initialized"), 0);
    /* On the second process: initialize, then discover, listen, list. */
    int second = h_nth_line(logpath, "start ", 2);
    int init = h_first_line(logpath, "initialize ");
    int discover = h_nth_line(logpath, "server/discover ", 2);
    int listen = h_first_line(logpath, "subscriptions/listen ");
    int list = h_first_line(logpath, "tools/list ");
    ck_assert_int_gt(init, second);
    ck_assert_int_gt(discover, init);
    ck_assert_int_gt(listen, discover);
    ck_assert_int_gt(list, listen);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    free(state);
}
END_TEST

/* A legacy server that answers initialize and reads nothing more (its
 * stdin closed first): notifications/initialized cannot be written, no
 * handshake finished, so the App fails in connect and its status names
 * no negotiated version (it named the answer's). */
START_TEST(initialized_unwritable_names_no_version)
{
    const char *opts[] = {"--era", "legacy", "--close-stdin-at",
                          "initialize", "--close-stdin-first", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    char *hostlog = h_debug_host(dir);
    add_fixture("a.ini", "org.test.shut", 10, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.phase, "connect");
    ck_assert_msg(strstr(serr.message, "stdin"), "%s", serr.message);
    struct json_object *a = h_app_status(h), *v = NULL;
    ck_assert(json_object_object_get_ex(a, "negotiated_version", &v));
    ck_assert_msg(v == NULL, "negotiated_version %s after no handshake",
                  json_object_get_string(v));
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    /* The failed start closed the App, and destroy found it closed. */
    char *text = h_slurp(hostlog);
    int closings = 0;
    for (const char *p = text; p && (p = strstr(p, ": closing\n")); p++)
        closings++;
    ck_assert_msg(closings == 1, "closing logged %d times:\n%s", closings,
                  text ? text : "(no log)");
    free(text);
    free(hostlog);
}
END_TEST

/* The same refusal listing only a modern version we do not speak is no
 * reason to go on: the App fails, saying why. */
START_TEST(initialize_refused_32022_without_mutual_version_fails)
{
    char *state;
    ck_assert(asprintf(&state, "%s/first-start", dir) > 0);
    const char *opts[] = {"--era", "modern", "--versions", "2099-01-01",
                          "--probe-silent-first", state, NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t deadline = h_slack(3000);
    add_fixture("a.ini", "org.test.slow", (double)deadline / 1000, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_E_NEGOTIATION);
    ck_assert_str_eq(serr.phase, "connect");
    ck_assert_msg(strstr(serr.message, "incompatible modern server"), "%s",
                  serr.message);
    ck_assert_int_eq(h_count_lines(logpath, "initialize "), 1);
    ck_assert_int_eq(h_count_lines(logpath, "server/discover "), 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    free(state);
}
END_TEST

/* The App's deadline, timeout_ms, stretches with the tools' time scale:
 * the App must reach the phase where it hangs inside it (a fresh process
 * under TSan takes much of 1.5 s).  What is asserted stays exact: the
 * start fails there, and not before its deadline. */
static void expect_deadline(const char *const *opts, int64_t timeout_ms,
                            const char *phase)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t t0 = h_now_ms(), took, deadline = h_slack(timeout_ms);
    add_fixture("a.ini", "org.test.hang", (double)deadline / 1000, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    took = h_now_ms() - t0;
    ck_assert_str_eq(serr.phase, phase);
    ck_assert_int_ge(took, deadline - 50);
    ck_assert_int_lt(took, deadline + h_slack(2500));
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}

START_TEST(hang_at_initialize_hits_deadline)
{
    const char *opts[] = {"--era", "legacy", "--hang-at", "initialize", NULL};
    expect_deadline(opts, 1500, "connect");
}
END_TEST

START_TEST(hang_between_pages_hits_deadline)
{
    const char *opts[] = {"--era", "modern", "--tools", "10", "--page-size",
                          "2", "--hang-at", "list:3", NULL};
    expect_deadline(opts, 1500, "tools/list");
}
END_TEST

START_TEST(partial_frame_hits_deadline)
{
    const char *opts[] = {"--era", "modern", "--tools", "4", "--page-size",
                          "2", "--partial-at", "list:2", NULL};
    expect_deadline(opts, 1500, "tools/list");
}
END_TEST

START_TEST(hang_ignoring_term_is_killed)
{
    const char *opts[] = {"--era", "modern", "--hang-at", "list",
                          "--ignore-term", NULL};
    expect_deadline(opts, 1000, "tools/list");
}
END_TEST

START_TEST(exit_at_listen_fails_listen)
{
    const char *opts[] = {"--era", "modern", "--exit-at", "listen", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.exit", 5, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.phase, "catalog/listen");
    aur_mcp_destroy(h);
}
END_TEST

/* A JSON-RPC error answer in a startup phase fails that phase as
 * rpc_error, with the server's code in the message. */
static void error_at_fails(const char *point, const char *phase)
{
    const char *opts[] = {"--era", "modern", "--tools", "4", "--page-size",
                          "2", "--error-at", point, NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.rpcerr", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_E_RPC);
    ck_assert_str_eq(serr.code, "startup_failed");
    ck_assert_str_eq(serr.phase, phase);
    ck_assert_msg(strstr(serr.message, "-32603"), "%s", serr.message);
    /* The status of the failed start names no tools: what page 1 bound
     * was never the App's catalog. */
    struct json_object *a = h_app_status(h), *ids;
    ck_assert(json_object_object_get_ex(a, "tool_ids", &ids));
    ck_assert_uint_eq(json_object_array_length(ids), 0);
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}

START_TEST(error_at_listen_fails_listen) { error_at_fails("listen", "catalog/listen"); }
END_TEST

START_TEST(error_at_page_fails_list) { error_at_fails("list:2", "tools/list"); }
END_TEST

START_TEST(no_ack_fails_listen)
{
    const char *opts[] = {"--era", "modern", "--no-ack", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.noack", 5, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.phase, "catalog/listen");
    ck_assert_ptr_nonnull(strstr(serr.message, "list-changed"));
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(exit_mid_list_fails_list)
{
    const char *opts[] = {"--era", "modern", "--tools", "6", "--page-size",
                          "2", "--exit-at", "list:2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.exit", 5, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.phase, "tools/list");
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(first_failure_cancels_and_cleans_up)
{
    const char *good[] = {"--era", "modern", "--hang-at", "list", NULL};
    const char *bad[] = {"--era", "modern", "--exit-at", "discover", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t t0 = h_now_ms(), deadline = h_slack(20000);
    add_fixture("a.ini", "org.test.slow", (double)deadline / 1000, good);
    add_fixture("b.ini", "org.test.dies", (double)deadline / 1000, bad);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    /* b failed fast and cancelled a long before its deadline (both
     * stretched on a slow run) */
    ck_assert_int_lt(h_now_ms() - t0, deadline * 4 / 10);
    ck_assert_str_eq(serr.app, "org.test.dies");
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "state"), "closed");
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* An App that never began (one start slot; the App before it failed)
 * says so: not_started with the reason, never "disabled" or "closed". */
START_TEST(cancelled_before_begin_is_not_started)
{
    const char *bad[] = {"--era", "modern", "--exit-at", "discover", NULL};
    const char *good[] = {"--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    struct json_object *st, *apps, *b;
    remake_config(NULL, "start_concurrency = 1");
    add_fixture("a.ini", "org.test.dies", 20, bad);
    add_fixture("b.ini", "org.test.later", 20, good);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.app, "org.test.dies");
    st = aur_mcp_status_jsonc(h, 0);
    ck_assert(json_object_object_get_ex(st, "apps", &apps));
    b = json_object_array_get_idx(apps, 1);
    ck_assert_str_eq(h_str(b, "package"), "org.test.later");
    ck_assert_str_eq(h_str(b, "state"), "not_started");
    ck_assert_str_eq(h_str(b, "last_error"),
                     "not started: startup was cancelled");
    json_object_put(st);
    aur_mcp_destroy(h);
}
END_TEST

/*
 * A change that reaches a cleanly listed App while a slower neighbour is
 * still starting (go-sdk servers announce their tools after a debounce)
 * makes that App page again within its deadline: startup succeeds, and
 * the catalog that freezes is the changed one (gen2), never the stale.
 */
START_TEST(late_change_next_to_slow_app_relists)
{
    const char *a[] = {"--era", "modern", "--tools", "2", "--gen-tool",
                       "--change-after-list", "150", NULL};
    const char *b[] = {"--era", "modern", "--start-delay-ms", "1500", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    add_fixture("1-a.ini", "org.test.late", 10, a);
    add_fixture("2-b.ini", "org.test.slow", 10, b);
    ck_assert_msg(start(&h, &serr) == AUR_OK, "start: %s %s %s", serr.app,
                  serr.phase, serr.message);
    bool gen1 = false, gen2 = false;
    for (size_t i = 0; i < aur_mcp_tool_count(h); i++) {
        const char *id = aur_mcp_tool_at(h, i)->id;
        gen1 |= strcmp(id, "aur.mcp.org.test.late.gen1") == 0;
        gen2 |= strcmp(id, "aur.mcp.org.test.late.gen2") == 0;
    }
    ck_assert_msg(gen2 && !gen1, "the frozen catalog is stale");
    ck_assert(!aur_mcp_restart_required(h));
    aur_mcp_destroy(h);
    /* one shared log: two passes of App a (the clean one, then the one
     * after the change) and one of App b */
    ck_assert_int_eq(h_count_lines(logpath, "tools/list"), 3);
}
END_TEST

/* Closes begin in reverse config order (each App's "closing" line in the
 * host's log), and every App gets its stdin EOF. */
START_TEST(apps_close_in_reverse_config_order)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    char *la, *lb, *hl = h_debug_host(dir), *log;
    ck_assert(asprintf(&la, "%s/a.log", dir) > 0);
    ck_assert(asprintf(&lb, "%s/b.log", dir) > 0);
    const char *a[] = {"--log", la, "--era", "modern", NULL};
    const char *b[] = {"--log", lb, "--era", "modern", NULL};
    h_add_app(dir, "1-a.ini", "org.test.first", 5, NULL, fixture, a);
    h_add_app(dir, "2-b.ini", "org.test.second", 5, NULL, fixture, b);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    ck_assert_int_eq(aur_mcp_start(h, &serr, &err), AUR_OK);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(la, "eof"), 1);
    ck_assert_int_eq(h_count_lines(lb, "eof"), 1);
    log = h_slurp(hl);
    ck_assert_ptr_nonnull(log);
    char *first = strstr(log, "app org.test.first: closing");
    char *second = strstr(log, "app org.test.second: closing");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_nonnull(second);
    ck_assert_msg(second < first, "closes did not begin in reverse order");
    free(log);
    free(hl);
    free(la);
    free(lb);
}
END_TEST

/* The log file is its owner's alone and never written through a symlink,
 * and what a server sends cannot reach it as a terminal control: a tool
 * name holding ESC and CSI (U+009B), quoted in a startup failure, is
 * logged escaped. */
START_TEST(log_file_private_escaped_no_symlink)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct stat sb;
    char *hl = h_debug_host(dir), *log, *other;
    const char *opts[] = {"--era", "modern", NULL};
    const char *bad[] = {"--era", "modern", "--tool-json",
                         "{\"name\":\"evil\\u001b[2J\\u009bX\",\"inputSchema\":"
                         "{\"type\":\"object\"}}",
                         NULL};

    add_fixture("a.ini", "org.test.log", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, "aur.mcp.org.test.log.t0000", NULL, -1,
                                  &out),
                     AUR_OK);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    /* A server whose tool name holds ESC and CSI: the startup failure is
     * logged with its reason, escaped. */
    add_fixture("a.ini", "org.test.log", 5, bad);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
    ck_assert_int_eq(stat(hl, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0077, 0);
    log = h_slurp(hl);
    ck_assert_ptr_nonnull(log);
    ck_assert_msg(strstr(log, "evil\\x1b[2J\\xc2\\x9bX"), "not escaped");
    ck_assert_ptr_nonnull(strstr(log, "phase tools/list"));
    ck_assert_ptr_null(strchr(log, '\x1b'));
    ck_assert_ptr_null(strstr(log, "\xc2\x9b"));
    free(log);

    /* a symlink in its place is refused, and its target untouched */
    ck_assert(asprintf(&other, "%s/other.txt", dir) > 0);
    h_write(dir, "other.txt", "keep\n");
    ck_assert_int_eq(unlink(hl), 0);
    ck_assert_int_eq(symlink(other, hl), 0);
    h = NULL;
    ck_assert_int_ne(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    ck_assert_msg(strstr(serr.message, "symlink") ||
                      strstr(err.msg, "symlink"),
                  "%s / %s", serr.message, err.msg);
    aur_mcp_destroy(h);
    log = h_slurp(other);
    ck_assert_str_eq(log, "keep\n");
    free(log);
    free(other);
    free(hl);
}
END_TEST

/* Stubborn Apps (they ignore stdin EOF and SIGTERM) stop side by side:
 * three take about one escalation, not three (measured against one in
 * the same run, so the machine's speed does not matter). */
static int64_t stubborn_close_ms(int n)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    const char *opts[] = {"--era", "modern", "--ignore-term", NULL};
    char file[16], pkg[32];
    int64_t t0;

    teardown();
    dir = h_mkconfig("[transport-stdio]\nterm_grace_ms = 400", NULL);
    fixture = h_bin("bin/aur-fixture-server");
    ck_assert(asprintf(&logpath, "%s/server.log", dir) > 0);
    for (int i = 0; i < n; i++) {
        snprintf(file, sizeof file, "%d.ini", i);
        snprintf(pkg, sizeof pkg, "org.test.stubborn%d", i);
        add_fixture(file, pkg, 10, opts);
    }
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    t0 = h_now_ms();
    aur_mcp_destroy(h);
    t0 = h_now_ms() - t0;
    ck_assert_int_eq(h_procs_with(logpath), 0);
    return t0;
}

START_TEST(stubborn_apps_stop_side_by_side)
{
    int64_t one = stubborn_close_ms(1), three = stubborn_close_ms(3);
    /* One escalation is two grace periods (EOF, then SIGTERM). */
    ck_assert_int_ge(one, 800);
    ck_assert_msg(three < 2 * one, "one App: %lld ms, three: %lld ms",
                  (long long)one, (long long)three);
}
END_TEST

/* The server's log line a cancel waits for (bounded), so the phase the
 * cancel lands in does not depend on the machine's speed. */
static const char *cancel_after;
static struct aur_mcp *cancel_host;

static void *cancel_when_logged(void *unused)
{
    (void)unused;
    H_WAIT_UNTIL(h_count_lines(logpath, cancel_after) >= 1, 10000, 10);
    usleep(100000);
    aur_mcp_cancel(cancel_host);
    return NULL;
}

/* Startup of one App (opts) cancelled once the server logged line: it
 * ends interrupted, naming the App and the phase, with nothing left. */
static void cancel_lands_in(const char *const *opts, const char *line,
                            const char *pkg, const char *phase)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    pthread_t t;
    int64_t t0 = h_now_ms();
    add_fixture("a.ini", pkg, 30, opts);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &cancel_host, &serr, &err),
                     AUR_OK);
    cancel_after = line;
    ck_assert_int_eq(pthread_create(&t, NULL, cancel_when_logged, NULL), 0);
    ck_assert_int_eq(aur_mcp_start(cancel_host, &serr, &err),
                     AUR_E_CANCELLED);
    pthread_join(t, NULL);
    ck_assert_int_lt(h_now_ms() - t0, h_slack(5000));
    ck_assert_str_eq(serr.code, "interrupted");
    ck_assert_str_eq(serr.app, pkg);
    ck_assert_str_eq(serr.phase, phase);
    aur_mcp_destroy(cancel_host);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}

/* A cancel in connect names the App and the phase (not "activate"). */
START_TEST(cancel_during_connect_names_the_app)
{
    const char *opts[] = {"--probe-silent", NULL};
    cancel_lands_in(opts, "server/discover", "org.test.probe", "connect");
}
END_TEST

START_TEST(cancel_interrupts_a_hanging_startup)
{
    const char *opts[] = {"--era", "modern", "--hang-at", "list", NULL};
    cancel_lands_in(opts, "tools/list", "org.test.hang", "tools/list");
}
END_TEST

START_TEST(many_apps_start_concurrently)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    const char *opts[] = {"--era", "modern", "--tools", "5", NULL};
    for (int i = 0; i < 8; i++) {
        char file[32], pkg[64];
        snprintf(file, sizeof file, "%02d.ini", i);
        snprintf(pkg, sizeof pkg, "org.test.app%d", i);
        add_fixture(file, pkg, 10, opts);
    }
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 40);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

static int threads_now(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static atomic_bool sampling;
static atomic_int peak_threads;

static void *sample_threads(void *unused)
{
    (void)unused;
    while (atomic_load(&sampling)) {
        int n = threads_now();
        if (n > atomic_load(&peak_threads))
            atomic_store(&peak_threads, n);
        usleep(1000);
    }
    return NULL;
}

/* Threads grow by one per App at most: each App's transport reader.  A
 * start worker per start_concurrency (4 here), not per App, and the
 * dispatch workers every App shares (AUR__POOL_WORKERS and one spare)
 * only while Apps send something that needs one (these send nothing but
 * their subscription's acknowledgement until called, then one
 * notification after each answer).  Sampled all through the startup and
 * all through the calls, so the peak counts, not only the end; after the
 * notifications the workers end again within their idle time. */
START_TEST(threads_one_per_app_at_most)
{
    enum { N = 40, WORKERS = 4, OTHERS = 3 };
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    const char *opts[] = {"--era", "modern", "--tools", "5",
                          "--notify-after-call", "notifications/test/ping",
                          "null", NULL};
    struct aur_mcp *h;
    pthread_t t;

    remake_config(NULL, "enabled = true\nstart_concurrency = 4\n");
    for (int i = 0; i < N; i++) {
        char file[32], pkg[64];
        snprintf(file, sizeof file, "%02d.ini", i);
        snprintf(pkg, sizeof pkg, "org.test.app%d", i);
        add_fixture(file, pkg, 20, opts);
    }
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    int base = threads_now();
    atomic_store(&peak_threads, 0);
    atomic_store(&sampling, true);
    ck_assert_int_eq(pthread_create(&t, NULL, sample_threads, NULL), 0);
    ck_assert_int_eq(aur_mcp_start(h, &serr, &err), AUR_OK);
    int ready = threads_now() - 1; /* not the sampler */
    atomic_store(&sampling, false);
    pthread_join(t, NULL);
    int peak = atomic_load(&peak_threads) - 1;
    fprintf(stderr, "check_startup: %d Apps: threads %d before start, "
                    "%d at most during it, %d when ready\n",
            N, base, peak, ready);
    ck_assert_uint_eq(aur_mcp_tool_count(h), N * 5);
    ck_assert_int_le(ready - base, N + OTHERS);
    ck_assert_int_le(peak - base, N + WORKERS + OTHERS);

    /* Each App answers a call, then notifies: a shared worker handles
     * it (one thread per App before the pool: 80 threads here), and the
     * workers end after an idle second. */
    atomic_store(&peak_threads, 0);
    atomic_store(&sampling, true);
    ck_assert_int_eq(pthread_create(&t, NULL, sample_threads, NULL), 0);
    for (int i = 0; i < N; i++) {
        char tool[96];
        struct aur_tool_output out = {.struct_size = sizeof out};
        snprintf(tool, sizeof tool, "aur.mcp.org.test.app%d.t0000", i);
        ck_assert_int_eq(aur_mcp_call(h, tool, "{}", 2, 10000, &out),
                         AUR_OK);
        ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
        aur_tool_output_clear(&out);
    }
    int busy = threads_now() - 1;
    atomic_store(&sampling, false);
    pthread_join(t, NULL);
    int calls_peak = atomic_load(&peak_threads) - 1;
    int idle;
    H_WAIT_UNTIL((idle = threads_now()) <= ready, 10000, 100);
    fprintf(stderr, "check_startup: a call and a notification to and "
                    "from each App: %d threads at most, %d after, %d once "
                    "idle\n", calls_peak, busy, idle);
    ck_assert_int_gt(busy, ready); /* the notifications did need threads */
    ck_assert_int_le(calls_peak - ready, AUR__POOL_WORKERS + 1);
    ck_assert_int_le(idle, ready);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("startup");
    TCase *neg = tcase_create("negotiation");
    TCase *cat = tcase_create("catalog");
    TCase *dl = tcase_create("deadlines");
    TCase *many = tcase_create("apps");
    TCase *all[] = {neg, cat, dl, many};
    for (size_t i = 0; i < 4; i++) {
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 60);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(neg, modern_listen_before_list);
    tcase_add_test(neg, legacy_server_negotiates_legacy);
    tcase_add_test(neg, older_legacy_version_accepted);
    tcase_add_test(neg, unknown_legacy_version_fails_connect);
    tcase_add_test(neg, probe_exit_respawns_for_initialize);
    tcase_add_test(neg, probe_silence_is_legacy);
    tcase_add_test(neg, initialize_refused_32022_is_modern_after_all);
    tcase_add_test(neg, initialize_refused_32022_without_mutual_version_fails);
    tcase_add_test(neg, initialized_unwritable_names_no_version);
    startup_catalog_tests(cat);
    tcase_add_test(dl, hang_at_initialize_hits_deadline);
    tcase_add_test(dl, hang_between_pages_hits_deadline);
    tcase_add_test(dl, partial_frame_hits_deadline);
    tcase_add_test(dl, hang_ignoring_term_is_killed);
    tcase_add_test(dl, exit_at_listen_fails_listen);
    tcase_add_test(dl, no_ack_fails_listen);
    tcase_add_test(dl, exit_mid_list_fails_list);
    tcase_add_test(many, first_failure_cancels_and_cleans_up);
    tcase_add_test(many, cancelled_before_begin_is_not_started);
    tcase_add_test(many, many_apps_start_concurrently);
    tcase_add_test(many, threads_one_per_app_at_most);
    tcase_add_test(many, cancel_interrupts_a_hanging_startup);
    tcase_add_test(many, cancel_during_connect_names_the_app);
    tcase_add_test(many, error_at_listen_fails_listen);
    tcase_add_test(many, error_at_page_fails_list);
    tcase_add_test(many, apps_close_in_reverse_config_order);
    tcase_add_test(many, stubborn_apps_stop_side_by_side);
    tcase_add_test(many, late_change_next_to_slow_app_relists);
    tcase_add_test(many, log_file_private_escaped_no_symlink);
    startup_world_tests(many);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
