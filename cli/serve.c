/*
 * serve.c - `aurora-mcp serve`: JSON lines on stdin, one response line per
 * request on stdout, calls run concurrently on a worker pool and may answer
 * out of order.  EOF, SIGINT and SIGTERM shut down cleanly.
 *
 * Every request line gets exactly one answer line:
 *   - a line that is not a request (not a JSON object with "id" and a
 *     string "op", or an "id" that is not a string, a finite number or
 *     null) gets {"id":null,"error":{"code":"bad_request",...}};
 *   - a name that would be cut as a C string ("op" or "tool" holding
 *     U+0000) is refused as bad_request with the request's id, never
 *     truncated into another name;
 *   - a call over the limits: WORKERS in flight at once, MAX_QUEUED more
 *     wait, past that it is answered busy;
 *   - once shutdown has begun (the shutdown op, EOF, SIGINT or SIGTERM)
 *     every later line is answered shutting_down until serve exits; calls
 *     still queued when a signal comes are answered shutting_down too (a
 *     signal closes the Apps, so calls in flight answer unknown).
 * serve_input.c splits stdin into lines, serve_request.c reads what a
 * line asks for, and this file answers it.
 *
 * A call is started with aur_mcp_call_start: the thread that runs it
 * returns as soon as the request is sent, and its answer is written by
 * call_done on the thread that learns the outcome (the App's I/O thread
 * mostly), so no thread is parked, and none woken, per call in flight.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORKERS 64 /* calls that run at once */
#define MAX_QUEUED 4096 /* calls that wait for one of them */

struct job {
    struct server *s;
    struct json_object *id;
    char *tool;
    struct json_object *args;
    struct job *next;
};

/* What wakes a thread parked in epoll_wait. */
enum { EV_STDIN = 1, EV_PASS, EV_STOP, EV_QUEUE, EV_TICK };

/* A reader that keeps the role through a call (below) loses it to an
 * idle thread once the same call has held it for a whole tick. */
#define KEEP_TICK_NS 2000000L

/*
 * Leader/follower with the reader role as a token that lives in an epoll
 * set.  Idle threads park in epoll_wait on one epoll fd (exclusive
 * wake-ups: one thread per event).  The token is exactly one of: held by
 * the reader; stdin armed EPOLLONESHOT (the next byte wakes one idle
 * thread, which becomes the reader); the always-readable pass eventfd
 * armed EPOLLONESHOT (an idle thread wakes at once: lines are already
 * buffered, or stdin is a file epoll cannot watch).  A reader that reads
 * a call releases the token and runs the call itself, so a sequential
 * call costs no thread wake-up at all: the next request wakes whichever
 * thread is parked, as it would wake a single-threaded loop.  When no
 * thread is idle, or WORKERS calls already run, the reader queues the
 * call (up to MAX_QUEUED) and keeps reading, so the other ops are still
 * answered while every worker is busy.
 *
 * A call that is the only one (nothing running, no further line
 * buffered: the sequential case) is run by the reader without giving the
 * role up, and the reader reads on when the call's send returns: the
 * next request then wakes no parked thread, and the reader never has to
 * run again only to park (one context switch a call less).  A send can
 * wait for a server that does not read, so the role is not held
 * unbounded: a periodic timer (tick_fd, armed while calls are kept)
 * wakes an idle thread, which takes the role from a call it finds kept
 * at two ticks in a row and hands it on as release_token does.
 *
 * The pool grows to at most WORKERS + 1 threads (a send can wait for a
 * server that does not read, so the reader's role is handed on before a
 * call is started), but the limit is not the thread count: running
 * counts the calls started and not yet answered, and a thread starts a
 * call (its own or a queued one) only while running < WORKERS.  A call
 * that ends while calls are queued wakes a parked thread for them
 * (queue_fd; once requests have ended, q_cv).
 *
 * When requests end (ended), the main thread takes stdin over as soon as
 * no thread leads, and answers every further line shutting_down until the
 * workers are done; then it answers the lines that have already arrived,
 * and serve exits.
 */
struct server {
    struct aur_mcp *h;
    pthread_mutex_t mu; /* down to signalled */
    pthread_cond_t end_cv; /* the main thread, for ended and !leading */
    pthread_cond_t q_cv;   /* once ended: a call ended, queued may start */
    struct job *head, *tail;
    size_t queued;
    size_t idle;
    size_t running; /* calls started and not yet answered, <= WORKERS */
    size_t live;    /* worker threads that have not returned */
    /* The pool grows as calls arrive (grow), to WORKERS + 1: threads that
     * are never needed cost memory (a stack each) for nothing. */
    pthread_t th[WORKERS + 1];
    size_t nth; /* (mu) threads made */
    bool leading;   /* a thread holds the reader role (in lead) */
    /* (mu) the call run by a reader that kept the role, 0 when none;
     * numbered (kept_gen, the last) so a reader can tell its own call
     * from a later one; kept_seen is kept_gen at the last tick */
    uint64_t kept, kept_gen, kept_seen;
    bool tick_armed; /* (mu) tick_fd runs */
    bool ended; /* EOF, shutdown, a signal or a read error */
    bool signalled;
    pthread_mutex_t out_mu;
    int ep, pass_fd, done_fd;
    int queue_fd; /* (EPOLLONESHOT) a call ended, queued may start */
    int tick_fd;  /* (EPOLLONESHOT) timerfd, see KEEP_TICK_NS */
    bool stdin_watched; /* false: a file, always readable */
    /* stdin, touched only by the token holder (main's, once ended) */
    struct serve_input in;
};

/* Level-triggered and never drained: once written, every wait ends.
 * stop_fd: a signal or the end of requests (wakes parked workers);
 * sig_fd: a signal only (the main thread watches it while it drains). */
static int stop_fd = -1, sig_fd = -1;
/* Set by the handler, read by every thread: a lock-free atomic (safe in
 * a handler), not a volatile sig_atomic_t, which only the interrupted
 * thread may read without a race. */
static atomic_int got_signal;

static bool signal_seen(void)
{
    return atomic_load(&got_signal) != 0;
}

static void poke(int fd)
{
    uint64_t one = 1;
    if (fd >= 0 && write(fd, &one, sizeof one) < 0) {
        /* nothing to do: the counter is already non-zero */
    }
}

static void wake_all(void)
{
    poke(stop_fd);
}

static void on_signal(int sig)
{
    int saved = errno;
    (void)sig;
    atomic_store(&got_signal, 1);
    poke(stop_fd);
    poke(sig_fd);
    errno = saved;
}

static void respond(struct server *s, struct json_object *id,
                    struct json_object *result, const char *code,
                    const char *msg)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_get(id));
    if (result) {
        json_object_object_add(o, "result", result);
    } else {
        struct json_object *e = json_object_new_object();
        json_object_object_add(e, "code", json_object_new_string(code));
        json_object_object_add(e, "message", json_object_new_string(msg));
        json_object_object_add(o, "error", e);
    }
    pthread_mutex_lock(&s->out_mu);
    cli_print_json(o);
    pthread_mutex_unlock(&s->out_mu);
    json_object_put(o);
}

static const char k_shutting_down[] = "serve is shutting down";

static void drop_job(struct job *j)
{
    json_object_put(j->id);
    json_object_put(j->args);
    free(j->tool);
    free(j);
}

/* A call accepted before shutdown began that will not run now. */
static void refuse_job(struct server *s, struct job *j)
{
    respond(s, j->id, NULL, "shutting_down", k_shutting_down);
    drop_job(j);
}

static void answer_call(struct server *s, struct json_object *id,
                        const struct aur_tool_output *out)
{
    char *line;
    size_t len;

    if ((line = cli_call_answer(id, out, &len))) {
        pthread_mutex_lock(&s->out_mu);
        fwrite(line, 1, len, stdout);
        fflush(stdout);
        pthread_mutex_unlock(&s->out_mu);
        free(line);
    } else {
        respond(s, id, cli_output_json(out), NULL, NULL);
    }
}

/* A call is over (answered, mu not held): it no longer counts, a queued
 * one may start, and serve may be done. */
static void call_over(struct server *s)
{
    pthread_mutex_lock(&s->mu);
    s->running--;
    if (s->ended)
        pthread_cond_broadcast(&s->q_cv); /* a slot, or nothing left */
    else if (s->head && s->running < WORKERS)
        poke(s->queue_fd);
    if (s->ended && s->running == 0 && s->live == 0)
        poke(s->done_fd);
    pthread_mutex_unlock(&s->mu);
}

/* aur_mcp_call_start's done: on the thread that learnt the outcome (the
 * App's, mostly), so it only writes the answer and counts. */
static void call_done(void *ud, const struct aur_tool_output *out)
{
    struct job *j = ud;
    struct server *s = j->s;

    answer_call(s, j->id, out);
    drop_job(j);
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
    if (rc == AUR_E_STATE)
        respond(s, j->id, NULL, "shutting_down", k_shutting_down);
    else
        respond(s, j->id, NULL, "busy", err.msg);
    drop_job(j);
    call_over(s);
}

/* A call job from a checked request, or NULL (answered here). */
static struct job *make_call(struct server *s, const struct serve_request *r)
{
    struct job *j = calloc(1, sizeof *j);

    if (!j || !(j->tool = strdup(r->tool))) {
        free(j);
        respond(s, r->id, NULL, "busy", "out of memory");
        return NULL;
    }
    j->id = json_object_get(r->id);
    j->args = json_object_get(r->args);
    return j;
}

/* One request line.  Returns true when it asks to shut down; *call is set
 * for a call the caller must run or queue. */
static bool handle_line(struct server *s, const char *line, size_t len,
                        struct job **call)
{
    struct serve_request r;
    char msg[200];
    const char *code = serve_request_parse(line, len, false, &r, msg,
                                           sizeof msg);
    bool stop = false;

    if (code) {
        respond(s, r.id, NULL, code, msg);
    } else if (r.op == SERVE_OP_CALL) {
        *call = make_call(s, &r);
    } else if (r.op == SERVE_OP_STATUS) {
        respond(s, r.id, aur_mcp_status_jsonc(s->h, 0), NULL, NULL);
    } else if (r.op == SERVE_OP_TOOLS) {
        struct json_object *st = aur_mcp_status_jsonc(s->h, 1), *tools;
        struct json_object *res = json_object_new_object();
        json_object_object_get_ex(st, "tools", &tools);
        json_object_object_add(res, "tools", json_object_get(tools));
        json_object_put(st);
        respond(s, r.id, res, NULL, NULL);
    } else {
        stop = true; /* SERVE_OP_SHUTDOWN */
        respond(s, r.id, json_object_new_object(), NULL, NULL);
    }
    serve_request_clear(&r);
    return stop;
}

/* A line read once shutdown has begun: whatever it asks, it gets
 * shutting_down (a line that is not a request still gets bad_request). */
static void refuse_line(struct server *s, const char *line, size_t len)
{
    struct serve_request r;
    char msg[200];
    const char *code = serve_request_parse(line, len, true, &r, msg,
                                           sizeof msg);

    respond(s, r.id, NULL, code ? code : "shutting_down",
            code ? msg : k_shutting_down);
    serve_request_clear(&r);
}

/* As the reader: answer lines until one is a call (1, *call set) or the
 * input ends (0: EOF or shutdown, -1: a signal). */
static int read_request(struct server *s, struct job **call)
{
    const char *line;
    size_t len;
    int r = 0;

    *call = NULL;
    while (!signal_seen() &&
           (r = serve_input_next(&s->in, &line, &len, &stop_fd, 1, -1,
                                 NULL)) > 0) {
        if (r == SERVE_INPUT_TOO_LONG) {
            respond(s, NULL, NULL, "bad_request", "line too long");
            continue;
        }
        if (handle_line(s, line, len, call))
            return 0;
        if (*call)
            return 1;
    }
    return signal_seen() ? -1 : r;
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
static void end_requests(struct server *s, bool signalled)
{
    s->ended = true;
    s->signalled = s->signalled || signalled;
    pthread_cond_broadcast(&s->end_cv);
    pthread_cond_broadcast(&s->q_cv);
    wake_all();
}

static void *worker(void *arg);

/* One more worker (mu held): it parks in the epoll set, where the token
 * the reader releases next wakes it (or an older idle thread).  false
 * when there is no room or no thread could be made (the call then waits
 * in the queue for a running one). */
static bool grow(struct server *s)
{
    if (s->nth == WORKERS + 1 ||
        pthread_create(&s->th[s->nth], NULL, worker, s) != 0)
        return false;
    s->nth++;
    s->live++;
    return true;
}

/* Run timer_fd every KEEP_TICK_NS, or stop it (mu held). */
static void set_tick(struct server *s, bool on)
{
    struct itimerspec t = {{0, on ? KEEP_TICK_NS : 0},
                           {0, on ? KEEP_TICK_NS : 0}};

    if (timerfd_settime(s->tick_fd, 0, &t, NULL) == 0)
        s->tick_armed = on;
}

/* An idle thread woken by tick_fd (mu held): take the role from a call
 * kept since the last tick, or stop the timer when no call was kept in
 * a whole tick (a stream of calls keeps it running: no timerfd_settime
 * per call). */
static void tick(struct server *s)
{
    struct epoll_event again = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_TICK}};
    uint64_t n;

    if (read(s->tick_fd, &n, sizeof n) < 0) {
        /* already read: a stale wake-up */
    }
    epoll_ctl(s->ep, EPOLL_CTL_MOD, s->tick_fd, &again);
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

/* With the token (mu held, leading set): read and answer until a call can
 * run on this thread (returned, counted in running) or the input ends
 * (NULL).  *kept is the call's number when the role stays with this
 * thread through it (s->kept), else 0 and the token is released. */
static struct job *lead(struct server *s, uint64_t *kept)
{
    for (;;) {
        struct job *j;
        int r;

        pthread_mutex_unlock(&s->mu);
        r = read_request(s, &j);
        pthread_mutex_lock(&s->mu);
        if (r > 0 && (s->ended || signal_seen())) {
            /* A signal came while this call was read: it is after the
             * fact, as every line still to come. */
            pthread_mutex_unlock(&s->mu);
            refuse_job(s, j);
            pthread_mutex_lock(&s->mu);
            r = -1;
        }
        if (r <= 0) {
            end_requests(s, signal_seen());
            s->leading = false;
            return NULL;
        }
        if (s->running < WORKERS && (s->idle > 0 || grow(s))) {
            *kept = 0;
            if (s->running++ == 0 && !serve_input_buffered(&s->in)) {
                *kept = s->kept = ++s->kept_gen;
                if (!s->tick_armed)
                    set_tick(s, true);
                return j;
            }
            release_token(s);
            s->leading = false;
            return j;
        }
        /* No thread to take the role, or every worker busy: queue it (or
         * refuse it), read on. */
        if (s->queued >= MAX_QUEUED) {
            pthread_mutex_unlock(&s->mu);
            respond(s, j->id, NULL, "busy", "too many queued calls");
            drop_job(j);
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
            refuse_job(s, j);
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
                /* Emptied before it is armed again: a poke after this
                 * wakes a thread again. */
                struct epoll_event q = {EPOLLIN | EPOLLONESHOT,
                                        {.u32 = EV_QUEUE}};
                uint64_t n;
                if (read(s->queue_fd, &n, sizeof n) < 0) {
                    /* already empty */
                }
                epoll_ctl(s->ep, EPOLL_CTL_MOD, s->queue_fd, &q);
                continue;
            }
            if (got != 1 || ev.data.u32 == EV_STOP) {
                /* A signal, or an epoll failure: end as on a signal
                 * rather than spin on it. */
                if (!s->ended)
                    end_requests(s, true);
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
    }
    if (--s->live == 0 && s->running == 0)
        poke(s->done_fd);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static bool readable(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

/*
 * The main thread once requests have ended and no thread leads: answer
 * every line still coming shutting_down while the accepted calls finish;
 * a signal meanwhile closes the Apps at once.  When every worker is done,
 * answer the lines that have arrived by then (what FIONREAD counts), and
 * return.
 */
static void drain(struct server *s, bool signalled)
{
    bool done = false;
    size_t budget = 0;

    for (;;) {
        int wake[2], nwake = 0;
        const char *line;
        size_t len;

        if (!signalled)
            wake[nwake++] = sig_fd;
        if (!done)
            wake[nwake++] = s->done_fd;
        if (!s->in.eof) {
            int r = serve_input_next(&s->in, &line, &len, wake, nwake,
                                     done ? 0 : -1, done ? &budget : NULL);
            if (r == SERVE_INPUT_TOO_LONG) {
                respond(s, NULL, NULL, "bad_request", "line too long");
                continue;
            }
            if (r == 1) {
                refuse_line(s, line, len);
                continue;
            }
            if (r == 0)
                continue; /* EOF: wait for the workers only */
        } else if (!done) {
            struct pollfd p[2];
            for (int i = 0; i < nwake; i++)
                p[i] = (struct pollfd){wake[i], POLLIN, 0};
            if (poll(p, (nfds_t)nwake, -1) < 0 && errno != EINTR)
                return;
        }
        if (done)
            return;
        if (!signalled && readable(sig_fd)) {
            signalled = true;
            pthread_mutex_lock(&s->mu);
            s->signalled = true;
            pthread_mutex_unlock(&s->mu);
            /* Calls in flight end unknown, queued ones shutting_down. */
            aur_mcp_shutdown(s->h);
        }
        if (readable(s->done_fd)) {
            int avail = 0;
            done = true;
            if (!s->in.eof && ioctl(0, FIONREAD, &avail) == 0 && avail > 0)
                budget = (size_t)avail;
        }
    }
}

static void close_fds(struct server *s)
{
    /* The handler writes to stop_fd and sig_fd: not once they are closed
     * and their numbers free for reuse. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    if (s->ep >= 0)
        close(s->ep);
    if (s->pass_fd >= 0)
        close(s->pass_fd);
    if (s->done_fd >= 0)
        close(s->done_fd);
    if (s->queue_fd >= 0)
        close(s->queue_fd);
    if (s->tick_fd >= 0)
        close(s->tick_fd);
    close(stop_fd);
    close(sig_fd);
    stop_fd = sig_fd = -1;
}

/* The epoll set, with the token armed on stdin (or passed, for a file).
 * Nothing may be added "disarmed": epoll always adds EPOLLHUP and
 * EPOLLERR, so a stdin added without EPOLLIN would still wake a second
 * reader when the writer closes.  The pass eventfd has no HUP or ERR. */
static int setup_epoll(struct server *s)
{
    struct epoll_event stop = {EPOLLIN, {.u32 = EV_STOP}};
    struct epoll_event pass = {EPOLLONESHOT, {.u32 = EV_PASS}};
    struct epoll_event in = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_STDIN}};
    struct epoll_event queue = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_QUEUE}};
    struct epoll_event tick = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_TICK}};

    if ((s->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (s->pass_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (s->queue_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (s->tick_fd = timerfd_create(CLOCK_MONOTONIC,
                                     TFD_CLOEXEC | TFD_NONBLOCK)) < 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tick_fd, &tick) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, stop_fd, &stop) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->queue_fd, &queue) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->pass_fd, &pass) != 0)
        return -1;
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, 0, &in) == 0) {
        s->stdin_watched = true;
        return 0;
    }
    /* A regular file cannot be watched (EPERM), and needs no watching:
     * it is always readable. */
    if (errno != EPERM)
        return -1;
    pass.events |= EPOLLIN;
    return epoll_ctl(s->ep, EPOLL_CTL_MOD, s->pass_fd, &pass);
}

int cli_serve(const char *dir)
{
    struct server s;
    struct sigaction sa;
    int rc;

    memset(&s, 0, sizeof s);
    s.ep = s.pass_fd = s.done_fd = s.queue_fd = s.tick_fd = -1;
    /* serve's own descriptors come before the Apps': a host that runs
     * out of them does so while starting an App, which names the App,
     * not after a start that went well. */
    s.in.cap = 65536;
    s.in.buf = malloc(s.in.cap);
    if (!s.in.buf || (stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (sig_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        setup_epoll(&s) != 0) {
        perror("aurora-mcp serve");
        free(s.in.buf);
        close_fds(&s);
        return EXIT_RUNTIME;
    }
    /* During startup a signal cancels it (main.c's signal thread: the
     * start ends "interrupted"); from the ready line on, serve's own
     * handler ends the loop.  A signal in between stays pending. */
    rc = cli_start(dir, &s.h);
    int early = cli_signals_stop();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    if (rc != EXIT_OK) {
        free(s.in.buf);
        close_fds(&s);
        return rc;
    }
    /* A signal just after a successful start was taken by the thread:
     * hand it to serve's handler, which ends serve as any signal does. */
    if (early)
        raise(early);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.end_cv, NULL);
    pthread_cond_init(&s.q_cv, NULL);
    pthread_mutex_init(&s.out_mu, NULL);
    {
        /* Before any thread can read a request and answer it. */
        struct json_object *ready = json_object_new_object();
        json_object_object_add(ready, "ready", json_object_new_boolean(1));
        json_object_object_add(ready, "tools",
                               json_object_new_int64(
                                   (int64_t)aur_mcp_tool_count(s.h)));
        cli_print_json(ready);
        json_object_put(ready);
    }
    /* The reader and one more; calls add threads as they need them, to
     * WORKERS calls at once plus the reader. */
    pthread_mutex_lock(&s.mu);
    while (s.nth < 2 && grow(&s))
        ;
    if (s.live == 0)
        poke(s.done_fd);
    /* A reader alone would queue calls nobody runs: give up as on a read
     * error. */
    bool starved = s.nth < 2;
    if (starved) {
        fprintf(stderr, "aurora-mcp serve: cannot start worker threads\n");
        end_requests(&s, false);
    }
    while (!s.ended)
        pthread_cond_wait(&s.end_cv, &s.mu);
    bool signalled = s.signalled;
    pthread_mutex_unlock(&s.mu);

    /* EOF or shutdown: let accepted calls finish (each is bounded by its
     * timeout), then close.  A signal closes the Apps first: calls in
     * flight end as unknown and are still answered. */
    if (signalled)
        aur_mcp_shutdown(s.h);
    pthread_mutex_lock(&s.mu);
    while (s.leading)
        pthread_cond_wait(&s.end_cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    drain(&s, signalled);
    /* Every worker has returned (drain waited for live == 0), so none
     * can grow the pool any more. */
    pthread_mutex_lock(&s.mu);
    size_t made = s.nth;
    pthread_mutex_unlock(&s.mu);
    for (size_t i = 0; i < made; i++)
        pthread_join(s.th[i], NULL);
    aur_mcp_shutdown(s.h);
    aur_mcp_destroy(s.h);
    free(s.in.buf);
    close_fds(&s);
    return starved ? EXIT_RUNTIME : EXIT_OK;
}
