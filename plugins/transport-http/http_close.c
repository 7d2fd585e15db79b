/*
 * http_close.c - the end of a transport-http connection: stop (ABI 1.5)
 * begins it without waiting, close finishes it.
 *
 * A host closing many Apps calls stop on every one first, then close on
 * each, several at a time (lib/engine/shutdown.c).  Whatever takes time
 * therefore starts in stop and runs side by side with every other
 * connection's: the legacy session's DELETE, which waits for its server's
 * answer, costs one wait for all the Apps instead of one per App.
 *
 * stop returns at once.  It:
 *   - marks the connection stopping: every later send fails with
 *     AUR_E_NOT_SENT ("the connection is closing") before any byte goes
 *     out; no stream, GET or notifications/cancelled starts any more;
 *   - takes the queued POSTs.  No worker ever saw them, so nothing of
 *     them left: each request among them ends through on_request_end with
 *     delivered 0, which a waiting call records as `not sent` (the host's
 *     shutdown has cancelled its waiters before it calls stop, so there
 *     the end only finds nobody waiting).  Queued notifications are
 *     dropped;
 *   - leaves the POSTs already running alone: they may have reached the
 *     server, so they end as they would, with their answer or with an end
 *     that says delivered, until close cancels what is left;
 *   - cancels the listen and GET streams, as close does, so their threads
 *     start ending now (a cancelled job makes no sink call);
 *   - starts the legacy session's DELETE on a thread of its own, bounded
 *     by dl.  The modern era has no session and no DELETE.  If the thread
 *     cannot be made, close sends the DELETE as it does without stop.
 *
 * close, with or without a stop before it: cancels the running POSTs and
 * the streams, frees the queue, joins every thread, and sends the DELETE
 * itself unless stop's thread sent it (close then joins that thread).
 * Nothing stop did is done twice.  Without stop, close frees the queued
 * POSTs without a sink call, as it always has: the core then ends a call
 * still waiting for one when the connection is gone, as `unknown` (less
 * precise than `not sent`, never wrong).
 *
 * Threads: stop and close are never concurrent with each other (ABI),
 * but each may run beside the workers, the stream threads and the DELETE
 * thread, which share only what c->mu guards.  The del_* fields are
 * stop's and close's (http_int.h); the DELETE thread reads them after
 * pthread_create and makes no sink call.
 */
#define _GNU_SOURCE
#include "http_int.h"
#include "thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void http_conn_free(struct aur_conn *c)
{
    if (c->auth_header) {
        /* Do not leave the token lying around in freed memory. */
        volatile char *p = c->auth_header;
        while (*p)
            *p++ = '\0';
        free(c->auth_header);
    }
    free(c->package);
    free(c->url);
    http_trust_free(c->trust);
    free(c->session);
    free(c->del_session);
    http_curl_free(&c->assist_hc);
    free(c->assist_run);
    http_xh_conn_free(c);
    free(c->workers);
    free(c);
}

/* The legacy session's DELETE, bounded by dl.  No sink calls. */
static void delete_session(struct aur_conn *c, const char *session,
                           const char *version, aur_deadline dl)
{
    struct http_job *j = calloc(1, sizeof *j);
    struct http_curl hc = {NULL, NULL};
    struct curl_slist *n;

    if (!j || aur_remaining_ms(c->st->host, dl) == 0) {
        free(j);
        return;
    }
    j->c = c;
    j->kind = J_DELETE;
    j->dl = dl;
    j->with_session = true;
    n = curl_slist_append(NULL, "Accept: application/json, text/event-stream");
    j->hdrs = n;
    if (n) {
        char line[700];
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", session);
        n = curl_slist_append(j->hdrs, line);
        if (n && version[0]) {
            snprintf(line, sizeof line, "MCP-Protocol-Version: %s", version);
            n = curl_slist_append(n, line);
        }
    }
    if (n && http_curl_init(&hc) == AUR_OK)
        http_job_run(&hc, j);
    http_curl_free(&hc);
    http_job_free(j);
}

/* stop's DELETE thread: del_* were written before it was made. */
static void *delete_main(void *arg)
{
    struct aur_conn *c = arg;
    delete_session(c, c->del_session, c->del_version, c->del_dl);
    return NULL;
}

/* Caller holds c->mu: a legacy session that a DELETE must end. */
static bool legacy_session_locked(const struct aur_conn *c)
{
    return c->session && !(c->proto_set && c->modern);
}

/* Caller holds c->mu: every job of the list (c->running, c->streams)
 * ends now, silently. */
static void cancel_jobs_locked(struct http_job *list)
{
    for (struct http_job *j = list; j; j = j->next) {
        j->cancelled = true;
        if (j->multi)
            curl_multi_wakeup(j->multi);
    }
}

/* Free the queued jobs q that stop took: no worker ever saw them, so no
 * byte of them can have left.  A request among them ends as not sent
 * (unless the connection already reported its end: then the host has
 * ended every request itself). */
static void end_unsent(struct aur_conn *c, struct http_job *q)
{
    static const char why[] = "transport: the connection is closing; the "
                              "request was never sent";
    bool reported;

    pthread_mutex_lock(&c->mu);
    reported = c->reported;
    pthread_mutex_unlock(&c->mu);
    while (q) {
        struct http_job *n = q->next;
        if (q->kind == J_REQUEST && q->id) {
            struct aur_request_end e;
            memset(&e, 0, sizeof e);
            e.struct_size = sizeof e;
            e.code = AUR_E_CLOSED;
            e.delivered = 0;
            e.http_status = 0;
            e.msg = why;
            HTTP_LOG(c, AUR_LOG_INFO, "%s: %s %s", c->package,
                     q->method[0] ? q->method : "request", why);
            if (!reported && AUR_HAS(&c->sink, on_request_end))
                c->sink.on_request_end(c->sink.ctx, q->id, &e);
        } else {
            HTTP_LOG(c, AUR_LOG_DEBUG, "%s: %s dropped, never sent: the "
                     "connection is closing", c->package,
                     q->method[0] ? q->method : "response POST");
        }
        http_job_free(q);
        q = n;
    }
}

void http_stop(struct aur_conn *c, aur_deadline dl)
{
    struct http_job *q;
    char *session = NULL;
    int e;

    pthread_mutex_lock(&c->mu);
    if (c->stopping || c->closing) { /* at most once (ABI): be safe */
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->stopping = true;
    q = c->queue;
    c->queue = c->queue_tail = NULL;
    c->queued = 0;
    for (struct http_job *j = q; j; j = j->next)
        if (j->barrier)
            c->barriers--;
    c->get_pending = false;
    cancel_jobs_locked(c->streams);
    /* Out of memory: no DELETE here, close sends it. */
    if (legacy_session_locked(c))
        session = strdup(c->session);
    snprintf(c->del_version, sizeof c->del_version, "%s", c->version);
    pthread_cond_broadcast(&c->cv); /* a waiting listen hook gives up */
    pthread_mutex_unlock(&c->mu);
    end_unsent(c, q);
    if (!session)
        return;
    c->del_session = session;
    c->del_dl = dl;
    e = aur__thread_start(&c->del_thread, delete_main, c);
    if (e == 0) {
        c->del_started = true;
        return;
    }
    HTTP_LOG(c, AUR_LOG_DEBUG, "%s: no thread for the session DELETE (%s); "
             "close sends it", c->package, strerror(e));
    c->del_session = NULL;
    free(session);
}

void http_close(struct aur_conn *c, aur_deadline dl)
{
    struct http_job *q, *s;
    char *session = NULL, version[64];

    pthread_mutex_lock(&c->mu);
    c->closing = true;
    q = c->queue; /* empty after stop */
    c->queue = c->queue_tail = NULL;
    c->queued = 0;
    cancel_jobs_locked(c->running);
    cancel_jobs_locked(c->streams); /* after stop: already cancelled */
    /* The session stop's thread ends is not ended twice; a session that
     * came later (an initialize answered after stop) still is. */
    if (legacy_session_locked(c) &&
        !(c->del_session && strcmp(c->session, c->del_session) == 0))
        session = strdup(c->session);
    snprintf(version, sizeof version, "%s", c->version);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    while (q) {
        struct http_job *n = q->next;
        http_job_free(q);
        q = n;
    }
    for (int i = 0; i < c->nworkers; i++)
        pthread_join(c->workers[i], NULL);
    s = c->streams;
    while (s) {
        struct http_job *n = s->next;
        pthread_join(s->thread, NULL);
        http_job_free(s);
        s = n;
    }
    /* stop's DELETE is bounded by the same dl: this waits at most that. */
    if (c->del_started)
        pthread_join(c->del_thread, NULL);
    if (session) {
        delete_session(c, session, version, dl);
        free(session);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    http_conn_free(c);
}
