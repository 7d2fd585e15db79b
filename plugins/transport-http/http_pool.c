/*
 * http_pool.c - transport-http's threads: the per-connection pool of POST
 * workers with its FIFO queue and barrier (notifications/initialized:
 * nothing later starts until it ended), and the stream threads (modern
 * listen, legacy GET), at most MAX_STREAMS per connection.  Every
 * function here is called with c->mu held and may wait on c->cv.
 * A request POST sent while nothing else runs is run by its caller
 * instead (http_assist.c); it counts against max_workers like the rest.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include "mono.h"
#include "thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/err.h>

#define MAX_STREAMS 4

void http_timed_wait(struct aur_conn *c, int64_t ms)
{
    struct timespec ts;
    aur__mono_deadline(&ts, ms);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

static void unlink_job(struct http_job **list, struct http_job *j)
{
    for (; *list; list = &(*list)->next)
        if (*list == j) {
            *list = j->next;
            return;
        }
}

void http_unrun_locked(struct aur_conn *c, struct http_job *j)
{
    unlink_job(&c->running, j);
    c->nrunning--;
    if (j->barrier) {
        c->barrier_running = false;
        c->barriers--;
        if (c->barriers == 0 && c->get_pending && !c->closing &&
            !c->reported) {
            c->get_pending = false;
            http_start_get_locked(c);
        }
    }
    /* A queued POST may have waited for this slot, or for the barrier.
     * Nobody else waits for a POST's end: an idle worker woken for
     * nothing would cost a sequential call two context switches. */
    if (j->barrier || c->queue)
        pthread_cond_broadcast(&c->cv);
}

/* The caller-run POST (http_assist.c) has ended, its sink calls made:
 * free the handles for the next caller and the slot for the queue. */
void http_assist_end(struct aur_conn *c, struct http_run *r)
{
    struct http_job *j = r->j;

    http_run_free(r);
    pthread_mutex_lock(&c->mu);
    c->assist_busy = false;
    http_unrun_locked(c, j);
    pthread_mutex_unlock(&c->mu);
    http_job_free(j);
}

/* A worker finishes the caller-run POST handed to the pool.  c->mu held;
 * released while the transfer runs. */
static void adopt_locked(struct aur_conn *c)
{
    struct http_run *r = c->assist_run;

    c->adopt = false;
    pthread_mutex_unlock(&c->mu);
    ERR_clear_error(); /* this thread's queue: tls_fd_errno reads it */
    (void)http_run_step(r, -1);
    http_assist_end(c, r);
    pthread_mutex_lock(&c->mu);
}

/* A pool worker: runs queued POSTs until close, and finishes the assisted
 * POST a caller handed over (http_assist.c) first, even when closing (it
 * is cancelled then, and ends at once).  While a barrier job runs no other
 * job starts (the queue is FIFO, so everything sent after it waits); at
 * most max_workers POSTs run, a caller's own among them. */
static void *worker_main(void *arg)
{
    struct aur_conn *c = arg;
    struct http_curl hc = {NULL, NULL};

    http_curl_init(&hc); /* on failure each job reports out of memory */
    pthread_mutex_lock(&c->mu);
    for (;;) {
        struct http_job *j;
        while (!c->adopt && !c->closing &&
               (!c->queue || c->barrier_running ||
                c->nrunning >= c->st->max_workers)) {
            c->idle++;
            http_timed_wait(c, 1000); /* close also broadcasts */
            c->idle--;
        }
        if (c->adopt) {
            adopt_locked(c);
            continue;
        }
        if (c->closing)
            break;
        j = c->queue;
        c->queue = j->next;
        if (!c->queue)
            c->queue_tail = NULL;
        c->queued--;
        j->next = c->running;
        c->running = j;
        c->nrunning++;
        if (j->barrier)
            c->barrier_running = true;
        pthread_mutex_unlock(&c->mu);
        http_job_run(&hc, j);
        pthread_mutex_lock(&c->mu);
        http_unrun_locked(c, j);
        pthread_mutex_unlock(&c->mu);
        http_job_free(j);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    http_curl_free(&hc);
    return NULL;
}

/* A listen or GET stream: its own thread and connection. */
static void *stream_main(void *arg)
{
    struct http_job *j = arg;
    struct http_curl hc = {NULL, NULL};

    http_curl_init(&hc);
    http_job_run(&hc, j);
    http_curl_free(&hc);
    pthread_mutex_lock(&j->c->mu);
    j->finished = true;
    pthread_mutex_unlock(&j->c->mu);
    return NULL;
}

bool http_start_worker_locked(struct aur_conn *c)
{
    if (aur__thread_start(&c->workers[c->nworkers], worker_main, c) != 0)
        return false;
    c->nworkers++;
    return true;
}

int http_enqueue_locked(struct aur_conn *c, struct http_job *j,
                        struct aur_error *err)
{
    if (c->queued >= c->st->max_queued)
        return aur_fail(err, AUR_E_LIMIT, 0, "more than %zu HTTP requests "
                        "waiting", c->st->max_queued);
    if ((size_t)c->idle < c->queued + 1 && c->nworkers < c->st->max_workers &&
        !http_start_worker_locked(c) && c->nworkers == 0)
        return aur_fail(err, AUR_E_NOMEM, 0, "cannot start a thread");
    j->next = NULL;
    if (c->queue_tail)
        c->queue_tail->next = j;
    else
        c->queue = j;
    c->queue_tail = j;
    c->queued++;
    pthread_cond_broadcast(&c->cv);
    return AUR_OK;
}

int http_start_stream_locked(struct aur_conn *c, struct http_job *j,
                             struct aur_error *err)
{
    int e;
    /* Reap ended streams: their threads only return after finished. */
    for (struct http_job **pp = &c->streams; *pp;) {
        struct http_job *d = *pp;
        if (!d->finished) {
            pp = &d->next;
            continue;
        }
        *pp = d->next;
        c->nstreams--;
        pthread_join(d->thread, NULL);
        http_job_free(d);
    }
    if (c->nstreams >= MAX_STREAMS)
        return aur_fail(err, AUR_E_LIMIT, 0, "more than %d HTTP streams",
                        MAX_STREAMS);
    e = aur__thread_start(&j->thread, stream_main, j);
    if (e != 0)
        return aur_fail(err, AUR_E_NOMEM, e, "cannot start a thread");
    j->next = c->streams;
    c->streams = j;
    c->nstreams++;
    return AUR_OK;
}

/* l with line added, or NULL with l freed: a list missing a header is
 * never sent, and curl_slist_append leaves l as it was when it fails. */
static struct curl_slist *append_or_free(struct curl_slist *l,
                                         const char *line)
{
    struct curl_slist *n = curl_slist_append(l, line);

    if (!n)
        curl_slist_free_all(l);
    return n;
}

void http_start_get_locked(struct aur_conn *c)
{
    struct http_job *j = calloc(1, sizeof *j);
    struct aur_error err;
    struct curl_slist *l = NULL;
    char line[700];

    if (!j)
        return;
    j->c = c;
    j->kind = J_GET;
    j->dl = aur_deadline_in(c->st->host, c->timeout_ms);
    snprintf(j->method, sizeof j->method, "GET stream");
    l = curl_slist_append(NULL, "Accept: text/event-stream");
    if (l && c->session) {
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
        l = append_or_free(l, line);
        j->with_session = true;
    }
    if (l) {
        snprintf(line, sizeof line, "MCP-Protocol-Version: %s", c->version);
        l = append_or_free(l, line);
    }
    j->hdrs = l;
    if (!l || http_start_stream_locked(c, j, &err) != AUR_OK) {
        HTTP_LOG(c, AUR_LOG_WARN, "%s: legacy GET stream not started",
                 c->package);
        http_job_free(j);
        return;
    }
    c->get_started = true;
}

bool http_abort_in(struct http_job *list, struct json_object *id)
{
    bool found = false;
    for (struct http_job *j = list; j; j = j->next)
        if (j->id && json_object_equal(j->id, id)) {
            j->cancelled = true;
            if (j->multi)
                curl_multi_wakeup(j->multi);
            found = true;
        }
    return found;
}
