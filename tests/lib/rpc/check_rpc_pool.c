/*
 * check_rpc_pool.c - many connections on the shared dispatch workers
 * (lib/rpc/rpc_pool.c): what each connection's owner is promised (its
 * items in arrival order, never two at once, none lost), what the host
 * is promised (a few threads for many connections, a blocked handler
 * starves nobody past the stall bound, no thread left after the last
 * close), and close taking a job that waits for a worker.
 *
 * Its own fake transport, one per connection, which only keeps the sink:
 * the test plays each connection's reader by calling on_message itself.
 */
#include "aur_setup.h"

#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <json-c/json.h>

#include "clock.h"
#include "rpc.h"
#include "rpc_pool.h"
#include "support/slack.h"

enum { MAXSEEN = 64, NAP_MS = 20 };

struct aur_conn {
    struct aur_sink sink;
    bool open;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* what the handlers saw */
    int seen[MAXSEEN];
    int nseen;
    atomic_int inside; /* handlers running now: never over 1 */
    atomic_int overlap;
    pthread_t last_thread;
    /* a handler of "block" waits until this opens */
    bool gate_closed;
    int blocked;
    atomic_llong pushed_ms; /* when the last item was pushed */
};

/* Over every connection: the longest a handler ran, and the longest an
 * item waited from its push to its handler (aur__now_ms, the pool's
 * clock). */
static atomic_llong longest_handler_ms, longest_wait_ms;

static void note_max(atomic_llong *m, long long v)
{
    long long was = atomic_load(m);
    while (v > was && !atomic_compare_exchange_weak(m, &was, v))
        ;
}

static int t_open(void *state, const struct aur_cfg *endpoint,
                  const struct aur_sink *sink, aur_deadline dl,
                  struct aur_conn **out, uint32_t *caps,
                  struct aur_error *err)
{
    struct aur_conn *c = state;
    (void)endpoint, (void)dl, (void)err;
    c->sink = *sink;
    c->open = true;
    *out = c;
    *caps = 0;
    return AUR_OK;
}

static int t_send(struct aur_conn *c, struct json_object *msg,
                  aur_deadline dl, struct aur_error *err)
{
    (void)msg, (void)dl, (void)err;
    ck_assert_msg(c->open, "send on a closed connection");
    return AUR_OK;
}

static void t_close(struct aur_conn *c, aur_deadline dl)
{
    (void)dl;
    c->open = false;
}

static const struct aur_transport_ops ops = {
    .struct_size = sizeof ops,
    .open = t_open,
    .send = t_send,
    .close = t_close,
};

static void on_note(void *ud, const char *method, struct json_object *params,
                    struct json_object *msg, unsigned stamp)
{
    struct aur_conn *c = ud;
    int64_t t0 = aur__now_ms();
    (void)msg, (void)stamp;
    note_max(&longest_wait_ms, t0 - atomic_load(&c->pushed_ms));
    if (atomic_fetch_add(&c->inside, 1) != 0)
        atomic_fetch_add(&c->overlap, 1);
    pthread_mutex_lock(&c->mu);
    if (c->nseen < MAXSEEN)
        c->seen[c->nseen] = json_object_get_int(params);
    c->nseen++;
    c->last_thread = pthread_self();
    if (strcmp(method, "block") == 0) {
        c->blocked++;
        pthread_cond_broadcast(&c->cv);
        while (c->gate_closed)
            pthread_cond_wait(&c->cv, &c->mu);
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (strcmp(method, "nap") == 0)
        usleep(NAP_MS * 1000);
    atomic_fetch_sub(&c->inside, 1);
    note_max(&longest_handler_ms, aur__now_ms() - t0);
}

static struct aur__rpc *open_one(struct aur_conn *c)
{
    struct aur__rpc_handlers h = {.ud = c, .notification = on_note};
    struct aur__rpc_limits lim = {.max_pending = 4, .max_queue = 1024};
    struct aur__rpc *r = NULL;
    struct aur_error err;

    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    ck_assert_int_eq(aur__rpc_open(&ops, c, NULL, &h, &lim, "app pool",
                                   aur__now_ms() + 2000, &r, &err),
                     AUR_OK);
    return r;
}

static void push(struct aur_conn *c, const char *method, int n)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "method", json_object_new_string(method));
    json_object_object_add(m, "params", json_object_new_int(n));
    atomic_store(&c->pushed_ms, aur__now_ms());
    c->sink.on_message(c->sink.ctx, m);
}

/* Wait until c has seen n items, up to ms; the count then. */
static int wait_seen(struct aur_conn *c, int n, int64_t ms)
{
    aur_deadline dl = aur__now_ms() + ms;
    int got;
    pthread_mutex_lock(&c->mu);
    while (c->nseen < n && aur__now_ms() < dl) {
        pthread_mutex_unlock(&c->mu);
        usleep(1000);
        pthread_mutex_lock(&c->mu);
    }
    got = c->nseen;
    pthread_mutex_unlock(&c->mu);
    return got;
}

/* The pool's workers alive now, told apart by name from the test's and
 * the sanitizers' own threads. */
static int threads_now(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if (!(f = fopen(path, "r")))
            continue; /* ended meanwhile */
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        n += strcmp(comm, AUR__POOL_THREAD_NAME) == 0;
    }
    closedir(d);
    return n;
}

static atomic_bool sampling;
static atomic_int peak;

static void *sampler(void *unused)
{
    (void)unused;
    while (atomic_load(&sampling)) {
        int n = threads_now();
        if (n > atomic_load(&peak))
            atomic_store(&peak, n);
        usleep(200);
    }
    return NULL;
}

enum { NCONN = 200, PER = 20 };
static struct aur_conn conns[NCONN];
static struct aur__rpc *rpcs[NCONN];
static pthread_t sampler_t;

/* Sample the pool's threads from now on, and start the pool's and the
 * handlers' figures afresh. */
static void start_sampling(void)
{
    struct aur__pool_stats gone;
    aur__pool_take_stats(&gone);
    atomic_store(&longest_handler_ms, 0);
    atomic_store(&longest_wait_ms, 0);
    atomic_store(&peak, 0);
    atomic_store(&sampling, true);
    ck_assert_int_eq(pthread_create(&sampler_t, NULL, sampler, NULL), 0);
}

/* After every job has returned (the connections closed): the pool's
 * threads stayed within what its rule allows.  AUR__POOL_WORKERS run
 * jobs, one spare waits, and each job started past them because a worker
 * stalled may add one.  A stall needs a job that ran AUR__POOL_STALL_MS,
 * so with none that long there was none: then the bound is the workers
 * and the spare, whatever the machine's load.  The pool's longest job is
 * checked against the handlers' own clock, so neither figure is taken on
 * trust. */
static struct aur__pool_stats check_threads(const char *what, int base)
{
    struct aur__pool_stats st;
    atomic_store(&sampling, false);
    pthread_join(sampler_t, NULL);
    aur__pool_take_stats(&st);
    int most = atomic_load(&peak) - base;
    fprintf(stderr, "check_rpc_pool: %s: at most %d dispatch threads, "
                    "%llu stalls, longest job %lld ms, longest handler "
                    "%lld ms, longest wait %lld ms\n",
            what, most, (unsigned long long)st.stalls,
            (long long)st.longest_run_ms,
            (long long)atomic_load(&longest_handler_ms),
            (long long)atomic_load(&longest_wait_ms));
    ck_assert_int_ge(most, 1);
    ck_assert_int_ge(st.longest_run_ms, atomic_load(&longest_handler_ms));
    if (st.longest_run_ms < AUR__POOL_STALL_MS)
        ck_assert_uint_eq(st.stalls, 0);
    ck_assert_int_le(most, AUR__POOL_WORKERS + 1 + (int)st.stalls);
    return st;
}

/* 200 connections, 20 items each, pushed round-robin as fast as the test
 * can: every item arrives, in order per connection, never two handlers
 * of one connection at once, and the host holds the workers and one
 * spare beyond its own threads (one thread per connection before the
 * pool: 200). */
START_TEST(many_connections_share_a_few_threads)
{
    int base = threads_now();

    for (int i = 0; i < NCONN; i++)
        rpcs[i] = open_one(&conns[i]);
    start_sampling();
    for (int k = 0; k < PER; k++)
        for (int i = 0; i < NCONN; i++)
            push(&conns[i], "n", k);
    for (int i = 0; i < NCONN; i++)
        ck_assert_int_eq(wait_seen(&conns[i], PER, 10000), PER);
    for (int i = 0; i < NCONN; i++) {
        for (int k = 0; k < PER; k++)
            ck_assert_int_eq(conns[i].seen[k], k);
        ck_assert_int_eq(atomic_load(&conns[i].overlap), 0);
        aur__rpc_close(rpcs[i], aur__now_ms() + 1000);
    }
    check_threads("200 connections x 20 items", base);
    /* The last close joined every worker. */
    ck_assert_int_eq(threads_now(), base);
}
END_TEST

/* A long ready list behind handlers that never stall: 60 connections
 * whose one item takes NAP_MS (20 ms) each, so the last waits about
 * 280 ms for a worker.  That is a busy pool, not a blocked one, and it
 * gets no thread more (counting the list's wait as a stall, as the pool
 * once did, made one after each 50 ms: a loaded machine, valgrind, a
 * flood of notifications grew the pool with threads that only shared
 * the same CPU).  The wait is long next to the time the pushes take even
 * under valgrind, so the list is long on any machine. */
START_TEST(a_long_list_is_not_a_stall)
{
    enum { N = 60 };
    int base = threads_now();

    for (int i = 0; i < N; i++)
        rpcs[i] = open_one(&conns[i]);
    start_sampling();
    for (int i = 0; i < N; i++)
        push(&conns[i], "nap", i);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(wait_seen(&conns[i], 1, 10000), 1);
    for (int i = 0; i < N; i++)
        aur__rpc_close(rpcs[i], aur__now_ms() + 1000);
    struct aur__pool_stats st = check_threads("60 items of 20 ms", base);
    /* With no stall, four workers took 15 rounds of 20 ms: the list was
     * long enough that its wait alone would have counted. */
    if (st.stalls == 0)
        ck_assert_int_ge(atomic_load(&longest_wait_ms),
                         2 * AUR__POOL_STALL_MS);
    ck_assert_int_eq(threads_now(), base);
}
END_TEST

/* Open n + 1 connections and block a handler on each of the first n
 * (its gate closed): back when every one of them is inside it. */
static void block_first(int n)
{
    for (int i = 0; i <= n; i++)
        rpcs[i] = open_one(&conns[i]);
    for (int i = 0; i < n; i++) {
        conns[i].gate_closed = true;
        push(&conns[i], "block", 0);
    }
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(wait_seen(&conns[i], 1, 5000), 1);
}

static void open_gates(int n)
{
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&conns[i].mu);
        conns[i].gate_closed = false;
        pthread_cond_broadcast(&conns[i].cv);
        pthread_mutex_unlock(&conns[i].mu);
    }
}

/* Every worker and the spare blocked in handlers: another connection's
 * item still runs, on a thread of its own within the stall time, well
 * before any blocked handler returns. */
START_TEST(blocked_handlers_starve_nobody)
{
    enum { BLOCKERS = AUR__POOL_WORKERS + 3 };
    struct aur_conn *quick = &conns[BLOCKERS];
    int base = threads_now();

    /* Each blocker gets a thread within a stall or so each. */
    block_first(BLOCKERS);
    int64_t t0 = aur__now_ms();
    push(quick, "n", 7);
    /* The bound is the rule (a stall, then a thread), with room for a
     * loaded machine; the blockers stay blocked until after it. */
    ck_assert_int_eq(wait_seen(quick, 1, 5000), 1);
    int64_t took = aur__now_ms() - t0;
    fprintf(stderr, "check_rpc_pool: %d blocked handlers; another "
                    "connection's item handled after %lld ms\n", BLOCKERS,
            (long long)took);
    ck_assert_int_eq(quick->seen[0], 7);
    ck_assert_int_le(threads_now() - base, BLOCKERS + 2);
    open_gates(BLOCKERS);
    for (int i = 0; i <= BLOCKERS; i++)
        aur__rpc_close(rpcs[i], aur__now_ms() + 1000);
    ck_assert_int_eq(threads_now(), base);
}
END_TEST

static int blocked_now(int n)
{
    int b = 0;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&conns[i].mu);
        b += conns[i].blocked;
        pthread_mutex_unlock(&conns[i].mu);
    }
    return b;
}

/* More blocked handlers than the pool's threads: the pool stops at
 * AUR__POOL_MAX threads (one per blocked connection would be 70), the
 * rest wait, and once the handlers return every item is handled. */
START_TEST(blocked_threads_are_capped)
{
    enum { N = AUR__POOL_MAX + 6 };
    int base = threads_now();

    for (int i = 0; i < N; i++) {
        rpcs[i] = open_one(&conns[i]);
        conns[i].gate_closed = true;
        push(&conns[i], "block", 0);
    }
    aur_deadline dl = aur__now_ms() + 20000;
    while (blocked_now(N) < AUR__POOL_MAX && aur__now_ms() < dl)
        usleep(10 * 1000);
    ck_assert_int_eq(blocked_now(N), AUR__POOL_MAX);
    usleep(300 * 1000); /* six stall times: no thread more comes */
    ck_assert_int_eq(blocked_now(N), AUR__POOL_MAX);
    ck_assert_int_le(threads_now() - base, AUR__POOL_MAX);
    open_gates(N);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(wait_seen(&conns[i], 1, 10000), 1);
    for (int i = 0; i < N; i++)
        aur__rpc_close(rpcs[i], aur__now_ms() + 1000);
    ck_assert_int_eq(threads_now(), base);
}
END_TEST

/* A connection whose job waits on the ready list (every worker blocked,
 * before the stall hands out a thread) is closed: close takes the job
 * off the list and handles its items itself, in order, on its own
 * thread, and the pool never runs it afterwards. */
START_TEST(close_takes_a_listed_job)
{
    enum { BLOCKERS = AUR__POOL_WORKERS };
    struct aur_conn *late = &conns[BLOCKERS];

    block_first(BLOCKERS);
    for (int k = 0; k < 5; k++)
        push(late, "n", k);
    /* Closed at once: well inside the stall time, so the job is still
     * listed (a spare may have taken it on a slow machine: then close
     * waits for it, and the items are still all handled in order). */
    aur__rpc_close(rpcs[BLOCKERS], aur__now_ms() + 1000);
    ck_assert_int_eq(late->nseen, 5);
    for (int k = 0; k < 5; k++)
        ck_assert_int_eq(late->seen[k], k);
    ck_assert_int_eq(atomic_load(&late->overlap), 0);
    open_gates(BLOCKERS);
    for (int i = 0; i < BLOCKERS; i++)
        aur__rpc_close(rpcs[i], aur__now_ms() + 1000);
}
END_TEST

/* Quiet connections cost no thread: once the workers' idle time has
 * passed with the connections still open, the threads are back to what
 * they were before anything was sent. */
START_TEST(idle_workers_end)
{
    int base = threads_now();
    for (int i = 0; i < 8; i++) {
        rpcs[i] = open_one(&conns[i]);
        push(&conns[i], "n", 1);
    }
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(wait_seen(&conns[i], 1, 5000), 1);
    int busy = threads_now();
    int now;
    H_WAIT_UNTIL((now = threads_now()) <= base, 5000, 50);
    ck_assert_int_gt(busy, base);
    ck_assert_int_eq(now, base);
    for (int i = 0; i < 8; i++)
        aur__rpc_close(rpcs[i], aur__now_ms() + 1000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rpc_pool");
    TCase *t = tcase_create("pool");
    SRunner *sr;
    int failed;

    tcase_set_timeout(t, 60);
    tcase_add_test(t, many_connections_share_a_few_threads);
    tcase_add_test(t, a_long_list_is_not_a_stall);
    tcase_add_test(t, blocked_handlers_starve_nobody);
    tcase_add_test(t, blocked_threads_are_capped);
    tcase_add_test(t, close_takes_a_listed_job);
    tcase_add_test(t, idle_workers_end);
    suite_add_tcase(s, t);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
