/*
 * async.c - aur_mcp_call_async: a call is queued and its outcome handed
 * to a callback, so an event loop awaits many calls without a thread of
 * its own per call.
 *
 * The calls run on a pool of at most AUR__ASYNC_WORKERS threads per host,
 * started as calls arrive and kept until shutdown; at most
 * AUR__ASYNC_QUEUE calls wait for one (more: AUR_E_LIMIT at once, nothing
 * sent).  A call the pool runs is an ordinary aur_mcp_call, with the same
 * outcomes.  At shutdown a queued call that no worker took ends failed
 * (it was never sent); one a worker runs ends as shutdown makes any call
 * in flight end (unknown once sent).  Every accepted call's callback runs
 * exactly once, before aur_mcp_shutdown returns.
 */
#include "aur_setup.h"

#include "engine.h"
#include "jsonx.h"
#include "thread.h"

#include <json-c/json.h>
#include <pthread.h>

struct job {
    struct job *next;
    char *tool_id;
    struct json_object *args; /* NULL = {} */
    int64_t timeout_ms;
    aur_call_done_fn *done;
    void *ud;
};

struct aur__async {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *head, *tail;
    size_t queued, idle, nthreads;
    bool closing;
    pthread_t threads[AUR__ASYNC_WORKERS];
};

static void finish(struct aur_mcp *h, struct job *j, bool run)
{
    struct aur_tool_output out = {.struct_size = sizeof out};

    if (run) {
        aur_mcp_call_jsonc(h, j->tool_id, j->args, j->timeout_ms, &out);
    } else {
        aur__out_set(&out, AUR_CALL_FAILED, "%s: the host shut down before "
                     "the call was sent", j->tool_id);
    }
    j->done(j->ud, &out);
    aur_tool_output_clear(&out);
    free(j->tool_id);
    json_object_put(j->args);
    free(j);
}

static void *worker(void *arg)
{
    struct aur_mcp *h = arg;
    struct aur__async *a = h->async;

    pthread_mutex_lock(&a->mu);
    for (;;) {
        struct job *j;

        while (!a->head && !a->closing) {
            a->idle++;
            pthread_cond_wait(&a->cv, &a->mu);
            a->idle--;
        }
        if (!(j = a->head))
            break; /* closing, and nothing left */
        a->head = j->next;
        if (!a->head)
            a->tail = NULL;
        a->queued--;
        bool run = !a->closing;
        pthread_mutex_unlock(&a->mu);
        finish(h, j, run);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* h's pool, made on the first asynchronous call (the owner's start has
 * returned by then, so only callers of this and shutdown race for it);
 * NULL once shutdown began (*closed) or without memory. */
static struct aur__async *pool(struct aur_mcp *h, bool *closed)
{
    struct aur__async *a = __atomic_load_n(&h->async, __ATOMIC_ACQUIRE);

    if (a)
        return a;
    pthread_mutex_lock(&h->mu);
    *closed = h->async_closed;
    if (!*closed && !(a = h->async) && (a = calloc(1, sizeof *a))) {
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->cv, NULL);
        __atomic_store_n(&h->async, a, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&h->mu);
    return a;
}

int aur_mcp_call_async(struct aur_mcp *h, const char *tool_id,
                       const char *args_json, size_t args_len,
                       int64_t timeout_ms, aur_call_done_fn *done, void *ud,
                       struct aur_error *err)
{
    struct json_object *args;
    int rc;

    if ((rc = aur__async_accept(h, tool_id, done, err)) != AUR_OK ||
        (rc = aur__call_args(args_json, args_len, &args, err)) != AUR_OK)
        return rc;
    return aur__async_submit(h, tool_id, args, timeout_ms, done, ud, err);
}

int aur__async_accept(struct aur_mcp *h, const char *tool_id,
                      aur_call_done_fn *done, struct aur_error *err)
{
    if (!h || !tool_id || !done)
        return aur_fail(err, AUR_E_INVAL, 0, "a call needs a host, a tool "
                        "id and a callback");
    if (!__atomic_load_n(&h->active, __ATOMIC_ACQUIRE))
        return aur_fail(err, AUR_E_STATE, 0, "host is not running");
    return AUR_OK;
}

int aur__async_submit(struct aur_mcp *h, const char *tool_id,
                      struct json_object *args, int64_t timeout_ms,
                      aur_call_done_fn *done, void *ud, struct aur_error *err)
{
    struct aur__async *a;
    struct job *j = NULL;
    bool closed = false;
    int rc = AUR_OK;

    if (!(a = pool(h, &closed)) || !(j = calloc(1, sizeof *j)) ||
        !(j->tool_id = strdup(tool_id))) {
        free(j);
        json_object_put(args);
        return closed ? aur_fail(err, AUR_E_STATE, 0, "host is shutting down")
                      : aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    j->args = args;
    j->timeout_ms = timeout_ms;
    j->done = done;
    j->ud = ud;
    pthread_mutex_lock(&a->mu);
    if (a->closing) {
        rc = aur_fail(err, AUR_E_STATE, 0, "host is shutting down");
    } else if (a->queued >= AUR__ASYNC_QUEUE) {
        rc = aur_fail(err, AUR_E_LIMIT, 0, "more than %d calls waiting for "
                      "a worker", AUR__ASYNC_QUEUE);
    } else {
        if (a->idle <= a->queued && a->nthreads < AUR__ASYNC_WORKERS &&
            aur__thread_start(&a->threads[a->nthreads], worker, h) == 0)
            a->nthreads++;
        if (a->nthreads == 0) {
            rc = aur_fail(err, AUR_E_NOMEM, EAGAIN, "cannot start a thread");
        } else {
            if (a->tail)
                a->tail->next = j;
            else
                a->head = j;
            a->tail = j;
            a->queued++;
            pthread_cond_signal(&a->cv);
            j = NULL;
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (j) {
        free(j->tool_id);
        json_object_put(j->args);
        free(j);
    }
    return rc;
}

void aur__async_stop(struct aur_mcp *h)
{
    struct aur__async *a;

    pthread_mutex_lock(&h->mu); /* from now on pool() makes none */
    h->async_closed = true;
    a = h->async;
    pthread_mutex_unlock(&h->mu);
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->closing = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

void aur__async_join(struct aur_mcp *h)
{
    struct aur__async *a = h->async;

    if (!a)
        return;
    for (size_t i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
    h->async = NULL;
}
