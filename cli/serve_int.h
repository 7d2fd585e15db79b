/*
 * serve_int.h - what the three files of `aurora-mcp serve` share: its
 * limits, a call job, the server state, and each file's entry points.
 * Layers, each calling only those below it: serve.c (the process: the
 * epoll set, the end, the drain) over serve_pool.c (the worker threads
 * and the reader role) over serve_lines.c (signals, request lines and
 * their answers).  Internal to the CLI.
 */
#ifndef AUR_CLI_SERVE_INT_H
#define AUR_CLI_SERVE_INT_H

#include "cli.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* One serve process's state: serve.c makes it, serve_pool.c's threads
 * run the calls (its comment says how the reader role moves), and
 * serve_lines.c answers the lines.  Fields marked (mu) and the queue are
 * under mu; the answers on stdout are under out_mu. */
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
    /* The pool grows as calls arrive (serve_grow), to WORKERS + 1:
     * threads that are never needed cost memory (a stack each) for
     * nothing. */
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

/* ---- serve_lines.c: signals, request lines, answers ---- */

/* Level-triggered and never drained: once written, every wait ends.
 * serve_stop_fd: a signal or the end of requests (wakes parked workers);
 * serve_sig_fd: a signal only (the main thread watches it while it
 * drains).  Made and closed by serve.c; -1 when closed. */
extern int serve_stop_fd, serve_sig_fd;

/* SIGINT/SIGTERM's handler (async-signal-safe), and whether it ran. */
void serve_on_signal(int sig);
bool serve_signal_seen(void);
/* One more count on an eventfd (fd < 0: nothing). */
void serve_poke(int fd);
/* Wake every thread parked on serve_stop_fd. */
void serve_wake_all(void);

/* One answer line (result: transfer; else code and msg), under out_mu. */
void serve_respond(struct server *s, struct json_object *id,
                   struct json_object *result, const char *code,
                   const char *msg);
/* A call's answer line (out borrowed), under out_mu. */
void serve_answer_call(struct server *s, struct json_object *id,
                       const struct aur_tool_output *out);
/* Free a job (transfer). */
void serve_drop_job(struct job *j);
/* Answer a job shutting_down and free it (transfer). */
void serve_refuse_job(struct server *s, struct job *j);
/* A line read once shutdown has begun: answered, whatever it asks. */
void serve_refuse_line(struct server *s, const char *line, size_t len);
/* As the reader (the token holder, mu not held): answer lines until one
 * is a call (1, *call set: transfer) or the input ends (0: EOF or
 * shutdown, -1: a signal). */
int serve_read_request(struct server *s, struct job **call);

/* ---- serve_pool.c: the worker threads and the reader role ---- */

/* No more requests (mu held): wake the main thread and every parked
 * worker. */
void serve_end_requests(struct server *s, bool signalled);
/* One more worker (mu held); false when there is no room or no thread
 * could be made. */
bool serve_grow(struct server *s);
/* serve_input.before_wait: whether this thread holds a burst's
 * requests, which must be written before it waits for input. */
bool serve_batch_pending(void *server);

#endif
