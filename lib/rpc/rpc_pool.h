/*
 * rpc_pool.h - the dispatch workers every connection of the process
 * shares (private to lib/rpc/).
 *
 * A connection whose server sent something that must be handled off the
 * reader (a notification, a server request, a detached request's end,
 * the end of the connection) pushes its job; a worker runs it, and the
 * job pushes itself again while it has more.  A job is on the ready list
 * at most once and run by one worker at a time, so one connection's
 * items are handled in order and never two at once, while a thousand
 * connections that notify together share a few threads instead of
 * holding a thousand.
 *
 * How many threads: up to AUR__POOL_WORKERS take jobs at once.  A worker
 * that has been inside one job for AUR__POOL_STALL_MS (a handler that
 * blocks: a journal that is slow, a full pipe) is stalled and no longer
 * counts among them, so the next job gets a thread of its own: a blocked
 * handler delays another connection by about that much; up to
 * AUR__POOL_MAX threads in all.  A long ready list behind quick jobs is
 * not a stall (a busy CPU, a flood of notifications): more threads would
 * only share the same CPU, so they wait their turn.  Past that, jobs
 * wait for a handler to return (each handler's waits have bounds of
 * their own): a thousand Apps whose handlers all block cost 64 threads,
 * not a thousand.  A worker with nothing to do for AUR__POOL_IDLE_MS
 * ends; the last aur__pool_release joins them all.
 *
 * Threads: every function here may be called from any thread.  Workers
 * run with every signal blocked.
 */
#ifndef AUR_RPC_POOL_H
#define AUR_RPC_POOL_H

#include "aur_setup.h"

/* Workers that take a job at once; more only after a stall. */
#define AUR__POOL_WORKERS 4
/* What the workers are called (their comm, as `ps -L` shows it). */
#define AUR__POOL_THREAD_NAME "aur-dispatch"
/* The threads the pool holds at most, stalled or not. */
#define AUR__POOL_MAX 64
/* How long a worker is inside one job before it counts as stalled. */
#define AUR__POOL_STALL_MS 50
/* How long a worker waits for work before it ends.  Long enough that a
 * steady trickle (a log line a second) keeps a thread, short enough that
 * a burst's threads are gone soon after it. */
#ifndef AUR__POOL_IDLE_MS
#define AUR__POOL_IDLE_MS 1000
#endif

struct aur__pool_job {
    /* Called on a worker, which owns the job until it returns.  true:
     * it has more to do, and goes to the back of the ready list (after
     * the others that wait: one connection's flood cannot hold a worker
     * for ever); false: done, and the pool no longer touches it. */
    bool (*run)(struct aur__pool_job *job);
    /* The pool's, under its lock. */
    bool queued;
    struct aur__pool_job *next;
};

/* Each user (an open connection) holds the pool while it may push.  The
 * release that leaves no user ends the workers and joins them. */
void aur__pool_hold(void);
void aur__pool_release(void);

/* Put job on the ready list (it must not be on it) and see that a worker
 * comes for it.  0, or the errno of a thread that could not be made:
 * the job stays listed and a worker takes it when one exists. */
int aur__pool_push(struct aur__pool_job *job);

/* After a push that could not make a worker: try again if jobs are
 * listed and no thread is free to take them.  0 or an errno. */
int aur__pool_kick(void);

/* Take job off the ready list if it waits there: true when it did (the
 * caller now owns the job), false when it was not listed. */
bool aur__pool_unlink(struct aur__pool_job *job);

/* What the pool did since the last call (which it resets), for the tests
 * and a debugger: the thread count is only bounded together with it. */
struct aur__pool_stats {
    uint64_t stalls;        /* jobs taken past AUR__POOL_WORKERS busy */
    int64_t longest_run_ms; /* the longest one job ran on a worker */
};
void aur__pool_take_stats(struct aur__pool_stats *out);

#endif
