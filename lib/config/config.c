/*
 * config.c - aur__config_load: the config directory and host.ini.  apps.d
 * is in config_app.c, agents.ini in config_agents.c, the budgets of [mcp]
 * and [app] in config_budgets.c, the ini reader in config_ini.c, and what
 * they all share (errors, the aur_cfg accessors) in config_cfg.c.
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
#include "env_rule.h"

#define HOST_FILE "host.ini"

static const struct aur_cfg_key host_rules[] = {
    {"plugins", true, false},  {"plugin_dir", false, false},
    {"journal", true, false},  {"log_file", false, false},
    {"log_level", false, false}, {"journal_password_env", false, false},
    {"journal_wait_ms", false, false},
};

static const struct aur_cfg_key mcp_rules[] = {
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

/*
 * journal: a file, or a PostgreSQL URI taken as written.  The URI may not
 * carry the password (host.ini is a file, and files get copied):
 * journal_password_env names the variable that holds it, which must be
 * set when the config is loaded, so `check` finds a missing one.
 */
static bool db_uri(const char *v)
{
    return strncmp(v, "postgresql://", 13) == 0 ||
           strncmp(v, "postgres://", 11) == 0;
}

static int journal_keys(struct aur__cfg_ctx *ctx, struct aur__config *c,
                        const struct aur__ini_sec *sec)
{
    const struct aur__kv *kv = aur__sec_kv(sec, "journal");
    const struct aur__kv *pw = aur__sec_kv(sec, "journal_password_env");
    const struct aur__kv *wait = aur__sec_kv(sec, "journal_wait_ms");
    int64_t ms;

    if (!kv || !db_uri(kv->value)) {
        if (pw || wait)
            return aur__cfg_fail(ctx, HOST_FILE, (pw ? pw : wait)->line,
                                 (pw ? pw : wait)->key,
                                 "applies to a postgresql:// journal only");
        return host_path(ctx, sec, "journal", true, &c->journal);
    }
    {
        const char *auth = strstr(kv->value, "://") + 3;
        size_t n = strcspn(auth, "/?#");
        const char *at = memchr(auth, '@', n);
        if ((at && memchr(auth, ':', (size_t)(at - auth))) ||
            strstr(kv->value, "password="))
            return aur__cfg_fail(ctx, HOST_FILE, kv->line, kv->key,
                                 "must not hold a password; name the "
                                 "variable that holds it with "
                                 "journal_password_env");
    }
    if (pw) {
        const char *v;
        if (!aur__valid_env_name(pw->value))
            return aur__cfg_fail(ctx, HOST_FILE, pw->line, pw->key,
                                 "must be an environment variable name "
                                 "[A-Za-z_][A-Za-z0-9_]*");
        v = getenv(pw->value);
        if (!v || !*v)
            return aur__cfg_fail(ctx, HOST_FILE, pw->line, pw->key,
                                 "environment variable %s is %s", pw->value,
                                 v ? "empty" : "not set");
        if (!(c->journal_password_env = strdup(pw->value)))
            return aur__cfg_nomem(ctx, HOST_FILE);
    }
    c->journal_wait_ms = 10000;
    if (wait) {
        if (!aur__parse_int(wait->value, 100, 3600000, &ms))
            return aur__cfg_fail(ctx, HOST_FILE, wait->line, wait->key,
                                 "must be an integer in [100, 3600000]");
        c->journal_wait_ms = ms;
    }
    if (!(c->journal = strdup(kv->value)))
        return aur__cfg_nomem(ctx, HOST_FILE);
    return AUR_OK;
}

static int host_section(struct aur__cfg_ctx *ctx, struct aur__config *c,
                        const struct aur__ini_sec *sec)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    const struct aur__kv *kv;
    int rc;
    size_t i;

    rc = aur__check_keys(ctx, &sec->cfg, host_rules,
                         AUR__ARRAY_LEN(host_rules));
    if (rc == AUR_OK)
        rc = parse_plugins(ctx, c, aur__sec_kv(sec, "plugins"));
    if (rc == AUR_OK)
        rc = host_path(ctx, sec, "plugin_dir", false, &c->plugin_dir);
    if (rc == AUR_OK)
        rc = journal_keys(ctx, c, sec);
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
        rc = aur__check_keys(ctx, &sec->cfg, mcp_rules,
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
        if (!aur__config_has_plugin(c, s->cfg.section)) {
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

int aur__config_load_host(const char *dir, struct aur__config **out,
                          struct aur__config_diag *diag,
                          struct aur_error *err)
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
out:
    if (rc != AUR_OK) {
        aur__config_free(c);
        return rc;
    }
    aur_error_clear(err);
    *out = c;
    return AUR_OK;
}

int aur__config_load_apps(struct aur__config *c,
                          const struct aur__transport_def *defs,
                          size_t ndefs, struct aur__config_diag *diag,
                          struct aur_error *err)
{
    struct aur__cfg_ctx ctx = {c->dir, diag, err};
    int rc;

    if (diag)
        memset(diag, 0, sizeof *diag);
    rc = aur__config_apps_dir(&ctx, c, defs, ndefs);
    if (rc == AUR_OK)
        rc = aur__config_load_agents(&ctx, c);
    if (rc == AUR_OK)
        aur_error_clear(err);
    return rc;
}

int aur__config_load(const char *dir, const struct aur__transport_def *defs,
                     size_t ndefs, struct aur__config **out,
                     struct aur__config_diag *diag, struct aur_error *err)
{
    int rc = aur__config_load_host(dir, out, diag, err);

    if (rc == AUR_OK &&
        (rc = aur__config_load_apps(*out, defs, ndefs, diag, err)) != AUR_OK) {
        aur__config_free(*out);
        *out = NULL;
    }
    return rc;
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
    free(c->journal_password_env);
    free(c->log_file);
    free(c->host_file);
    free(c->dir);
    free(c);
}

const struct aur_cfg *aur__config_plugin_section(const struct aur__config *c,
                                                 const char *name)
{
    static char empty_file[] = HOST_FILE, empty_name[] = "";
    static const struct aur_cfg empty = {empty_file, empty_name, NULL, 0, 0,
                                        NULL};
    size_t i;

    for (i = 0; c && i < c->nplugin_sections; i++)
        if (strcmp(c->plugin_sections[i].section, name) == 0)
            return &c->plugin_sections[i];
    return &empty;
}
