/*
 * config_cfg.c - what every part of the loader shares: the error that
 * names file, line and key (aur__cfg_fail), strict integers, the aur_cfg
 * accessors plugins read through the host vtable, and the words of the
 * frozen enums.  It calls no other config file, so the loader's files
 * depend on it and never the other way round.
 */
#include "aur_setup.h"

#include <stdarg.h>
#include <stdio.h>

#include <aurora/aur_host.h> /* aur_suggest */

#include "config_int.h"

int aur__cfg_fail(struct aur__cfg_ctx *ctx, const char *file, int line,
                  const char *key, const char *fmt, ...)
{
    char what[AUR_ERR_MSG_SIZE], where[AUR_ERR_MSG_SIZE];
    va_list ap;
    int n;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!key)
        key = "";
    n = snprintf(where, sizeof where, "%s", file ? file : "");
    if (line > 0 && n >= 0 && (size_t)n < sizeof where)
        n += snprintf(where + n, sizeof where - (size_t)n, ":%d", line);
    /* The key is cut as in diag, so message and diag always agree. */
    if (*key && n >= 0 && (size_t)n < sizeof where)
        snprintf(where + n, sizeof where - (size_t)n, ": %.*s",
                 (int)sizeof ctx->diag->key - 1, key);
    if (ctx->diag) {
        snprintf(ctx->diag->file, sizeof ctx->diag->file, "%s",
                 file ? file : "");
        ctx->diag->line = line > 0 ? line : 0;
        snprintf(ctx->diag->key, sizeof ctx->diag->key, "%s", key);
    }
    return aur_fail(ctx->err, AUR_E_CONFIG, 0, "%s: %s", where, what);
}

int aur__cfg_nomem(struct aur__cfg_ctx *ctx, const char *file)
{
    if (ctx->diag) {
        snprintf(ctx->diag->file, sizeof ctx->diag->file, "%s",
                 file ? file : "");
        ctx->diag->line = 0;
        ctx->diag->key[0] = '\0';
    }
    return aur_fail(ctx->err, AUR_E_NOMEM, ENOMEM, "%s: out of memory",
                    file ? file : "config");
}

bool aur__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    bool neg = false;
    uint64_t v = 0, lim;

    if (*s == '-') {
        neg = true;
        s++;
    }
    if (*s == '\0')
        return false;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9')
            return false;
        d = (unsigned)(*s - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg) {
        /* v <= 2^63 here; negate without overflowing int64_t. */
        int64_t r = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
        if (r < lo || r > hi)
            return false;
        *out = r;
        return true;
    }
    if ((int64_t)v < lo || (int64_t)v > hi)
        return false;
    *out = (int64_t)v;
    return true;
}

/* ------------------------------------------------------------------ */
/* host.ini                                                           */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* aur_cfg accessors: read-only, so any thread may call them          */
/* ------------------------------------------------------------------ */

static const struct aur__kv *cfg_last(const struct aur_cfg *cfg,
                                      const char *key)
{
    size_t i;

    for (i = cfg && key ? cfg->n : 0; i > 0; i--)
        if (strcmp(cfg->kv[i - 1].key, key) == 0)
            return &cfg->kv[i - 1];
    return NULL;
}

const char *aur__cfg_str(const struct aur_cfg *cfg, const char *key,
                         const char *dflt)
{
    const struct aur__kv *kv = cfg_last(cfg, key);

    return kv ? kv->value : dflt;
}

size_t aur__cfg_count(const struct aur_cfg *cfg, const char *key)
{
    size_t i, n = 0;

    for (i = 0; cfg && key && i < cfg->n; i++)
        n += strcmp(cfg->kv[i].key, key) == 0;
    return n;
}

const char *aur__cfg_str_at(const struct aur_cfg *cfg, const char *key,
                            size_t idx)
{
    size_t i;

    for (i = 0; cfg && key && i < cfg->n; i++)
        if (strcmp(cfg->kv[i].key, key) == 0 && idx-- == 0)
            return cfg->kv[i].value;
    return NULL;
}

int aur__cfg_int(const struct aur_cfg *cfg, const char *key, int64_t dflt,
                 int64_t *out, struct aur_error *err)
{
    const struct aur__kv *kv = cfg_last(cfg, key);

    if (!kv) {
        *out = dflt;
        return AUR_OK;
    }
    if (!aur__parse_int(kv->value, INT64_MIN, INT64_MAX, out))
        return aur_fail(err, AUR_E_CONFIG, 0, "%s:%d: %s: not an integer",
                        cfg->file ? cfg->file : "", kv->line, kv->key);
    return AUR_OK;
}

int aur__cfg_bool(const struct aur_cfg *cfg, const char *key, int dflt,
                  int *out, struct aur_error *err)
{
    const struct aur__kv *kv = cfg_last(cfg, key);

    if (!kv) {
        *out = dflt;
    } else if (strcmp(kv->value, "true") == 0) {
        *out = 1;
    } else if (strcmp(kv->value, "false") == 0) {
        *out = 0;
    } else {
        return aur_fail(err, AUR_E_CONFIG, 0,
                        "%s:%d: %s: must be true or false",
                        cfg->file ? cfg->file : "", kv->line, kv->key);
    }
    return AUR_OK;
}

void aur__transport_def_init(struct aur__transport_def *d, const char *name,
                             const struct aur_transport_ops *ops,
                             void *state)
{
    d->name = name;
    d->words = ops->words;
    d->section = ops->section ? ops->section : name;
    d->keys = ops->keys;
    d->caps = ops->caps;
    d->check = ops->check;
    d->state = state;
}

bool aur__transport_takes(const struct aur__transport_def *d, const char *w)
{
    if (strcmp(d->name, w) == 0)
        return true;
    for (const char *const *p = d->words; p && *p; p++)
        if (strcmp(*p, w) == 0)
            return true;
    return false;
}

bool aur__config_has_plugin(const struct aur__config *c, const char *name)
{
    for (size_t i = 0; i < c->nplugins; i++)
        if (strcmp(c->plugins[i], name) == 0)
            return true;
    return false;
}

const char *aur__transport_word(const struct aur__transport_def *d)
{
    return d->words && d->words[0] ? d->words[0] : d->name;
}

/* The i-th kv of key (SIZE_MAX: the last), or NULL. */
static const struct aur__kv *cfg_nth(const struct aur_cfg *cfg,
                                     const char *key, size_t i)
{
    const struct aur__kv *last = NULL;
    size_t k = 0;

    for (size_t j = 0; cfg && key && j < cfg->n; j++) {
        if (strcmp(cfg->kv[j].key, key) != 0)
            continue;
        if (k++ == i)
            return &cfg->kv[j];
        last = &cfg->kv[j];
    }
    return i == SIZE_MAX ? last : NULL;
}

int aur__cfg_line(const struct aur_cfg *cfg, const char *key, size_t i)
{
    const struct aur__kv *kv = cfg_nth(cfg, key, i);
    return kv ? kv->line : 0;
}

int aur__cfg_fail_at(const struct aur_cfg *cfg, const char *key, size_t i,
                     struct aur_error *err, const char *fmt, ...)
{
    const struct aur__kv *kv = cfg_nth(cfg, key, i);
    struct aur__cfg_ctx ctx = {NULL, cfg ? cfg->diag : NULL, err};
    char what[AUR_ERR_MSG_SIZE], sec[80];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (kv)
        return aur__cfg_fail(&ctx, cfg->file, kv->line, kv->key, "%s", what);
    snprintf(sec, sizeof sec, "[%.70s]", cfg && cfg->section ? cfg->section : "");
    return aur__cfg_fail(&ctx, cfg ? cfg->file : NULL, cfg ? cfg->line : 0,
                         key ? key : sec, "%s", what);
}

const char *aur__event_mode_word(enum aur__event_mode m)
{
    switch (m) {
    case AUR__EV_WORLD:
        return "world_events";
    case AUR__EV_LEGACY:
        return "legacy_aurora_event";
    case AUR__EV_DISABLED:
        break;
    }
    return "disabled";
}

int aur__check_keys(struct aur__cfg_ctx *ctx, const struct aur_cfg *cfg,
                    const struct aur_cfg_key *rules, size_t nrules)
{
    size_t i, j, k;

    for (i = 0; i < cfg->n; i++) {
        const struct aur__kv *kv = &cfg->kv[i];
        for (j = 0; j < nrules; j++)
            if (strcmp(rules[j].key, kv->key) == 0)
                break;
        if (j == nrules) {
            const char *names[64], *near;
            size_t nn = 0;
            for (j = 0; j < nrules && nn < 64; j++)
                names[nn++] = rules[j].key;
            near = aur_suggest(kv->key, names, nn);
            return aur__cfg_fail(ctx, cfg->file, kv->line, kv->key,
                                 "unknown key in [%s]%s%s%s",
                                 cfg->section, near ? " (did you mean " : "",
                                 near ? near : "", near ? "?)" : "");
        }
        if (rules[j].repeat)
            continue;
        for (k = 0; k < i; k++)
            if (strcmp(cfg->kv[k].key, kv->key) == 0)
                return aur__cfg_fail(ctx, cfg->file, kv->line, kv->key,
                                     "repeated key (first on line %d)",
                                     cfg->kv[k].line);
    }
    for (j = 0; j < nrules; j++)
        if (rules[j].required && !cfg_last(cfg, rules[j].key))
            return aur__cfg_fail(ctx, cfg->file, cfg->line, rules[j].key,
                                 "missing required key in [%s]",
                                 cfg->section);
    return AUR_OK;
}

int aur__cfg_keys_check(const struct aur_cfg *cfg,
                        const struct aur_cfg_key *keys, struct aur_error *err)
{
    struct aur__cfg_ctx ctx = {NULL, cfg ? cfg->diag : NULL, err};
    size_t n = 0;

    while (keys && keys[n].key)
        n++;
    return keys && cfg ? aur__check_keys(&ctx, cfg, keys, n) : AUR_OK;
}

char *aur__cfg_path(const struct aur_cfg *cfg, const char *key, size_t i,
                    unsigned flags, struct aur_error *err)
{
    const struct aur__kv *kv = cfg_nth(cfg, key, i);
    const char *dir = aur__cfg_str(cfg, "config_dir", NULL), *why = NULL;
    char *rel, *out = NULL;
    int rc;

    if (!kv) {
        aur_fail(err, AUR_E_INVAL, 0, "%s: no such value", key ? key : "");
        return NULL;
    }
    if (!dir) { /* an embedder's section: absolute paths as they are */
        if (kv->value[0] != '/') {
            aur__cfg_fail_at(cfg, key, i, err, "must be an absolute path "
                             "(this section has no config directory)");
            return NULL;
        }
        if (!(out = strdup(kv->value)))
            aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        return out;
    }
    if (!(rel = strdup(kv->value))) {
        aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    if ((why = aur__rel_path_problem(rel))) {
        rc = AUR_E_CONFIG;
    } else if (flags & AUR_PATH_CONFINED) {
        rc = aur__resolve_under(dir, rel, &out, &why);
    } else {
        /* Links are followed wherever they lead; a path that does not
         * exist yet is kept as written. */
        char *joined = aur__path_join(dir, rel);
        rc = joined ? AUR_OK : AUR_E_NOMEM;
        if (joined && !(out = realpath(joined, NULL)) && errno == ENOMEM)
            rc = AUR_E_NOMEM;
        if (out)
            free(joined);
        else
            out = joined;
    }
    free(rel);
    if (rc == AUR_E_CONFIG) {
        aur__cfg_fail_at(cfg, key, i, err, "%s", why);
        return NULL;
    }
    if (rc != AUR_OK) {
        free(out);
        aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    return out;
}

void aur__cfg_services(struct aur_host *h)
{
    h->cfg_str = aur__cfg_str;
    h->cfg_count = aur__cfg_count;
    h->cfg_str_at = aur__cfg_str_at;
    h->cfg_int = aur__cfg_int;
    h->cfg_bool = aur__cfg_bool;
    h->cfg_fail = aur__cfg_fail_at;
    h->cfg_line = aur__cfg_line;
    h->cfg_path = aur__cfg_path;
}
