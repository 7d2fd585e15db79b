/*
 * config_app.c - apps.d/<name>.ini: one App per file (docs/transports.md):
 * its [app] section, and the section of the transport it names, whose
 * keys and values the transport plugin defines (struct
 * aur__transport_def): this file names no transport.
 *
 * Files are taken in strcmp order of their names ("config order"); names
 * not ending in ".ini" are ignored; a missing apps.d means no Apps.
 * Single-threaded.
 */
#include "aur_setup.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>

#include <aurora/aur_host.h>

#include "config_int.h"
#include "grow.h"
#include "names.h"

#define APPS_DIR "apps.d"
#define MAX_APP_FILES 4096
#define MAX_TIMEOUT_S 1e9 /* keeps timeout_ms and deadlines far from int64 */

static const struct aur_cfg_key app_rules[] = {
    {"package", true, false},         {"enabled", true, false},
    {"transport", true, false},       {"timeout_seconds", true, false},
    {"event_mode", false, false},
    AUR__BUDGET_KEY_RULES,
};
/* The keys the host adds to a transport's section (aur_plugin.h). */
static const char *const host_keys[] = {"package", "timeout_ms",
                                        "config_dir"};

struct app_doc {
    struct aur__cfg_ctx *ctx;
    struct aur__config *c;
    const struct aur__transport_def *defs;
    size_t ndefs;
    struct aur__ini *ini;
    struct aur__ini_sec *app, *ep; /* ep: the transport's section */
    struct aur__app_cfg *a;
    bool active;
};

static int fail_kv(struct app_doc *d, const struct aur__kv *kv,
                   const char *what)
{
    return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key, "%s", what);
}

/* ------------------------------------------------------------------ */
/* one App file                                                       */
/* ------------------------------------------------------------------ */

/* key is among keys, which a NULL key ends (or n, app_rules' length). */
static bool has_key_n(const struct aur_cfg_key *keys, size_t n,
                      const char *key)
{
    for (size_t i = 0; keys && i < n && keys[i].key; i++)
        if (strcmp(keys[i].key, key) == 0)
            return true;
    return false;
}

static bool has_key(const struct aur_cfg_key *keys, const char *key)
{
    return has_key_n(keys, SIZE_MAX, key);
}

static bool app_key(const char *key)
{
    return has_key_n(app_rules, AUR__ARRAY_LEN(app_rules), key);
}

/* The def whose section is name, or NULL. */
static const struct aur__transport_def *
section_owner(const struct app_doc *d, const char *name)
{
    for (size_t i = 0; i < d->ndefs; i++)
        if (aur__config_has_plugin(d->c, d->defs[i].name) &&
            strcmp(d->defs[i].section, name) == 0)
            return &d->defs[i];
    return NULL;
}

/* A key that belongs in another section gets a pointed message: a
 * transport key in [app], an [app] key in the transport's section, a key
 * of another transport's section. */
static int wrong_section(struct app_doc *d, const struct aur__ini_sec *sec)
{
    bool in_app = strcmp(sec->cfg.section, "app") == 0;
    const struct aur__transport_def *own =
        in_app ? NULL : section_owner(d, sec->cfg.section);

    for (size_t i = 0; i < sec->cfg.n; i++) {
        const struct aur__kv *kv = &sec->cfg.kv[i];
        char hint[160];

        if (!in_app && app_key(kv->key))
            return fail_kv(d, kv, "belongs in [app]");
        for (size_t k = 0; !in_app && k < AUR__ARRAY_LEN(host_keys); k++)
            if (strcmp(host_keys[k], kv->key) == 0)
                return fail_kv(d, kv, "is set by the host (from [app] and "
                                      "the config directory)");
        if (app_key(kv->key) || (own && has_key(own->keys, kv->key)))
            continue;
        for (size_t t = 0; t < d->ndefs; t++) {
            const struct aur__transport_def *o = &d->defs[t];
            if (o == own || !aur__config_has_plugin(d->c, o->name) ||
                !has_key(o->keys, kv->key))
                continue;
            snprintf(hint, sizeof hint, "belongs in [%s] (transport = %s "
                                        "only)",
                     o->section, aur__transport_word(o));
            return fail_kv(d, kv, hint);
        }
    }
    return AUR_OK;
}

/* [app] is there (the other sections are judged once the transport is
 * known: a transport that is not loaded is the error to report first). */
static int check_sections(struct app_doc *d)
{
    d->app = aur__ini_find(d->ini, "app");
    if (!d->app)
        return aur__cfg_fail(d->ctx, d->ini->file, 0, "[app]",
                             "missing section");
    return AUR_OK;
}

/* A section no loaded transport reads. */
static int unknown_section(struct app_doc *d, const struct aur__ini_sec *s)
{
    const char *known[32], *near;
    char want[256], key[64];
    size_t nk = 0, n;

    known[nk++] = "app";
    n = (size_t)snprintf(want, sizeof want, "app");
    for (size_t t = 0; t < d->ndefs && nk < AUR__ARRAY_LEN(known); t++) {
        if (!aur__config_has_plugin(d->c, d->defs[t].name))
            continue;
        known[nk++] = d->defs[t].section;
        if (n < sizeof want)
            n += (size_t)snprintf(want + n, sizeof want - n, ", %s",
                                  d->defs[t].section);
    }
    near = aur_suggest(s->cfg.section, known, nk);
    snprintf(key, sizeof key, "[%.60s]", s->cfg.section);
    return aur__cfg_fail(d->ctx, d->ini->file, s->line, key,
                         "unknown section (want %s)%s%s%s", want,
                         near ? "; did you mean [" : "", near ? near : "",
                         near ? "]?" : "");
}

/* transport = names a loaded transport plugin (or one of its words). */
static int find_transport(struct app_doc *d, const struct aur__kv *kv)
{
    const char *words[64], *near;
    char list[256];
    size_t nw = 0, n = 0;

    /* Only the transports host.ini deploys (the engine's defs are
     * exactly those; a test's may be more). */
    for (size_t i = 0; i < d->ndefs; i++)
        if (aur__config_has_plugin(d->c, d->defs[i].name) &&
            aur__transport_takes(&d->defs[i], kv->value)) {
            d->a->transport = &d->defs[i];
            return AUR_OK;
        }
    list[0] = '\0';
    for (size_t i = 0; i < d->ndefs; i++) {
        const struct aur__transport_def *t = &d->defs[i];
        if (!aur__config_has_plugin(d->c, t->name))
            continue;
        if (nw < AUR__ARRAY_LEN(words))
            words[nw++] = t->name;
        for (const char *const *p = t->words; p && *p; p++)
            if (nw < AUR__ARRAY_LEN(words))
                words[nw++] = *p;
        if (n < sizeof list)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                  n ? ", " : "", aur__transport_word(t));
    }
    near = aur_suggest(kv->value, words, nw);
    return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                         "no transport plugin in host.ini plugins takes "
                         "'%s' (%s%s)%s%s%s",
                         kv->value, n ? "loaded: " : "none loaded",
                         list, near ? "; did you mean " : "",
                         near ? near : "", near ? "?" : "");
}

static int parse_transport(struct app_doc *d)
{
    const struct aur__kv *kv = aur__sec_kv(d->app, "transport");
    const struct aur__transport_def *def;
    char key[80];
    int rc = find_transport(d, kv);

    if (rc != AUR_OK)
        return rc;
    def = d->a->transport;
    for (size_t i = 0; i < d->ini->nsecs; i++) {
        const struct aur__ini_sec *other = &d->ini->secs[i];
        if (strcmp(other->cfg.section, "app") == 0 ||
            strcmp(other->cfg.section, def->section) == 0)
            continue;
        if (!section_owner(d, other->cfg.section))
            return unknown_section(d, other);
        /* Another transport's section: name its first key on its own
         * line (a url in [http] of a stdio App), else the header. */
        if (other->cfg.n > 0) {
            const struct aur__kv *x = &other->cfg.kv[0];
            return aur__cfg_fail(d->ctx, d->ini->file, x->line, x->key,
                                 "[%s] is not allowed with transport = %s "
                                 "(line %d)",
                                 other->cfg.section, kv->value, kv->line);
        }
        snprintf(key, sizeof key, "[%.70s]", other->cfg.section);
        return aur__cfg_fail(d->ctx, d->ini->file, other->line, key,
                             "not allowed with transport = %s (line %d)",
                             kv->value, kv->line);
    }
    d->ep = aur__ini_find(d->ini, def->section);
    if (!d->ep)
        return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                             "%s needs a [%s] section", kv->value,
                             def->section);
    return AUR_OK;
}

static int parse_package(struct app_doc *d)
{
    const struct aur__kv *kv = aur__sec_kv(d->app, "package");
    size_t i;

    if (!aur__valid_package(kv->value))
        return fail_kv(d, kv, "must be a lowercase dotted name with at "
                              "least two segments (e.g. org.example.clock)");
    for (i = 0; i < d->c->napps; i++)
        if (strcmp(d->c->apps[i].package, kv->value) == 0)
            return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                                 "duplicate package %s (first in %s)",
                                 kv->value, d->c->apps[i].file);
    d->a->package = strdup(kv->value);
    return d->a->package ? AUR_OK : AUR_E_NOMEM;
}

/* int or decimal, no sign, no exponent: "30", "2.5", ".5", "5." */
static bool parse_seconds(const char *s, double *out)
{
    const char *p = s;
    size_t digits = 0;
    char *end;

    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (*p != '\0' || digits == 0)
        return false;
    errno = 0;
    *out = strtod(s, &end);
    return *end == '\0' && errno == 0 && isfinite(*out);
}

static int parse_app(struct app_doc *d)
{
    struct aur__app_cfg *a = d->a;
    const struct aur__kv *kv;
    double t;
    int rc;

    rc = wrong_section(d, d->app);
    if (rc == AUR_OK)
        rc = aur__check_keys(d->ctx, &d->app->cfg, app_rules,
                             AUR__ARRAY_LEN(app_rules));
    if (rc == AUR_OK)
        rc = parse_transport(d);
    if (rc == AUR_OK)
        rc = parse_package(d);
    if (rc != AUR_OK)
        return rc;

    kv = aur__sec_kv(d->app, "enabled");
    if (strcmp(kv->value, "true") != 0 && strcmp(kv->value, "false") != 0)
        return fail_kv(d, kv, "must be true or false");
    a->enabled = kv->value[0] == 't';
    d->active = d->c->mcp_enabled && a->enabled;

    kv = aur__sec_kv(d->app, "timeout_seconds");
    if (!parse_seconds(kv->value, &t) || !(t > 0) || t > MAX_TIMEOUT_S)
        return fail_kv(d, kv, "must be a finite number of seconds > 0 "
                              "(at most 1000000000)");
    a->timeout_s = t;
    a->timeout_ms = (int64_t)ceil(t * 1000.0);
    if (a->timeout_ms < 1)
        a->timeout_ms = 1;

    a->budgets = d->c->budgets;
    rc = aur__budgets_parse(d->ctx, d->ini->file, d->app, &a->budgets);
    if (rc != AUR_OK)
        return rc;

    a->event_mode = AUR__EV_DISABLED;
    if ((kv = aur__sec_kv(d->app, "event_mode"))) {
        if (strcmp(kv->value, "disabled") == 0)
            a->event_mode = AUR__EV_DISABLED;
        else if (strcmp(kv->value, "world_events") == 0)
            a->event_mode = AUR__EV_WORLD;
        else if (strcmp(kv->value, "legacy_aurora_event") == 0)
            a->event_mode = AUR__EV_LEGACY;
        else
            return fail_kv(d, kv, "must be disabled, world_events or "
                                  "legacy_aurora_event");
        /* Events arrive unasked: they need a channel from the server
         * that is always there (docs/transports.md). */
        if (a->event_mode == AUR__EV_WORLD &&
            !(a->transport->caps & AUR_TCAP_STREAM))
            return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                                 "world_events is not supported with "
                                 "transport = %s (it keeps no stream open "
                                 "from the server)",
                                 aur__sec_kv(d->app, "transport")->value);
        if (a->event_mode != AUR__EV_DISABLED &&
            !aur__config_has_plugin(d->c, "ext-world-events"))
            return fail_kv(d, kv, "needs plugin ext-world-events in "
                                  "host.ini plugins");
    }
    return AUR_OK;
}

static int push_kv(struct aur__ini_sec *sec, const char *key,
                   const char *value, int line)
{
    return aur__ini_add(sec, key, strlen(key), value, strlen(value), line);
}

/* The transport's keys, then the host's added: package, timeout_ms and
 * config_dir, on the lines they come from. */
static int build_endpoint(struct app_doc *d)
{
    const struct aur__transport_def *def = d->a->transport;
    char ms[32];
    int rc = wrong_section(d, d->ep);
    size_t nkeys = 0;

    while (def->keys && def->keys[nkeys].key)
        nkeys++;
    if (rc == AUR_OK && def->keys)
        rc = aur__check_keys(d->ctx, &d->ep->cfg, def->keys, nkeys);
    if (rc != AUR_OK)
        return rc;
    snprintf(ms, sizeof ms, "%lld", (long long)d->a->timeout_ms);
    rc = push_kv(d->ep, "package", d->a->package,
                 aur__sec_kv(d->app, "package")->line);
    if (rc == AUR_OK)
        rc = push_kv(d->ep, "timeout_ms", ms,
                     aur__sec_kv(d->app, "timeout_seconds")->line);
    if (rc == AUR_OK)
        rc = push_kv(d->ep, "config_dir", d->c->dir, 0);
    if (rc != AUR_OK)
        return rc;
    d->a->endpoint = d->ep->cfg;
    d->a->endpoint.file = d->a->file;
    memset(&d->ep->cfg, 0, sizeof d->ep->cfg);
    return AUR_OK;
}

/*
 * The transport's own check of its values.  Its errors come through
 * cfg_fail, which names file, line and key; one that does not (a plugin
 * that wrote err itself) is put at the section's header, so every config
 * error reads the same.
 */
static int transport_check(struct app_doc *d)
{
    const struct aur__transport_def *def = d->a->transport;
    struct aur__config_diag where;
    char key[80];
    int rc;

    if (!def->check)
        return AUR_OK;
    memset(&where, 0, sizeof where);
    d->a->endpoint.diag = &where;
    aur_error_clear(d->ctx->err);
    rc = def->check(def->state, &d->a->endpoint, d->active, d->ctx->err);
    d->a->endpoint.diag = NULL;
    if (rc == AUR_OK || rc == AUR_E_NOMEM)
        return rc;
    if (rc == AUR_E_CONFIG && where.file[0]) {
        if (d->ctx->diag)
            *d->ctx->diag = where;
        return rc;
    }
    snprintf(key, sizeof key, "[%.70s]", d->a->endpoint.section);
    return aur__cfg_fail(d->ctx, d->ini->file, d->a->endpoint.line, key,
                         "%s", d->ctx->err && d->ctx->err->msg[0]
                                   ? d->ctx->err->msg
                                   : aur_strerror(rc));
}

static int load_one(struct aur__cfg_ctx *ctx, struct app_doc *d,
                    const char *rel)
{
    struct aur__config *c = d->c;
    struct aur__app_cfg *a = &c->apps[c->napps];
    int rc;

    memset(a, 0, sizeof *a);
    d->a = a;
    d->ini = NULL;
    d->app = d->ep = NULL;
    d->active = false;
    rc = aur__ini_load(ctx, rel, false, &d->ini);
    if (rc != AUR_OK)
        return rc;
    if (!(a->file = strdup(rel))) {
        rc = AUR_E_NOMEM;
        goto out;
    }
    rc = check_sections(d);
    if (rc == AUR_OK)
        rc = parse_app(d);
    if (rc == AUR_OK)
        rc = build_endpoint(d);
    if (rc == AUR_OK)
        rc = transport_check(d);
out:
    if (rc == AUR_E_NOMEM)
        rc = aur__cfg_nomem(ctx, rel);
    if (rc == AUR_OK)
        c->napps++;
    else
        aur__app_cfg_release(a);
    aur__ini_free(d->ini);
    return rc;
}

static int cmp_names(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The *.ini names of apps.d, sorted; *n = 0 when apps.d is absent. */
static int list_files(struct aur__cfg_ctx *ctx, char ***out, size_t *n)
{
    char *path = aur__path_join(ctx->dir, APPS_DIR);
    struct dirent *e;
    char **v = NULL, **nv;
    size_t cap = 0;
    int rc = AUR_OK;
    DIR *dh;

    *n = 0;
    if (!path)
        return aur__cfg_nomem(ctx, APPS_DIR);
    dh = opendir(path);
    free(path);
    if (!dh) {
        if (errno == ENOENT)
            return AUR_OK;
        return aur__cfg_fail(ctx, APPS_DIR, 0, NULL, "cannot read: %s",
                             strerror(errno));
    }
    while ((e = readdir(dh))) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".ini") != 0)
            continue;
        if (*n == MAX_APP_FILES) {
            rc = aur__cfg_fail(ctx, APPS_DIR, 0, NULL,
                               "more than %d App files", MAX_APP_FILES);
            break;
        }
        if (!(nv = aur__grow(v, &cap, *n + 1, sizeof *v, 16, SIZE_MAX))) {
            rc = aur__cfg_nomem(ctx, APPS_DIR);
            break;
        }
        v = nv;
        if (!(v[*n] = aur__path_join(APPS_DIR, e->d_name))) {
            rc = aur__cfg_nomem(ctx, APPS_DIR);
            break;
        }
        (*n)++;
    }
    closedir(dh);
    if (rc != AUR_OK) {
        while (*n > 0)
            free(v[--*n]);
        free(v);
        return rc;
    }
    /* "apps.d/" is a common prefix, so this is file-name byte order. */
    if (*n)
        qsort(v, *n, sizeof *v, cmp_names);
    *out = v;
    return AUR_OK;
}

int aur__config_apps_dir(struct aur__cfg_ctx *ctx, struct aur__config *c,
                         const struct aur__transport_def *defs, size_t ndefs)
{
    struct app_doc d = {ctx, c, defs, ndefs, NULL, NULL, NULL, NULL, false};
    char **files = NULL;
    size_t n = 0, i;
    int rc;

    rc = list_files(ctx, &files, &n);
    if (rc != AUR_OK || n == 0)
        return rc;
    c->apps = calloc(n, sizeof *c->apps);
    if (!c->apps)
        rc = aur__cfg_nomem(ctx, APPS_DIR);
    for (i = 0; rc == AUR_OK && i < n; i++)
        rc = load_one(ctx, &d, files[i]);
    for (i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

void aur__app_cfg_release(struct aur__app_cfg *a)
{
    aur__cfg_release(&a->endpoint);
    free(a->file);
    free(a->package);
    memset(a, 0, sizeof *a);
}
