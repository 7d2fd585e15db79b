/*
 * http_assist.c - a caller runs its own POST ("assist").
 *
 * A POST run by a pool worker costs two thread hand-offs per call: send
 * wakes the worker, and the worker wakes the waiting caller when the
 * response reaches the sink.  On a small virtual machine each wake-up of
 * an idle thread is tens of microseconds of CPU and more of latency; a
 * sequential call over keep-alive HTTPS paid about 1.6x the one-thread
 * libcurl floor for it (docs/benchmarks.md, issue #20).  So a request
 * POST sent while no other POST is queued or running is run by the
 * thread that calls send, for at most ASSIST_MS: the response reaches
 * the sink on that thread (the core has the request in its table before
 * send, "the reply may beat send()"), and the caller finds it there
 * without a wake-up.
 *
 * A POST still running after ASSIST_MS (a slow tool, a first TLS
 * handshake) is handed to a worker, which drives the same curl handles
 * on to the end; send then returns AUR_OK as it always did, so the core
 * waits, times out and cancels as before.  The caller is never held past
 * ASSIST_MS nor past the request's deadline.
 *
 * Nothing about the outcome changes: the job runs through the same code
 * (http_post.c, http_response.c) whichever thread turns it, it is on
 * c->running the whole time (so cancel and close reach it through its
 * multi), and it counts against max_workers.  One assisted POST at a
 * time per connection: it owns c->assist_hc, whose multi keeps its
 * keep-alive connection for the next one.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <stdlib.h>

/* How long a caller turns its own POST before a worker takes over: a
 * no-op call over keep-alive HTTPS on loopback takes 0.5 to 2 ms. */
#define ASSIST_MS 5

/* Caller holds c->mu: may j run on the calling thread? */
static bool take_locked(struct aur_conn *c, struct http_job *j)
{
    if (j->kind != J_REQUEST || c->assist_busy || c->queue ||
        c->nrunning > 0 || c->barriers > 0)
        return false;
    if (!c->assist_run &&
        !(c->assist_run = calloc(1, sizeof *c->assist_run)))
        return false;
    if (!c->assist_hc.easy && http_curl_init(&c->assist_hc) != AUR_OK)
        return false;
    c->assist_busy = true;
    j->next = c->running;
    c->running = j;
    c->nrunning++;
    return true;
}

/* Caller holds c->mu: give the running assisted POST to a worker.  False
 * when no worker can take it (no thread could be made): the caller
 * finishes it.  Otherwise a worker is sure to come: the assisted POST
 * counts in nrunning (at most max_workers) but occupies no worker, so
 * with every worker made one is idle or about to look again. */
static bool hand_off_locked(struct aur_conn *c)
{
    if (c->idle == 0 && c->nworkers < c->st->max_workers &&
        !http_start_worker_locked(c) && c->nworkers == 0)
        return false;
    c->adopt = true;
    pthread_cond_broadcast(&c->cv);
    return true;
}

bool http_assist(struct aur_conn *c, struct http_job *j)
{
    struct http_run *r;
    int64_t ms = ASSIST_MS, rem;
    bool done, handed;

    if (!take_locked(c, j))
        return false;
    r = c->assist_run;
    pthread_mutex_unlock(&c->mu);
    rem = aur_remaining_ms(HTTP_HOST(c), j->dl);
    if (rem < ms)
        ms = rem;
    done = !http_run_begin(r, &c->assist_hc, j) || http_run_step(r, ms);
    if (!done) {
        pthread_mutex_lock(&c->mu);
        handed = hand_off_locked(c);
        pthread_mutex_unlock(&c->mu);
        if (handed)
            return true;
        (void)http_run_step(r, -1);
    }
    http_assist_end(c, r);
    return true;
}
