/*
 * check_faults.c - the fault matrix (issue 8): the real host against our
 * C fixture server misbehaving, and the CLI getting signals.  Every case
 * asserts the documented outcome, that no fixture process is left, and
 * that the journal still reads back with the lifecycle commits expected.
 *
 * Rows covered elsewhere and not repeated here (tests/lib/engine/check_startup.c,
 * tests/lib/engine/check_calls.c): hangs before discover/initialize, mid-page and
 * mid-frame; non-JSON and JSON-array lines; ignoring SIGTERM while a
 * startup fails; dying during a call; cancel from another thread.
 *
 * Memory rows (a 100 MiB line, 200 000 notifications) bound the peak RSS
 * of this test process, which is where the host runs.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/harness.h"

#define PKG "org.test.faults"
#define TOOL "aur.mcp.org.test.faults.t0000"

/* Peak RSS allowed for the whole test process.  ASan keeps freed memory
 * in quarantine (256 MiB by default) and adds shadow pages, so its bound
 * is looser; both stay far below what buffering the 100 MiB line or the
 * flood would take. */
#if defined(__SANITIZE_ADDRESS__)
#define MAX_RSS_KIB (640L * 1024)
#else
#define MAX_RSS_KIB (300L * 1024)
#endif

/*
 * The stdio transport closes the connection with AUR_E_LIMIT "message
 * exceeds max_line_bytes (N)", but the core hands the request in flight
 * a plain "connection closed" (lib/rpc/rpc.c: sink_closed ->
 * fail_all(P_CLOSED), the waiter's error at the "connection closed"
 * aur_fail) and that text is what serr.message, last_error and the
 * mcp.app.failed commit show.  Reported to the lead; set to 1 once the
 * close reason reaches the waiters.
 */
#ifndef LIMIT_REASON_REPORTED
#define LIMIT_REASON_REPORTED 1
#endif

static char *dir, *fixture, *logpath, *cli;

static void setup(void)
{
    h_fixture_env(&dir, &fixture, &logpath);
    cli = h_bin("bin/aurora-mcp");
}

static void teardown(void)
{
    h_fixture_env_free(&dir, &fixture, &logpath);
    free(cli);
}

/* The fixture with --log <logpath> and then opts. */
static void add_fixture(double timeout, const char *const *opts)
{
    h_add_logged_app(dir, "a.ini", PKG, timeout, NULL, fixture, NULL,
                     logpath, opts);
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
    fprintf(stderr, "check_faults: peak RSS %ld KiB (bound %ld)\n",
            ru.ru_maxrss, MAX_RSS_KIB);
    return ru.ru_maxrss;
}

/* ---- the journal ---------------------------------------------------- */

static const char *const J_FAILED[] = {"mcp.app.starting", "mcp.app.failed",
                                       NULL};
static const char *const J_READY[] = {"mcp.app.starting", "mcp.app.ready",
                                      "mcp.catalog.frozen", NULL};

/* ---- stdout abuse --------------------------------------------------- */

START_TEST(huge_line_during_list_is_refused_bounded)
{
    const char *opts[] = {"--era", "modern", "--huge-line", "104857600",
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t t0 = h_now_ms();
    add_fixture(20, opts);
    ck_assert_int_ne(h_start(dir, &h, &serr), AUR_OK);
#if LIMIT_REASON_REPORTED
    ck_assert_ptr_nonnull(strstr(serr.message, "max_line_bytes"));
#endif
    /* Refused at the limit, not after reading the whole line (the
     * bound stretches under TSan/valgrind: AUR_TEST_TIME_SCALE). */
    ck_assert_int_lt(h_now_ms() - t0, h_slack(15000));
    aur_mcp_destroy(h);
    ck_assert_int_lt(peak_rss_kib(), MAX_RSS_KIB);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, J_FAILED);
}
END_TEST

START_TEST(notification_flood_is_survived_bounded)
{
    const char *opts[] = {"--era", "modern", "--flood", "200000", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct aur_mcp *h;
    /* A deadline the test needs met, not one it tests: it stretches. */
    add_fixture((double)h_slack(30000) / 1000.0, opts);
    ck_assert_msg(h_start(dir, &h, &serr) == AUR_OK, "start: %s %s", serr.code,
                  serr.message);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 1);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, h_slack(20000), &out),
                     AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(out.content, "ok:t0000");
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    ck_assert_int_lt(peak_rss_kib(), MAX_RSS_KIB);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, J_READY);
}
END_TEST

/* stdout closed after the handshake, process alive: the App is gone for
 * the host (EOF) before its catalog is complete, and the child, which
 * would run on, is killed at close. */
static const char *const close_eras[] = {"modern", "legacy"};

START_TEST(closed_stdout_fails_startup_and_is_killed)
{
    const char *opts[] = {"--era", close_eras[_i], "--close-stdout", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t t0 = h_now_ms(), deadline = h_slack(10000);
    add_fixture((double)deadline / 1000, opts);
    ck_assert_int_ne(h_start(dir, &h, &serr), AUR_OK);
    ck_assert_str_eq(serr.phase, "tools/list");
    ck_assert_str_eq(serr.code, "startup_failed");
    /* The disconnect is noticed at once, not at the deadline (both
     * stretched on a slow run, so they stay apart). */
    ck_assert_int_lt(h_now_ms() - t0, deadline * 8 / 10);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, J_FAILED);
}
END_TEST

/* ---- exit at each startup phase -------------------------------------- */

struct exit_row {
    const char *era, *point, *phase;
};

static const struct exit_row exit_rows[] = {
    {"modern", "discover", "connect"},
    {"legacy", "initialize", "connect"},
    {"modern", "listen", "catalog/listen"},
    {"modern", "list:1", "tools/list"},
    {"modern", "list:2", "tools/list"},
    {"legacy", "list:2", "tools/list"},
};

START_TEST(exit_at_each_phase_reports_it)
{
    const struct exit_row *r = &exit_rows[_i];
    const char *opts[] = {"--era",      r->era, "--tools", "4",
                          "--page-size", "2",   "--exit-at", r->point,
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture(10, opts);
    ck_assert_int_ne(h_start(dir, &h, &serr), AUR_OK);
    ck_assert_msg(strcmp(serr.phase, r->phase) == 0,
                  "%s at %s: phase %s (%s: %s)", r->era, r->point, serr.phase,
                  serr.code, serr.message);
    ck_assert_str_eq(serr.code, "startup_failed");
    ck_assert_str_eq(serr.app, PKG);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, J_FAILED);
}
END_TEST

/* ---- the CLI gets a signal ------------------------------------------- */

struct child {
    pid_t pid;
    int out; /* read end of its stdout */
};

static struct child run_cli(const char *const *argv)
{
    struct child c;
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    c.pid = fork();
    ck_assert_int_ge(c.pid, 0);
    if (c.pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        dup2(p[1], 1);
        dup2(devnull, 0);
        dup2(devnull, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    c.out = p[0];
    return c;
}

/* Wait (bounded) until the server logged a line starting with prefix. */
static void wait_for_log(const char *prefix)
{
    int64_t end = h_now_ms() + 15000;
    while (h_count_lines(logpath, prefix) == 0) {
        ck_assert_msg(h_now_ms() < end, "server never got %s", prefix);
        usleep(20000);
    }
}

/* Exit status of c (bounded wait), its whole stdout into *text. */
static int finish_cli(struct child c, char **text)
{
    size_t len = 0, cap = 65536;
    int64_t end = h_now_ms() + 20000;
    int st = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (;;) {
        struct pollfd pf = {c.out, POLLIN, 0};
        int64_t left = end - h_now_ms();
        ck_assert_msg(left > 0, "the CLI did not finish");
        if (poll(&pf, 1, (int)left) <= 0)
            continue;
        ssize_t n = read(c.out, buf + len, cap - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        ck_assert_uint_lt(len, cap - 1);
    }
    buf[len] = '\0';
    close(c.out);
    while (waitpid(c.pid, &st, WNOHANG) == 0) {
        ck_assert_msg(h_now_ms() < end, "the CLI did not exit");
        usleep(10000);
    }
    *text = buf;
    ck_assert_msg(WIFEXITED(st), "the CLI died of signal %d",
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return WEXITSTATUS(st);
}

/* stdout is exactly one line holding one JSON object. */
static struct json_object *one_json_line(const char *text)
{
    const char *nl = strchr(text, '\n');
    struct json_object *o;
    ck_assert_msg(nl && nl[1] == '\0', "stdout is not one line: [%s]", text);
    o = json_tokener_parse(text);
    ck_assert_msg(json_object_is_type(o, json_type_object),
                  "stdout is not a JSON object: [%s]", text);
    return o;
}

static const char *sget(struct json_object *o, const char *path0,
                        const char *path1)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, path0, &v))
        return NULL;
    if (path1 && !json_object_object_get_ex(v, path1, &v))
        return NULL;
    return json_object_get_string(v);
}

/* discover or serve against a server that never answers tools/list; the
 * row picks the command, the signal and whether the server ignores
 * SIGTERM itself. */
struct sig_row {
    const char *cmd;
    int sig;
    bool ignore_term;
};

static const struct sig_row sig_rows[] = {
    {"discover", SIGTERM, false}, {"discover", SIGINT, false},
    {"discover", SIGTERM, true},  {"serve", SIGTERM, false},
    {"serve", SIGINT, false}};

START_TEST(cli_signal_during_startup_is_interrupted)
{
    const struct sig_row *r = &sig_rows[_i];
    const char *opts[] = {"--era", "modern", "--hang-at", "list",
                          r->ignore_term ? "--ignore-term" : NULL, NULL};
    const char *argv[] = {cli, r->cmd, "-c", dir, NULL};
    struct json_object *o;
    struct child c;
    char *text;
    int64_t t0;
    add_fixture(30, opts);
    c = run_cli(argv);
    wait_for_log("tools/list");
    t0 = h_now_ms();
    ck_assert_int_eq(kill(c.pid, r->sig), 0);
    ck_assert_int_eq(finish_cli(c, &text), 1);
    /* Far from the 30 s deadline: the close's two graces (4 s with
     * --ignore-term) and slack. */
    ck_assert_int_lt(h_now_ms() - t0, 4000 + h_slack(4000));
    o = one_json_line(text);
    ck_assert_str_eq(sget(o, "error", "code"), "interrupted");
    ck_assert_str_eq(sget(o, "error", "phase"), "tools/list");
    ck_assert_str_eq(sget(o, "error", "app"), PKG);
    json_object_put(o);
    free(text);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, J_FAILED);
}
END_TEST

START_TEST(cli_signal_during_call_is_unknown)
{
    const char *opts[] = {"--era", "modern", "--call-delay-ms", "30000",
                          _i ? "--ignore-term" : NULL, NULL};
    const char *argv[] = {cli, "call", "-c", dir, TOOL, "{\"text\":\"x\"}",
                          NULL};
    struct json_object *o;
    struct child c;
    char *text;
    int64_t t0;
    add_fixture(40, opts);
    c = run_cli(argv);
    wait_for_log("tools/call");
    t0 = h_now_ms();
    ck_assert_int_eq(kill(c.pid, SIGTERM), 0);
    ck_assert_int_eq(finish_cli(c, &text), 4);
    ck_assert_int_lt(h_now_ms() - t0, 8000);
    o = one_json_line(text);
    ck_assert_str_eq(sget(o, "status", NULL), "unknown");
    ck_assert_ptr_nonnull(sget(o, "content", NULL));
    json_object_put(o);
    free(text);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, J_READY);
}
END_TEST

/* A signal with nothing to interrupt changes nothing: the child that
 * finished normally before it is not disturbed (the thread is joined at
 * exit, the default action is never taken). */
START_TEST(cli_without_signal_exits_normally)
{
    const char *opts[] = {"--era", "modern", NULL};
    const char *argv[] = {cli, "call", "-c", dir, TOOL, "{\"text\":\"hi\"}",
                          NULL};
    struct json_object *o;
    char *text;
    add_fixture(10, opts);
    ck_assert_int_eq(finish_cli(run_cli(argv), &text), 0);
    o = one_json_line(text);
    ck_assert_str_eq(sget(o, "status", NULL), "succeeded");
    ck_assert_str_eq(sget(o, "content", NULL), "hi");
    json_object_put(o);
    free(text);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* ---- a journal that cannot be opened ---------------------------------- */

/* A journal that cannot be opened fails the start as journal_error in
 * phase config, at once (not at the 30 s deadline of an App that would
 * hang), and leaves no App process behind, whatever the Apps do and
 * whenever the journal is opened.  Row 0: the App hangs on its listing;
 * row 1: it starts at once. */
START_TEST(journal_error_fails_at_once)
{
    const char *hang[] = {"--hang-at", "list", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t t0;

    add_fixture(30, _i == 0 ? hang : NULL);
    /* data/ is a file: data/world.sqlite3 cannot be made. */
    h_write(dir, "data", "not a directory\n");
    t0 = h_now_ms();
    ck_assert_int_ne(h_start(dir, &h, &serr), AUR_OK);
    ck_assert_str_eq(serr.code, "journal_error");
    ck_assert_str_eq(serr.phase, "config");
    ck_assert_ptr_null(strstr(serr.message, "cancelled"));
    ck_assert_int_lt(h_now_ms() - t0, h_slack(8000));
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *mem = tcase_create("memory");
    TCase *io = tcase_create("stdout");
    TCase *ph = tcase_create("phases");
    TCase *sig = tcase_create("signals");
    TCase *jr = tcase_create("journal");
    TCase *all[] = {mem, io, ph, sig, jr};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 90);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(mem, huge_line_during_list_is_refused_bounded);
    tcase_add_test(mem, notification_flood_is_survived_bounded);
    tcase_add_loop_test(io, closed_stdout_fails_startup_and_is_killed, 0,
                        (int)(sizeof close_eras / sizeof *close_eras));
    tcase_add_loop_test(ph, exit_at_each_phase_reports_it, 0,
                        (int)(sizeof exit_rows / sizeof *exit_rows));
    tcase_add_loop_test(sig, cli_signal_during_startup_is_interrupted, 0,
                        (int)(sizeof sig_rows / sizeof *sig_rows));
    tcase_add_loop_test(sig, cli_signal_during_call_is_unknown, 0, 2);
    tcase_add_test(sig, cli_without_signal_exits_normally);
    tcase_add_loop_test(jr, journal_error_fails_at_once, 0, 2);
    return s;
}

int main(void)
{
    return aur_check_main(faults_suite(), NULL);
}
