/*
 * serve.c - `aurora-mcp serve`: JSON lines on stdin, one response line per
 * request on stdout, calls run concurrently on a worker pool and may answer
 * out of order.  EOF, SIGINT and SIGTERM shut down cleanly.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
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

/*
 * Leader/follower: one of the threads is the reader at a time.  It
 * answers status/tools/shutdown itself; when it reads a call it hands the
 * reader role to an idle thread and runs the call itself, so a call costs
 * no thread hand-off between reading it and sending it.  When no thread is
 * idle it queues the call (up to MAX_QUEUED) and keeps reading, so the
 * other ops are still answered while every thread is busy.
 */
struct server {
    struct aur_mcp *h;
    pthread_mutex_t mu; /* everything down to signalled */
    pthread_cond_t cv;  /* idle threads */
    pthread_cond_t end_cv; /* the main thread, for ended */
    struct job *head, *tail;
    size_t queued;
    size_t idle;
    bool have_reader;
    bool ended; /* EOF, shutdown, a signal or a read error */
    bool signalled;
    pthread_mutex_t out_mu;
    /* stdin, touched only by the reader */
    char *buf;
    size_t n, cap, off, scan;
    bool dropping;
};

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* nothing to do: the pipe is full, a wakeup is pending anyway */
    }
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

static void run_job(struct server *s, struct job *j)
{
    struct aur_tool_output out;

    aur_mcp_call(s->h, j->tool, j->args, -1, &out);
    respond(s, j->id, cli_output_json(&out), NULL, NULL);
    aur_tool_output_clear(&out);
    json_object_put(j->id);
    json_object_put(j->args);
    free(j->tool);
    free(j);
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
        struct pollfd p[2] = {{0, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}};
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

static void *worker(void *arg)
{
    struct server *s = arg;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct job *j = s->head;
        int r;

        if (j) {
            s->head = j->next;
            if (!s->head)
                s->tail = NULL;
            s->queued--;
            pthread_mutex_unlock(&s->mu);
            run_job(s, j);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (s->ended)
            break;
        if (s->have_reader) {
            s->idle++;
            pthread_cond_wait(&s->cv, &s->mu);
            s->idle--;
            continue;
        }
        s->have_reader = true;
        /* The reader keeps the role while it must queue calls. */
        for (;;) {
            pthread_mutex_unlock(&s->mu);
            r = read_request(s, &j);
            pthread_mutex_lock(&s->mu);
            /* Hand over only to a thread that will read: an idle one
             * woken while calls are queued takes a call instead. */
            if (r <= 0 || (s->idle > 0 && !s->head))
                break;
            if (s->queued >= MAX_QUEUED) {
                /* Every thread busy and the queue full: answer, read on. */
                pthread_mutex_unlock(&s->mu);
                respond(s, j->id, NULL, "busy", "too many queued calls");
                json_object_put(j->id);
                json_object_put(j->args);
                free(j->tool);
                free(j);
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
            j = NULL;
            if (s->idle > 0)
                pthread_cond_signal(&s->cv); /* it runs a queued call */
        }
        s->have_reader = false;
        if (r <= 0) {
            s->ended = true;
            s->signalled = r < 0;
            pthread_cond_broadcast(&s->cv);
            pthread_cond_signal(&s->end_cv);
            continue;
        }
        /* An idle thread becomes the next reader; signalled after
         * unlocking so it does not wake only to block on mu. */
        pthread_mutex_unlock(&s->mu);
        pthread_cond_signal(&s->cv);
        run_job(s, j);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int cli_serve(const char *dir)
{
    struct server s;
    pthread_t th[WORKERS + 1];
    struct sigaction sa;
    int rc, nth = 0;

    memset(&s, 0, sizeof s);
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
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
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
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
    if (s.buf)
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
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    return starved ? EXIT_RUNTIME : EXIT_OK;
}
