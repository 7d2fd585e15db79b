/*
 * startup.c - every enabled App's startup transaction, run concurrently,
 * then freeze, agents and activation; cleanup in reverse config order.
 *
 * Each App runs on its own thread under ONE deadline (timeout_seconds) for
 * connect + negotiate + listen + every page.  The first failure cancels the
 * others.  Lifecycle commits are written afterwards, per App in config
 * order, so the journal reads the same whatever the thread timing was.
 *
 * The freeze is one step for all Apps: an App whose pass was clean waits
 * ("listed") until every App has one; then, under every App's lock at
 * once, each App's change count is checked against the one its clean pass
 * began with and its catalog frozen.  A change that reaches a listed App
 * before that step makes it page again (within its deadline and the
 * relist budget), so a slow neighbour never turns a late notice into a
 * failure, and no change can slip between the check and the freeze.  The
 * same step activates the Apps: a change after it sets restart_required,
 * as any change after startup does (see open_gate).
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "jsonx.h"
#include "log.h"

#include <json-c/json.h>

void aur__lifecycle_commit_at(struct aur__app *app, const char *kind,
                              const char *suffix, const char *summary,
                              struct json_object *data, const char *when);

void aur__lifecycle_commit_at(struct aur__app *app, const char *kind,
                              const char *suffix, const char *summary,
                              struct json_object *data, const char *when)
{
    struct aur_mcp *mcp = app->mcp;
    char *id = aur__strdup_printf("mcp:%s:%s:%s", mcp->startup_id,
                                  app->cfg->package, suffix);
    char *source = aur__strdup_printf("mcp:%s", app->cfg->package);
    char *scope = aur__strdup_printf("aurora:mcp:%s", app->cfg->package);
    const char *scopes[] = {scope};
    struct aur_commit c = {
        .struct_size = sizeof c,
        .commit_id = id,
        .kind = kind,
        .source = source,
        .summary = summary,
        .occurred_at = when,
        .scopes = scopes,
        .n_scopes = 1,
        .data = data,
    };
    struct aur_error err;
    /* Like a journal error, running out of memory here is logged and
     * changes nothing of what the commit records. */
    if (!id || !source || !scope || !summary || !data)
        aur__log(app->mcp->log, AUR_LOG_ERROR, app->tag,
                 "lifecycle commit %s not written: out of memory", kind);
    else if (aur__world_append(mcp, &c, &err) != AUR_OK)
        aur__log(app->mcp->log, AUR_LOG_ERROR, app->tag,
                 "lifecycle commit %s not written: %s", kind, err.msg);
    free(id);
    free(source);
    free(scope);
}

void aur__lifecycle_commit(struct aur__app *app, const char *kind,
                           const char *suffix, const char *summary,
                           struct json_object *data)
{
    aur__lifecycle_commit_at(app, kind, suffix, summary, data, NULL);
}

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

/* A change since the clean pass began, or a disconnect; a->mu held. */
static bool seen_since_listing(const struct aur__app *a)
{
    return a->disconnected || a->changes != a->listed_changes;
}

/* Leave the start slot (start_concurrency) once; mcp->mu held. */
static void leave_slot(struct aur__app *app, bool *in_slot)
{
    if (*in_slot) {
        app->mcp->running--;
        *in_slot = false;
    }
}

/*
 * After a clean pass: wait, listed, for the freeze (aur__start_all).  A
 * change or disconnect meanwhile pages again within dl and the relist
 * budget.  A listed App needs no start slot: it gives it up, so Apps
 * still waiting for one are not held back by it.
 */
static int await_freeze(struct aur__app *app, aur_deadline dl, int *relists,
                        bool *in_slot, struct aur_error *err)
{
    struct aur_mcp *mcp = app->mcp;
    int rc;

    for (;;) {
        bool stale = false;
        pthread_mutex_lock(&mcp->mu);
        leave_slot(app, in_slot);
        app->listed = true;
        mcp->listed++;
        pthread_cond_broadcast(&mcp->cv);
        while (!app->frozen && !mcp->cancel) {
            pthread_mutex_lock(&app->mu);
            stale = seen_since_listing(app);
            pthread_mutex_unlock(&app->mu);
            if (stale)
                break;
            pthread_cond_wait(&mcp->cv, &mcp->mu);
        }
        bool frozen = app->frozen, cancelled = mcp->cancel && !frozen;
        if (!frozen) {
            app->listed = false;
            mcp->listed--;
        }
        pthread_mutex_unlock(&mcp->mu);
        if (frozen)
            return AUR_OK;
        if (cancelled)
            return aur_fail(err, AUR_E_CANCELLED, 0,
                            "cancelled: another App failed");
        if ((rc = check_connected(app, err)) != AUR_OK)
            return rc;
        if (++*relists > mcp->cfg->max_relist || !aur_remaining_ms(&mcp->host, dl))
            return aur_fail(err, AUR_E_CHANGED, 0,
                            "the tool catalog changed after it was listed, "
                            "with no %s left to page again",
                            *relists > mcp->cfg->max_relist ? "relist"
                                                           : "time");
        aur__log(app->mcp->log, AUR_LOG_INFO, app->tag,
                 "tool catalog changed before the freeze; paging again");
        rc = aur__app_list_tools(app, dl, relists, err);
        if (rc == AUR_OK)
            rc = check_connected(app, err);
        if (rc != AUR_OK)
            return rc;
    }
}

static int run_app(struct aur__app *app, bool *in_slot, struct aur_error *err)
{
    aur_deadline dl = aur__now_ms() + app->cfg->timeout_ms;
    int relists = 0, rc;

    if (!set_phase_check(app, "connect", err))
        return err->code;
    rc = aur__app_connect(app, dl, err);
    if (rc == AUR_OK)
        rc = check_connected(app, err);
    if (rc != AUR_OK)
        return rc;
    if (!set_phase_check(app, "catalog/listen", err))
        return err->code;
    rc = aur__app_listen(app, dl, err);
    if (rc != AUR_OK)
        return rc;
    if (!set_phase_check(app, "tools/list", err))
        return err->code;
    rc = aur__app_list_tools(app, dl, &relists, err);
    if (rc == AUR_OK)
        rc = check_connected(app, err);
    if (rc == AUR_OK)
        rc = await_freeze(app, dl, &relists, in_slot, err);
    if (rc != AUR_OK)
        return rc;
    aur__log(app->mcp->log, AUR_LOG_INFO, app->tag, "ready with %zu tools",
             app->ntools);
    return AUR_OK;
}

static void *app_thread(void *arg)
{
    struct aur__app *app = arg;
    struct aur_mcp *mcp = app->mcp;
    struct aur_error err;
    int rc;

    /* A bounded number of Apps start at once, slots handed out in config
     * order whatever order the threads run in (start_concurrency = 1 is
     * the one-by-one start in config order); the deadline of each starts
     * when it gets its turn. */
    pthread_mutex_lock(&mcp->mu);
    while ((mcp->running >= mcp->cfg->start_concurrency ||
            mcp->turns != app->turn) &&
           !mcp->cancel)
        pthread_cond_wait(&mcp->cv, &mcp->mu);
    bool cancelled = mcp->cancel;
    if (!cancelled) {
        mcp->running++;
        mcp->turns++;
        pthread_cond_broadcast(&mcp->cv); /* the next in line may fit */
    }
    pthread_mutex_unlock(&mcp->mu);
    if (cancelled) {
        /* Enabled but never started: it stays not_started, with why. */
        pthread_mutex_lock(&app->mu);
        aur__set_str(&app->last_error, "not started: startup was cancelled");
        pthread_mutex_unlock(&app->mu);
        return NULL;
    }

    app->began = true;
    aur__utc_now(app->t_starting, sizeof app->t_starting);
    pthread_mutex_lock(&app->mu);
    app->state = AUR__S_STARTING;
    pthread_mutex_unlock(&app->mu);
    aur__log(app->mcp->log, AUR_LOG_INFO, app->tag, "starting (%s)",
             aur__transport_word(app->cfg->transport));
    aur_error_clear(&err);
    bool in_slot = true;
    rc = run_app(app, &in_slot, &err);
    aur__utc_now(app->t_done, sizeof app->t_done);
    app->start_rc = rc;

    pthread_mutex_lock(&mcp->mu);
    leave_slot(app, &in_slot);
    if (rc != AUR_OK) {
        app->fail_order = ++mcp->failures;
        snprintf(app->error, sizeof app->error, "%s", err.msg);
        mcp->cancel = true;
    }
    pthread_cond_broadcast(&mcp->cv);
    pthread_mutex_unlock(&mcp->mu);
    if (rc != AUR_OK) {
        pthread_mutex_lock(&app->mu);
        app->state = AUR__S_UNAVAILABLE;
        aur__set_str(&app->last_error, err.msg);
        pthread_mutex_unlock(&app->mu);
        aur__log(app->mcp->log, AUR_LOG_ERROR, app->tag,
                 "startup failed in phase %s (%s): %s", app->phase,
                 aur_rc_word(rc), err.msg);
        if (app->fail_order == 1)
            cancel_all(mcp);
    }
    return NULL;
}

/* The mcp.app.failed commit of an App (when: NULL = now). */
static void commit_failed(struct aur__app *a, const char *phase, int rc,
                          const char *why, const char *when)
{
    char *e = aur__strdup_printf("%s: %s", aur_rc_word(rc), why);
    char *summary =
        aur__strdup_printf("MCP App startup failed: %s", a->cfg->package);
    struct json_object *data = json_object_new_object();
    bool ok = aur__json_set(data, "phase", json_object_new_string(phase));
    ok = ok && aur__json_set(data, "error",
                             json_object_new_string(e ? e : why));
    data = aur__json_built(data, ok);
    aur__lifecycle_commit_at(a, "mcp.app.failed", "failed", summary, data,
                             when);
    json_object_put(data);
    free(summary);
    free(e);
}

static void write_startup_commits(struct aur_mcp *mcp)
{
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        const char *pkg = a->cfg->package;
        char *summary;
        struct json_object *data;
        if (!a->began)
            continue;
        summary = aur__strdup_printf("Connecting MCP App: %s", pkg);
        data = json_object_new_object();
        aur__lifecycle_commit_at(a, "mcp.app.starting", "starting", summary,
                                 data, a->t_starting);
        free(summary);
        json_object_put(data);
        if (a->start_rc != AUR_OK) {
            commit_failed(a, a->phase, a->start_rc, a->error, a->t_done);
            continue;
        }
        data = json_object_new_object();
        summary = aur__strdup_printf("MCP App ready: %s", pkg);
        bool ok = aur__json_set(data, "protocol_version",
                                json_object_new_string(a->version));
        ok = ok && aur__json_set(data, "tool_count",
                                 json_object_new_int64((int64_t)a->ntools));
        data = aur__json_built(data, ok);
        aur__lifecycle_commit_at(a, "mcp.app.ready", "ready", summary, data,
                                 a->t_done);
        free(summary);
        json_object_put(data);
    }
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
 * The activation gate.  Apps are activated in the freeze step itself (so
 * there is no window between the two in which a change would be neither
 * a reason to page again nor a reason to restart), but what activation
 * lets happen (committing events, mcp.catalog.changed and
 * mcp.app.disconnected) waits until the registry is built, the agents are
 * checked and the mcp.catalog.frozen commits are in the journal: the
 * gate.  1 = open, -1 = startup failed (what waited is dropped).
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
 * The freeze step (see the top of this file): once every started App is
 * listed, and none has seen a change since its clean pass began, all of
 * them freeze at once, under every App's lock, so no change can fall
 * between the check and the freeze.  Returns when frozen or cancelled.
 */
static void freeze_when_listed(struct aur_mcp *mcp, size_t started)
{
    pthread_mutex_lock(&mcp->mu);
    while (!mcp->cancel) {
        bool clean = mcp->listed == started;
        if (clean) {
            AUR_PERTURB("startup.freeze");
            for (size_t i = 0; i < mcp->napps; i++)
                if (mcp->apps[i].listed)
                    pthread_mutex_lock(&mcp->apps[i].mu);
            for (size_t i = 0; i < mcp->napps; i++)
                if (mcp->apps[i].listed && seen_since_listing(&mcp->apps[i]))
                    clean = false;
            for (size_t i = 0; i < mcp->napps; i++) {
                struct aur__app *a = &mcp->apps[i];
                if (!a->listed)
                    continue;
                if (clean) {
                    /* Frozen and activated in the same step: from here a
                     * change means restart_required and events are
                     * accepted, but neither is acted on before the gate
                     * opens (aur__activation_wait). */
                    a->frozen = true;
                    a->activated = true;
                    a->state = AUR__S_READY;
                }
                pthread_mutex_unlock(&a->mu);
            }
        }
        if (clean) {
            mcp->freeze_done = true;
            pthread_cond_broadcast(&mcp->cv);
            break;
        }
        pthread_cond_wait(&mcp->cv, &mcp->mu);
    }
    pthread_mutex_unlock(&mcp->mu);
}

static void write_frozen_commits(struct aur_mcp *mcp)
{
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        struct json_object *data, *ids;
        char *summary;
        if (a->state != AUR__S_READY)
            continue;
        bool ok = true;
        data = json_object_new_object();
        ids = json_object_new_array();
        for (size_t t = 0; ok && t < a->ntools; t++)
            ok = aur__json_push(ids, json_object_new_string(a->tools[t]->id));
        ok = aur__json_set(data, "tool_ids", aur__json_built(ids, ok)) && ok;
        ok = ok && aur__json_set(data, "tool_count",
                                 json_object_new_int64((int64_t)a->ntools));
        data = aur__json_built(data, ok);
        summary = aur__strdup_printf("MCP tool catalog frozen: %s",
                                     a->cfg->package);
        aur__lifecycle_commit(a, "mcp.catalog.frozen", "catalog-frozen",
                              summary, data);
        free(summary);
        json_object_put(data);
    }
}

int aur__start_all(struct aur_mcp *mcp, struct aur_startup_error *serr,
                   struct aur_error *err)
{
    pthread_t *threads = calloc(mcp->napps ? mcp->napps : 1, sizeof *threads);
    bool *made = calloc(mcp->napps ? mcp->napps : 1, sizeof *made);
    struct aur__app *failed = NULL;
    const char *why = NULL;
    size_t started = 0, turn = 0;
    int rc = AUR_OK;

    if (!threads || !made) {
        free(threads);
        free(made);
        fill_serr(mcp, serr, AUR_E_STARTUP, NULL, "connect",
                  "out of memory");
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        if (!mcp->cfg->mcp_enabled || !a->cfg->enabled || a->skipped)
            continue;
        a->turn = turn++;
        made[i] = pthread_create(&threads[i], NULL, app_thread, a) == 0;
        started += made[i];
        if (!made[i]) {
            a->began = true;
            a->start_rc = aur_fail(err, AUR_E_NOMEM, errno,
                                   "cannot start a thread");
            snprintf(a->phase, sizeof a->phase, "connect");
            snprintf(a->error, sizeof a->error, "cannot start a thread");
            pthread_mutex_lock(&mcp->mu);
            a->fail_order = ++mcp->failures;
            mcp->cancel = true;
            pthread_cond_broadcast(&mcp->cv);
            pthread_mutex_unlock(&mcp->mu);
            cancel_all(mcp);
        }
    }
    freeze_when_listed(mcp, started);
    for (size_t i = 0; i < mcp->napps; i++)
        if (made[i])
            pthread_join(threads[i], NULL);
    free(threads);
    free(made);

    write_startup_commits(mcp);
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
    /* A disconnect since the clean listing: the frozen catalog is served
     * by nobody.  (A change is not a failure: the App is already active,
     * so it sets restart_required, as after startup.) */
    AUR_PERTURB("startup.activate");
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        bool gone;
        if (a->state != AUR__S_READY && a->state != AUR__S_UNAVAILABLE)
            continue;
        pthread_mutex_lock(&a->mu);
        gone = a->frozen && a->disconnected;
        pthread_mutex_unlock(&a->mu);
        if (gone) {
            why = a->disconnect_detail;
            fill_serr(mcp, serr, AUR_E_STARTUP, a->cfg->package, "activate",
                      why);
            rc = aur_fail(err, a->disconnect_rc, 0, "%s", why);
            commit_failed(a, "activate", rc, why, NULL);
            goto fail;
        }
    }
    write_frozen_commits(mcp);
    open_gate(mcp, 1);
    __atomic_store_n(&mcp->active, true, __ATOMIC_RELEASE);
    aur__log(mcp->log, AUR_LOG_INFO, NULL, "activated: %zu tools frozen",
             mcp->nregistry);
    return AUR_OK;
fail:
    /* What waits at the gate is dropped, then the dispatch threads can be
     * joined.  Startup already failed: a child that will not leave gets
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
    pthread_mutex_unlock(&h->mu);
    cancel_all(h);
}

/* The first step of a close, quick and in order: from here late signals
 * are ignored, events arriving are refused, and calls in flight end as
 * unknown. */
static void app_close_begin(struct aur__app *app)
{
    AUR_PERTURB("startup.close");
    pthread_mutex_lock(&app->mu);
    app->closing = true;
    if (app->rpc)
        aur__rpc_cancel_waiters(app->rpc);
    pthread_cond_broadcast(&app->cv);
    pthread_mutex_unlock(&app->mu);
    if (app->opened)
        aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag, "closing");
}

/* The rest, which may take a whole escalation for a stubborn App. */
static void app_close_finish(struct aur__app *app, int64_t grace_ms)
{
    aur_deadline dl = aur__now_ms() + app->cfg->timeout_ms + 1000;
    pthread_mutex_lock(&app->mu);
    struct aur__rpc *rpc = app->rpc;
    /* Wait until no call uses rpc any more. */
    while (app->inflight > 0)
        if (aur__cond_wait_until(&app->cv, &app->mu, dl) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&app->mu);
    /* The transport first: closing it drains and joins the dispatch
     * thread, so no on_notify can still be running when the sessions
     * end. */
    if (rpc) {
        aur__rpc_close(rpc, aur__now_ms() + grace_ms);
        pthread_mutex_lock(&app->mu);
        app->rpc = NULL;
        pthread_mutex_unlock(&app->mu);
    }
    for (size_t i = app->next; i-- > 0;) {
        struct aur__ext_session *s = &app->ext[i];
        if (s->active && AUR_HAS(&s->p->ops.e, end_session))
            s->p->ops.e.end_session(s->p->state, s->session);
        s->active = false;
    }
    pthread_mutex_lock(&app->mu);
    if (app->opened)
        app->state = AUR__S_CLOSED;
    pthread_mutex_unlock(&app->mu);
}

/* Closes run on up to this many threads at once. */
#define CLOSE_THREADS 256

struct closer {
    struct aur_mcp *mcp;
    int64_t grace_ms;
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
        app_close_finish(a, c->grace_ms);
    }
}

/*
 * Every close begins in reverse config order, one after the other (the
 * quick part), and then the rest runs side by side: an App that ignores
 * stdin EOF and SIGTERM takes its whole escalation, and N of them must
 * not take N escalations.  Threads that cannot be created leave their
 * share to the others (at worst, this thread finishes everything).
 */
void aur__close_all(struct aur_mcp *mcp, int64_t grace_ms)
{
    struct closer c = {.mcp = mcp, .grace_ms = grace_ms, .next = mcp->napps};
    size_t n = mcp->napps > CLOSE_THREADS ? CLOSE_THREADS : mcp->napps;
    pthread_t *t = n > 1 ? calloc(n - 1, sizeof *t) : NULL;
    size_t made = 0;

    for (size_t i = mcp->napps; i-- > 0;)
        app_close_begin(&mcp->apps[i]);
    pthread_mutex_init(&c.mu, NULL);
    for (size_t i = 0; t && i + 1 < n; i++) {
        if (pthread_create(&t[made], NULL, closer_main, &c) != 0)
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
