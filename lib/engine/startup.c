/*
 * startup.c - every enabled App's startup transaction, run concurrently,
 * then freeze, agents and activation.
 *
 * start_concurrency workers run the Apps' passes, taking them in config
 * order; each App has ONE deadline (timeout_seconds, from when a worker
 * takes it) for connect + negotiate + listen + every page.  The first
 * failure cancels the others.  Lifecycle commits are written afterwards,
 * per App in config order (lifecycle.c), so the journal reads the same
 * whatever the timing was.  A pool, not a thread per App: a thousand
 * threads all waiting on one condition variable made every start slot
 * handed out wake all of them, and startup grew with the square of the
 * number of Apps (docs/benchmarks.md).
 *
 * The freeze is one step for all Apps: an App whose pass was clean is
 * "listed" and frees its worker; when every App is listed, each App's
 * change count is checked against the one its clean pass began with and
 * its catalog frozen (freeze_when_listed says how no change is lost
 * between the two).  A change that
 * reaches a listed App before that step queues it to page again (within
 * its deadline and the relist budget; aur__startup_recheck), so a slow
 * neighbour never turns a late notice into a failure, and no change can
 * slip between the check and the freeze.  The same step activates the
 * Apps: a change after it sets restart_required, as any change after
 * startup does (see open_gate).
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "jsonx.h"
#include "log.h"
#include "thread.h"

#include <json-c/json.h>

static void cancel_all(struct aur_mcp *mcp)
{
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        pthread_mutex_lock(&a->mu);
        a->closing = true;
        if (a->rpc)
            aur__rpc_cancel_waiters(a->rpc);
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
    }
}

static bool set_phase_check(struct aur__app *app, const char *phase,
                            struct aur_error *err)
{
    bool cancelled;
    snprintf(app->phase, sizeof app->phase, "%s", phase);
    pthread_mutex_lock(&app->mcp->mu);
    cancelled = app->mcp->cancel;
    pthread_mutex_unlock(&app->mcp->mu);
    if (cancelled)
        aur_fail(err, AUR_E_CANCELLED, 0, "cancelled: another App failed");
    return !cancelled;
}

/* A disconnect seen during startup fails it with its detail. */
static int check_connected(struct aur__app *app, struct aur_error *err)
{
    int rc = AUR_OK;
    pthread_mutex_lock(&app->mu);
    if (app->disconnected)
        rc = aur_fail(err, app->disconnect_rc, 0, "%s",
                      app->disconnect_detail);
    pthread_mutex_unlock(&app->mu);
    return rc;
}

/* This run starts a: the platform and the App enabled, not skipped. */
static bool starts(const struct aur_mcp *mcp, const struct aur__app *a)
{
    return mcp->cfg->mcp_enabled && a->cfg->enabled && !a->skipped;
}

/* A change since the clean pass began, or a disconnect; a->mu held. */
static bool seen_since_listing(const struct aur__app *a)
{
    return a->disconnected || a->changes != a->listed_changes;
}

/* Queue a listed App that saw something since its clean pass; mcp->mu
 * held.  The ring holds each App once at most (queued). */
static void requeue(struct aur_mcp *mcp, struct aur__app *app)
{
    app->listed = false;
    mcp->listed--;
    if (app->queued)
        return;
    app->queued = true;
    mcp->relist[(mcp->relist_head + mcp->nrelist++) % mcp->napps] = app;
    pthread_cond_signal(&mcp->wcv);
}

bool aur__startup_recheck(struct aur__app *app)
{
    struct aur_mcp *mcp = app->mcp;
    bool froze;

    pthread_mutex_lock(&mcp->mu);
    froze = app->frozen;
    if (app->listed && !app->frozen && !mcp->cancel) {
        pthread_mutex_lock(&app->mu);
        bool stale = seen_since_listing(app);
        pthread_mutex_unlock(&app->mu);
        if (stale)
            requeue(mcp, app);
    }
    pthread_mutex_unlock(&mcp->mu);
    return froze;
}

/* The first pass of an App: connect, negotiate, listen, every page, under
 * the one deadline that starts now, when it gets its worker. */
static int first_pass(struct aur__app *app, struct aur_error *err)
{
    int rc;

    app->began = true;
    app->start_dl = aur__now_ms() + app->cfg->timeout_ms;
    aur__utc_now(app->t_starting, sizeof app->t_starting);
    pthread_mutex_lock(&app->mu);
    app->state = AUR__S_STARTING;
    pthread_mutex_unlock(&app->mu);
    aur__log(app->mcp->log, AUR_LOG_INFO, app->tag, "starting (%s)",
             aur__transport_word(app->cfg->transport));
    if (!set_phase_check(app, "connect", err))
        return err->code;
    rc = aur__app_connect(app, app->start_dl, err);
    if (rc == AUR_OK)
        rc = check_connected(app, err);
    if (rc != AUR_OK)
        return rc;
    if (!set_phase_check(app, "catalog/listen", err))
        return err->code;
    rc = aur__app_listen(app, app->start_dl, err);
    if (rc != AUR_OK)
        return rc;
    if (!set_phase_check(app, "tools/list", err))
        return err->code;
    return aur__app_list_tools(app, app->start_dl, &app->relists, err);
}

/* A listed App saw a change or a disconnect before the freeze: it pages
 * again, within its deadline and the relist budget. */
static int relist(struct aur__app *app, struct aur_error *err)
{
    struct aur_mcp *mcp = app->mcp;
    int rc;

    if (!set_phase_check(app, "tools/list", err))
        return err->code;
    if ((rc = check_connected(app, err)) != AUR_OK)
        return rc;
    if (++app->relists > mcp->cfg->max_relist ||
        !aur_remaining_ms(&mcp->host, app->start_dl))
        return aur_fail(err, AUR_E_CHANGED, 0,
                        "the tool catalog changed after it was listed, "
                        "with no %s left to page again",
                        app->relists > mcp->cfg->max_relist ? "relist"
                                                            : "time");
    aur__log(mcp->log, AUR_LOG_INFO, app->tag,
             "tool catalog changed before the freeze; paging again");
    return aur__app_list_tools(app, app->start_dl, &app->relists, err);
}

/* The end of a pass; mcp->mu held.  A clean one is listed, unless
 * something reached the App meanwhile (then it pages again); the first
 * failure cancels the others. */
static void pass_done(struct aur__app *app, int rc, struct aur_error *err)
{
    struct aur_mcp *mcp = app->mcp;
    if (rc == AUR_OK) {
        app->listed = true;
        mcp->listed++;
        pthread_mutex_lock(&app->mu);
        bool stale = seen_since_listing(app);
        pthread_mutex_unlock(&app->mu);
        if (stale)
            requeue(mcp, app);
        else
            pthread_cond_broadcast(&mcp->cv); /* the freeze may be due */
        return;
    }
    app->start_rc = rc;
    aur__utc_now(app->t_done, sizeof app->t_done);
    app->fail_order = ++mcp->failures;
    snprintf(app->error, sizeof app->error, "%s", err->msg);
    mcp->cancel = true;
    pthread_cond_broadcast(&mcp->cv);
    pthread_cond_broadcast(&mcp->wcv);
}

/* An App that ended its startup without being frozen; after the workers
 * are joined. */
static void app_failed(struct aur__app *app)
{
    pthread_mutex_lock(&app->mu);
    app->state = AUR__S_UNAVAILABLE;
    aur__set_str(&app->last_error, app->error);
    pthread_mutex_unlock(&app->mu);
    aur__log(app->mcp->log, AUR_LOG_ERROR, app->tag,
             "startup failed in phase %s (%s): %s", app->phase,
             aur_rc_word(app->start_rc), app->error);
}

/* The next App for a worker, in the order: Apps listed that must page
 * again, then first passes in config order; NULL when the startup is
 * frozen or cancelled.  mcp->mu held. */
static struct aur__app *next_app(struct aur_mcp *mcp)
{
    for (;;) {
        if (mcp->cancel || mcp->freeze_done)
            return NULL;
        if (mcp->nrelist > 0) {
            struct aur__app *a = mcp->relist[mcp->relist_head];
            mcp->relist_head = (mcp->relist_head + 1) % mcp->napps;
            mcp->nrelist--;
            a->queued = false;
            return a;
        }
        while (mcp->next_start < mcp->napps) {
            struct aur__app *a = &mcp->apps[mcp->next_start++];
            if (starts(mcp, a))
                return a;
        }
        pthread_cond_wait(&mcp->wcv, &mcp->mu);
    }
}

/*
 * A start worker.  start_concurrency of them run the Apps' passes, so a
 * bounded number of Apps start at once, in config order (start_concurrency
 * = 1 is the one-by-one start).  A listed App waits for the freeze
 * without a worker, so Apps still waiting for one are not held back by
 * it; if a change reaches it first, it is queued to page again.
 */
static void *start_worker(void *arg)
{
    struct aur_mcp *mcp = arg;
    struct aur__app *app;

    pthread_mutex_lock(&mcp->mu);
    while ((app = next_app(mcp)) != NULL) {
        struct aur_error err;
        bool first = !app->began;
        pthread_mutex_unlock(&mcp->mu);
        aur_error_clear(&err);
        AUR_PERTURB("startup.pass");
        int rc = first ? first_pass(app, &err) : relist(app, &err);
        if (rc == AUR_OK)
            rc = check_connected(app, &err);
        pthread_mutex_lock(&mcp->mu);
        pass_done(app, rc, &err);
        if (app->fail_order == 1) {
            pthread_mutex_unlock(&mcp->mu);
            cancel_all(mcp);
            pthread_mutex_lock(&mcp->mu);
        }
    }
    pthread_mutex_unlock(&mcp->mu);
    return NULL;
}

const char *aur_phase_word(int phase)
{
    switch (phase) {
#define PHASE_WORD(e, v, w)                                                    \
    case (v):                                                                  \
        return w;
        AUR_PHASE_MAP(PHASE_WORD)
#undef PHASE_WORD
    }
    return "";
}

void aur__serr_fill(struct aur_startup_error *serr, int rc, const char *app,
                    const char *phase, const char *msg)
{
    if (!serr)
        return;
    serr->rc = rc;
    serr->phase_id = AUR_PHASE_NONE;
    for (int p = AUR_PHASE_NONE + 1; *aur_phase_word(p); p++)
        if (strcmp(aur_phase_word(p), phase) == 0)
            serr->phase_id = p;
    snprintf(serr->code, sizeof serr->code, "%s", aur_rc_word(rc));
    snprintf(serr->app, sizeof serr->app, "%s", app ? app : "");
    snprintf(serr->phase, sizeof serr->phase, "%s", phase);
    snprintf(serr->message, sizeof serr->message, "%s", msg);
}

/* Why the whole startup failed: logged (with the App, the phase and the
 * reason) and handed to the caller. */
static void fill_serr(struct aur_mcp *mcp, struct aur_startup_error *serr,
                      int rc, const char *app, const char *phase,
                      const char *msg)
{
    if (app)
        aur__log(mcp->log, AUR_LOG_ERROR, NULL,
                 "startup failed (%s): App %s, phase %s: %s", aur_rc_word(rc),
                 app, phase, msg);
    else
        aur__log(mcp->log, AUR_LOG_ERROR, NULL,
                 "startup failed (%s): phase %s: %s", aur_rc_word(rc), phase,
                 msg);
    aur__serr_fill(serr, rc, app, phase, msg);
}

/*
 * The activation gate.  A change or a disconnect becomes a runtime signal
 * in the freeze step itself (app->activated: so there is no window in
 * which a change would be neither a reason to page again nor a reason to
 * restart), but its commit (mcp.catalog.changed, mcp.app.disconnected)
 * waits until the registry is built, the agents are checked and the
 * mcp.catalog.frozen commits are in the journal: the gate.  1 = open,
 * -1 = startup failed (what waited is dropped).  Business events are
 * stricter: only one read once the host is active (mcp->active, set as
 * the gate opens) is accepted; the rest are dropped, never queued.
 */
static void open_gate(struct aur_mcp *mcp, int how)
{
    pthread_mutex_lock(&mcp->mu);
    if (!mcp->gate)
        mcp->gate = how;
    pthread_cond_broadcast(&mcp->cv);
    pthread_mutex_unlock(&mcp->mu);
}

bool aur__activation_wait(struct aur_mcp *mcp)
{
    int gate;
    pthread_mutex_lock(&mcp->mu);
    while (!mcp->gate)
        pthread_cond_wait(&mcp->cv, &mcp->mu);
    gate = mcp->gate;
    pthread_mutex_unlock(&mcp->mu);
    return gate > 0;
}

/*
 * The freeze step (see the top of this file), under mcp->mu: once every
 * started App is listed, each is checked for a change since its clean
 * pass began (each under its own lock, in turn); a stale one pages again.
 * When none is, each is frozen and activated (again in turn).  A change
 * counted between an App's check and its freeze was counted before it
 * was activated: its aur__startup_recheck, waiting for mcp->mu, then
 * finds the App frozen and the change is the App's restart_required, as
 * if it had come right after the freeze.  No two App locks are held at
 * once (a thousand of them were, before).  Returns when frozen or
 * cancelled.
 */
static void freeze_when_listed(struct aur_mcp *mcp, size_t started)
{
    pthread_mutex_lock(&mcp->mu);
    while (!mcp->cancel) {
        bool clean = mcp->listed == started;
        if (clean) {
            AUR_PERTURB("startup.freeze");
            for (size_t i = 0; i < mcp->napps; i++) {
                struct aur__app *a = &mcp->apps[i];
                if (!a->listed)
                    continue;
                pthread_mutex_lock(&a->mu);
                bool stale = seen_since_listing(a);
                pthread_mutex_unlock(&a->mu);
                if (stale) {
                    clean = false;
                    requeue(mcp, a); /* it pages again */
                }
            }
        }
        if (clean) {
            /* A change counted here is the "went past" case above. */
            AUR_PERTURB("startup.freeze_set");
            for (size_t i = 0; i < mcp->napps; i++) {
                struct aur__app *a = &mcp->apps[i];
                if (!a->listed)
                    continue;
                /* Frozen and activated in the same step: from here a
                 * change means restart_required, which is not acted on
                 * before the gate opens (aur__activation_wait). */
                pthread_mutex_lock(&a->mu);
                a->frozen = true;
                a->activated = true;
                a->state = AUR__S_READY;
                pthread_mutex_unlock(&a->mu);
            }
            mcp->freeze_done = true;
            pthread_cond_broadcast(&mcp->cv);
            break;
        }
        pthread_cond_wait(&mcp->cv, &mcp->mu);
    }
    pthread_mutex_unlock(&mcp->mu);
}

/* After the workers are joined: what each enabled App's startup came to.
 * A frozen App is ready; one listed or queued when the startup was
 * cancelled failed as cancelled; one never begun was not started. */
static void settle_apps(struct aur_mcp *mcp)
{
    char now[sizeof mcp->apps[0].t_done];
    aur__utc_now(now, sizeof now);
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        if (!starts(mcp, a))
            continue;
        if (!a->began) {
            pthread_mutex_lock(&a->mu);
            aur__set_str(&a->last_error,
                         "not started: startup was cancelled");
            pthread_mutex_unlock(&a->mu);
            continue;
        }
        if (!a->t_done[0])
            memcpy(a->t_done, now, sizeof now);
        if (a->frozen) {
            aur__log(mcp->log, AUR_LOG_INFO, a->tag, "ready with %zu tools",
                     a->ntools);
            continue;
        }
        if (a->start_rc == AUR_OK) {
            a->start_rc = AUR_E_CANCELLED;
            a->fail_order = ++mcp->failures;
            snprintf(a->error, sizeof a->error,
                     "cancelled: another App failed");
        }
        app_failed(a);
    }
}

/* The start workers: start_concurrency, fewer when fewer Apps start;
 * *n of them were made (0: not even one). */
static pthread_t *start_workers(struct aur_mcp *mcp, size_t apps, size_t *n)
{
    size_t want = (size_t)mcp->cfg->start_concurrency;
    pthread_t *t;

    if (want > apps)
        want = apps;
    *n = 0;
    if (!want || !(t = calloc(want, sizeof *t)))
        return NULL;
    while (*n < want && aur__thread_start(&t[*n], start_worker, mcp) == 0)
        ++*n;
    return t;
}

int aur__start_all(struct aur_mcp *mcp, struct aur_startup_error *serr,
                   struct aur_error *err)
{
    struct aur__app *failed = NULL;
    const char *why = NULL;
    pthread_t *workers = NULL;
    size_t started = 0, nworkers = 0;
    int rc = AUR_OK;

    for (size_t i = 0; i < mcp->napps; i++)
        started += starts(mcp, &mcp->apps[i]);
    mcp->relist = calloc(mcp->napps ? mcp->napps : 1, sizeof *mcp->relist);
    if (mcp->relist)
        workers = start_workers(mcp, started, &nworkers);
    if (started > 0 && nworkers == 0) {
        fill_serr(mcp, serr, AUR_E_STARTUP, NULL, "connect",
                  mcp->relist ? "cannot start a thread" : "out of memory");
        free(workers);
        return aur_fail(err, AUR_E_NOMEM, errno, "%s",
                        mcp->relist ? "cannot start a thread"
                                    : "out of memory");
    }
    freeze_when_listed(mcp, started);
    pthread_mutex_lock(&mcp->mu);
    pthread_cond_broadcast(&mcp->wcv); /* frozen or cancelled: they end */
    pthread_mutex_unlock(&mcp->mu);
    for (size_t i = 0; i < nworkers; i++)
        pthread_join(workers[i], NULL);
    free(workers);
    settle_apps(mcp);

    aur__write_startup_commits(mcp);
    for (size_t i = 0; i < mcp->napps; i++)
        if (mcp->apps[i].fail_order == 1)
            failed = &mcp->apps[i];
    pthread_mutex_lock(&mcp->mu);
    bool interrupted = mcp->interrupted;
    pthread_mutex_unlock(&mcp->mu);
    if (interrupted) {
        /* Name where the cancel landed: the first App it stopped mid-way
         * (a cancelled App is not a failure, so failed may be NULL). */
        for (size_t i = 0; !failed && i < mcp->napps; i++)
            if (mcp->apps[i].began &&
                mcp->apps[i].start_rc == AUR_E_CANCELLED)
                failed = &mcp->apps[i];
        fill_serr(mcp, serr, AUR_E_INTERRUPTED,
                  failed ? failed->cfg->package : NULL,
                  failed ? failed->phase : "activate", "startup cancelled");
        rc = aur_fail(err, AUR_E_CANCELLED, 0, "startup cancelled");
        goto fail;
    }
    if (failed) {
        fill_serr(mcp, serr, AUR_E_STARTUP, failed->cfg->package,
                  failed->phase, failed->error);
        rc = aur_fail(err, failed->start_rc, 0, "%s", failed->error);
        goto fail;
    }
    /* A disconnect since the clean listing: the frozen catalog is served
     * by nobody, and that is the reason startup fails, before the
     * registry or agents.ini could blame a missing tool on something
     * else.  (A change is not a failure: it sets restart_required, as
     * after startup; so does a disconnect from here on.)  "Frozen" is
     * a->frozen, set once at the freeze: a->state moves with the App. */
    AUR_PERTURB("startup.activate");
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        bool gone;
        if (!a->frozen)
            continue;
        pthread_mutex_lock(&a->mu);
        gone = a->disconnected;
        pthread_mutex_unlock(&a->mu);
        if (gone) {
            why = a->disconnect_detail;
            fill_serr(mcp, serr, AUR_E_STARTUP, a->cfg->package, "activate",
                      why);
            rc = aur_fail(err, a->disconnect_rc, 0, "%s", why);
            aur__commit_failed(a, "activate", rc, why, NULL);
            goto fail;
        }
    }
    rc = aur__registry_freeze(mcp, err);
    if (rc != AUR_OK) {
        fill_serr(mcp, serr, AUR_E_STARTUP, NULL, "catalog/freeze",
                  err->msg);
        goto fail;
    }
    rc = aur__agents_check(mcp, err);
    if (rc != AUR_OK) {
        fill_serr(mcp, serr, AUR_E_STARTUP, NULL, "agents", err->msg);
        goto fail;
    }
    aur__write_frozen_commits(mcp);
    open_gate(mcp, 1);
    __atomic_store_n(&mcp->active, true, __ATOMIC_RELEASE);
    aur__log(mcp->log, AUR_LOG_INFO, NULL, "activated: %zu tools frozen",
             mcp->nregistry);
    return AUR_OK;
fail:
    /* What waits at the gate is dropped, then every App's dispatch can
     * drain.  Startup already failed: a child that will not leave gets
     * little time before it is killed. */
    open_gate(mcp, -1);
    aur__close_all(mcp, AUR__FAIL_GRACE_MS);
    return rc;
}

void aur_mcp_cancel(struct aur_mcp *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->cancel = true;
    h->interrupted = true;
    pthread_cond_broadcast(&h->cv);
    pthread_cond_broadcast(&h->wcv);
    pthread_mutex_unlock(&h->mu);
    cancel_all(h);
}

