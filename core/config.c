/*
 * config.c - aur__config_load: the config directory, host.ini, the
 * aur_cfg accessors.  apps.d is in config_app.c, agents.ini in
 * config_agents.c, the ini reader in config_ini.c.
 *
 * Every error goes through aur__cfg_fail, so each one names the file (as
 * relative to the config directory), the line and the key.  A failed load
 * frees everything it built; a loaded config is immutable.
 */
#include "aur_setup.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include <aurora/aur_host.h>

#include "config_int.h"

#define HOST_FILE "host.ini"

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

char *aur__path_join(const char *dir, const char *rel)
{
    size_t a = strlen(dir), b = strlen(rel);
    char *p = malloc(a + b + 2);

    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, rel, b + 1);
    }
    return p;
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

static const struct aur__key_rule host_rules[] = {
    {"plugins", true, false},  {"plugin_dir", false, false},
    {"journal", true, false},  {"log_file", false, false},
    {"log_level", false, false},
};

static const struct aur__key_rule mcp_rules[] = {
    {"enabled", false, false},   {"start_concurrency", false, false},
    {"max_pages", false, false}, {"max_tools", false, false},
    {"max_relist", false, false}, {"record_calls", false, false},
    AUR__BUDGET_KEY_RULES,
};

static bool plugin_name_ok(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-'))
            return false;
    return n > 0;
}

static int parse_plugins(struct aur__cfg_ctx *ctx, struct aur__config *c,
                         const struct aur__kv *kv)
{
    const char *p = kv->value;
    size_t i;

    while (*p) {
        const char *start;
        size_t n;
        char **v;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        start = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        n = (size_t)(p - start);
        if (!plugin_name_ok(start, n))
            return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                 "bad plugin name '%.*s' (want [a-z0-9-]+)",
                                 (int)(n > 64 ? 64 : n), start);
        for (i = 0; i < c->nplugins; i++)
            if (strlen(c->plugins[i]) == n && !memcmp(c->plugins[i], start, n))
                return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                     "plugin '%.*s' listed twice",
                                     (int)(n > 64 ? 64 : n), start);
        v = realloc(c->plugins, (c->nplugins + 1) * sizeof *v);
        if (!v)
            return aur__cfg_nomem(ctx, HOST_FILE);
        c->plugins = v;
        if (!(v[c->nplugins] = strndup(start, n)))
            return aur__cfg_nomem(ctx, HOST_FILE);
        c->nplugins++;
    }
    if (c->nplugins == 0)
        return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                             "names no plugin");
    return AUR_OK;
}

/* A host path value: absolute, or relative to the config directory.
 * An empty optional value means "not set". */
static int host_path(struct aur__cfg_ctx *ctx, const struct aur__ini_sec *sec,
                     const char *key, bool required, char **out)
{
    const struct aur__kv *kv = aur__sec_kv(sec, key);

    *out = NULL;
    if (!kv || *kv->value == '\0') {
        if (required)
            return aur__cfg_fail(ctx, HOST_FILE, kv ? kv->line : sec->line,
                                 key, "must name a file");
        return AUR_OK;
    }
    *out = kv->value[0] == '/' ? strdup(kv->value)
                               : aur__path_join(ctx->dir, kv->value);
    return *out ? AUR_OK : aur__cfg_nomem(ctx, HOST_FILE);
}

static int host_section(struct aur__cfg_ctx *ctx, struct aur__config *c,
                        const struct aur__ini_sec *sec)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    const struct aur__kv *kv;
    int rc;
    size_t i;

    rc = aur__check_keys(ctx, sec, host_rules,
                         AUR__ARRAY_LEN(host_rules));
    if (rc == AUR_OK)
        rc = parse_plugins(ctx, c, aur__sec_kv(sec, "plugins"));
    if (rc == AUR_OK)
        rc = host_path(ctx, sec, "plugin_dir", false, &c->plugin_dir);
    if (rc == AUR_OK)
        rc = host_path(ctx, sec, "journal", true, &c->journal);
    if (rc == AUR_OK)
        rc = host_path(ctx, sec, "log_file", false, &c->log_file);
    if (rc != AUR_OK)
        return rc;
    c->log_level = AUR_LOG_INFO;
    if ((kv = aur__sec_kv(sec, "log_level"))) {
        for (i = 0; i < AUR__ARRAY_LEN(levels); i++)
            if (strcmp(kv->value, levels[i]) == 0)
                break;
        if (i == AUR__ARRAY_LEN(levels))
            return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                 "must be error, warn, info or debug");
        c->log_level = (int)i;
    }
    return AUR_OK;
}

struct int_key {
    const char *key;
    int64_t lo, hi, dflt;
};

static const struct int_key mcp_ints[] = {
    {"start_concurrency", 1, 256, 64},
    {"max_pages", 1, 100000, 1024},
    {"max_tools", 1, 1000000, 10000},
    {"max_relist", 0, 100, 3},
};

/*
 * The per-App budgets (docs/budgets.md has the reasons for each default).
 * The notification budget is a token bucket: notification_burst messages
 * at once, max_notifications_per_second on average after that.
 */
static const struct budget_key {
    const char *key;
    int64_t lo, hi, dflt;
    size_t off;
} budget_keys[] = {
    {"max_notifications_per_second", 1, 1000000, 1000,
     offsetof(struct aur__budgets, notify_rate)},
    {"notification_burst", 1, 100000000, 250000,
     offsetof(struct aur__budgets, notify_burst)},
    {"max_schema_bytes", 16, 1073741824, 1048576,
     offsetof(struct aur__budgets, schema_bytes)},
    {"max_schema_depth", 1, 128, 64,
     offsetof(struct aur__budgets, schema_depth)},
    {"max_description_bytes", 1, 1073741824, 65536,
     offsetof(struct aur__budgets, desc_bytes)},
    {"max_result_bytes", 1, 1073741824, 4194304,
     offsetof(struct aur__budgets, result_bytes)},
    /* With the 16 MiB frame buffer, 160 + 32 MiB keep one App under
     * 256 MiB of peak RSS whatever it sends (docs/budgets.md). */
    {"max_app_memory_bytes", 1048576, 68719476736LL, 167772160,
     offsetof(struct aur__budgets, app_memory)},
    {"max_queued_bytes", 65536, 68719476736LL, 33554432,
     offsetof(struct aur__budgets, queued_bytes)},
    /* serve's worker count: one App can take every worker, no more. */
    {"max_in_flight", 1, 65536, 64, offsetof(struct aur__budgets, in_flight)},
};

void aur__budgets_default(struct aur__budgets *b)
{
    for (size_t i = 0; i < AUR__ARRAY_LEN(budget_keys); i++)
        *(int64_t *)((char *)b + budget_keys[i].off) = budget_keys[i].dflt;
}

int aur__budgets_parse(struct aur__cfg_ctx *ctx, const char *file,
                       const struct aur__ini_sec *sec, struct aur__budgets *b)
{
    for (size_t i = 0; sec && i < AUR__ARRAY_LEN(budget_keys); i++) {
        const struct budget_key *bk = &budget_keys[i];
        const struct aur__kv *kv = aur__sec_kv(sec, bk->key);
        int64_t v;
        if (!kv)
            continue;
        if (!aur__parse_int(kv->value, bk->lo, bk->hi, &v))
            return aur__cfg_fail(ctx, file, kv->line, kv->key,
                                 "must be an integer in %lld..%lld",
                                 (long long)bk->lo, (long long)bk->hi);
        *(int64_t *)((char *)b + bk->off) = v;
    }
    return AUR_OK;
}

static int mcp_section(struct aur__cfg_ctx *ctx, struct aur__config *c,
                       const struct aur__ini_sec *sec)
{
    int64_t v[AUR__ARRAY_LEN(mcp_ints)];
    const struct aur__kv *kv;
    size_t i;
    int rc;

    c->mcp_enabled = true;
    aur__budgets_default(&c->budgets);
    for (i = 0; i < AUR__ARRAY_LEN(mcp_ints); i++)
        v[i] = mcp_ints[i].dflt;
    if (sec) {
        rc = aur__check_keys(ctx, sec, mcp_rules,
                             AUR__ARRAY_LEN(mcp_rules));
        if (rc != AUR_OK)
            return rc;
        if ((kv = aur__sec_kv(sec, "enabled"))) {
            if (strcmp(kv->value, "true") != 0 &&
                strcmp(kv->value, "false") != 0)
                return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                     "must be true or false");
            c->mcp_enabled = kv->value[0] == 't';
        }
        if ((kv = aur__sec_kv(sec, "record_calls"))) {
            static const char *const words[] = {"off", "on", "with_data"};
            c->record_calls = -1;
            for (int w = 0; w < 3; w++)
                if (strcmp(kv->value, words[w]) == 0)
                    c->record_calls = w;
            if (c->record_calls < 0)
                return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                     "must be off, on or with_data");
        }
        for (i = 0; i < AUR__ARRAY_LEN(mcp_ints); i++) {
            const struct int_key *ik = &mcp_ints[i];
            kv = aur__sec_kv(sec, ik->key);
            if (kv && !aur__parse_int(kv->value, ik->lo, ik->hi, &v[i]))
                return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                     "must be an integer in %lld..%lld",
                                     (long long)ik->lo, (long long)ik->hi);
        }
        rc = aur__budgets_parse(ctx, HOST_FILE, sec, &c->budgets);
        if (rc != AUR_OK)
            return rc;
    }
    c->start_concurrency = (int)v[0];
    c->max_pages = (int)v[1];
    c->max_tools = (int)v[2];
    c->max_relist = (int)v[3];
    return AUR_OK;
}

static bool is_plugin(const struct aur__config *c, const char *name)
{
    size_t i;

    for (i = 0; i < c->nplugins; i++)
        if (strcmp(c->plugins[i], name) == 0)
            return true;
    return false;
}

static int load_host(struct aur__cfg_ctx *ctx, struct aur__config *c)
{
    struct aur__ini *ini = NULL;
    struct aur__ini_sec *host;
    size_t i, n = 0;
    int rc;

    rc = aur__ini_load(ctx, HOST_FILE, false, &ini);
    if (rc != AUR_OK)
        return rc;
    host = aur__ini_find(ini, "host");
    if (!host) {
        rc = aur__cfg_fail(ctx, HOST_FILE, 0, "[host]", "missing section");
        goto out;
    }
    rc = host_section(ctx, c, host);
    if (rc == AUR_OK)
        rc = mcp_section(ctx, c, aur__ini_find(ini, "mcp"));
    if (rc != AUR_OK)
        goto out;
    /* The remaining sections must each belong to a deployed plugin. */
    for (i = 0; i < ini->nsecs; i++) {
        struct aur__ini_sec *s = &ini->secs[i];
        if (strcmp(s->cfg.section, "host") == 0 ||
            strcmp(s->cfg.section, "mcp") == 0)
            continue;
        if (!is_plugin(c, s->cfg.section)) {
            const char *names[66], *near;
            size_t nn = 0;
            char key[64];
            names[nn++] = "host";
            names[nn++] = "mcp";
            for (size_t p = 0; p < c->nplugins && nn < 66; p++)
                names[nn++] = c->plugins[p];
            near = aur_suggest(s->cfg.section, names, nn);
            snprintf(key, sizeof key, "[%.60s]", s->cfg.section);
            rc = aur__cfg_fail(ctx, HOST_FILE, s->line, key,
                               "unknown section (not host, mcp or a plugin "
                               "named in plugins)%s%s%s",
                               near ? "; did you mean [" : "",
                               near ? near : "", near ? "]?" : "");
            goto out;
        }
        n++;
    }
    if (n) {
        c->plugin_sections = calloc(n, sizeof *c->plugin_sections);
        if (!c->plugin_sections) {
            rc = aur__cfg_nomem(ctx, HOST_FILE);
            goto out;
        }
    }
    for (i = 0; i < ini->nsecs; i++) {
        struct aur__ini_sec *s = &ini->secs[i];
        if (strcmp(s->cfg.section, "host") == 0 ||
            strcmp(s->cfg.section, "mcp") == 0)
            continue;
        /* Moved, not copied: the document no longer owns it. */
        c->plugin_sections[c->nplugin_sections] = s->cfg;
        c->plugin_sections[c->nplugin_sections].file = c->host_file;
        c->nplugin_sections++;
        memset(&s->cfg, 0, sizeof s->cfg);
    }
out:
    aur__ini_free(ini);
    return rc;
}

/* ------------------------------------------------------------------ */
/* load / free                                                        */
/* ------------------------------------------------------------------ */

int aur__config_load(const char *dir, struct aur__config **out,
                     struct aur__config_diag *diag, struct aur_error *err)
{
    struct aur__cfg_ctx ctx = {NULL, diag, err};
    struct aur__config *c;
    struct stat st;
    int rc;

    *out = NULL;
    if (diag)
        memset(diag, 0, sizeof *diag);
    c = calloc(1, sizeof *c);
    if (!c)
        return aur__cfg_nomem(&ctx, dir);
    c->dir = realpath(dir, NULL);
    if (!c->dir) {
        rc = errno == ENOMEM ? aur__cfg_nomem(&ctx, dir)
                             : aur__cfg_fail(&ctx, dir, 0, NULL,
                                             "config directory: %s",
                                             strerror(errno));
        goto out;
    }
    if (stat(c->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        rc = aur__cfg_fail(&ctx, dir, 0, NULL, "not a directory");
        goto out;
    }
    ctx.dir = c->dir;
    if (!(c->host_file = strdup(HOST_FILE))) {
        rc = aur__cfg_nomem(&ctx, HOST_FILE);
        goto out;
    }
    rc = load_host(&ctx, c);
    if (rc == AUR_OK)
        rc = aur__config_load_apps(&ctx, c);
    if (rc == AUR_OK)
        rc = aur__config_load_agents(&ctx, c);
out:
    if (rc != AUR_OK) {
        aur__config_free(c);
        return rc;
    }
    aur_error_clear(err);
    *out = c;
    return AUR_OK;
}

void aur__config_free(struct aur__config *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->nplugins; i++)
        free(c->plugins[i]);
    free(c->plugins);
    for (i = 0; i < c->nplugin_sections; i++)
        aur__cfg_release(&c->plugin_sections[i]);
    free(c->plugin_sections);
    for (i = 0; i < c->napps; i++)
        aur__app_cfg_release(&c->apps[i]);
    free(c->apps);
    for (i = 0; i < c->nagents; i++)
        aur__agent_cfg_release(&c->agents[i]);
    free(c->agents);
    free(c->agents_file);
    free(c->plugin_dir);
    free(c->journal);
    free(c->log_file);
    free(c->host_file);
    free(c->dir);
    free(c);
}

const struct aur_cfg *aur__config_plugin_section(const struct aur__config *c,
                                                 const char *name)
{
    static char empty_file[] = HOST_FILE, empty_name[] = "";
    static const struct aur_cfg empty = {empty_file, empty_name, NULL, 0};
    size_t i;

    for (i = 0; c && i < c->nplugin_sections; i++)
        if (strcmp(c->plugin_sections[i].section, name) == 0)
            return &c->plugin_sections[i];
    return &empty;
}

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

const char *aur__transport_word(enum aur__transport t)
{
    return t == AUR__T_HTTP ? "streamable_http" : "stdio";
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
