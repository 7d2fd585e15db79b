/*
 * check_transport_stdio.c - transport-stdio through its ABI only.
 *
 * The suite dlopens the built plugin, gives it a test host
 * (tests/fixtures/stdio_host.c) and drives real child processes
 * (tests/fixtures/stdio_child.c).  Fork mode isolates each test, so the
 * process-wide recorders are per test.  Frames, shutdown, child exit,
 * sending and stderr are here; how an App is started and contained is in
 * check_transport_stdio_spawn.c (same binary).
 */
#define _GNU_SOURCE
#include "fixtures/stdio_host.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

Suite *stdio_spawn_suite(void);
Suite *stdio_start_suite(void);
Suite *stdio_fds_suite(void);
Suite *stdio_cork_suite(void);
Suite *stdio_prepare_suite(void);

/* ------------------------------------------------------------------ */
/* Frames                                                             */
/* ------------------------------------------------------------------ */

START_TEST(test_roundtrip)
{
    struct aur_error err;
    struct json_object *req, *m;
    struct aur_conn *c;

    up();
    ep_child("echo", NULL);
    c = open_ok();
    wait_hello();
    req = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
                             "\"tools/list\",\"params\":{\"_meta\":{\"u\":"
                             "\"a/b\",\"t\":\"l1\\nl2\"}}}");
    ck_assert_ptr_nonnull(req);
    ck_assert_int_eq(OPS->send(c, req, t_now() + 2000, &err), AUR_OK);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert(json_object_equal(m, req));
    json_object_put(m);
    json_object_put(req);
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 0); /* close reports nothing */
}
END_TEST

/* The "malformed" child through the current sink: after its noise only
 * the CRLF frame and the good one arrive, in that order. */
static struct aur_conn *open_malformed(void)
{
    struct aur_conn *c;
    struct json_object *m;

    up();
    ep_child("malformed", NULL);
    c = open_ok();
    wait_hello();
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(method_of(m), "crlf");
    json_object_put(m);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(method_of(m), "good");
    json_object_put(m);
    return c;
}

START_TEST(test_malformed_dropped)
{
    struct aur_conn *c = open_malformed();

    ck_assert(log_has(PKG ": dropped malformed frame (8 bytes)"));
    ck_assert(log_has(PKG ": dropped malformed frame (7 bytes)"));
    ck_assert(log_has(PKG ": dropped malformed frame (11 bytes)"));
    ck_assert(log_has(PKG ": dropped malformed frame (3 bytes)"));
    /* Empty and CR-only lines are skipped silently. */
    ck_assert_int_eq(log_count("dropped malformed frame"), 4);
    ck_assert(!log_has("not json"));
    ck_assert(!log_has("[1,2,3]"));
    ck_assert_ptr_null(next_msg(100));
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* With an ABI 1.2 host the frames go to on_text as they came (CR and LF
 * gone), a refused one is logged and dropped as a failed parse is, and
 * on_message is never called. */
START_TEST(test_text_sink)
{
    struct aur_error err;
    struct json_object *m, *resp;
    struct aur_conn *c;

    OPEN_SINK = &TEXT_SINK;
    c = open_malformed();
    ck_assert_int_eq(log_count("dropped malformed frame"), 4);
    ck_assert(log_has(PKG ": dropped malformed frame (3 bytes)"));
    /* hello, four refused, crlf, good */
    ck_assert_int_eq(__atomic_load_n(&TEXT.frames, __ATOMIC_RELAXED), 7);
    /* The child echoes a response back: the sink announces its id. */
    resp = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
    ck_assert_int_eq(OPS->send(c, resp, t_now() + 2000, &err), AUR_OK);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert(json_object_equal(m, resp));
    json_object_put(m);
    json_object_put(resp);
    ck_assert_int_eq(__atomic_load_n(&TEXT.responses, __ATOMIC_RELAXED), 1);
    ck_assert_int_eq(__atomic_load_n(&TEXT.with_eol, __ATOMIC_RELAXED), 0);
    ck_assert_int_eq(__atomic_load_n(&TEXT.direct, __ATOMIC_RELAXED), 0);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_oversized_line)
{
    struct aur_conn *c;

    up2("max_line_bytes", "1024", NULL, NULL);
    ep_child("bigline", "1025");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_LIMIT);
    ck_assert_ptr_nonnull(strstr(R.msg, "max_line_bytes"));
    sleep_ms(300);
    ck_assert_int_eq(closed_count(), 1);
    ck_assert_ptr_null(next_msg(0)); /* the big frame never arrives */
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_line_at_limit)
{
    struct aur_conn *c;
    struct json_object *m;

    up2("max_line_bytes", "1024", NULL, NULL);
    ep_child("bigline", "1024");
    c = open_ok();
    wait_hello();
    m = wait_method("big", 3000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    ck_assert_int_eq(closed_count(), 0);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_big_frame)
{
    struct aur_conn *c;
    struct json_object *m, *p, *s;

    up();
    ep_child("bigline", "3000000");
    c = open_ok();
    wait_hello();
    m = wait_method("big", 5000);
    ck_assert_ptr_nonnull(m);
    ck_assert(json_object_object_get_ex(m, "params", &p));
    ck_assert(json_object_object_get_ex(p, "s", &s));
    /* 3000000 minus the 50 bytes of JSON around the string */
    ck_assert_int_eq(json_object_get_string_len(s), 3000000 - 50);
    json_object_put(m);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_partial_frame)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0;

    up();
    ep_child("partial", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_ptr_null(next_msg(300));
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    ck_assert_int_lt(t_now() - t0, 2000);
    ck_assert_ptr_null(next_msg(0));
    ck_assert_int_eq(closed_count(), 0);
    ck_assert(group_gone(h.pgid));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lifecycle                                                          */
/* ------------------------------------------------------------------ */

START_TEST(test_close_kills_group)
{
    struct aur_conn *c;
    struct hello h;

    up();
    ep_child("echo", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_eq(h.pgid, h.pid); /* its own group */
    ck_assert_int_ne(h.pgid, (long)getpgrp());
    OPS->close(c, t_now() + 3000);
    ck_assert(group_gone(h.pgid));
    ck_assert(!proc_exists(h.pid)); /* reaped: no zombie */
}
END_TEST

START_TEST(test_close_kills_grandchild)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0;

    /* Orphans come to us, so their zombies can be reaped below. */
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    up();
    ep_child("fork-grandchild", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_gt(h.grandchild, 1);
    ck_assert_int_eq(kill((pid_t)h.grandchild, 0), 0);
    ck_assert_int_eq(proc_pgrp(h.grandchild), h.pgid);
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    ck_assert_int_lt(t_now() - t0, 2500);
    for (int i = 0; i < 200 && !group_gone(h.pgid); i++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        sleep_ms(10);
    }
    ck_assert(group_gone(h.pgid));
}
END_TEST

START_TEST(test_sigterm_ignored)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0, el;

    up(); /* term_grace_ms = 300 */
    ep_child("ignore-term", NULL);
    c = open_ok();
    h = wait_hello();
    t0 = t_now();
    OPS->close(c, t_now() + 5000);
    el = t_now() - t0;
    /* 300 ms after stdin EOF, 300 ms after SIGTERM, then SIGKILL; well
     * before the 5 s deadline it would take without the escalation. */
    ck_assert_int_ge(el, 550);
    ck_assert_int_lt(el, 4000);
    ck_assert(group_gone(h.pgid));
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

START_TEST(test_close_deadline)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0, el;

    up2("term_grace_ms", "10000", NULL, NULL);
    ep_child("ignore-term", NULL);
    c = open_ok();
    h = wait_hello();
    t0 = t_now();
    OPS->close(c, t0 + 400);
    el = t_now() - t0;
    /* dl, then SIGTERM's minimum 200 ms, then SIGKILL and reaping; the
     * upper bound leaves a loaded machine room and is still far below
     * the 10 s term_grace_ms that ignoring dl would cost. */
    ck_assert_int_ge(el, 550);
    ck_assert_int_lt(el, 3000);
    ck_assert(group_gone(h.pgid));
}
END_TEST

START_TEST(test_escaped_grandchild)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0;

    up();
    ep_child("escape", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_gt(h.grandchild, 1);
    /* The leader says hello right after the fork: wait (bounded) until
     * the grandchild has really left the group, however slow the machine
     * is to schedule it. */
    for (int i = 0; i < 500 && proc_pgrp(h.grandchild) == h.pgid; i++)
        sleep_ms(10);
    ck_assert_int_ne(proc_pgrp(h.grandchild), h.pgid);
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    /* It still holds the pipes: close must not wait for their EOF. */
    ck_assert_int_lt(t_now() - t0, 2000);
    ck_assert(!proc_exists(h.pid));
    /* Leaving the group is no escape: the App's supervisor killed and
     * reaped it before close returned (stdio_contain.c). */
    ck_assert(!proc_exists(h.grandchild));
}
END_TEST

START_TEST(test_exit_status_once)
{
    struct aur_error err;
    struct json_object *m;
    struct aur_conn *c;

    up();
    ep_child("exit-now", "3");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_CLOSED);
    ck_assert_int_eq(R.detail, 3);
    ck_assert_ptr_nonnull(strstr(R.msg, "status 3"));
    sleep_ms(400);
    ck_assert_int_eq(closed_count(), 1);
    m = rpc("late", 10);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_E_NOT_SENT);
    ck_assert_int_eq(err.detail, AUR_E_CLOSED);
    json_object_put(m);
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_exit_clean)
{
    struct aur_conn *c;

    up();
    ep_child("exit-now", "0");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert(R.why_null);
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_stdout_eof_while_alive)
{
    struct aur_conn *c;
    struct hello h;

    up();
    ep_child("close-stdout", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert(wait_closed(2000)); /* EOF is the end, even if it lingers */
    ck_assert(R.why_null);
    ck_assert(proc_exists(h.pid));
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
    ck_assert(group_gone(h.pgid));
}
END_TEST

START_TEST(test_exit_with_sigchld_ignored)
{
    struct aur_conn *c;
    int64_t t0;

    signal(SIGCHLD, SIG_IGN); /* the kernel reaps: no status for us */
    up();
    ep_child("exit-now", "3");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_CLOSED);
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    ck_assert_int_lt(t_now() - t0, 1500);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_exit_signal)
{
    struct aur_conn *c;

    up();
    ep_child("die-signal", NULL);
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_CLOSED);
    ck_assert_int_eq(R.detail, SIGKILL);
    ck_assert_ptr_nonnull(strstr(R.msg, "signal 9"));
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_send_epipe)
{
    struct aur_error err;
    struct json_object *m;
    struct aur_conn *c;

    signal(SIGPIPE, SIG_DFL); /* a host that forgot to ignore it */
    up();
    ep_child("closed-stdin", NULL);
    c = open_ok();
    wait_hello();
    m = rpc("p1", 100);
    /* The App closed its stdin: nothing of the line got into the pipe. */
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_E_NOT_SENT);
    ck_assert_int_eq(err.detail, EPIPE);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_E_NOT_SENT);
    json_object_put(m);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_send_timeout)
{
    struct aur_error err;
    struct json_object *big, *small;
    struct aur_conn *c;
    int64_t t0, el;

    up();
    ep_child("noread", NULL);
    c = open_ok();
    wait_hello();
    big = rpc("big", 4 << 20);
    t0 = t_now();
    /* Part of the line is in the pipe: the App may read it, so this is
     * not "not sent" (the core reports such a call unknown). */
    ck_assert_int_eq(OPS->send(c, big, t0 + 300, &err), AUR_E_TIMEOUT);
    el = t_now() - t0;
    ck_assert_int_ge(el, 250);
    ck_assert_int_lt(el, 3000); /* the App never reads: only dl ends it */
    ck_assert_ptr_nonnull(strstr(err.msg, "deadline"));
    ck_assert_ptr_nonnull(strstr(err.msg, "may have reached"));
    /* Half a line went out: later frames would be corrupt, and none is
     * written (provably not sent). */
    small = rpc("small", 1);
    ck_assert_int_eq(OPS->send(c, small, t_now() + 200, &err), AUR_E_NOT_SENT);
    ck_assert_int_eq(err.detail, AUR_E_CLOSED);
    json_object_put(small);
    json_object_put(big);
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* Wait (bounded) until the App's stdin pipe is full, i.e. a sender is
 * certainly blocked in the middle of its write. */
static bool stdin_pipe_full(long pid, int ms)
{
    char path[64];
    int fd, size, queued = 0;
    int64_t until = t_now() + ms;

    snprintf(path, sizeof path, "/proc/%ld/fd/0", pid);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    size = fcntl(fd, F_GETPIPE_SZ);
    while (size > 0 && ioctl(fd, FIONREAD, &queued) == 0 && queued < size &&
           t_now() < until)
        sleep_ms(10);
    close(fd);
    return size > 0 && queued >= size;
}

struct sender {
    struct aur_conn *c;
    struct json_object *m;
    int64_t dl;
    int rc;
    int tid;
};

static void *send_main(void *arg)
{
    struct sender *s = arg;
    struct aur_error err;
    s->rc = OPS->send(s->c, s->m, s->dl, &err);
    return NULL;
}

START_TEST(test_waiting_sender_deadline)
{
    struct sender a;
    struct aur_error err;
    struct json_object *small;
    pthread_t t;
    struct hello h;
    int64_t t0, el;

    up();
    ep_child("noread", NULL);
    a.c = open_ok();
    h = wait_hello();
    a.m = rpc("big", 4 << 20);
    a.dl = t_now() + 4000;
    ck_assert_int_eq(pthread_create(&t, NULL, send_main, &a), 0);
    /* Only once the big write is stuck is the small one behind it (a
     * fixed nap lost that race on a loaded machine). */
    ck_assert(stdin_pipe_full(h.pid, 3000));
    small = rpc("small", 1);
    t0 = t_now();
    /* Stuck behind the big write, it still keeps its own deadline, not
     * the big one's (about 4 s away). */
    ck_assert_int_eq(OPS->send(a.c, small, t0 + 200, &err), AUR_E_NOT_SENT);
    ck_assert_int_eq(err.detail, AUR_E_TIMEOUT);
    el = t_now() - t0;
    ck_assert_int_lt(el, 1500);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.rc, AUR_E_TIMEOUT);
    json_object_put(small);
    json_object_put(a.m);
    OPS->close(a.c, t_now() + 3000);
}
END_TEST

START_TEST(test_reopen)
{
    struct aur_error err;
    struct json_object *m;
    struct aur_conn *c;
    struct hello h1, h2;

    up();
    ep_child("echo", NULL);
    c = open_ok();
    h1 = wait_hello();
    ck_assert_int_eq(OPS->reopen(c, t_now() + 5000, &err), AUR_OK);
    h2 = wait_hello();
    ck_assert_int_ne(h1.pid, h2.pid);
    ck_assert(group_gone(h1.pgid));
    m = rpc("after-reopen", 10);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_OK);
    json_object_put(m);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    ck_assert_int_eq(closed_count(), 0); /* the old child's end is silent */
    OPS->close(c, t_now() + 3000);
    ck_assert(group_gone(h2.pgid));
}
END_TEST

START_TEST(test_reopen_after_exit)
{
    struct aur_error err;
    struct aur_conn *c;
    struct hello h;

    up();
    ep_child("exit-now", "5");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(OPS->reopen(c, t_now() + 5000, &err), AUR_OK);
    h = wait_hello(); /* the same endpoint: it exits again */
    ck_assert(wait_closed(3000));
    sleep_ms(300);
    ck_assert_int_eq(closed_count(), 2);
    OPS->close(c, t_now() + 3000);
    ck_assert(group_gone(h.pgid));
}
END_TEST

#define NTHREADS 4
#define PER_THREAD 50

static size_t pad_len(int t, int i)
{
    return (size_t)(((t * PER_THREAD + i) * 7919) % 60000);
}

static void *burst_main(void *arg)
{
    struct sender *s = arg;
    struct aur_error err;
    char id[32];

    s->rc = AUR_OK;
    for (int i = 0; i < PER_THREAD && s->rc == AUR_OK; i++) {
        struct json_object *m;
        snprintf(id, sizeof id, "%d-%d", s->tid, i);
        m = rpc(id, pad_len(s->tid, i));
        s->rc = OPS->send(s->c, m, t_now() + 5000, &err);
        json_object_put(m);
    }
    return NULL;
}

START_TEST(test_concurrent_sends)
{
    struct sender s[NTHREADS];
    pthread_t t[NTHREADS];
    bool seen[NTHREADS][PER_THREAD];
    struct aur_conn *c;

    memset(seen, 0, sizeof seen);
    up();
    ep_child("echo", NULL);
    c = open_ok();
    wait_hello();
    for (int k = 0; k < NTHREADS; k++) {
        s[k] = (struct sender){.c = c, .tid = k};
        ck_assert_int_eq(pthread_create(&t[k], NULL, burst_main, &s[k]), 0);
    }
    for (int n = 0; n < NTHREADS * PER_THREAD; n++) {
        struct json_object *m = next_msg(10000), *id, *p, *pad;
        int tk, ti;
        ck_assert_msg(m != NULL, "only %d echoes", n);
        ck_assert(json_object_object_get_ex(m, "id", &id));
        ck_assert_int_eq(sscanf(json_object_get_string(id), "%d-%d", &tk,
                                &ti),
                         2);
        ck_assert(tk >= 0 && tk < NTHREADS && ti >= 0 && ti < PER_THREAD);
        ck_assert(!seen[tk][ti]);
        seen[tk][ti] = true;
        ck_assert(json_object_object_get_ex(m, "params", &p));
        ck_assert(json_object_object_get_ex(p, "pad", &pad));
        ck_assert_uint_eq((size_t)json_object_get_string_len(pad),
                          pad_len(tk, ti));
        json_object_put(m);
    }
    for (int k = 0; k < NTHREADS; k++) {
        pthread_join(t[k], NULL);
        ck_assert_int_eq(s[k].rc, AUR_OK);
    }
    ck_assert(!log_has("dropped malformed"));
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_stderr_logged)
{
    struct aur_conn *c;
    const char *p;
    size_t xs = 0, len;
    char *log;

    up2("stderr_line_bytes", "100", NULL, NULL);
    ep_child("stderr", NULL);
    c = open_ok();
    wait_hello();
    ck_assert(log_wait("[" PKG "] stderr: last without newline", 3000));
    ck_assert(log_has("[" PKG "] stderr: hello from child\n"));
    ck_assert(log_has("[" PKG "] stderr: ctl??[31mred\n"));
    ck_assert(log_has("[" PKG "] stderr: caf\xc3\xa9 ? end\n"));
    log = log_copy(&len);
    p = strstr(log, "[" PKG "] stderr: x");
    ck_assert_ptr_nonnull(p);
    p = strchr(p, ':') + 2;
    while (p[xs] == 'x')
        xs++;
    ck_assert_uint_eq(xs, 100);
    ck_assert(strncmp(p + xs, " [truncated]\n", 13) == 0);
    ck_assert_int_eq(log_count("] stderr:"), 5); /* the empty line: none */
    ck_assert_ptr_null(memchr(log, '\x1b', len));
    ck_assert_ptr_null(memchr(log, '\x01', len));
    free(log);
    ck_assert_ptr_null(next_msg(100)); /* never into the sink */
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *stdio_suite(void)
{
    Suite *s = suite_create("transport_stdio");
    TCase *t;

    t = stdio_tcase(s, "frames");
    tcase_add_test(t, test_roundtrip);
    tcase_add_test(t, test_malformed_dropped);
    tcase_add_test(t, test_text_sink);
    tcase_add_test(t, test_oversized_line);
    tcase_add_test(t, test_line_at_limit);
    tcase_add_test(t, test_big_frame);
    tcase_add_test(t, test_partial_frame);
    t = stdio_tcase(s, "shutdown");
    tcase_add_test(t, test_close_kills_group);
    tcase_add_test(t, test_close_kills_grandchild);
    tcase_add_test(t, test_sigterm_ignored);
    tcase_add_test(t, test_close_deadline);
    tcase_add_test(t, test_escaped_grandchild);
    t = stdio_tcase(s, "child_exit");
    tcase_add_test(t, test_exit_status_once);
    tcase_add_test(t, test_exit_clean);
    tcase_add_test(t, test_exit_signal);
    tcase_add_test(t, test_stdout_eof_while_alive);
    tcase_add_test(t, test_exit_with_sigchld_ignored);
    tcase_add_test(t, test_reopen_after_exit);
    t = stdio_tcase(s, "send");
    tcase_add_test(t, test_send_epipe);
    tcase_add_test(t, test_send_timeout);
    tcase_add_test(t, test_waiting_sender_deadline);
    tcase_add_test(t, test_concurrent_sends);
    t = stdio_tcase(s, "reopen");
    tcase_add_test(t, test_reopen);
    t = stdio_tcase(s, "stderr");
    tcase_add_test(t, test_stderr_logged);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stdio_suite());
    int failed;

    srunner_add_suite(sr, stdio_spawn_suite());
    srunner_add_suite(sr, stdio_start_suite());
    srunner_add_suite(sr, stdio_fds_suite());
    srunner_add_suite(sr, stdio_cork_suite());
    srunner_add_suite(sr, stdio_prepare_suite());
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
