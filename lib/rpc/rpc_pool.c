/*
 * rpc_pool.c - the dispatch workers shared by every connection (see
 * rpc_pool.h for the rules; this file knows jobs, never connections).
 *
 * Why a pool of its own rather than a general one (libuv's, GLib's): a
 * job must never run on two workers at once, a blocked job must not
 * starve the others past a bound, and the threads must be gone when the
 * last connection closes (an embedder that unloads us, valgrind, TSan).
 * The fixed pools of those libraries give none of the three, and the
 * rules below are all there is to it.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "rpc_pool.h"
#include "thread.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* A worker's slot: one per thread the pool may hold, so making a worker
 * allocates nothing (a start that runs out of memory must still get its
 * items handled, and its own failure reported, not a lost worker). */
struct worker {
    pthread_t t;
    bool used;      /* a thread was made in it and is not joined yet */
    bool dead;      /* ... and it has ended: the next reap joins it */
    bool running;   /* inside a job, which began at run_ms */
    int64_t run_ms;
};

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;   /* everything below */
    pthread_cond_t work;  /* a job was listed, or quit (monotonic) */
    pthread_cond_t gone;  /* a worker ended */
    struct aur__pool_job *head, *tail;
    size_t nready;   /* jobs listed */
    size_t nthreads; /* workers alive, made or starting */
    size_t nbusy;    /* of them, running a job */
    size_t users;
    bool quit;          /* the last user left: idle workers end now */
    size_t ndead;       /* slots whose thread ended, not joined yet */
    struct aur__pool_stats stats;
    struct worker slot[AUR__POOL_MAX];
} pool = {
    .once = PTHREAD_ONCE_INIT,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .gone = PTHREAD_COND_INITIALIZER,
};

static void init_once(void)
{
    aur__mono_cond_init(&pool.work); /* the waits below have deadlines */
}

/* Join the workers that ended.  They left the lock for good before they
 * said so, so a join waits for nothing but their return.  pool.mu held. */
static void reap_locked(void)
{
    for (size_t i = 0; pool.ndead > 0 && i < AUR__POOL_MAX; i++)
        if (pool.slot[i].dead) {
            pthread_join(pool.slot[i].t, NULL);
            pool.slot[i].used = pool.slot[i].dead = false;
            pool.ndead--;
        }
}

static void *worker_main(void *arg);

/* One more worker, with every signal blocked (no host handler runs on
 * it).  0 or an errno.  pool.mu held. */
static int spawn_locked(void)
{
    struct worker *w = NULL;
    int e;

    reap_locked();
    if (pool.nthreads >= AUR__POOL_MAX)
        return 0; /* a busy worker takes it when its handler returns */
    for (size_t i = 0; !w && i < AUR__POOL_MAX; i++)
        if (!pool.slot[i].used)
            w = &pool.slot[i];
    e = aur__thread_start(&w->t, worker_main, w);
    if (e != 0)
        return e;
    w->used = true;
    pool.nthreads++;
    return 0;
}

static void append_locked(struct aur__pool_job *job)
{
    job->queued = true;
    job->next = NULL;
    if (pool.tail)
        pool.tail->next = job;
    else
        pool.head = job;
    pool.tail = job;
    pool.nready++;
}

static struct aur__pool_job *pop_locked(void)
{
    struct aur__pool_job *job = pool.head;
    pool.head = job->next;
    if (!pool.head)
        pool.tail = NULL;
    job->queued = false;
    job->next = NULL;
    pool.nready--;
    return job;
}

/* Whether another job may start with AUR__POOL_WORKERS or more busy:
 * yes while fewer than AUR__POOL_WORKERS of them are live, a worker
 * inside one job for the stall time no longer counting.  If not, *wake
 * is when the first live one will have stalled.  pool.mu held. */
static bool may_start_locked(int64_t now, int64_t *wake)
{
    int64_t first = INT64_MAX;
    size_t live = 0;
    for (size_t i = 0; i < AUR__POOL_MAX; i++) {
        const struct worker *w = &pool.slot[i];
        if (!w->running || now - w->run_ms >= AUR__POOL_STALL_MS)
            continue;
        live++;
        if (w->run_ms < first)
            first = w->run_ms;
    }
    if (live < AUR__POOL_WORKERS)
        return true;
    *wake = first + AUR__POOL_STALL_MS;
    return false;
}

static void *worker_main(void *arg)
{
    struct worker *self = arg;

    /* Named, so `ps -L`, a debugger and the tests can tell them apart. */
    (void)pthread_setname_np(pthread_self(), AUR__POOL_THREAD_NAME);
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        struct aur__pool_job *job = pool.head;
        if (job) {
            int64_t now = aur__now_ms(), wake;
            /* Fewer busy than the workers' number, or fewer live (not
             * stalled) than that: take it. */
            bool past = pool.nbusy >= AUR__POOL_WORKERS;
            if (!past || may_start_locked(now, &wake)) {
                pop_locked();
                pool.nbusy++;
                pool.stats.stalls += past;
                self->running = true;
                self->run_ms = now;
                /* Every thread busy and more waiting: one more, which
                 * waits for the next stall (never more than one idle). */
                if (pool.head && pool.nbusy == pool.nthreads)
                    (void)spawn_locked(); /* none: the next push tries */
                pthread_mutex_unlock(&pool.mu);
                bool again = job->run(job);
                int64_t ran = aur__now_ms() - now;
                pthread_mutex_lock(&pool.mu);
                self->running = false;
                pool.nbusy--;
                if (ran > pool.stats.longest_run_ms)
                    pool.stats.longest_run_ms = ran;
                if (again)
                    append_locked(job);
                continue;
            }
            /* AUR__POOL_WORKERS live workers: wait until the first of
             * them would stall (an end of a job wakes nobody: the worker
             * that ended it takes the next job itself). */
            (void)aur__cond_wait_until(&pool.work, &pool.mu, wake);
            continue;
        }
        if (pool.quit)
            break;
        if (aur__cond_wait_until(&pool.work, &pool.mu,
                                 aur__now_ms() + AUR__POOL_IDLE_MS) ==
                ETIMEDOUT &&
            !pool.head)
            break;
    }
    pool.nthreads--;
    self->dead = true;
    pool.ndead++;
    pthread_cond_broadcast(&pool.gone);
    pthread_mutex_unlock(&pool.mu);
    /* (joined by the next spawn or the last release) */
    AUR_PERTURB("rpc.idle_exit");
    return NULL;
}

void aur__pool_hold(void)
{
    pthread_once(&pool.once, init_once);
    pthread_mutex_lock(&pool.mu);
    pool.users++;
    pthread_mutex_unlock(&pool.mu);
}

void aur__pool_release(void)
{
    pthread_mutex_lock(&pool.mu);
    if (--pool.users == 0) {
        /* No user: nothing is listed or running, so every worker is
         * idle and ends at once.  One that a new user keeps is left. */
        pool.quit = true;
        pthread_cond_broadcast(&pool.work);
        while (pool.nthreads > 0 && pool.users == 0)
            pthread_cond_wait(&pool.gone, &pool.mu);
        pool.quit = false;
    }
    reap_locked();
    pthread_mutex_unlock(&pool.mu);
}

int aur__pool_push(struct aur__pool_job *job)
{
    int e = 0;

    pthread_mutex_lock(&pool.mu);
    append_locked(job);
    size_t idle = pool.nthreads - pool.nbusy; /* waiting, or starting */
    pthread_cond_signal(&pool.work);
    /* None idle: one more (a spare beyond AUR__POOL_WORKERS waits for a
     * stall before it takes anything).  Fewer than the workers' number
     * and more listed than idle: one more too. */
    if (idle == 0 ||
        (pool.nthreads < AUR__POOL_WORKERS && pool.nready > idle))
        e = spawn_locked();
    pthread_mutex_unlock(&pool.mu);
    return e;
}

int aur__pool_kick(void)
{
    int e = 0;

    pthread_mutex_lock(&pool.mu);
    if (pool.nready > 0 && pool.nthreads == pool.nbusy)
        e = spawn_locked();
    pthread_mutex_unlock(&pool.mu);
    return e;
}

void aur__pool_take_stats(struct aur__pool_stats *out)
{
    pthread_mutex_lock(&pool.mu);
    *out = pool.stats;
    memset(&pool.stats, 0, sizeof pool.stats);
    pthread_mutex_unlock(&pool.mu);
}

bool aur__pool_unlink(struct aur__pool_job *job)
{
    bool listed;

    pthread_mutex_lock(&pool.mu);
    listed = job->queued;
    if (listed) {
        struct aur__pool_job **p = &pool.head, *prev = NULL;
        while (*p != job) {
            prev = *p;
            p = &(*p)->next;
        }
        *p = job->next;
        if (pool.tail == job)
            pool.tail = prev;
        job->queued = false;
        job->next = NULL;
        pool.nready--;
    }
    pthread_mutex_unlock(&pool.mu);
    return listed;
}
