/*
 * shutdown.c - closing every App: the quick part in reverse config order,
 * then the rest side by side, so N Apps that will not leave take one
 * escalation, not N.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "log.h"
#include "thread.h"

/* The first step of a close, quick and in order: from here late signals
 * are ignored, events arriving are refused, and calls in flight end as
 * unknown; the server is told to leave, and if it does not, its
 * escalation runs toward dl from now, beside every other App's. */
static void app_close_begin(struct aur__app *app, aur_deadline dl)
{
    AUR_PERTURB("startup.close");
    pthread_mutex_lock(&app->mu);
    app->closing = true;
    struct aur__rpc *rpc = app->rpc;
    if (rpc)
        aur__rpc_cancel_waiters(rpc);
    pthread_cond_broadcast(&app->cv);
    pthread_mutex_unlock(&app->mu);
    if (app->opened && rpc) /* not again after a failed start's close */
        aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag, "closing");
    /* app->rpc changes only on this thread or the closers, later. */
    aur__rpc_stop(rpc, dl);
}

/* The rest, which may take until dl for a stubborn App. */
static void app_close_finish(struct aur__app *app, aur_deadline close_dl)
{
    aur_deadline dl = aur__now_ms() + app->cfg->timeout_ms + 1000;
    pthread_mutex_lock(&app->mu);
    struct aur__rpc *rpc = app->rpc;
    /* Wait until no call uses rpc any more. */
    while (app->inflight > 0)
        if (aur__cond_wait_until(&app->cv, &app->mu, dl) == ETIMEDOUT)
            break;
    /* A batch still holding requests on rpc uncorks it at its end, so
     * rpc stays until then, however long (aur_mcp_batch_end says so);
     * one that outlasts the calls' own bound is worth a word. */
    while (app->batched > 0 &&
           aur__cond_wait_until(&app->cv, &app->mu, dl) != ETIMEDOUT)
        ;
    if (app->batched > 0) {
        pthread_mutex_unlock(&app->mu);
        aur__log(app->mcp->log, AUR_LOG_WARN, app->tag,
                 "close waits for a batch of calls that has not ended "
                 "(aur_mcp_batch_end)");
        pthread_mutex_lock(&app->mu);
    }
    while (app->batched > 0)
        pthread_cond_wait(&app->cv, &app->mu);
    pthread_mutex_unlock(&app->mu);
    /* The transport first: closing it drains and joins the dispatch
     * thread, so no on_notify can still be running when the sessions
     * end. */
    if (rpc) {
        aur__rpc_close(rpc, close_dl);
        pthread_mutex_lock(&app->mu);
        app->rpc = NULL;
        pthread_mutex_unlock(&app->mu);
    }
    /* A status read calls a session's status hook under app->mu: every
     * session is taken out of its sight before any ends. */
    bool active[AUR__MAX_EXT];
    pthread_mutex_lock(&app->mu);
    for (size_t i = 0; i < app->next; i++) {
        active[i] = app->ext[i].active;
        app->ext[i].active = false;
    }
    pthread_mutex_unlock(&app->mu);
    for (size_t i = app->next; i-- > 0;) {
        struct aur__ext_session *s = &app->ext[i];
        if (active[i] && AUR_HAS(&s->p->ops.e, end_session))
            s->p->ops.e.end_session(s->p->state, s->session);
    }
    pthread_mutex_lock(&app->mu);
    if (app->opened)
        app->state = AUR__S_CLOSED;
    pthread_mutex_unlock(&app->mu);
}

/* Closes finish on up to this many threads at once.  With a transport
 * that can stop, a close mostly waits for an end already under way, so
 * a few threads finish many Apps within the one escalation; a transport
 * without stop escalates inside close, and this many run side by side. */
#define CLOSE_THREADS 64

struct closer {
    struct aur_mcp *mcp;
    aur_deadline dl;
    pthread_mutex_t mu;
    size_t next; /* Apps not yet finished: apps[0..next), from the end */
};

static void *closer_main(void *arg)
{
    struct closer *c = arg;
    for (;;) {
        struct aur__app *a = NULL;
        pthread_mutex_lock(&c->mu);
        if (c->next > 0)
            a = &c->mcp->apps[--c->next];
        pthread_mutex_unlock(&c->mu);
        if (!a)
            return NULL;
        app_close_finish(a, c->dl);
    }
}

/*
 * Every close begins in reverse config order, one after the other (the
 * quick part, which also starts every App's escalation at the same
 * moment), and then the rest runs side by side: an App that ignores
 * stdin EOF and SIGTERM takes its whole escalation, and N of them must
 * take one escalation, not N.  Threads that cannot be created leave their
 * share to the others (at worst, this thread finishes everything).
 */
void aur__close_all(struct aur_mcp *mcp, int64_t grace_ms)
{
    struct closer c = {.mcp = mcp, .next = mcp->napps};
    size_t n = mcp->napps > CLOSE_THREADS ? CLOSE_THREADS : mcp->napps;
    pthread_t *t = n > 1 ? calloc(n - 1, sizeof *t) : NULL;
    size_t made = 0;

    c.dl = aur__now_ms() + grace_ms;
    for (size_t i = mcp->napps; i-- > 0;)
        app_close_begin(&mcp->apps[i], c.dl);
    pthread_mutex_init(&c.mu, NULL);
    for (size_t i = 0; t && i + 1 < n; i++) {
        if (aur__thread_start(&t[made], closer_main, &c) != 0)
            break;
        made++;
    }
    closer_main(&c);
    for (size_t i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    free(t);
    pthread_mutex_destroy(&c.mu);
    __atomic_store_n(&mcp->active, false, __ATOMIC_RELEASE);
}
