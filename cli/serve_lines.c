/*
 * serve_lines.c - what each line of `aurora-mcp serve` gets: the signal
 * state every thread reads, the answer lines (one at a time on stdout),
 * and the reading of requests by the thread that holds the reader role.
 *
 * Every request line gets exactly one answer line:
 *   - a line that is not a request (not a JSON object with "id" and a
 *     string "op", or an "id" that is not a string, a finite number or
 *     null) gets {"id":null,"error":{"code":"bad_request",...}};
 *   - a name that would be cut as a C string ("op" or "tool" holding
 *     U+0000) is refused as bad_request with the request's id, never
 *     truncated into another name;
 *   - a call over the limits: WORKERS in flight at once, MAX_QUEUED more
 *     wait, past that it is answered busy (serve_pool.c);
 *   - once shutdown has begun (the shutdown op, EOF, SIGINT or SIGTERM)
 *     every later line is answered shutting_down until serve exits; calls
 *     still queued when a signal comes are answered shutting_down too (a
 *     signal closes the Apps, so calls in flight answer unknown).
 * serve_input.c splits stdin into lines and serve_request.c reads what a
 * line asks for.
 *
 * Threads: any; the answers are written under out_mu, the requests read
 * only by the reader role's holder.
 */
#define _GNU_SOURCE 1
#include "serve_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int serve_stop_fd = -1, serve_sig_fd = -1;
/* Set by the handler, read by every thread: a lock-free atomic (safe in
 * a handler), not a volatile sig_atomic_t, which only the interrupted
 * thread may read without a race. */
static atomic_int got_signal;

bool serve_signal_seen(void)
{
    return atomic_load(&got_signal) != 0;
}

void serve_poke(int fd)
{
    uint64_t one = 1;
    if (fd >= 0 && write(fd, &one, sizeof one) < 0) {
        /* nothing to do: the counter is already non-zero */
    }
}

void serve_wake_all(void)
{
    serve_poke(serve_stop_fd);
}

void serve_on_signal(int sig)
{
    int saved = errno;
    (void)sig;
    atomic_store(&got_signal, 1);
    serve_poke(serve_stop_fd);
    serve_poke(serve_sig_fd);
    errno = saved;
}

void serve_respond(struct server *s, struct json_object *id,
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

void serve_drop_job(struct job *j)
{
    json_object_put(j->id);
    json_object_put(j->args);
    free(j->tool);
    free(j);
}

/* A call accepted before shutdown began that will not run now. */
void serve_refuse_job(struct server *s, struct job *j)
{
    serve_respond(s, j->id, NULL, "shutting_down", k_shutting_down);
    serve_drop_job(j);
}

void serve_answer_call(struct server *s, struct json_object *id,
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
        serve_respond(s, id, cli_output_json(out), NULL, NULL);
    }
}

/* A call job from a checked request, or NULL (answered here). */
static struct job *make_call(struct server *s, const struct serve_request *r)
{
    /* Not calloc, which skips the thread's cache of freed chunks. */
    struct job *j = malloc(sizeof *j);

    if (j)
        *j = (struct job){0};
    if (!j || !(j->tool = strdup(r->tool))) {
        free(j);
        serve_respond(s, r->id, NULL, "busy", "out of memory");
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
        serve_respond(s, r.id, NULL, code, msg);
    } else if (r.op == SERVE_OP_CALL) {
        *call = make_call(s, &r);
    } else if (r.op == SERVE_OP_STATUS) {
        serve_respond(s, r.id, aur_mcp_status_jsonc(s->h, 0), NULL, NULL);
    } else if (r.op == SERVE_OP_TOOLS) {
        struct json_object *st = aur_mcp_status_jsonc(s->h, 1), *tools;
        struct json_object *res = json_object_new_object();
        json_object_object_get_ex(st, "tools", &tools);
        json_object_object_add(res, "tools", json_object_get(tools));
        json_object_put(st);
        serve_respond(s, r.id, res, NULL, NULL);
    } else {
        stop = true; /* SERVE_OP_SHUTDOWN */
        serve_respond(s, r.id, json_object_new_object(), NULL, NULL);
    }
    serve_request_clear(&r);
    return stop;
}

/* A line read once shutdown has begun: whatever it asks, it gets
 * shutting_down (a line that is not a request still gets bad_request). */
void serve_refuse_line(struct server *s, const char *line, size_t len)
{
    struct serve_request r;
    char msg[200];
    const char *code = serve_request_parse(line, len, true, &r, msg,
                                           sizeof msg);

    serve_respond(s, r.id, NULL, code ? code : "shutting_down",
            code ? msg : k_shutting_down);
    serve_request_clear(&r);
}

/* As the reader: answer lines until one is a call (1, *call set), the
 * reader would wait with a batch open (2: serve_batch_pending), or the
 * input ends (0: EOF or shutdown, -1: a signal). */
int serve_read_request(struct server *s, struct job **call)
{
    const char *line;
    size_t len;
    int r = 0;

    *call = NULL;
    while (!serve_signal_seen() &&
           (r = serve_input_next(&s->in, &line, &len, &serve_stop_fd, 1, -1,
                                 NULL)) > 0) {
        if (r == SERVE_INPUT_TOO_LONG) {
            serve_respond(s, NULL, NULL, "bad_request", "line too long");
            continue;
        }
        if (r == SERVE_INPUT_YIELD)
            return 2;
        if (handle_line(s, line, len, call))
            return 0;
        if (*call)
            return 1;
    }
    return serve_signal_seen() ? -1 : r;
}
