/*
 * batch.c - a thread's batch (aur_mcp_batch_begin/_end, ABI 1.6 cork):
 * the Apps its calls went to hold its requests until the end, when each
 * writes them in one go.  Its own file, below call.c and call_start.c,
 * which both ask it (a call joins the batch; a blocking call writes what
 * it holds for its App before it waits).
 *
 * Threads: the batch is the calling thread's own (thread-local); the
 * Apps it holds count it in app->batched under app->mu.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "engine.h"
#include "rpc.h"

#include <pthread.h>

/*
 * This thread's batch (aur_mcp_batch_begin): the Apps its calls went to,
 * corked, each counted in app->batched until the end: a close waits for
 * that (however long) before it frees the connection, which still holds
 * this thread's requests.  One host at a time; calls to a further App
 * beyond BATCH_APPS are written as they are sent.
 */
#define BATCH_APPS 16
static __thread struct batch {
    struct aur_mcp *h;
    int depth;
    size_t n;
    struct aur__app *apps[BATCH_APPS];
    struct aur__rpc *rpcs[BATCH_APPS];
} tls_batch;

static void batch_flush(struct batch *b);
static void batch_leave(struct batch *b, size_t i);

/* A thread that ends with its batch open (it returned, was cancelled)
 * writes the batch then: a close would wait for it forever. */
static pthread_key_t batch_key;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;

static void batch_at_exit(void *b)
{
    batch_flush(b);
}

static void batch_key_make(void)
{
    if (pthread_key_create(&batch_key, batch_at_exit) != 0)
        batch_key = (pthread_key_t)-1; /* the end (or a close) is needed */
}

void aur__batch_join(struct aur_mcp *h, const struct aur__call *c)
{
    struct batch *b = &tls_batch;
    struct aur__app *app = c->app;

    if (b->depth == 0 || b->h != h || b->n == BATCH_APPS)
        return;
    for (size_t i = 0; i < b->n; i++)
        if (b->apps[i] == app)
            return;
    if (!aur__rpc_cork(c->rpc, AUR_CORK_ON))
        return;
    pthread_mutex_lock(&app->mu);
    app->batched++;
    pthread_mutex_unlock(&app->mu);
    if (b->n == 0 && pthread_once(&batch_once, batch_key_make) == 0 &&
        batch_key != (pthread_key_t)-1)
        (void)pthread_setspecific(batch_key, b);
    b->apps[b->n] = app;
    b->rpcs[b->n++] = c->rpc;
}

/* Write what this thread holds for h's Apps and let them close.  First,
 * when there are several, every App takes what it has room for now, so
 * an App that does not read holds up none of the others; then the rest
 * is written, waiting as a send would. */
static void batch_flush(struct batch *b)
{
    if (b->n == 0)
        return;
    for (size_t i = 0; b->n > 1 && i < b->n; i++)
        (void)aur__rpc_cork(b->rpcs[i], AUR_CORK_TRY);
    while (b->n > 0) {
        AUR_PERTURB("call_start.batch_end");
        batch_leave(b, b->n - 1);
    }
    if (batch_key != (pthread_key_t)-1)
        (void)pthread_setspecific(batch_key, NULL);
}

void aur_mcp_batch_begin(struct aur_mcp *h)
{
    struct batch *b = &tls_batch;

    if (!h)
        return;
    if (b->depth++ == 0) {
        b->h = h;
        b->n = 0;
    }
}

void aur_mcp_batch_end(struct aur_mcp *h)
{
    struct batch *b = &tls_batch;

    if (!h || b->depth == 0 || --b->depth > 0)
        return;
    batch_flush(b);
    b->h = NULL;
}

void aur__batch_drop(struct aur_mcp *h)
{
    if (tls_batch.h == h)
        batch_flush(&tls_batch);
}

/* App i leaves the batch: what it holds is written, waiting as a send
 * would, and a close may free it again.  A later call rejoins it. */
static void batch_leave(struct batch *b, size_t i)
{
    struct aur__app *app = b->apps[i];
    struct aur__rpc *rpc = b->rpcs[i];

    b->apps[i] = b->apps[--b->n];
    b->rpcs[i] = b->rpcs[b->n];
    (void)aur__rpc_cork(rpc, AUR_CORK_OFF);
    pthread_mutex_lock(&app->mu);
    app->batched--;
    pthread_cond_broadcast(&app->cv);
    pthread_mutex_unlock(&app->mu);
}

void aur__batch_before_wait(struct aur__app *app)
{
    struct batch *b = &tls_batch;

    if (b->depth == 0 || b->h != app->mcp)
        return;
    /* The others first, without waiting, each corked again after. */
    for (size_t i = 0; i < b->n; i++)
        if (b->apps[i] != app) {
            (void)aur__rpc_cork(b->rpcs[i], AUR_CORK_TRY);
            (void)aur__rpc_cork(b->rpcs[i], AUR_CORK_ON);
        }
    for (size_t i = 0; i < b->n; i++)
        if (b->apps[i] == app) {
            batch_leave(b, i);
            break;
        }
}
