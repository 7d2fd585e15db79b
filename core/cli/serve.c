/*
 * serve.c - `aurora-mcp serve`: JSON lines on stdin, one response line per
 * request on stdout, calls run concurrently on a worker pool and may answer
 * out of order.  EOF, SIGINT and SIGTERM shut down cleanly.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORKERS 64
#define MAX_QUEUED 4096
#define MAX_LINE (64u << 20)

struct job {
    struct json_object *id;
    char *tool;
    struct json_object *args;
    struct job *next;
};

/* What wakes a thread parked in epoll_wait. */
enum { EV_STDIN = 1, EV_PASS, EV_STOP };

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
 * thread is idle the reader queues the call (up to MAX_QUEUED) and keeps
 * reading, so the other ops are still answered while every thread is
 * busy; a thread queues only when none is idle and goes idle only when
 * the queue is empty, so queued calls never wait for an idle thread.
 */
struct server {
    struct aur_mcp *h;
    pthread_mutex_t mu; /* down to signalled */
    pthread_cond_t end_cv; /* the main thread, for ended */
    struct job *head, *tail;
    size_t queued;
    size_t idle;
    bool ended; /* EOF, shutdown, a signal or a read error */
    bool signalled;
    pthread_mutex_t out_mu;
    int ep, pass_fd;
    bool stdin_watched; /* false: a file, always readable */
    /* stdin, touched only by the token holder */
    char *buf;
    size_t n, cap, off, scan;
    bool dropping;
};

/* Level-triggered and never drained: once written, every wait ends. */
static int stop_fd = -1;
static volatile sig_atomic_t got_signal;

static void wake_all(void)
{
    uint64_t one = 1;
    if (write(stop_fd, &one, sizeof one) < 0) {
        /* nothing to do: the counter is already non-zero */
    }
}

static void on_signal(int sig)
{
    int saved = errno;
    (void)sig;
    got_signal = 1;
    wake_all();
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

static void drop_job(struct job *j)
{
    json_object_put(j->id);
    json_object_put(j->args);
    free(j->tool);
    free(j);
}

static void run_job(struct server *s, struct job *j)
{
    struct aur_tool_output out;

    char *line;
    size_t len;

    aur_mcp_call(s->h, j->tool, j->args, -1, &out);
    if ((line = cli_call_answer(j->id, &out, &len))) {
        pthread_mutex_lock(&s->out_mu);
        fwrite(line, 1, len, stdout);
        fflush(stdout);
        pthread_mutex_unlock(&s->out_mu);
        free(line);
    } else {
        respond(s, j->id, cli_output_json(&out), NULL, NULL);
    }
    aur_tool_output_clear(&out);
    drop_job(j);
}

/* A call job from a request, or NULL (answered here). */
static struct job *make_call(struct server *s, struct json_object *req,
                             struct json_object *id)
{
    struct json_object *tool = NULL, *args = NULL;
    struct job *j;

    json_object_object_get_ex(req, "tool", &tool);
    json_object_object_get_ex(req, "arguments", &args);
    if (!json_object_is_type(tool, json_type_string)) {
        respond(s, id, NULL, "bad_request", "call needs a string \"tool\"");
        return NULL;
    }
    if (args && !json_object_is_type(args, json_type_object)) {
        respond(s, id, NULL, "bad_request", "\"arguments\" must be an object");
        return NULL;
    }
    j = calloc(1, sizeof *j);
    if (!j || !(j->tool = strdup(json_object_get_string(tool)))) {
        free(j);
        respond(s, id, NULL, "busy", "out of memory");
        return NULL;
    }
    j->id = json_object_get(id);
    j->args = json_object_get(args);
    return j;
}

/* One request line.  Returns true when it asks to shut down; *call is set
 * for a call the caller must run or queue. */
static bool handle_line(struct server *s, const char *line, size_t len,
                        struct job **call)
{
    struct json_object *req = NULL, *id = NULL, *op = NULL;
    struct aur_error err;
    const char *o;
    bool stop = false;

    if (aur_json_parse(line, len, &req, &err) != AUR_OK ||
        !json_object_is_type(req, json_type_object) ||
        !json_object_object_get_ex(req, "id", &id) ||
        !json_object_object_get_ex(req, "op", &op) ||
        !json_object_is_type(op, json_type_string)) {
        respond(s, NULL, NULL, "bad_request",
                "each line must be a JSON object with \"id\" and \"op\"");
        json_object_put(req);
        return false;
    }
    o = json_object_get_string(op);
    if (strcmp(o, "call") == 0) {
        *call = make_call(s, req, id);
    } else if (strcmp(o, "status") == 0) {
        respond(s, id, aur_mcp_status_json(s->h, 0), NULL, NULL);
    } else if (strcmp(o, "tools") == 0) {
        struct json_object *st = aur_mcp_status_json(s->h, 1), *tools;
        struct json_object *r = json_object_new_object();
        json_object_object_get_ex(st, "tools", &tools);
        json_object_object_add(r, "tools", json_object_get(tools));
        json_object_put(st);
        respond(s, id, r, NULL, NULL);
    } else if (strcmp(o, "shutdown") == 0) {
        stop = true;
        respond(s, id, json_object_new_object(), NULL, NULL);
    } else {
        respond(s, id, NULL, "unknown_op", "unknown op");
    }
    json_object_put(req);
    return stop;
}

/* The next non-empty line of stdin (without LF or a final CR), valid until
 * the next call.  1 = a line, 0 = EOF or an error, -1 = a signal.  We split
 * lines ourselves so a signal can interrupt the wait (poll on stdin and
 * the signal pipe). */
static int next_line(struct server *s, const char **line, size_t *len)
{
    for (;;) {
        while (s->scan < s->n) {
            char *nl = memchr(s->buf + s->scan, '\n', s->n - s->scan);
            size_t start = s->off, l;

            if (!nl) {
                s->scan = s->n;
                break;
            }
            l = (size_t)(nl - s->buf) - start;
            s->off = s->scan = (size_t)(nl - s->buf) + 1;
            if (s->dropping) {
                s->dropping = false;
                continue;
            }
            if (l && s->buf[start + l - 1] == '\r')
                l--;
            if (l) {
                *line = s->buf + start;
                *len = l;
                return 1;
            }
        }
        if (s->off) {
            memmove(s->buf, s->buf + s->off, s->n - s->off);
            s->n -= s->off;
            s->scan -= s->off;
            s->off = 0;
        }
        if (s->n == s->cap) {
            if (s->cap >= MAX_LINE) {
                /* An endless line: answer once, skip to its end. */
                respond(s, NULL, NULL, "bad_request", "line too long");
                s->dropping = true;
                s->n = s->scan = 0;
            } else {
                char *g = realloc(s->buf, s->cap * 2);
                if (!g)
                    return 0;
                s->buf = g;
                s->cap *= 2;
            }
        }
        struct pollfd p[2] = {{0, POLLIN, 0}, {stop_fd, POLLIN, 0}};
        ssize_t got;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        if (p[1].revents)
            return -1;
        got = read(0, s->buf + s->n, s->cap - s->n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0;
        s->n += (size_t)got;
    }
}

/* As the reader: answer lines until one is a call (1, *call set) or the
 * input ends (0: EOF or shutdown, -1: a signal). */
static int read_request(struct server *s, struct job **call)
{
    const char *line;
    size_t len;
    int r;

    *call = NULL;
    while ((r = next_line(s, &line, &len)) == 1) {
        if (handle_line(s, line, len, call))
            return 0;
        if (*call)
            return 1;
    }
    return r;
}

/* Whether the buffer already holds the end of a line. */
static bool line_buffered(const struct server *s)
{
    return s->scan < s->n && memchr(s->buf + s->scan, '\n', s->n - s->scan);
}

/* Give up the reader role: to the next byte on stdin, or at once to an
 * idle thread when there is something to read already. */
static void release_token(struct server *s)
{
    struct epoll_event ev = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_PASS}};
    int fd = s->pass_fd;

    if (s->stdin_watched && !line_buffered(s)) {
        ev.data.u32 = EV_STDIN;
        fd = 0;
    }
    if (epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev) != 0) {
        /* Unreachable with valid fds; never strand the role silently. */
        perror("aurora-mcp serve: epoll_ctl");
        abort();
    }
}

/* With the token (mu held): read and answer until a call can run on this
 * thread (returned, token released) or the input ends (NULL). */
static struct job *lead(struct server *s)
{
    for (;;) {
        struct job *j;
        int r;

        pthread_mutex_unlock(&s->mu);
        r = read_request(s, &j);
        pthread_mutex_lock(&s->mu);
        if (r <= 0) {
            s->ended = true;
            s->signalled = s->signalled || got_signal;
            pthread_cond_signal(&s->end_cv);
            wake_all();
            return NULL;
        }
        if (s->idle > 0) {
            release_token(s);
            return j;
        }
        /* Every other thread is busy: queue it (or refuse), read on. */
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

static void *worker(void *arg)
{
    struct server *s = arg;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct job *j = s->head;
        struct epoll_event ev;
        int got;

        if (j) {
            s->head = j->next;
            if (!s->head)
                s->tail = NULL;
            s->queued--;
        } else if (s->ended) {
            break;
        } else {
            s->idle++;
            pthread_mutex_unlock(&s->mu);
            got = epoll_wait(s->ep, &ev, 1, -1);
            pthread_mutex_lock(&s->mu);
            s->idle--;
            if (got < 0 && errno == EINTR)
                continue;
            if (got != 1 || ev.data.u32 == EV_STOP) {
                /* A signal, or an epoll failure: end as on a signal
                 * rather than spin on it. */
                if (!s->ended) {
                    s->ended = s->signalled = true;
                    pthread_cond_signal(&s->end_cv);
                    wake_all();
                }
                continue;
            }
            if (!(j = lead(s)))
                continue;
        }
        pthread_mutex_unlock(&s->mu);
        run_job(s, j);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void close_fds(struct server *s)
{
    /* The handler writes to stop_fd: not once it is closed and its
     * number free for reuse. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    if (s->ep >= 0)
        close(s->ep);
    if (s->pass_fd >= 0)
        close(s->pass_fd);
    close(stop_fd);
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

    if ((s->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (s->pass_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, stop_fd, &stop) != 0 ||
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
    pthread_t th[WORKERS + 1];
    struct sigaction sa;
    int rc, nth = 0;

    memset(&s, 0, sizeof s);
    s.ep = s.pass_fd = -1;
    if ((stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return EXIT_RUNTIME;
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
    if (rc != EXIT_OK)
        return rc;
    /* A signal just after a successful start was taken by the thread:
     * hand it to serve's handler, which ends serve as any signal does. */
    if (early)
        raise(early);
    s.cap = 65536;
    s.buf = malloc(s.cap);
    if (!s.buf || setup_epoll(&s) != 0) {
        perror("aurora-mcp serve");
        free(s.buf);
        close_fds(&s);
        aur_mcp_destroy(s.h);
        return EXIT_RUNTIME;
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.end_cv, NULL);
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
    /* WORKERS calls at once, plus the reader. */
    for (; nth < WORKERS + 1; nth++)
            if (pthread_create(&th[nth], NULL, worker, &s) != 0)
                break;
    pthread_mutex_lock(&s.mu);
    /* A reader alone would queue calls nobody runs: give up as on a read
     * error. */
    bool starved = nth < 2;
    if (starved)
        s.ended = true;
    while (!s.ended)
        pthread_cond_wait(&s.end_cv, &s.mu);
    bool signalled = s.signalled;
    pthread_mutex_unlock(&s.mu);

    /* EOF or shutdown: let accepted calls finish (each is bounded by its
     * timeout), then close.  A signal closes the Apps first: calls in
     * flight end as unknown and are still answered. */
    if (signalled)
        aur_mcp_shutdown(s.h);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    aur_mcp_shutdown(s.h);
    aur_mcp_destroy(s.h);
    free(s.buf);
    close_fds(&s);
    return starved ? EXIT_RUNTIME : EXIT_OK;
}
