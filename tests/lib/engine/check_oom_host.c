/*
 * check_oom_host.c - the out-of-memory policy of aur_host.h, swept over a
 * whole host: aur_mcp_create + aur_mcp_start against our fixture server,
 * and aur_mcp_call on a started host.
 *
 * Every allocation the core makes (it is linked in statically here, with
 * support/oom_wrap.c) fails from the Nth on, for N = 0, 1, 2, ... until a
 * run needs fewer.  Each run must end with AUR_E_NOMEM and nothing
 * half-made (LeakSanitizer in the ASan build, no child left behind), or
 * absorb the failure and still be fully right.  A call that ran out of
 * memory may end failed only if the server never saw it: the server's own
 * log is the judge.  Allocations inside json-c, SQLite, libc and the
 * plugins are not wrapped (support/oom_wrap.h).
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/harness.h"
#include "support/oom_wrap.h"

#define PKG "org.test.oom"
#define TOOL "aur.mcp.org.test.oom.t0000"
#define ARGS "{\"text\":\"hello\"}"
#define MAX_SWEEP 20000

#define KEY "org.aurorabot/tool-contract"

static char *dir, *fixture, *logpath;

static void setup(void) { h_fixture_env(&dir, &fixture, &logpath); }

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

/*
 * Variant 0: the plain host, whose calls take the fast path (a reply read
 * as text, the frozen scopes).  Variant 1: with ext-tool-contract
 * negotiated and scope templates on the tools, so every call resolves its
 * scopes (a copy per call) and its reply is parsed into a tree that the
 * extension classifies.
 */
static void configure(int variant)
{
    const char *plain[] = {"--era", "modern", "--tools", "2", NULL};
    const char *contract[] = {
        "--era", "modern", "--tools", "2", "--extensions",
        "{\"" KEY "\":{\"version\":1}}", "--tool-meta",
        "{\"" KEY "\":{\"observe\":[\"chan:{text}\",\"fixed:o\"],"
        "\"publish\":[\"pub:{text}\"]}}", NULL};
    char *ini;

    if (variant == 1) {
        ck_assert(asprintf(&ini, "[host]\n"
                           "plugins = transport-stdio ext-tool-contract\n"
                           "plugin_dir = %s/plugins\n"
                           "journal = data/world.sqlite3\n"
                           "log_level = warn\n[mcp]\nenabled = true\n",
                           AUR_TEST_BIN_DIR) > 0);
        h_write(dir, "host.ini", ini);
        free(ini);
    }
    /* The sweep is about allocations, not time: a deadline no loaded
     * machine misses (a start under ASan and perturbation once took more
     * than 5 s beside other builds). */
    h_add_logged_app(dir, "a.ini", PKG, (double)h_slack(30000) / 1000.0, NULL,
                     fixture, NULL, logpath, variant == 1 ? contract : plain);
}

/* A call's output that is the full success of variant v. */
static void assert_success(const struct aur_tool_output *out, int v)
{
    ck_assert_int_eq(out->status, AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(out->content, "hello");
    ck_assert_uint_eq(out->n_observe, v == 1 ? 2 : 1);
    ck_assert_str_eq(out->observe[0],
                     v == 1 ? "chan:hello" : "aurora:mcp:" PKG);
}

/* A started host that is whole: both tools frozen, a call answered. */
static void assert_whole(struct aur_mcp *h, long n, int v)
{
    struct aur_tool_output out = {.struct_size = sizeof out};

    ck_assert_msg(aur_mcp_tool_count(h) == 2, "n=%ld: %zu tools", n,
                  aur_mcp_tool_count(h));
    ck_assert_int_eq(aur_mcp_call(h, TOOL, ARGS, strlen(ARGS), -1, &out),
                     AUR_OK);
    assert_success(&out, v);
    aur_tool_output_clear(&out);
}

START_TEST(startup_every_failure_is_nomem)
{
    long n, nomem = 0;

    configure(_i);
    for (n = oom_first(); n < MAX_SWEEP; n++) {
        struct aur_startup_error serr = {.struct_size = sizeof serr};
        struct aur_mcp *h = (struct aur_mcp *)&h;
        struct aur_error err = {0};
        bool created;
        long failed;
        int rc;

        /* No Check assertion while armed: they allocate too. */
        oom_arm(n);
        rc = aur_mcp_create(dir, NULL, &h, &serr, &err);
        created = rc == AUR_OK;
        if (created)
            rc = aur_mcp_start(h, &serr, &err);
        failed = oom_disarm();
        ck_assert_msg(created || h == NULL, "n=%ld: a host after a failed "
                      "create", n);
        if (rc != AUR_OK) {
            ck_assert_msg(failed > 0, "n=%ld: rc %s without a failed "
                          "allocation: %s", n, aur_rc_word(rc), err.msg);
            ck_assert_msg(rc == AUR_E_NOMEM, "n=%ld: rc %s (%s; %s %s: %s)",
                          n, aur_rc_word(rc), err.msg, serr.code, serr.phase,
                          serr.message);
            /* Said as any failed create or start says it. */
            ck_assert_msg(created ? serr.rc == AUR_E_STARTUP ||
                                        serr.rc == AUR_E_JOURNAL
                                  : serr.rc == AUR_E_CONFIG,
                          "n=%ld: %s", n, serr.code);
            ck_assert_int_ne(serr.phase_id, AUR_PHASE_NONE);
            ck_assert_str_eq(serr.phase, aur_phase_word(serr.phase_id));
            ck_assert_msg(serr.message[0], "n=%ld: no message", n);
            nomem++;
        } else {
            assert_whole(h, n, _i);
        }
        aur_mcp_destroy(h);
        ck_assert_msg(h_procs_with(logpath) == 0, "n=%ld: a server outlived "
                      "its host", n);
        if (failed == 0)
            break;
    }
    ck_assert_int_lt(n, MAX_SWEEP);
    ck_assert_int_gt(nomem, 50); /* the sweep really went through startup */
    fprintf(stderr, "startup %d: %ld allocations, %ld runs ended nomem\n",
            _i, n, nomem);
}
END_TEST

START_TEST(call_every_failure_is_truthful)
{
    long n, counts[3] = {0};

    configure(_i);
    for (n = oom_first(); n < MAX_SWEEP; n++) {
        struct aur_startup_error serr = {.struct_size = sizeof serr};
        struct aur_tool_output out = {.struct_size = sizeof out};
        struct aur_mcp *h;
        enum aur_call_status st;
        long failed;
        int rc, reached;
        char *content;

        unlink(logpath);
        ck_assert_int_eq(h_start(dir, &h, &serr), AUR_OK);
        oom_arm(n);
        rc = aur_mcp_call(h, TOOL, ARGS, strlen(ARGS), -1, &out);
        failed = oom_disarm();
        st = out.status;
        ck_assert_ptr_nonnull(out.content);
        ck_assert_uint_eq(out.content_len, strlen(out.content));
        if (failed == 0) {
            ck_assert_int_eq(rc, AUR_OK);
            assert_success(&out, _i);
        }
        content = strdup(out.content);
        aur_tool_output_clear(&out);
        aur_mcp_destroy(h);
        reached = h_count_lines(logpath, "tools/call");
        if (failed == 0) {
            free(content);
            break;
        }
        /* The one promise that matters: failed = the server never saw
         * it, so retrying is safe. */
        ck_assert_msg(st != AUR_CALL_FAILED || reached == 0,
                      "n=%ld: failed, but the server got the call (%s)", n,
                      content);
        ck_assert_msg(rc == AUR_E_NOMEM || st == AUR_CALL_SUCCEEDED,
                      "n=%ld: rc %s, %s: %s", n, aur_rc_word(rc),
                      aur_call_status_word(st), content);
        if (st == AUR_CALL_SUCCEEDED)
            ck_assert_str_eq(content, "hello");
        counts[st]++;
        free(content);
    }
    ck_assert_int_lt(n, MAX_SWEEP);
    /* The sweep crossed the send: failures before it, unknown after. */
    ck_assert_msg(counts[AUR_CALL_FAILED] > 0 && counts[AUR_CALL_UNKNOWN] > 0,
                  "%ld allocations: %ld failed, %ld unknown, %ld succeeded",
                  n, counts[AUR_CALL_FAILED], counts[AUR_CALL_UNKNOWN],
                  counts[AUR_CALL_SUCCEEDED]);
    fprintf(stderr, "call %d: %ld allocations: %ld failed, %ld unknown, %ld "
            "succeeded\n", _i, n, counts[AUR_CALL_FAILED],
            counts[AUR_CALL_UNKNOWN], counts[AUR_CALL_SUCCEEDED]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("oom_host");
    TCase *t = tcase_create("sweep");

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 1200);
    tcase_add_loop_test(t, startup_every_failure_is_nomem, 0, 2);
    tcase_add_loop_test(t, call_every_failure_is_truthful, 0, 2);
    suite_add_tcase(s, t);
    return aur_check_main(s, NULL);
}
