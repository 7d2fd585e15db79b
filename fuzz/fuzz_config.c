/*
 * fuzz_config.c - libFuzzer target for the configuration loader
 * (lib/config/config*.c through aur__config_load), with the App-file rules of
 * transport-stdio and transport-http compiled in (fuzz_transports.c).
 *
 * One scratch config directory is made per process (mkdtemp under /tmp,
 * removed at exit); every input overwrites its files and loads it:
 *
 *   default build:        input = apps.d/x.ini, host.ini fixed and valid;
 *   -DFUZZ_CONFIG_SPLIT:  input = host.ini NUL app ini [NUL agents.ini];
 *                         without a NUL the whole input is host.ini and
 *                         the app is fixed and valid.
 *
 * The directory also holds srv/ and certs/ca.pem so working_dir and
 * ca_file can resolve, and AUR_FUZZ_TOKEN is set for auth_env.  A load must fail cleanly (AUR_E_CONFIG or
 * AUR_E_NOMEM, a "<file>:" message, nothing returned) or give a config
 * that keeps the loader's promises; anything else aborts.  Leaks are
 * ASan's to report.
 *
 * Fuzzing build: see fuzz/run.sh.  With -DAUR_FUZZ_REPLAY (CMake targets
 * fuzz_config_replay / fuzz_config_split_replay) main() replays files.
 */
#include "aur_setup.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_transports.h"
#include "names.h"

#ifdef FUZZ_CONFIG_SPLIT
#define FUZZ_NAME "fuzz_config_split"
#else
#define FUZZ_NAME "fuzz_config"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_CONFIG_SPLIT
static const char host_ini[] =
    "[host]\n"
    "plugins = transport-stdio transport-http ext-world-events\n"
    "journal = data/world.sqlite3\n"
    "log_level = warn\n"
    "\n"
    "[mcp]\n"
    "enabled = true\n";
#else
static const char app_ini[] =
    "[app]\n"
    "package = org.example.clock\n"
    "enabled = true\n"
    "transport = stdio\n"
    "timeout_seconds = 30\n"
    "\n"
    "[stdio]\n"
    "command = node\n"
    "working_dir = srv\n";
#endif

static char dir[PATH_MAX];
static char real_dir[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static void cleanup(void)
{
    if (dir[0])
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    dir[0] = '\0';
}

/* Write dir/rel with exactly n bytes of text; abort on I/O failure, since
 * a half-written file would make the run meaningless. */
static void put(const char *rel, const void *text, size_t n)
{
    char p[PATH_MAX + 64];
    FILE *f;

    snprintf(p, sizeof p, "%s/%s", dir, rel);
    f = fopen(p, "wb");
    if (!f || (n > 0 && fwrite(text, 1, n, f) != n) || fclose(f) != 0)
        abort();
}

static void setup_once(void)
{
    char p[PATH_MAX + 64];

    if (dir[0])
        return;
    strcpy(dir, "/tmp/aur-fuzz-config-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
    snprintf(p, sizeof p, "%s/apps.d", dir);
    if (mkdir(p, 0700) != 0)
        abort();
    snprintf(p, sizeof p, "%s/srv", dir);
    if (mkdir(p, 0700) != 0)
        abort();
    snprintf(p, sizeof p, "%s/certs", dir);
    if (mkdir(p, 0700) != 0)
        abort();
    put("certs/ca.pem", "pem\n", 4);
    /* auth_env must name a set variable; the corpus uses this one. */
    if (setenv("AUR_FUZZ_TOKEN", "fuzz", 1) != 0)
        abort();
    if (!realpath(dir, real_dir))
        abort();
}

static bool has_plugin(const struct aur__config *c, const char *name)
{
    for (size_t i = 0; i < c->nplugins; i++)
        if (strcmp(c->plugins[i], name) == 0)
            return true;
    return false;
}

/* What a successful load promises (config.h, README: Configuration). */
static void check_loaded(const struct aur__config *c)
{
    const struct aur__app_cfg *a;

    if (!c || strcmp(c->dir, real_dir) != 0 || c->nplugins == 0)
        abort();
    /* journal: an absolute path, or a PostgreSQL URI that holds no
     * password, with its wait in range */
    if (!c->journal)
        abort();
    if (c->journal[0] == '/') {
        if (c->journal_password_env)
            abort();
    } else {
        const char *auth = strstr(c->journal, "://");
        size_t n;
        const char *at;
        if ((strncmp(c->journal, "postgresql://", 13) != 0 &&
             strncmp(c->journal, "postgres://", 11) != 0) ||
            !auth || strstr(c->journal, "password="))
            abort();
        auth += 3;
        n = strcspn(auth, "/?#");
        at = memchr(auth, '@', n);
        if (at && memchr(auth, ':', (size_t)(at - auth)))
            abort();
        if (c->journal_wait_ms < 100 || c->journal_wait_ms > 3600000)
            abort();
    }
    if (c->log_file && c->log_file[0] != '/')
        abort();
    if (c->log_level < AUR_LOG_ERROR || c->log_level > AUR_LOG_DEBUG)
        abort();
    if (c->start_concurrency < 1 || c->max_pages < 1 || c->max_tools < 1 ||
        c->max_relist < 0)
        abort();
    if (c->napps != 1)
        abort();
    a = &c->apps[0];
    if (strcmp(a->file, "apps.d/x.ini") != 0 ||
        !aur__valid_package(a->package) || a->timeout_ms < 1 ||
        !(a->timeout_s > 0))
        abort();
    if (strcmp(aur__cfg_str(&a->endpoint, "package", ""), a->package) != 0)
        abort();
    if (strcmp(aur__cfg_str(&a->endpoint, "config_dir", ""), real_dir) != 0)
        abort();
    if (strcmp(a->transport->name, "transport-stdio") == 0) {
        size_t n = aur__cfg_count(&a->endpoint, "env");
        if (!has_plugin(c, "transport-stdio") ||
            !*aur__cfg_str(&a->endpoint, "command", "") ||
            aur__cfg_str(&a->endpoint, "url", NULL))
            abort();
        for (size_t i = 0; i < n; i++) {
            const char *e = aur__cfg_str_at(&a->endpoint, "env", i);
            if (!aur__valid_env_name(e) || aur__env_name_denied(e))
                abort();
        }
    } else if (strcmp(a->transport->name, "transport-http") == 0) {
        const char *auth = aur__cfg_str(&a->endpoint, "auth_env", NULL);
        if (!has_plugin(c, "transport-http") ||
            !aur__cfg_str(&a->endpoint, "url", NULL) ||
            aur__cfg_str(&a->endpoint, "command", NULL))
            abort();
        if (auth && !aur__valid_env_name(auth))
            abort();
    } else {
        abort();
    }
    if (a->event_mode == AUR__EV_WORLD && !has_plugin(c, "ext-world-events"))
        abort();
    for (size_t i = 0; i < c->nagents; i++)
        if (!c->agents[i].id || c->agents[i].id[0] == '\0')
            abort();
}

static void check_failed(int rc, const struct aur__config *c,
                         const struct aur__config_diag *diag,
                         const struct aur_error *err)
{
    size_t n = strlen(diag->file);

    if (c || (rc != AUR_E_CONFIG && rc != AUR_E_NOMEM) || err->code != rc)
        abort();
    if (rc == AUR_E_CONFIG &&
        (n == 0 || strncmp(err->msg, diag->file, n) != 0 ||
         err->msg[n] != ':'))
        abort();
}

static void write_inputs(const uint8_t *data, size_t size)
{
#ifdef FUZZ_CONFIG_SPLIT
    const uint8_t *nul = memchr(data, 0, size), *nul2 = NULL;
    char p[PATH_MAX + 64];

    if (!nul) {
        put("host.ini", data, size);
        put("apps.d/x.ini", app_ini, sizeof app_ini - 1);
    } else {
        const uint8_t *app = nul + 1, *end = data + size;

        put("host.ini", data, (size_t)(nul - data));
        nul2 = memchr(app, 0, (size_t)(end - app));
        put("apps.d/x.ini", app, (size_t)((nul2 ? nul2 : end) - app));
        if (nul2)
            put("agents.ini", nul2 + 1, (size_t)(end - nul2 - 1));
    }
    if (!nul2) {
        snprintf(p, sizeof p, "%s/agents.ini", dir);
        unlink(p);
    }
#else
    put("host.ini", host_ini, sizeof host_ini - 1);
    put("apps.d/x.ini", data, size);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct aur__config *c = NULL;
    struct aur__config_diag diag;
    struct aur_error err;
    int rc;

    setup_once();
    write_inputs(data, size);
    aur_error_clear(&err);
    size_t nt;
    const struct aur__transport_def *t = fuzz_transports(&nt);
    rc = aur__config_load(dir, t, nt, &c, &diag, &err);
    if (rc == AUR_OK)
        check_loaded(c);
    else
        check_failed(rc, c, &diag, &err);
    aur__config_free(c);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif
