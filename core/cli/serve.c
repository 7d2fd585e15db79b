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

struct server {
    struct aur_mcp *h;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *head, *tail;
    size_t queued;
    bool stopping;
    pthread_mutex_t out_mu;
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

static void *worker(void *arg)
{
    struct server *s = arg;
    for (;;) {
        struct job *j;
        struct aur_tool_output out;
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        j = s->head;
        if (!j) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        s->head = j->next;
        if (!s->head)
            s->tail = NULL;
        s->queued--;
        pthread_mutex_unlock(&s->mu);

        aur_mcp_call(s->h, j->tool, j->args, -1, &out);
        respond(s, j->id, cli_output_json(&out), NULL, NULL);
        aur_tool_output_clear(&out);
        json_object_put(j->id);
        json_object_put(j->args);
        free(j->tool);
        free(j);
    }
}

static void enqueue_call(struct server *s, struct json_object *req,
                         struct json_object *id)
{
    struct json_object *tool = NULL, *args = NULL;
    struct job *j;

    json_object_object_get_ex(req, "tool", &tool);
    json_object_object_get_ex(req, "arguments", &args);
    if (!json_object_is_type(tool, json_type_string)) {
        respond(s, id, NULL, "bad_request", "call needs a string \"tool\"");
        return;
    }
    if (args && !json_object_is_type(args, json_type_object)) {
        respond(s, id, NULL, "bad_request", "\"arguments\" must be an object");
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (s->queued >= MAX_QUEUED) {
        pthread_mutex_unlock(&s->mu);
        respond(s, id, NULL, "busy", "too many queued calls");
        return;
    }
    j = calloc(1, sizeof *j);
    if (!j) {
        pthread_mutex_unlock(&s->mu);
        respond(s, id, NULL, "busy", "out of memory");
        return;
    }
    j->id = json_object_get(id);
    j->tool = strdup(json_object_get_string(tool));
    j->args = json_object_get(args);
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    s->queued++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Returns true when the request asks to shut down. */
static bool handle_line(struct server *s, const char *line, size_t len)
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
        enqueue_call(s, req, id);
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

/* Read stdin until EOF, shutdown or a signal; split lines ourselves so a
 * signal can interrupt the wait (poll on stdin and the signal pipe). */
/* Returns true when a signal ended the loop. */
static bool read_loop(struct server *s)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    bool dropping = false;

    while (buf) {
        struct pollfd p[2] = {{0, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}};
        ssize_t got;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents) {
            free(buf);
            return true;
        }
        if (n == cap) {
            if (cap >= MAX_LINE) {
                /* An endless line: answer once, skip to its end. */
                respond(s, NULL, NULL, "bad_request", "line too long");
                dropping = true;
                n = 0;
            } else {
                char *g = realloc(buf, cap * 2);
                if (!g)
                    break;
                buf = g;
                cap *= 2;
            }
        }
        got = read(0, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t start = 0, end = n + (size_t)got;
        for (size_t i = n; i < end; i++) {
            if (buf[i] != '\n')
                continue;
            size_t l = i - start;
            if (l && buf[start + l - 1] == '\r')
                l--;
            if (!dropping && l && handle_line(s, buf + start, l)) {
                free(buf);
                return false;
            }
            dropping = false;
            start = i + 1;
        }
        memmove(buf, buf + start, end - start);
        n = end - start;
    }
    free(buf);
    return false;
}

int cli_serve(const char *dir)
{
    struct server s;
    pthread_t th[WORKERS];
    struct sigaction sa;
    int rc, nth = 0;

    memset(&s, 0, sizeof s);
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return EXIT_RUNTIME;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rc = cli_start(dir, &s.h);
    if (rc != EXIT_OK)
        return rc;
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    pthread_mutex_init(&s.out_mu, NULL);
    for (; nth < WORKERS; nth++)
        if (pthread_create(&th[nth], NULL, worker, &s) != 0)
            break;
    {
        struct json_object *ready = json_object_new_object();
        json_object_object_add(ready, "ready", json_object_new_boolean(1));
        json_object_object_add(ready, "tools",
                               json_object_new_int64(
                                   (int64_t)aur_mcp_tool_count(s.h)));
        cli_print_json(ready);
        json_object_put(ready);
    }
    bool signalled = read_loop(&s);

    /* EOF or shutdown: let accepted calls finish (each is bounded by its
     * timeout), then close.  A signal closes the Apps first: calls in
     * flight end as unknown and are still answered. */
    if (signalled)
        aur_mcp_shutdown(s.h);
    pthread_mutex_lock(&s.mu);
    s.stopping = true;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    aur_mcp_shutdown(s.h);
    aur_mcp_destroy(s.h);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    return EXIT_OK;
}
