/*
 * serve_pool.c - the worker threads of `aurora-mcp serve` and the reader
 * role they pass on.
 *
 * A call is started with aur_mcp_call_start: the thread that runs it
 * returns as soon as the request is sent, and its answer is written by
 * call_done on the thread that learns the outcome (the App's I/O thread
 * mostly), so no thread is parked, and none woken, per call in flight.
 *
 * Leader/follower with the reader role as a token that lives in an epoll
 * set.  Idle threads park in epoll_wait on one epoll fd (exclusive
 * wake-ups: one thread per event).  The token is exactly one of: held by
 * the reader; stdin armed EPOLLONESHOT (the next byte wakes one idle
 * thread, which becomes the reader); the always-readable pass eventfd
 * armed EPOLLONESHOT (an idle thread wakes at once: lines are already
 * buffered, or stdin is a file epoll cannot watch).  When no thread is
 * idle, or WORKERS calls already run, the reader queues the call (up to
 * MAX_QUEUED) and keeps reading, so the other ops are still answered
 * while every worker is busy.
 *
 * The reader runs the calls it reads itself, without giving the role up,
 * and reads on when a call's send returns: the next request then wakes
 * no parked thread.  A call that is the only one (nothing running, no
 * further line buffered: the sequential case) is sent at once, and
 * transport-stdio may read its reply on this thread.  Any other call
 * joins a batch (aur_mcp_batch_begin): its request is held, and when
 * no further line is buffered the reader ends the batch, which writes
 * what it holds in one write per App, just before the reader waits for
 * input.  So an App is woken once for a burst, not once a call (the
 * scheduler then lets it read the burst while the reader sleeps, instead
 * of switching on every request; docs/benchmarks.md).  A send, or a
 * batch's end, can wait for a server that does not read, so the role is
 * not held unbounded: a periodic timer (tick_fd, armed while calls are
 * kept) wakes an idle thread, which takes the role from a call it finds
 * kept at two ticks in a row and hands it on as release_token does.
 *
 * The pool grows to at most WORKERS + 1 threads (a send can wait for a
 * server that does not read, and an idle thread then takes the reader's
 * role from it), but the limit is not the thread count: running
 * counts the calls started and not yet answered, and a thread starts a
 * call (its own or a queued one) only while running < WORKERS.  A call
 * that ends while calls are queued wakes a parked thread for them
 * (queue_fd; once requests have ended, q_cv).
 *
 * When requests end (ended), the main thread takes stdin over as soon as
 * no thread leads, and answers every further line shutting_down until the
 * workers are done; then it answers the lines that have already arrived,
 * and serve exits (serve.c).
 *
 * Threads: the workers; call_done on whichever thread ends a call; all
 * under s->mu except the calls themselves and the reader's reading.
 */
#define _GNU_SOURCE 1
#include "serve_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* A call is over (answered, mu not held): it no longer counts, a queued
 * one may start, and serve may be done. */
static void call_over(struct server *s)
{
    pthread_mutex_lock(&s->mu);
    s->running--;
    if (s->ended)
        pthread_cond_broadcast(&s->q_cv); /* a slot, or nothing left */
    else if (s->head && s->running < WORKERS)
        serve_poke(s->queue_fd);
    if (s->ended && s->running == 0 && s->live == 0)
        serve_poke(s->done_fd);
    pthread_mutex_unlock(&s->mu);
}

/* aur_mcp_call_start's done: on the thread that learnt the outcome (the
 * App's, mostly), so it only writes the answer and counts. */
static void call_done(void *ud, const struct aur_tool_output *out)
{
    struct job *j = ud;
    struct server *s = j->s;

    serve_answer_call(s, j->id, out);
    serve_drop_job(j);
    call_over(s);
}

/* Start a call counted in running: its answer comes from call_done, or
 * here when the host does not take it. */
static void run_job(struct server *s, struct job *j)
{
    struct aur_error err;
    int rc;

    j->s = s;
    rc = aur_mcp_call_start_jsonc(s->h, j->tool, j->args, -1, call_done, j,
                                  &err);
    if (rc == AUR_OK)
        return; /* j is call_done's (it may have run already) */
    if (rc == AUR_E_STATE) {
        serve_refuse_job(s, j);
    } else {
        serve_respond(s, j->id, NULL, "busy", err.msg);
        serve_drop_job(j);
    }
    call_over(s);
}

/* Give up the reader role: to the next byte on stdin, or at once to an
 * idle thread when there is something to read already. */
static void release_token(struct server *s)
{
    struct epoll_event ev = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_PASS}};
    int fd = s->pass_fd;

    if (s->stdin_watched && !serve_input_buffered(&s->in) && !s->in.eof) {
        ev.data.u32 = EV_STDIN;
        fd = 0;
    }
    if (epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev) != 0) {
        /* Unreachable with valid fds; never strand the role silently. */
        perror("aurora-mcp serve: epoll_ctl");
        abort();
    }
}

/* No more requests (mu held): wake the main thread and every parked
 * worker. */
void serve_end_requests(struct server *s, bool signalled)
{
    s->ended = true;
    s->signalled = s->signalled || signalled;
    pthread_cond_broadcast(&s->end_cv);
    pthread_cond_broadcast(&s->q_cv);
    serve_wake_all();
}

static void *worker(void *arg);

/* One more worker (mu held): it parks in the epoll set, where the token
 * the reader releases next wakes it (or an older idle thread).  false
 * when there is no room or no thread could be made (the call then waits
 * in the queue for a running one). */
bool serve_grow(struct server *s)
{
    if (s->nth == WORKERS + 1 ||
        pthread_create(&s->th[s->nth], NULL, worker, s) != 0)
        return false;
    s->nth++;
    s->live++;
    return true;
}

/* Empty a level-triggered fd that woke one parked thread (EPOLLONESHOT),
 * then arm it again: a poke or tick after this wakes a thread again. */
static void rearm(struct server *s, int fd, uint32_t what)
{
    struct epoll_event again = {EPOLLIN | EPOLLONESHOT, {.u32 = what}};
    uint64_t n;

    if (read(fd, &n, sizeof n) < 0) {
        /* already empty: a stale wake-up */
    }
    epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &again);
}

/* Run tick_fd every KEEP_TICK_NS, or stop it (mu held). */
static void set_tick(struct server *s, bool on)
{
    struct itimerspec t = {{0, on ? KEEP_TICK_NS : 0},
                           {0, on ? KEEP_TICK_NS : 0}};

    if (timerfd_settime(s->tick_fd, 0, &t, NULL) == 0)
        s->tick_armed = on;
}

/* The reader keeps its role under a new number, which a tick takes
 * over if it is still kept two ticks on (mu held). */
static uint64_t keep_role(struct server *s)
{
    s->kept = ++s->kept_gen;
    if (!s->tick_armed)
        set_tick(s, true);
    return s->kept;
}

/* An idle thread woken by tick_fd (mu held): take the role from a call
 * kept since the last tick, or stop the timer when no call was kept in
 * a whole tick (a stream of calls keeps it running: no timerfd_settime
 * per call). */
static void tick(struct server *s)
{
    rearm(s, s->tick_fd, EV_TICK);
    if (s->kept_gen != s->kept_seen) {
        s->kept_seen = s->kept_gen; /* calls kept since the last tick */
        return;
    }
    if (!s->kept) {
        set_tick(s, false); /* none for a whole tick */
        return;
    }
    /* The same call since the last tick: its send waits.  The reader
     * role goes on without it (to the main thread once requests ended). */
    s->kept = 0;
    s->leading = false;
    if (s->ended)
        pthread_cond_broadcast(&s->end_cv);
    else
        release_token(s);
}

/* Whether this thread started calls in a burst whose requests are still
 * held (aur_mcp_batch_begin): only a reader opens one, and it ends it
 * before it waits for input or gives up the role. */
static __thread bool batching;

static void batch_open(struct server *s)
{
    if (!batching) {
        aur_mcp_batch_begin(s->h);
        batching = true;
    }
}

static void batch_close(struct server *s)
{
    if (batching) {
        batching = false;
        aur_mcp_batch_end(s->h);
    }
}

bool serve_batch_pending(void *server)
{
    (void)server;
    return batching;
}

/* With the token (mu held, leading set): read and answer until a call can
 * run on this thread (returned, counted in running) or the input ends
 * (NULL).  The role stays with this thread through the call: *kept is
 * its number (s->kept), unless a tick takes the role meanwhile. */
static struct job *lead(struct server *s, uint64_t *kept)
{
    for (;;) {
        struct job *j;
        int r;

        pthread_mutex_unlock(&s->mu);
        r = serve_read_request(s, &j);
        pthread_mutex_lock(&s->mu);
        if (r == 2) {
            /* The burst is read: write it before waiting for more, with
             * the role kept, so that a tick can take the role from a
             * write that waits for an App that does not read. */
            uint64_t mine = keep_role(s);
            if (s->idle == 0)
                (void)serve_grow(s); /* someone to take it over */
            pthread_mutex_unlock(&s->mu);
            batch_close(s);
            pthread_mutex_lock(&s->mu);
            if (s->kept != mine)
                return NULL; /* a tick took the role: read no more */
            s->kept = 0;
            continue;
        }
        if (r > 0 && (s->ended || serve_signal_seen())) {
            /* A signal came while this call was read: it is after the
             * fact, as every line still to come. */
            pthread_mutex_unlock(&s->mu);
            serve_refuse_job(s, j);
            pthread_mutex_lock(&s->mu);
            r = -1;
        }
        if (r <= 0) {
            serve_end_requests(s, serve_signal_seen());
            s->leading = false;
            return NULL;
        }
        /* An idle thread must be there to take the role over from a
         * send that waits (tick). */
        if (s->running < WORKERS && (s->idle > 0 || serve_grow(s))) {
            /* Unless it is the only call, its request is held until the
             * buffer is read (the header says why). */
            if (s->running++ > 0 || serve_input_buffered(&s->in))
                batch_open(s);
            *kept = keep_role(s);
            return j;
        }
        /* No thread to take the role, or every worker busy: queue it (or
         * refuse it), read on. */
        if (s->queued >= MAX_QUEUED) {
            pthread_mutex_unlock(&s->mu);
            serve_respond(s, j->id, NULL, "busy", "too many queued calls");
            serve_drop_job(j);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        j->next = NULL;
        if (s->tail)
            s->tail->next = j;
        else
            s->head = j;
        s->tail = j;
        s->queued++;
    }
}

static struct job *dequeue(struct server *s)
{
    struct job *j = s->head;

    s->head = j->next;
    if (!s->head)
        s->tail = NULL;
    s->queued--;
    return j;
}

static void *worker(void *arg)
{
    struct server *s = arg;
    uint64_t kept = 0;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct job *j;
        struct epoll_event ev;
        int got;

        if (s->head && s->signalled) {
            /* A signal closed the Apps: queued calls do not start. */
            j = dequeue(s);
            pthread_mutex_unlock(&s->mu);
            serve_refuse_job(s, j);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        kept = 0;
        if (s->head && s->running < WORKERS) {
            j = dequeue(s);
            s->running++;
            if (s->ended && !s->head)
                pthread_cond_broadcast(&s->q_cv); /* the others may go */
        } else if (s->ended) {
            /* Queued calls left wait for a running one to end. */
            if (!s->head)
                break;
            pthread_cond_wait(&s->q_cv, &s->mu);
            continue;
        } else {
            s->idle++;
            pthread_mutex_unlock(&s->mu);
            got = epoll_wait(s->ep, &ev, 1, -1);
            pthread_mutex_lock(&s->mu);
            s->idle--;
            if (got < 0 && errno == EINTR)
                continue;
            if (got == 1 && ev.data.u32 == EV_TICK) {
                tick(s);
                continue;
            }
            if (got == 1 && ev.data.u32 == EV_QUEUE) {
                rearm(s, s->queue_fd, EV_QUEUE);
                continue;
            }
            if (got != 1 || ev.data.u32 == EV_STOP) {
                /* A signal, or an epoll failure: end as on a signal
                 * rather than spin on it. */
                if (!s->ended)
                    serve_end_requests(s, true);
                continue;
            }
            /* The reader role, unless requests have ended: then the main
             * thread reads what is left. */
            if (s->ended)
                continue;
            s->leading = true;
            if (!(j = lead(s, &kept)))
                continue;
        }
        pthread_mutex_unlock(&s->mu);
        run_job(s, j);
        pthread_mutex_lock(&s->mu);
        /* Still the reader, unless a tick took the role meanwhile. */
        while (kept && s->kept == kept) {
            s->kept = 0;
            if (s->ended) {
                s->leading = false;
                pthread_cond_broadcast(&s->end_cv);
                break;
            }
            if (!(j = lead(s, &kept)))
                break;
            pthread_mutex_unlock(&s->mu);
            run_job(s, j);
            pthread_mutex_lock(&s->mu);
        }
        if (batching) {
            /* The role went on (a tick, the end of input): what this
             * thread holds is written now. */
            pthread_mutex_unlock(&s->mu);
            batch_close(s);
            pthread_mutex_lock(&s->mu);
        }
    }
    if (--s->live == 0 && s->running == 0)
        serve_poke(s->done_fd);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
