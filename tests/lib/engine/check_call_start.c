/*
 * check_call_start.c - aur_mcp_call_start (lib/engine/call_start.c)
 * through the shared library against the C fixture server: every
 * accepted call's done runs exactly once, with the outcome aur_mcp_call
 * gives for the same reply, never failed once the request may have
 * reached the server; refused calls never call back; shutdown ends every
 * call before it returns; max_in_flight and the pool fallback; the jsonc
 * variant does not keep its arguments.  Batches are in
 * check_call_batch.c (check_call_start.h: what the two files share).
 * Bounded waits only.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>

#include <check.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_call_start.h"
#include "support/harness.h"

char *dir, *fixture, *logpath;
struct call_seen o;
struct slot slots[NSLOT];

static void setup(void)
{
    memset(&o, 0, sizeof o);
    pthread_mutex_init(&o.mu, NULL);
    h_fixture_env(&dir, &fixture, &logpath);
}

static void teardown(void)
{
    for (int i = 0; i < NSLOT; i++)
        free(o.content[i]);
    h_fixture_env_free(&dir, &fixture, &logpath);
}

static void done(void *ud, const struct aur_tool_output *out)
{
    struct slot *s = ud;
    int caller = pthread_equal(pthread_self(), s->caller);

    pthread_mutex_lock(&o.mu);
    if (!out || !out->content)
        o.null_content++;
    else if (!o.content[s->i])
        o.content[s->i] = strdup(out->content);
    o.status[s->i] = out ? (int)out->status : -1;
    o.on_caller[s->i] = caller;
    o.at[s->i] = h_now_ms();
    o.times[s->i]++;
    o.n++;
    pthread_mutex_unlock(&o.mu);
}

int runs(void)
{
    pthread_mutex_lock(&o.mu);
    int n = o.n;
    pthread_mutex_unlock(&o.mu);
    return n;
}

/* Wait (at most ms, stretched) until n callbacks ran; asserts exactly n. */
void wait_runs(int n, int64_t ms)
{
    int64_t until = h_now_ms() + h_slack(ms);
    while (runs() < n && h_now_ms() < until)
        usleep(2000);
    ck_assert_int_eq(runs(), n);
}

/* Slot i's call of tool (args: JSON text or NULL) from this thread. */
int start(struct aur_mcp *h, const char *tool, const char *args,
                 int64_t timeout_ms, int i)
{
    struct aur_error err;
    slots[i] = (struct slot){i, pthread_self()};
    return aur_mcp_call_start(h, tool, args, args ? strlen(args) : 0,
                              timeout_ms, done, &slots[i], &err);
}

/* The fixture (modern era, opts) as App pkg in file, logging to log. */
void add_app(const char *file, const char *pkg, const char *log,
                    double timeout_s, const char *app_extra,
                    const char *const *opts)
{
    const char *args[24] = {"--era", "modern"};
    size_t n = 2;
    for (size_t k = 0; opts && opts[k]; k++) {
        ck_assert_uint_lt(n, 23);
        args[n++] = opts[k];
    }
    args[n] = NULL;
    h_add_logged_app(dir, file, pkg, timeout_s, app_extra, fixture, NULL, log,
                     args);
}

struct aur_mcp *host(void)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    ck_assert_msg(h_start(dir, &h, &serr) == AUR_OK, "start: %s",
                  serr.message);
    return h;
}

/* Wait (bounded) until path has at least n lines starting with prefix. */
int wait_lines(const char *path, const char *prefix, int n, int64_t ms)
{
    int64_t until = h_now_ms() + h_slack(ms);
    int got;
    while ((got = h_count_lines(path, prefix)) < n && h_now_ms() < until)
        usleep(5000);
    return got;
}

void args_of(int i, char *buf, size_t size)
{
    snprintf(buf, size, "{\"text\":\"k%03d\"}", i);
}

/* Slots [0, n) each ran once, succeeded, with their own text (a reply
 * handed to the wrong call's done shows here), and stay so a while
 * later (no late second run). */
void all_succeeded_once(int n)
{
    char want[16];
    usleep(200000);
    pthread_mutex_lock(&o.mu);
    ck_assert_int_eq(o.n, n);
    ck_assert_int_eq(o.null_content, 0);
    for (int i = 0; i < n; i++) {
        snprintf(want, sizeof want, "k%03d", i);
        ck_assert_msg(o.times[i] == 1, "slot %d ran %d times", i, o.times[i]);
        ck_assert_msg(o.status[i] == AUR_CALL_SUCCEEDED, "slot %d: %d (%s)",
                      i, o.status[i], o.content[i]);
        ck_assert_str_eq(o.content[i], want);
    }
    pthread_mutex_unlock(&o.mu);
}

/* 1a. 200 calls from one thread, started without waiting: catches a lost
 * or doubled callback, replies matched to the wrong request, and calls
 * past max_in_flight (64) that never end. */
START_TEST(many_calls_one_thread)
{
    char args[32];

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    struct aur_mcp *h = host();
    for (int i = 0; i < 200; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, -1, i), AUR_OK);
    }
    wait_runs(200, 60000);
    all_succeeded_once(200);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 200);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 200);
}
END_TEST

/* 1b. The same from 4 threads at once (50 each): catches races on the
 * request table and the send path between callers. */
static struct aur_mcp *shared;
static pthread_barrier_t gate;

static void *caller_thread(void *arg)
{
    int base = (int)(intptr_t)arg, bad = 0;
    char args[32];
    pthread_barrier_wait(&gate);
    for (int j = 0; j < 50; j++) {
        args_of(base + j, args, sizeof args);
        bad += start(shared, TOOL, args, -1, base + j) != AUR_OK;
    }
    return (void *)(intptr_t)bad;
}

START_TEST(many_calls_four_threads)
{
    pthread_t t[4];
    void *bad;

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    shared = host();
    pthread_barrier_init(&gate, NULL, 4);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, caller_thread,
                                        (void *)(intptr_t)(k * 50)), 0);
    for (int k = 0; k < 4; k++) {
        pthread_join(t[k], &bad);
        ck_assert_int_eq((int)(intptr_t)bad, 0);
    }
    pthread_barrier_destroy(&gate);
    wait_runs(200, 60000);
    all_succeeded_once(200);
    aur_mcp_destroy(shared);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 200);
}
END_TEST

/* 2, 7. An outcome known before anything is sent (an unknown tool id, a
 * task-only tool) is failed, reported by done on the calling thread
 * before aur_mcp_call_start returns (the header's contract), and nothing
 * reached the server.  Catches a done that never runs for them, runs
 * twice, or is deferred into a thread or a deadlock. */
START_TEST(known_before_send_runs_on_caller)
{
    const char *opts[] = {"--tool-json",
                          "{\"name\":\"job\",\"inputSchema\":{\"type\":"
                          "\"object\"},\"execution\":{\"taskSupport\":"
                          "\"required\"}}",
                          NULL};

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    ck_assert_int_eq(start(h, TOOL "x", NULL, -1, 0), AUR_OK);
    ck_assert_int_eq(runs(), 1); /* already, before it returned */
    ck_assert_int_eq(start(h, "aur.mcp." PKG ".job", "{}", -1, 1), AUR_OK);
    ck_assert_int_eq(runs(), 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(o.status[i], AUR_CALL_FAILED);
        ck_assert_int_eq(o.on_caller[i], 1);
        ck_assert_int_eq(o.times[i], 1);
        ck_assert_ptr_nonnull(o.content[i]);
        ck_assert_uint_gt(strlen(o.content[i]), 0);
    }
    ck_assert_msg(strstr(o.content[1], "not sent"), "%s", o.content[1]);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 2);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

/* 7. Refused calls: AUR_E_INVAL / AUR_E_STATE, and done never runs.
 * Catches a refusal that still sends or calls back (done would run with
 * a slot the caller no longer expects). */
START_TEST(refused_calls_never_call_back)
{
    static const char *const bad[] = {"[1]", "{", "{\"a\":1} x", "\"s\"",
                                      "null", "{\"a\":1,}"};
    struct aur_error err;

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    struct aur_mcp *h = NULL;
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, NULL, NULL), AUR_OK);
    ck_assert_int_eq(start(h, TOOL, NULL, -1, 0), AUR_E_STATE); /* not started */
    ck_assert_int_eq(aur_mcp_start(h, NULL, NULL), AUR_OK);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        ck_assert_msg(start(h, TOOL, bad[k], -1, 0) == AUR_E_INVAL, "%s",
                      bad[k]);
    /* "{}" cut to 1 byte by args_len */
    ck_assert_int_eq(aur_mcp_call_start(h, TOOL, "{}", 1, -1, done,
                                        &slots[0], &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(aur_mcp_call_start(h, TOOL, NULL, 0, -1, NULL, NULL,
                                        &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(aur_mcp_call_start(h, NULL, NULL, 0, -1, done,
                                        &slots[0], &err),
                     AUR_E_INVAL);
    /* a good call afterwards, so any stray callback has had its chance */
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k000\"}", -1, 0), AUR_OK);
    wait_runs(1, 10000);
    all_succeeded_once(1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 1);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
}
END_TEST

/* 3. A call the server never answers ends unknown (never failed) at its
 * deadline, once, on time; the host sends notifications/cancelled as
 * aur_mcp_call does (docs/fault-matrix.md) and stays usable.  Catches a
 * missing call clock (no callback until shutdown), a deadline ignored or
 * taken as the App's 30 s, a timeout reported failed. */
START_TEST(deadline_is_unknown_once)
{
    const char *hang[] = {"--hang-at", "call", NULL};
    char *log2;
    int64_t t0;
    char *content;

    ck_assert(asprintf(&log2, "%s/b.log", dir) > 0);
    add_app("a.ini", PKG, logpath, 30, NULL, hang);
    add_app("b.ini", PKG2, log2, 30, NULL, NULL);
    struct aur_mcp *h = host();
    t0 = h_now_ms();
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"h\"}", 300, 0), AUR_OK);
    wait_runs(1, 10000);
    ck_assert_int_eq(o.status[0], AUR_CALL_UNKNOWN);
    ck_assert_msg(strstr(o.content[0], "timed out"), "%s", o.content[0]);
    ck_assert_int_ge(o.at[0] - t0, 290);
    ck_assert_int_le(o.at[0] - t0, h_slack(10000));
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
    ck_assert_int_eq(wait_lines(logpath, "notifications/cancelled", 1, 5000),
                     1);
    /* still usable: the other App answers, the hung one times out again */
    ck_assert_int_eq(start(h, TOOL2, "{\"text\":\"k001\"}", -1, 1), AUR_OK);
    wait_runs(2, 10000);
    ck_assert_int_eq(o.status[1], AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(o.content[1], "k001");
    ck_assert_int_eq(h_call(h, TOOL2, "{\"text\":\"s\"}", &content),
                     AUR_CALL_SUCCEEDED);
    free(content);
    ck_assert_int_eq(start(h, TOOL, NULL, 300, 2), AUR_OK);
    wait_runs(3, 10000);
    ck_assert_int_eq(o.status[2], AUR_CALL_UNKNOWN);
    usleep(300000);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(o.times[i], 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 3);
    free(log2);
}
END_TEST

/* 4. The server exits when the call arrives: unknown, once (catches an
 * App loss that drops the pending call, or reports it failed).  A later
 * call, the App seen gone, is failed on the calling thread and never
 * sent. */
START_TEST(server_exit_is_unknown_then_not_sent)
{
    const char *opts[] = {"--exit-at", "call", NULL};

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"e\"}", 20000, 0), AUR_OK);
    wait_runs(1, 10000); /* well before the 20 s deadline */
    ck_assert_int_eq(o.status[0], AUR_CALL_UNKNOWN);
    ck_assert(h_wait_restart_required(h, 5000));
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"f\"}", -1, 1), AUR_OK);
    ck_assert_int_eq(runs(), 2); /* before it returned */
    ck_assert_int_eq(o.on_caller[1], 1);
    ck_assert_int_eq(o.status[1], AUR_CALL_FAILED);
    usleep(200000);
    ck_assert_int_eq(o.times[0], 1);
    ck_assert_int_eq(o.times[1], 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 2);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
}
END_TEST

/* 5. Half an answer, then silence: unknown at the deadline, once
 * (catches a half line taken as an answer, or no deadline). */
START_TEST(partial_answer_is_unknown)
{
    const char *opts[] = {"--partial-at", "call", NULL};
    int64_t t0;

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    t0 = h_now_ms();
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"p\"}", 300, 0), AUR_OK);
    wait_runs(1, 10000);
    ck_assert_int_eq(o.status[0], AUR_CALL_UNKNOWN);
    ck_assert_int_le(o.at[0] - t0, h_slack(10000));
    usleep(300000);
    ck_assert_int_eq(o.times[0], 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 1);
}
END_TEST

/* 6. Answers that are errors or refused: the asynchronous path maps each
 * exactly as aur_mcp_call does (status and text), and to the status the
 * product documents (an explicit -32602 rejection is the one failed).
 * Catches a second, diverging mapping in call_start.c. */
static const struct {
    const char *opts[3];
    enum aur_call_status want;
} replies[] = {
    {{"--error-at", "call", NULL}, AUR_CALL_UNKNOWN},
    {{"--call-error", "-32602", NULL}, AUR_CALL_FAILED},
    {{"--malformed-at", "call", NULL}, AUR_CALL_UNKNOWN},
    {{"--broken-at", "call", NULL}, AUR_CALL_UNKNOWN},
    {{"--call-result",
      "{\"content\":[{\"type\":\"text\",\"text\":\"bad\"}],"
      "\"isError\":true}",
      NULL},
     AUR_CALL_UNKNOWN},
};

START_TEST(replies_map_as_sync)
{
    struct aur_tool_output out = {.struct_size = sizeof out};
    const char *args = "{\"text\":\"r\"}";

    add_app("a.ini", PKG, logpath, 30, NULL, replies[_i].opts);
    struct aur_mcp *h = host();
    ck_assert_int_eq(aur_mcp_call(h, TOOL, args, strlen(args), 10000, &out),
                     AUR_OK);
    ck_assert_int_eq(start(h, TOOL, args, 10000, 0), AUR_OK);
    wait_runs(1, 15000);
    ck_assert_msg(o.status[0] == (int)out.status,
                  "%s: async %d (%s), sync %d (%s)", replies[_i].opts[0],
                  o.status[0], o.content[0], out.status, out.content);
    ck_assert_str_eq(o.content[0], out.content);
    ck_assert_int_eq(o.status[0], replies[_i].want);
    aur_tool_output_clear(&out);
    usleep(200000);
    ck_assert_int_eq(o.times[0], 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 2);
}
END_TEST

/* 8. Shutdown with 40 calls the server holds: all 40 were sent at once
 * (more than the pool's 16 threads could: no thread per call), and
 * aur_mcp_shutdown returns only after each done ran once, unknown, long
 * before the App's 30 s deadline.  Afterwards: AUR_E_STATE, no done.
 * Catches callbacks after (or never, or twice at) shutdown and a sent
 * call reported failed. */
START_TEST(shutdown_ends_every_call_unknown)
{
    const char *opts[] = {"--hang-at", "call", NULL};
    int64_t t0;

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(start(h, TOOL, NULL, -1, i), AUR_OK);
    ck_assert_int_eq(wait_lines(logpath, "tools/call", 40, 10000), 40);
    ck_assert_int_eq(runs(), 0);
    t0 = h_now_ms();
    aur_mcp_shutdown(h);
    ck_assert_int_lt(h_now_ms() - t0, h_slack(20000));
    ck_assert_int_eq(runs(), 40); /* all ran before shutdown returned */
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(o.times[i], 1);
        ck_assert_msg(o.status[i] == AUR_CALL_UNKNOWN, "slot %d: %d (%s)", i,
                      o.status[i], o.content[i]);
    }
    ck_assert_int_eq(o.null_content, 0);
    ck_assert_int_eq(start(h, TOOL, NULL, -1, 40), AUR_E_STATE);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 40);
    ck_assert_int_eq(o.times[40], 0);
}
END_TEST

/* 9a. max_in_flight = 2 and 16 calls against a server that takes 20 ms
 * each: the ones over the budget take the fallback and all succeed, once
 * (catches calls over budget lost, refused or failed). */
START_TEST(max_in_flight_over_budget_all_succeed)
{
    const char *opts[] = {"--call-delay-ms", "20", NULL};
    char args[32];

    add_app("a.ini", PKG, logpath, 30, "max_in_flight = 2", opts);
    struct aur_mcp *h = host();
    for (int i = 0; i < 16; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, -1, i), AUR_OK);
    }
    wait_runs(16, 30000);
    all_succeeded_once(16);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 16);
}
END_TEST

/* 9b. max_in_flight = 3 against a server that holds every call: exactly
 * 3 reach it, the other 7 wait unsent; at shutdown the 3 are unknown and
 * the 7 failed (never sent), each once.  Catches the fast path ignoring
 * the budget, and an unsent call reported unknown or a sent one failed. */
START_TEST(max_in_flight_holds_with_hung_server)
{
    const char *opts[] = {"--hang-at", "call", NULL};
    int unknown = 0, failed = 0;

    add_app("a.ini", PKG, logpath, 30, "max_in_flight = 3", opts);
    struct aur_mcp *h = host();
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(start(h, TOOL, NULL, -1, i), AUR_OK);
    ck_assert_int_eq(wait_lines(logpath, "tools/call", 3, 10000), 3);
    usleep(300000);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 3);
    ck_assert_int_eq(runs(), 0);
    aur_mcp_shutdown(h);
    ck_assert_int_eq(runs(), 10);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(o.times[i], 1);
        unknown += o.status[i] == AUR_CALL_UNKNOWN;
        failed += o.status[i] == AUR_CALL_FAILED;
    }
    ck_assert_int_eq(unknown, 3);
    ck_assert_int_eq(failed, 7);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 3);
}
END_TEST

/* 10. The jsonc variant: arguments borrowed, not kept.  Each tree is
 * changed and freed right after the call returns, with max_in_flight = 1
 * so most calls take the fallback (where a kept reference would be read
 * later): the server must still see the original text (a kept reference
 * shows "CHANGED", a kept pointer is a use after free under ASan).  NULL
 * = {}; a non-object is AUR_E_INVAL without a callback. */
START_TEST(jsonc_arguments_not_kept)
{
    const char *opts[] = {"--call-delay-ms", "50", NULL};
    struct aur_error err;
    char text[16];

    add_app("a.ini", PKG, logpath, 30, "max_in_flight = 1", opts);
    struct aur_mcp *h = host();
    for (int i = 0; i < 6; i++) {
        struct json_object *a = json_object_new_object();
        snprintf(text, sizeof text, "k%03d", i);
        json_object_object_add(a, "text", json_object_new_string(text));
        slots[i] = (struct slot){i, pthread_self()};
        ck_assert_int_eq(aur_mcp_call_start_jsonc(h, TOOL, a, -1, done,
                                                  &slots[i], &err),
                         AUR_OK);
        json_object_object_add(a, "text", json_object_new_string("CHANGED"));
        json_object_put(a);
    }
    wait_runs(6, 30000);
    all_succeeded_once(6);
    slots[6] = (struct slot){6, pthread_self()};
    ck_assert_int_eq(aur_mcp_call_start_jsonc(h, TOOL, NULL, -1, done,
                                              &slots[6], &err),
                     AUR_OK);
    wait_runs(7, 10000);
    ck_assert_int_eq(o.status[6], AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(o.content[6], "ok:t0000");
    struct json_object *arr = json_object_new_array();
    ck_assert_int_eq(aur_mcp_call_start_jsonc(h, TOOL, arr, -1, done,
                                              &slots[7], &err),
                     AUR_E_INVAL);
    json_object_put(arr);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 7);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 7);
}
END_TEST

/* Answers racing deadlines: the server answers one call every 40 ms, in
 * order, so call i's answer comes at least 40 ms * (i + 1) after the
 * first call arrived.  Odd i: deadline 40 ms * (i + 1), meeting its
 * answer; even i: 10 ms * (i + 1), long before it (unknown for sure from
 * i = 6 on: 210 ms and more of margin).  Each done runs once, succeeded
 * (its own text) or unknown, never failed, and no late answer runs a
 * second one.  Catches a double callback between the I/O thread and the
 * call clock, and a deadline not enforced. */
START_TEST(answer_races_deadline)
{
    const char *opts[] = {"--call-delay-ms", "40", NULL};
    char args[32], want[16];
    int ok = 0, unknown = 0;

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    for (int i = 0; i < 24; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, (i % 2 ? 40 : 10) * (i + 1), i),
                         AUR_OK);
    }
    wait_runs(24, 15000);
    /* every answer has come by now (24 x 40 ms); late ones must be dropped */
    wait_lines(logpath, "tools/call", 24, 5000);
    usleep(h_slack(1500));
    pthread_mutex_lock(&o.mu);
    ck_assert_int_eq(o.n, 24);
    for (int i = 0; i < 24; i++) {
        ck_assert_msg(o.times[i] == 1, "slot %d ran %d times", i, o.times[i]);
        ck_assert_msg(o.status[i] == AUR_CALL_SUCCEEDED ||
                          o.status[i] == AUR_CALL_UNKNOWN,
                      "slot %d: %d (%s)", i, o.status[i], o.content[i]);
        if (i % 2 == 0 && i >= 6)
            ck_assert_msg(o.status[i] == AUR_CALL_UNKNOWN,
                          "slot %d: %d (%s)", i, o.status[i], o.content[i]);
        snprintf(want, sizeof want, "k%03d", i);
        if (o.status[i] == AUR_CALL_SUCCEEDED)
            ck_assert_str_eq(o.content[i], want);
        ok += o.status[i] == AUR_CALL_SUCCEEDED;
        unknown += o.status[i] == AUR_CALL_UNKNOWN;
    }
    pthread_mutex_unlock(&o.mu);
    printf("answer_races_deadline: %d succeeded, %d unknown\n", ok, unknown);
    aur_mcp_destroy(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("call_start");
    TCase *t = tcase_create("call_start");

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, many_calls_one_thread);
    tcase_add_test(t, many_calls_four_threads);
    tcase_add_test(t, known_before_send_runs_on_caller);
    tcase_add_test(t, refused_calls_never_call_back);
    tcase_add_test(t, deadline_is_unknown_once);
    tcase_add_test(t, server_exit_is_unknown_then_not_sent);
    tcase_add_test(t, partial_answer_is_unknown);
    tcase_add_loop_test(t, replies_map_as_sync, 0,
                        (int)(sizeof replies / sizeof *replies));
    tcase_add_test(t, shutdown_ends_every_call_unknown);
    tcase_add_test(t, max_in_flight_over_budget_all_succeed);
    tcase_add_test(t, max_in_flight_holds_with_hung_server);
    tcase_add_test(t, jsonc_arguments_not_kept);
    tcase_add_test(t, answer_races_deadline);
    call_batch_tests(t);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
