/*
 * config_app.c - apps.d/<name>.ini: one App per file (aurora-semantics §3.1,
 * §3.3 translated to ini), and the path rules for working_dir / ca_file.
 *
 * Files are taken in strcmp order of their names ("config order"); names
 * not ending in ".ini" are ignored; a missing apps.d means no Apps.
 * Single-threaded; getenv is read for auth_env only (never logged: error
 * texts name the variable, not its value).
 */
#include "aur_setup.h"

#include <arpa/inet.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>

#include <aurora/aur_host.h>

#include "config_int.h"
#include "names.h"

#define APPS_DIR "apps.d"
#define MAX_APP_FILES 4096
#define MAX_TIMEOUT_S 1e9 /* keeps timeout_ms and deadlines far from int64 */

static const struct aur__key_rule app_rules[] = {
    {"package", true, false},         {"enabled", true, false},
    {"transport", true, false},       {"timeout_seconds", true, false},
    {"event_mode", false, false},
    AUR__BUDGET_KEY_RULES,
};
static const struct aur__key_rule stdio_rules[] = {
    {"command", true, false},
    {"arg", false, true},
    {"working_dir", true, false},
    {"env", false, true},
};
static const struct aur__key_rule http_rules[] = {
    {"url", true, false},
    {"auth_env", false, false},
    {"ca_file", false, false},
};

struct app_doc {
    struct aur__cfg_ctx *ctx;
    struct aur__config *c;
    struct aur__ini *ini;
    struct aur__ini_sec *app, *ep; /* ep: [stdio] or [http] */
    struct aur__app_cfg *a;
    bool active;
};

static int fail_kv(struct app_doc *d, const struct aur__kv *kv,
                   const char *what)
{
    return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key, "%s", what);
}

/* ------------------------------------------------------------------ */
/* paths                                                              */
/* ------------------------------------------------------------------ */

const char *aur__rel_path_problem(char *path)
{
    char *p;
    const char *seg;

    for (p = path; *p; p++)
        if (*p == '\\')
            *p = '/';
    if (*path == '\0')
        return "must not be blank";
    if (*path == '/')
        return "must be a relative path";
    if (((path[0] >= 'A' && path[0] <= 'Z') ||
         (path[0] >= 'a' && path[0] <= 'z')) &&
        path[1] == ':')
        return "must not start with a drive letter";
    for (seg = path; seg; seg = strchr(seg, '/'), seg = seg ? seg + 1 : NULL)
        if (seg[0] == '.' && seg[1] == '.' && (seg[2] == '/' || !seg[2]))
            return "must not contain a '..' segment";
    return NULL;
}

static bool inside(const char *root, const char *p)
{
    size_t n = strlen(root);

    if (strcmp(root, "/") == 0)
        return true;
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/*
 * Resolve root/rel component by component: every existing component goes
 * through realpath (so symlinks are followed), the first missing one and
 * what follows are appended as written ('.' and empty segments dropped).
 * A dangling symlink cannot be proved to stay inside: *why says so.
 * Returns AUR_OK with *out, AUR_E_NOMEM, or AUR_E_CONFIG with *why.
 */
static int resolve_under(const char *root, const char *rel, char **out,
                         const char **why)
{
    char *cur = strdup(root), *copy = strdup(rel), *save = NULL, *seg;
    bool missing = false;
    int rc = AUR_OK;

    if (!cur || !copy) {
        rc = AUR_E_NOMEM;
        goto out;
    }
    for (seg = strtok_r(copy, "/", &save); seg;
         seg = strtok_r(NULL, "/", &save)) {
        char *next, *real;
        struct stat st;
        if (strcmp(seg, ".") == 0)
            continue;
        next = aur__path_join(cur, seg);
        if (!next) {
            rc = AUR_E_NOMEM;
            goto out;
        }
        if (missing || lstat(next, &st) != 0) {
            missing = true;
            free(cur);
            cur = next;
            continue;
        }
        real = realpath(next, NULL);
        free(next);
        if (!real) {
            /* lstat saw it, so it is a link that leads nowhere (or we
             * may not look): it cannot be shown to stay inside. */
            if (errno == ENOMEM) {
                rc = AUR_E_NOMEM;
            } else {
                rc = AUR_E_CONFIG;
                *why = "cannot be resolved (dangling or looping symbolic "
                       "link?)";
            }
            goto out;
        }
        free(cur);
        cur = real;
        if (!inside(root, cur)) {
            rc = AUR_E_CONFIG;
            *why = "resolves outside the config directory (symbolic link)";
            goto out;
        }
    }
    *out = cur;
    cur = NULL;
out:
    free(cur);
    free(copy);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the HTTPS URL rule                                                 */
/* ------------------------------------------------------------------ */

static bool hexdig(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

static bool host_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* RFC 3986 pchar plus '/' and '?', with '%' checked by the caller. */
static bool path_char(int c)
{
    return host_char(c) || c == '~' || (c && strchr("!$&'()*+,;=:@/?", c));
}

const char *aur__url_problem(const char *url)
{
    const char *p, *auth, *aend, *host_end;

    for (p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return "must not contain blanks, control or non-ASCII "
                   "characters";
    if (strncasecmp(url, "https://", 8) != 0)
        return "must be an https:// URL";
    if (strchr(url, '#'))
        return "must not contain a fragment (#...)";
    auth = url + 8;
    aend = auth + strcspn(auth, "/?");
    if (memchr(auth, '@', (size_t)(aend - auth)))
        return "must not contain userinfo (user@ or user:password@)";
    if (*auth == '[') {
        host_end = memchr(auth, ']', (size_t)(aend - auth));
        if (!host_end || host_end == auth + 1)
            return "has a malformed IPv6 host";
        for (p = auth + 1; p < host_end; p++)
            if (!hexdig((unsigned char)*p) && *p != ':' && *p != '.')
                return "has a malformed IPv6 host";
        {
            /* The literal itself must parse, as curl will insist later. */
            char lit[64];
            struct in6_addr a6;
            size_t ln = (size_t)(host_end - auth - 1);
            if (ln >= sizeof lit)
                return "has a malformed IPv6 host";
            memcpy(lit, auth + 1, ln);
            lit[ln] = '\0';
            if (inet_pton(AF_INET6, lit, &a6) != 1)
                return "has a malformed IPv6 host";
        }
        host_end++;
    } else {
        for (host_end = auth; host_end < aend && *host_end != ':'; host_end++)
            if (!host_char((unsigned char)*host_end))
                return "has a bad character in the host";
        if (host_end == auth)
            return "has no host";
        if (host_end - auth > 253) /* the DNS limit */
            return "has a host name longer than 253 characters";
    }
    if (host_end < aend) {
        long port = 0;
        if (*host_end != ':' || host_end + 1 == aend || aend - host_end > 6)
            return "has a bad port";
        for (p = host_end + 1; p < aend; p++) {
            if (*p < '0' || *p > '9')
                return "has a bad port";
            port = port * 10 + (*p - '0');
        }
        if (port < 1 || port > 65535)
            return "has a bad port";
    }
    for (p = aend; *p; p++) {
        if (*p == '%') {
            if (!hexdig((unsigned char)p[1]) || !hexdig((unsigned char)p[2]))
                return "has a bad percent-escape";
            p += 2;
        } else if (!path_char((unsigned char)*p)) {
            return "has a character that must be percent-encoded";
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* one App file                                                       */
/* ------------------------------------------------------------------ */

static bool has_plugin(const struct aur__config *c, const char *name)
{
    size_t i;

    for (i = 0; i < c->nplugins; i++)
        if (strcmp(c->plugins[i], name) == 0)
            return true;
    return false;
}

/* A key that belongs in another section gets a pointed message. */
static int wrong_section(struct app_doc *d, const struct aur__ini_sec *sec)
{
    static const struct {
        const struct aur__key_rule *rules;
        size_t n;
        const char *section, *hint;
    } owners[] = {
        {app_rules, AUR__ARRAY_LEN(app_rules), "app", "belongs in [app]"},
        {stdio_rules, AUR__ARRAY_LEN(stdio_rules), "stdio",
         "belongs in [stdio] (transport = stdio only)"},
        {http_rules, AUR__ARRAY_LEN(http_rules), "http",
         "belongs in [http] (transport = streamable_http only)"},
    };
    size_t i, j, k;

    for (i = 0; i < sec->cfg.n; i++)
        for (j = 0; j < AUR__ARRAY_LEN(owners); j++) {
            if (strcmp(owners[j].section, sec->cfg.section) == 0)
                continue;
            for (k = 0; k < owners[j].n; k++)
                if (strcmp(owners[j].rules[k].key, sec->cfg.kv[i].key) == 0)
                    return fail_kv(d, &sec->cfg.kv[i], owners[j].hint);
        }
    return AUR_OK;
}

static int check_sections(struct app_doc *d)
{
    size_t i;

    for (i = 0; i < d->ini->nsecs; i++) {
        const struct aur__ini_sec *s = &d->ini->secs[i];
        if (strcmp(s->cfg.section, "app") != 0 &&
            strcmp(s->cfg.section, "stdio") != 0 &&
            strcmp(s->cfg.section, "http") != 0) {
            static const char *const known[] = {"app", "stdio", "http"};
            const char *near = aur_suggest(s->cfg.section, known, 3);
            char key[64];
            snprintf(key, sizeof key, "[%.60s]", s->cfg.section);
            return aur__cfg_fail(d->ctx, d->ini->file, s->line, key,
                                 "unknown section (want app, stdio, http)%s%s%s",
                                 near ? "; did you mean [" : "",
                                 near ? near : "", near ? "]?" : "");
        }
    }
    d->app = aur__ini_find(d->ini, "app");
    if (!d->app)
        return aur__cfg_fail(d->ctx, d->ini->file, 0, "[app]",
                             "missing section");
    return AUR_OK;
}

static int parse_transport(struct app_doc *d)
{
    const struct aur__kv *kv = aur__sec_kv(d->app, "transport");
    struct aur__ini_sec *other;
    bool stdio;
    char key[16];

    if (strcmp(kv->value, "stdio") == 0)
        d->a->transport = AUR__T_STDIO;
    else if (strcmp(kv->value, "streamable_http") == 0)
        d->a->transport = AUR__T_HTTP;
    else
        return fail_kv(d, kv, "must be stdio or streamable_http");
    stdio = d->a->transport == AUR__T_STDIO;
    other = aur__ini_find(d->ini, stdio ? "http" : "stdio");
    if (other && other->cfg.n > 0) {
        /* Name the first key that cannot apply, on its own line (a url
         * in [http] of a stdio App, a command in [stdio] of an HTTP
         * one), rather than only the section header. */
        const struct aur__kv *x = &other->cfg.kv[0];
        return aur__cfg_fail(d->ctx, d->ini->file, x->line, x->key,
                             "[%s] is not allowed with transport = %s "
                             "(line %d)",
                             other->cfg.section, kv->value, kv->line);
    }
    if (other) {
        snprintf(key, sizeof key, "[%s]", other->cfg.section);
        return aur__cfg_fail(d->ctx, d->ini->file, other->line, key,
                             "not allowed with transport = %s (line %d)",
                             kv->value, kv->line);
    }
    d->ep = aur__ini_find(d->ini, stdio ? "stdio" : "http");
    if (!d->ep)
        return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                             "%s needs a [%s] section", kv->value,
                             stdio ? "stdio" : "http");
    if (!has_plugin(d->c, stdio ? "transport-stdio" : "transport-http"))
        return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                             "needs plugin %s in host.ini plugins",
                             stdio ? "transport-stdio" : "transport-http");
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
        rc = aur__check_keys(d->ctx, d->app, app_rules,
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
        if (a->transport == AUR__T_HTTP && a->event_mode == AUR__EV_WORLD)
            return fail_kv(d, kv, "world_events is not supported with "
                                  "transport = streamable_http");
        if (a->event_mode != AUR__EV_DISABLED &&
            !has_plugin(d->c, "ext-world-events"))
            return fail_kv(d, kv, "needs plugin ext-world-events in "
                                  "host.ini plugins");
    }
    return AUR_OK;
}

/* Copy the values of a repeatable key into a fresh array. */
static int collect(struct app_doc *d, const char *key, char ***out,
                   size_t *n)
{
    const struct aur_cfg *cfg = &d->ep->cfg;
    size_t i, k = 0, count = aur__cfg_count(cfg, key);

    if (count == 0)
        return AUR_OK;
    *out = calloc(count, sizeof **out);
    if (!*out)
        return AUR_E_NOMEM;
    for (i = 0; i < cfg->n; i++) {
        if (strcmp(cfg->kv[i].key, key) != 0)
            continue;
        if (!((*out)[k] = strdup(cfg->kv[i].value)))
            return AUR_E_NOMEM;
        *n = ++k;
    }
    return AUR_OK;
}

static int parse_stdio(struct app_doc *d)
{
    struct aur__app_cfg *a = d->a;
    struct aur__kv *kv;
    const char *why = NULL;
    struct stat st;
    size_t i, j;
    int rc;

    kv = aur__sec_kv(d->ep, "command");
    if (*kv->value == '\0')
        return fail_kv(d, kv, "must not be blank");
    for (i = 0; i < d->ep->cfg.n; i++) {
        const struct aur__kv *x = &d->ep->cfg.kv[i];
        if (strcmp(x->key, "arg") == 0 && *x->value == '\0')
            return fail_kv(d, x, "must not be blank");
        if (strcmp(x->key, "env") != 0)
            continue;
        if (!aur__valid_env_name(x->value))
            return fail_kv(d, x, "must be an environment variable name "
                                 "[A-Za-z_][A-Za-z0-9_]*");
        const struct aur__env_deny *deny = aur__env_deny_row(x->value);
        if (deny)
            return aur__cfg_fail(d->ctx, d->ini->file, x->line, x->key,
                                 "%s can make the App's loader or "
                                 "interpreter run foreign code (%s: %s); "
                                 "it is never passed to an App",
                                 x->value, deny->family, deny->why);
        for (j = 0; j < i; j++)
            if (strcmp(d->ep->cfg.kv[j].key, "env") == 0 &&
                strcmp(d->ep->cfg.kv[j].value, x->value) == 0)
                return aur__cfg_fail(d->ctx, d->ini->file, x->line, x->key,
                                     "%s listed twice (first on line %d)",
                                     x->value, d->ep->cfg.kv[j].line);
    }
    /* One rule for paths in a config file: relative to the config
     * directory, wherever the host is started from.  A bare name goes
     * through PATH (execvp's rule); a name with a '/' is a path. */
    if (strchr(kv->value, '/') && kv->value[0] != '/') {
        const char *rel = kv->value;
        while (rel[0] == '.' && rel[1] == '/')
            for (rel += 2; *rel == '/';)
                rel++;
        char *abs = aur__path_join(d->c->dir, rel);
        if (!abs)
            return AUR_E_NOMEM;
        free(kv->value);
        kv->value = abs;
    }
    if (!(a->command = strdup(kv->value)))
        return AUR_E_NOMEM;
    rc = collect(d, "arg", &a->args, &a->nargs);
    if (rc == AUR_OK)
        rc = collect(d, "env", &a->env, &a->nenv);
    if (rc != AUR_OK)
        return rc;

    kv = aur__sec_kv(d->ep, "working_dir");
    if ((why = aur__rel_path_problem(kv->value)))
        return fail_kv(d, kv, why);
    rc = resolve_under(d->c->dir, kv->value, &a->working_dir_abs, &why);
    if (rc == AUR_E_CONFIG)
        return fail_kv(d, kv, why);
    if (rc != AUR_OK)
        return rc;
    if (d->active && stat(a->working_dir_abs, &st) != 0)
        return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                             "directory %s does not exist", kv->value);
    if (d->active && !S_ISDIR(st.st_mode))
        return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                             "%s is not a directory", kv->value);
    /* The transport gets the resolved directory. */
    free(kv->value);
    return (kv->value = strdup(a->working_dir_abs)) ? AUR_OK : AUR_E_NOMEM;
}

static int parse_http(struct app_doc *d)
{
    struct aur__app_cfg *a = d->a;
    struct aur__kv *kv;
    const char *why;
    struct stat st;

    kv = aur__sec_kv(d->ep, "url");
    if ((why = aur__url_problem(kv->value)))
        return fail_kv(d, kv, why);
    if (!(a->url = strdup(kv->value)))
        return AUR_E_NOMEM;

    if ((kv = aur__sec_kv(d->ep, "auth_env"))) {
        const char *v;
        if (!aur__valid_env_name(kv->value))
            return fail_kv(d, kv, "must be an environment variable name "
                                  "[A-Za-z_][A-Za-z0-9_]*");
        v = getenv(kv->value);
        if (d->active && (!v || !*v))
            return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                                 "environment variable %s is %s", kv->value,
                                 v ? "empty" : "not set");
        if (!(a->auth_env = strdup(kv->value)))
            return AUR_E_NOMEM;
    }

    if ((kv = aur__sec_kv(d->ep, "ca_file"))) {
        char *joined;
        if ((why = aur__rel_path_problem(kv->value)))
            return fail_kv(d, kv, why);
        joined = aur__path_join(d->c->dir, kv->value);
        if (!joined)
            return AUR_E_NOMEM;
        /* Symlinks are followed: a linked system bundle is fine. */
        a->ca_file_abs = realpath(joined, NULL);
        if (!a->ca_file_abs) {
            a->ca_file_abs = joined;
            joined = NULL;
        }
        free(joined);
        if (d->active && (stat(a->ca_file_abs, &st) != 0 ||
                          !S_ISREG(st.st_mode)))
            return aur__cfg_fail(d->ctx, d->ini->file, kv->line, kv->key,
                                 "%s is not a readable regular file",
                                 kv->value);
        free(kv->value);
        if (!(kv->value = strdup(a->ca_file_abs)))
            return AUR_E_NOMEM;
    }
    return AUR_OK;
}

static int push_kv(struct aur__ini_sec *sec, const char *key,
                   const char *value, int line)
{
    struct aur__kv *kv;

    if (sec->cfg.n == sec->cap) {
        size_t cap = sec->cap ? sec->cap * 2 : 4;
        kv = realloc(sec->cfg.kv, cap * sizeof *kv);
        if (!kv)
            return AUR_E_NOMEM;
        sec->cfg.kv = kv;
        sec->cap = cap;
    }
    kv = &sec->cfg.kv[sec->cfg.n];
    kv->key = strdup(key);
    kv->value = strdup(value);
    kv->line = line;
    if (!kv->key || !kv->value) {
        free(kv->key);
        free(kv->value);
        return AUR_E_NOMEM;
    }
    sec->cfg.n++;
    return AUR_OK;
}

/* Move the endpoint section into the App with the core-resolved keys. */
static int build_endpoint(struct app_doc *d)
{
    char ms[32];
    int rc;

    snprintf(ms, sizeof ms, "%lld", (long long)d->a->timeout_ms);
    rc = push_kv(d->ep, "package", d->a->package,
                 aur__sec_kv(d->app, "package")->line);
    if (rc == AUR_OK)
        rc = push_kv(d->ep, "timeout_ms", ms,
                     aur__sec_kv(d->app, "timeout_seconds")->line);
    if (rc != AUR_OK)
        return rc;
    d->a->endpoint = d->ep->cfg;
    d->a->endpoint.file = d->a->file;
    memset(&d->ep->cfg, 0, sizeof d->ep->cfg);
    return AUR_OK;
}

static int load_one(struct aur__cfg_ctx *ctx, struct aur__config *c,
                    const char *rel)
{
    struct app_doc d = {ctx, c, NULL, NULL, NULL, NULL, false};
    struct aur__app_cfg *a = &c->apps[c->napps];
    int rc;

    memset(a, 0, sizeof *a);
    d.a = a;
    rc = aur__ini_load(ctx, rel, false, &d.ini);
    if (rc != AUR_OK)
        return rc;
    if (!(a->file = strdup(rel))) {
        rc = AUR_E_NOMEM;
        goto out;
    }
    rc = check_sections(&d);
    if (rc == AUR_OK)
        rc = parse_app(&d);
    if (rc == AUR_OK)
        rc = wrong_section(&d, d.ep);
    if (rc == AUR_OK) {
        bool stdio = a->transport == AUR__T_STDIO;
        rc = aur__check_keys(ctx, d.ep, stdio ? stdio_rules : http_rules,
                             stdio ? AUR__ARRAY_LEN(stdio_rules)
                                   : AUR__ARRAY_LEN(http_rules));
        if (rc == AUR_OK)
            rc = stdio ? parse_stdio(&d) : parse_http(&d);
    }
    if (rc == AUR_OK)
        rc = build_endpoint(&d);
out:
    if (rc == AUR_E_NOMEM)
        rc = aur__cfg_nomem(ctx, rel);
    if (rc == AUR_OK)
        c->napps++;
    else
        aur__app_cfg_release(a);
    aur__ini_free(d.ini);
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
    char **v = NULL;
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
        if (*n == cap) {
            char **nv = realloc(v, (cap ? cap * 2 : 16) * sizeof *v);
            if (!nv) {
                rc = aur__cfg_nomem(ctx, APPS_DIR);
                break;
            }
            v = nv;
            cap = cap ? cap * 2 : 16;
        }
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

int aur__config_load_apps(struct aur__cfg_ctx *ctx, struct aur__config *c)
{
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
        rc = load_one(ctx, c, files[i]);
    for (i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

void aur__app_cfg_release(struct aur__app_cfg *a)
{
    size_t i;

    for (i = 0; i < a->nargs; i++)
        free(a->args[i]);
    free(a->args);
    for (i = 0; i < a->nenv; i++)
        free(a->env[i]);
    free(a->env);
    aur__cfg_release(&a->endpoint);
    free(a->file);
    free(a->package);
    free(a->command);
    free(a->working_dir_abs);
    free(a->url);
    free(a->auth_env);
    free(a->ca_file_abs);
    memset(a, 0, sizeof *a);
}
