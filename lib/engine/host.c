/*
 * host.c - the embedding API (aur_host.h, aur_host_jsonc.h): create,
 * writer, start, call, shutdown, destroy (builtins: builtin.c; the text
 * forms of the JSON calls: api_text.c).
 */
#include "aur_setup.h"

#include "clock.h"
#include "engine.h"
#include "journal.h"
#include "jsonx.h"
#include "log.h"
#include "names.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The build tree's plugins when this library runs from the build tree,
 * else the installed ones.  An install keeps the plugins next to the
 * library (<libdir>/aurora-mcp/plugins), so look there first: that holds
 * for `cmake --install --prefix P` and DESTDIR trees too, where the
 * configured AUR_INSTALL_PLUGIN_DIR names a prefix never installed to. */
static const char *default_plugin_dir(char *buf, size_t size)
{
    Dl_info info;
    char *real = NULL, *slash;
    struct stat sb;
    const char *dir = AUR_INSTALL_PLUGIN_DIR;
    if (!dladdr((void *)default_plugin_dir, &info) || !info.dli_fname ||
        !(real = realpath(info.dli_fname, NULL)))
        goto out;
    if (strncmp(real, AUR_BUILD_ROOT "/", strlen(AUR_BUILD_ROOT) + 1) == 0) {
        dir = AUR_BUILD_PLUGIN_DIR;
        goto out;
    }
    slash = strrchr(real, '/');
    if (slash && snprintf(buf, size, "%.*s/aurora-mcp/plugins",
                          (int)(slash - real), real) < (int)size &&
        stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode))
        dir = buf;
out:
    free(real);
    return dir;
}

static struct aur_self *make_self(void *ud, const char *name)
{
    struct aur_mcp *mcp = ud;
    for (size_t i = 0; i < mcp->cfg->nplugins; i++) {
        if (strcmp(mcp->cfg->plugins[i], name) == 0) {
            mcp->selves[i].mcp = mcp;
            snprintf(mcp->selves[i].tag, sizeof mcp->selves[i].tag, "%s",
                     name);
            return &mcp->selves[i];
        }
    }
    return NULL;
}

static const struct aur_cfg *plugin_section(void *ud, const char *name)
{
    struct aur_mcp *mcp = ud;
    return aur__config_plugin_section(mcp->cfg, name);
}

static int setup_apps(struct aur_mcp *mcp, struct aur_error *err)
{
    const struct aur__config *cfg = mcp->cfg;
    mcp->apps = calloc(cfg->napps ? cfg->napps : 1, sizeof *mcp->apps);
    mcp->exts = calloc(cfg->nplugins ? cfg->nplugins : 1, sizeof *mcp->exts);
    if (!mcp->apps || !mcp->exts)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < mcp->plugins.n; i++)
        if (mcp->plugins.v[i].desc.kind == AUR_KIND_EXTENSION)
            mcp->exts[mcp->nexts++] = &mcp->plugins.v[i];
    if (mcp->nexts > AUR__MAX_EXT)
        return aur_fail(err, AUR_E_PLUGIN, 0, "more than %d extensions",
                        AUR__MAX_EXT);
    for (size_t i = 0; i < cfg->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        const struct aur__app_cfg *ac = &cfg->apps[i];
        a->mcp = mcp;
        a->cfg = ac;
        a->index = i;
        a->state = cfg->mcp_enabled && ac->enabled ? AUR__S_NOT_STARTED
                                                   : AUR__S_DISABLED;
        pthread_mutex_init(&a->mu, NULL);
        aur__mono_cond_init(&a->cv);
        mcp->napps++;
        snprintf(a->tag, sizeof a->tag, "app %s", ac->package);
        a->self.mcp = mcp;
        snprintf(a->self.tag, sizeof a->self.tag, "app %s", ac->package);
        a->info.struct_size = sizeof a->info;
        a->info.package = ac->package;
        a->info.transport = aur__transport_word(ac->transport);
        a->info.event_mode = aur__event_mode_word(ac->event_mode);
        a->info.self = &a->self;
        a->transport = mcp->tplugins[ac->transport - mcp->tdefs];
    }
    return AUR_OK;
}

static void new_startup_id(char out[33])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        uint64_t t = (uint64_t)aur__now_ms() ^ (uint64_t)getpid() << 32;
        memcpy(b, &t, 8);
        memcpy(b + 8, &t, 8);
    }
    b[6] = (b[6] & 0x0f) | 0x40; /* uuid4 shape, as the original's */
    b[8] = (b[8] & 0x3f) | 0x80;
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int aur_mcp_skip_app(struct aur_mcp *h, const char *package, int skip,
                     struct aur_error *err)
{
    const char **names;
    const char *near;

    if (h->started)
        return aur_fail(err, AUR_E_STATE, 0, "already started");
    for (size_t i = 0; package && i < h->napps; i++)
        if (strcmp(h->apps[i].cfg->package, package) == 0) {
            struct aur__app *a = &h->apps[i];
            if (!skip && !a->skipped)
                return AUR_OK;
            a->skipped = skip != 0;
            a->state = !skip && h->cfg->mcp_enabled && a->cfg->enabled
                           ? AUR__S_NOT_STARTED
                           : AUR__S_DISABLED;
            aur__set_str(&a->last_error, skip ? "left out of this run" : NULL);
            return AUR_OK;
        }
    names = malloc((h->napps + 1) * sizeof *names);
    for (size_t i = 0; names && i < h->napps; i++)
        names[i] = h->apps[i].cfg->package;
    near = names && package ? aur_suggest(package, names, h->napps) : NULL;
    aur_fail(err, AUR_E_CONFIG, 0, "no App has package %s%s%s%s",
             package ? package : "(null)", near ? " (did you mean " : "",
             near ? near : "", near ? "?)" : "");
    free(names);
    return AUR_E_CONFIG;
}

void aur_mcp_log_verbosity(struct aur_mcp *h, int delta)
{
    if (h && h->cfg)
        aur__log_set_level(h->log, h->cfg->log_level + delta);
}

void aur_mcp_set_log(struct aur_mcp *h, aur_log_fn *fn, void *ud)
{
    if (h && h->log)
        aur__log_set_sink(h->log, fn, ud);
}

int aur_mcp_create(const char *config_dir, const char *plugin_dir,
                   struct aur_mcp **out, struct aur_startup_error *serr,
                   struct aur_error *err)
{
    struct aur_mcp *mcp = calloc(1, sizeof *mcp);
    struct aur__config_diag diag;
    struct aur_error local;
    char dirbuf[PATH_MAX];
    int rc;

    *out = NULL;
    if (!err)
        err = &local; /* the messages still reach *serr */

    if (!mcp) {
        rc = aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&mcp->mu, NULL);
    pthread_mutex_init(&mcp->jwatch_mu, NULL);
    aur__mono_cond_init(&mcp->cv);
    pthread_cond_init(&mcp->wcv, NULL);
    rc = aur__config_load_host(config_dir, &mcp->cfg, &diag, err);
    if (rc == AUR_OK)
        rc = aur__log_open(mcp->cfg->log_level, mcp->cfg->log_file,
                           &mcp->log, err);
    if (rc != AUR_OK)
        goto fail;
    aur__host_vtable_init(mcp);
    mcp->selves = calloc(mcp->cfg->nplugins ? mcp->cfg->nplugins : 1,
                         sizeof *mcp->selves);
    if (!mcp->selves) {
        rc = aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        goto fail;
    }
    if (!plugin_dir)
        plugin_dir = mcp->cfg->plugin_dir;
    if (!plugin_dir)
        plugin_dir = default_plugin_dir(dirbuf, sizeof dirbuf);
    rc = aur__plugins_load(plugin_dir, mcp->cfg->plugins, mcp->cfg->nplugins,
                           &mcp->host, make_self, mcp, plugin_section,
                           &mcp->plugins, err);
    if (rc == AUR_OK)
        rc = aur__transport_defs(mcp, err);
    if (rc == AUR_OK)
        rc = aur__config_load_apps(mcp->cfg, mcp->tdefs, mcp->ntdefs, &diag,
                                   err);
    if (rc == AUR_OK)
        rc = setup_apps(mcp, err);
    if (rc != AUR_OK)
        goto fail;
    new_startup_id(mcp->startup_id);
    *out = mcp;
    return AUR_OK;
fail:
    /* Whatever failed, out of memory included, is reported in phase
     * config (the return value says which). */
    aur__serr_fill(serr, AUR_E_CONFIG, NULL, "config", err->msg);
    aur_mcp_destroy(mcp);
    return rc;
}

int aur_mcp_set_world_writer(struct aur_mcp *h,
                             const struct aur_world_writer *w,
                             struct aur_error *err)
{
    if (h->started)
        return aur_fail(err, AUR_E_STATE, 0, "the writer is set before start");
    if (!w || !w->append)
        return aur_fail(err, AUR_E_INVAL, 0, "a world writer needs append");
    h->writer = *w;
    h->have_writer = true;
    /* Its append answers AUR_OK for "written" and for "already present"
     * alike, so the batch service, whose results tell the two apart,
     * is not offered: a plugin counts through world_write instead. */
    h->host.world_write_batch = NULL;
    return AUR_OK;
}

int aur_mcp_start(struct aur_mcp *h, struct aur_startup_error *serr,
                  struct aur_error *err)
{
    struct aur__app *first = NULL; /* the first App that will start */
    struct aur_error local;
    int rc = AUR_OK;

    if (!err)
        err = &local; /* the messages still reach *serr */
    if (h->started)
        return aur_fail(err, AUR_E_STATE, 0, "already started");
    h->started = true;
    for (size_t i = 0; i < h->napps && !first; i++)
        if (h->apps[i].state == AUR__S_NOT_STARTED)
            first = &h->apps[i];
    /* The first App's slow part (its supervisor's start) runs while the
     * journal opens; nothing of the App runs before its open.  Only the
     * first: a prepared start holds this thread for its spawn, and later
     * Apps' supervisors start while the first App starts anyway. */
    if (first)
        aur__transport_prepare(first);
    if (!h->have_writer) {
        struct aur__journal *j = NULL;
        rc = aur__open_journal(h->cfg, &j, err);
        /* Whole before a status read on another thread can see it. */
        __atomic_store_n(&h->journal, j, __ATOMIC_RELEASE);
        if (rc != AUR_OK)
            aur__serr_fill(serr, AUR_E_JOURNAL, NULL, "config", err->msg);
        /* The lifecycle commits come once the Apps have started: the
         * journal readies its first write while they do. */
        else if (first)
            aur__journal_prime(h->journal);
    }
    if (h->have_writer || h->journal)
        rc = aur__start_all(h, serr, err);
    /* A failed start may never have opened the first App (the journal
     * failed, another App failed first): what was prepared for it goes
     * now, not when the embedder destroys the handle. */
    if (rc != AUR_OK && first)
        aur__transport_unprepare(first);
    return rc;
}

void aur_mcp_shutdown(struct aur_mcp *h)
{
    if (!h || h->shut)
        return;
    h->shut = true;
    aur__batch_drop(h); /* the close would wait for this thread's batch */
    /* The journal's checkpoint and its syncs while the Apps close, not
     * after them (docs/journal.md). */
    aur__journal_settle(h->journal);
    aur__async_stop(h); /* queued calls: failed, never sent */
    if (h->apps)
        aur__close_all(h, AUR__CLOSE_GRACE_MS);
    aur__async_join(h); /* the calls in flight ended with the Apps */
    aur__clock_join(h);
    aur__journal_close(h->journal);
    h->journal = NULL;
}

void aur_mcp_destroy(struct aur_mcp *h)
{
    if (!h)
        return;
    aur_mcp_shutdown(h);
    aur__plugins_release(&h->plugins);
    for (size_t i = 0; i < h->napps; i++) {
        struct aur__app *a = &h->apps[i];
        for (size_t t = 0; t < a->ntools; t++)
            aur__tool_free(a->tools[t]);
        free(a->tools);
        free(a->last_error);
        json_object_put(a->server_caps);
        json_object_put(a->client_caps);
        free(a->envelope_text);
        free(a->listen_end);
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
    }
    for (size_t i = 0; i < h->nbuiltins; i++)
        aur__tool_free(h->builtins[i]);
    free(h->builtins);
    free(h->registry);
    while (h->views) {
        struct aur__scope_view *next = h->views->next;
        free(h->views);
        h->views = next;
    }
    free(h->apps);
    free(h->relist);
    free(h->exts);
    free(h->tdefs);
    free(h->tplugins);
    free(h->selves);
    aur__log_close(h->log); /* after the plugins: their fini may log */
    aur__config_free(h->cfg);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->jwatch_mu);
    pthread_cond_destroy(&h->cv);
    pthread_cond_destroy(&h->wcv);
    free(h);
}

/* The journal host.ini names, with the password from the variable
 * journal_password_env names (read now, never kept by the core). */
int aur__open_journal(const struct aur__config *cfg, struct aur__journal **out,
                      struct aur_error *err)
{
    struct aur__journal_conf conf = {0};
    if (cfg->journal_password_env)
        conf.password = getenv(cfg->journal_password_env);
    conf.wait_ms = cfg->journal_wait_ms;
    return aur__journal_open(cfg->journal, &conf, out, err);
}

struct dump_ctx {
    void (*emit)(void *ud, const char *line);
    int (*follow)(void *ud, const char *line);
    void *ud;
};

static int dump_one(void *ud, struct json_object *commit)
{
    struct dump_ctx *d = ud;
    const char *line =
        commit ? json_object_to_json_string_ext(
                     commit, JSON_C_TO_STRING_PLAIN |
                                 JSON_C_TO_STRING_NOSLASHESCAPE)
               : NULL;
    if (d->follow)
        return d->follow(d->ud, line);
    d->emit(d->ud, line);
    return 0;
}

/* Dump (idle_ms 0) or follow the journal config_dir's host.ini names. */
static int read_journal(const char *config_dir, int64_t after,
                        const char *scope, int idle_ms, struct dump_ctx *d,
                        struct aur_error *err)
{
    struct aur__config *cfg = NULL;
    struct aur__journal *j = NULL;
    struct aur_error local;
    int rc;

    if (!err)
        err = &local;
    /* host.ini alone names the journal: the Apps need not be valid. */
    rc = aur__config_load_host(config_dir, &cfg, NULL, err);
    if (rc != AUR_OK)
        return rc;
    if (!idle_ms && !aur__journal_is_uri(cfg->journal) &&
        access(cfg->journal, F_OK) != 0) {
        aur__config_free(cfg);
        return AUR_OK; /* no journal yet: no commits */
    }
    rc = aur__open_journal(cfg, &j, err);
    if (rc == AUR_OK && idle_ms)
        rc = aur__journal_follow(j, after, scope, idle_ms, dump_one, d, err);
    else if (rc == AUR_OK)
        rc = aur__journal_each(j, after, scope, dump_one, d, err);
    aur__journal_close(j);
    aur__config_free(cfg);
    return rc;
}

int aur_journal_dump(const char *config_dir, int64_t after, const char *scope,
                     void (*emit)(void *ud, const char *line), void *ud,
                     struct aur_error *err)
{
    struct dump_ctx d = {emit, NULL, ud};
    if (!emit)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: no emit callback");
    return read_journal(config_dir, after, scope, 0, &d, err);
}

int aur_journal_follow(const char *config_dir, int64_t after,
                       const char *scope, int idle_ms,
                       int (*emit)(void *ud, const char *line), void *ud,
                       struct aur_error *err)
{
    struct dump_ctx d = {NULL, emit, ud};
    if (!emit || idle_ms <= 0)
        return aur_fail(err, AUR_E_INVAL, 0,
                        "journal: follow needs emit and idle_ms > 0");
    return read_journal(config_dir, after, scope, idle_ms, &d, err);
}

struct json_object *aur_plugin_info_jsonc(const char *path, struct aur_error *err)
{
    struct aur__plugin p;
    struct aur_error local;
    struct json_object *o;

    if (!err)
        err = &local;
    if (aur__plugin_open(path, &p, err) != AUR_OK)
        return NULL;
    o = aur__plugin_describe(&p);
    aur__plugin_release(&p);
    return o;
}

int aur_json_parse(const char *buf, size_t len, struct json_object **out,
                   struct aur_error *err)
{
    return aur__json_parse(buf, len, 128, out, err);
}
