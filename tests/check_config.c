/*
 * check_config.c - the configuration loader: the demo config, good
 * configs with every optional feature, and a table of bad configs, each
 * of which must fail with AUR_E_CONFIG naming the file, line and key.
 *
 * Each test writes its config into a fresh mkdtemp directory (the checked
 * fixture runs in the forked child) and removes it afterwards.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static char tmp[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static void setup(void)
{
    strcpy(tmp, "/tmp/aur-check-config-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
    nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void path_of(char *out, size_t n, const char *rel)
{
    int k = snprintf(out, n, "%s/%s", tmp, rel);
    ck_assert(k > 0 && (size_t)k < n);
}

/* Write tmp/rel, creating its parent directories. */
static void put(const char *rel, const char *text)
{
    char p[PATH_MAX], *s;
    FILE *f;

    path_of(p, sizeof p, rel);
    for (s = p + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static void mkdir_rel(const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void unlink_rel(const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(unlink(p), 0);
}

static void symlink_rel(const char *target, const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(symlink(target, p), 0);
}

#define HOST_ALL                                                             \
    "[host]\n"                                                               \
    "plugins = transport-stdio transport-http ext-world-events\n"            \
    "journal = data/world.sqlite3\n"                                         \
    "\n"                                                                     \
    "[mcp]\n"                                                                \
    "enabled = true\n"

/* Lines: 1 [app], 2 package, 3 enabled, 4 transport, 5 timeout_seconds. */
#define APP_HEAD(pkg, enabled, transport, timeout)                           \
    "[app]\n"                                                                \
    "package = " pkg "\n"                                                    \
    "enabled = " enabled "\n"                                                \
    "transport = " transport "\n"                                            \
    "timeout_seconds = " timeout "\n"

/* Lines 6..11 after APP_HEAD: blank, [stdio], command, arg, dir, env. */
#define STDIO_TAIL                                                           \
    "\n"                                                                     \
    "[stdio]\n"                                                              \
    "command = node\n"                                                       \
    "arg = server.mjs\n"                                                     \
    "working_dir = srv\n"                                                    \
    "env = CLOCK_TOKEN\n"

#define APP_STDIO APP_HEAD("org.example.clock", "true", "stdio", "30") \
    STDIO_TAIL

/* Lines 6..8 after APP_HEAD: blank, [http], url. */
#define HTTP_TAIL "\n[http]\nurl = https://mcp.example.com/mcp\n"
#define APP_HTTP                                                             \
    APP_HEAD("org.example.web", "true", "streamable_http", "5") HTTP_TAIL

static struct aur__config *load_ok(void)
{
    struct aur__config *c = NULL;
    struct aur__config_diag diag;
    struct aur_error err;
    int rc = aur__config_load(tmp, &c, &diag, &err);

    ck_assert_msg(rc == AUR_OK, "load failed (%d): %s", rc, err.msg);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* ------------------------------------------------------------------ */
/* good configs                                                       */
/* ------------------------------------------------------------------ */

START_TEST(demo_config_loads)
{
    struct aur__config *c = NULL;
    struct aur__config_diag diag;
    struct aur_error err;
    char demo[PATH_MAX], *real;
    const struct aur__app_cfg *a;
    int rc;

    snprintf(demo, sizeof demo, "%s/examples/demo", AUR_TEST_SRC_DIR);
    rc = aur__config_load(demo, &c, &diag, &err);
    ck_assert_msg(rc == AUR_OK, "%s", err.msg);
    real = realpath(demo, NULL);
    ck_assert_ptr_nonnull(real);
    ck_assert_str_eq(c->dir, real);
    ck_assert_uint_eq(c->nplugins, 2);
    ck_assert_str_eq(c->plugins[0], "transport-stdio");
    ck_assert_str_eq(c->plugins[1], "ext-tool-contract");
    ck_assert(c->mcp_enabled);
    ck_assert_uint_eq(c->napps, 1);
    a = &c->apps[0];
    ck_assert_str_eq(a->package, "org.aurora.demo");
    ck_assert_str_eq(a->file, "apps.d/demo.ini");
    ck_assert(a->enabled);
    ck_assert_int_eq(a->transport, AUR__T_STDIO);
    ck_assert_int_eq(a->timeout_ms, 10000);
    ck_assert_str_eq(a->command, "aurora-mcp-demo-server");
    ck_assert_uint_eq(a->nargs, 0);
    ck_assert_uint_eq(a->nenv, 0);
    ck_assert_str_eq(a->working_dir_abs, real);
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "working_dir", ""), real);
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "package", ""),
                     "org.aurora.demo");
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "timeout_ms", ""), "10000");
    ck_assert_uint_eq(c->nagents, 1);
    ck_assert_str_eq(c->agents[0].id, "demo");
    ck_assert_str_eq(c->agents[0].tools[0], "aur.mcp.org.aurora.demo.*");
    free(real);
    aur__config_free(c);
}
END_TEST

START_TEST(full_config_values_and_defaults)
{
    struct aur__config *c;
    const struct aur__app_cfg *a, *h;
    char want[PATH_MAX * 2], *real;

    put("host.ini", HOST_ALL);
    put("apps.d/a.ini", APP_STDIO "env = OTHER\narg = --x\n");
    put("apps.d/b.ini",
        APP_HEAD("org.example.web", "true", "streamable_http", "2.5")
        "event_mode = legacy_aurora_event\n"
        "[http]\nurl = HTTPS://[::1]:8443/mcp?x=1&y=%41\n"
        "ca_file = certs/ca.pem\n");
    put("certs/ca.pem", "pem\n");
    mkdir_rel("srv");
    c = load_ok();
    real = realpath(tmp, NULL);
    ck_assert_ptr_nonnull(real);

    snprintf(want, sizeof want, "%s/data/world.sqlite3", real);
    ck_assert_str_eq(c->journal, want);
    ck_assert_ptr_null(c->plugin_dir);
    ck_assert_ptr_null(c->log_file);
    ck_assert_int_eq(c->log_level, AUR_LOG_INFO);
    ck_assert_int_eq(c->start_concurrency, 64);
    ck_assert_int_eq(c->max_pages, 1024);
    ck_assert_int_eq(c->max_tools, 10000);
    ck_assert_int_eq(c->max_relist, 3);
    ck_assert_ptr_null(c->agents_file);
    ck_assert_uint_eq(c->nagents, 0);
    ck_assert_uint_eq(c->napps, 2);

    a = &c->apps[0];
    ck_assert_int_eq(a->event_mode, AUR__EV_DISABLED);
    ck_assert_uint_eq(a->nargs, 2);
    ck_assert_str_eq(a->args[0], "server.mjs");
    ck_assert_str_eq(a->args[1], "--x");
    ck_assert_uint_eq(a->nenv, 2);
    ck_assert_str_eq(a->env[0], "CLOCK_TOKEN");
    ck_assert_str_eq(a->env[1], "OTHER");
    snprintf(want, sizeof want, "%s/srv", real);
    ck_assert_str_eq(a->working_dir_abs, want);
    /* endpoint: keys as written, order kept, then the appended ones. */
    ck_assert_str_eq(a->endpoint.section, "stdio");
    ck_assert_str_eq(a->endpoint.file, "apps.d/a.ini");
    ck_assert_uint_eq(aur__cfg_count(&a->endpoint, "arg"), 2);
    ck_assert_str_eq(aur__cfg_str_at(&a->endpoint, "arg", 1), "--x");
    ck_assert_ptr_null(aur__cfg_str_at(&a->endpoint, "arg", 2));
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "working_dir", ""), want);
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "timeout_ms", ""), "30000");
    ck_assert_str_eq(a->endpoint.kv[a->endpoint.n - 2].key, "package");
    ck_assert_str_eq(a->endpoint.kv[a->endpoint.n - 1].key, "timeout_ms");

    h = &c->apps[1];
    ck_assert_int_eq(h->transport, AUR__T_HTTP);
    ck_assert_int_eq(h->event_mode, AUR__EV_LEGACY);
    ck_assert(h->timeout_s == 2.5);
    ck_assert_int_eq(h->timeout_ms, 2500);
    ck_assert_str_eq(h->url, "HTTPS://[::1]:8443/mcp?x=1&y=%41");
    ck_assert_ptr_null(h->auth_env);
    snprintf(want, sizeof want, "%s/certs/ca.pem", real);
    ck_assert_str_eq(h->ca_file_abs, want);
    ck_assert_str_eq(aur__cfg_str(&h->endpoint, "ca_file", ""), want);
    ck_assert_str_eq(aur__cfg_str(&h->endpoint, "package", ""),
                     "org.example.web");
    ck_assert_str_eq(aur__transport_word(h->transport), "streamable_http");
    ck_assert_str_eq(aur__event_mode_word(h->event_mode),
                     "legacy_aurora_event");
    ck_assert_str_eq(aur__event_mode_word(AUR__EV_WORLD), "world_events");
    ck_assert_str_eq(aur__transport_word(AUR__T_STDIO), "stdio");
    free(real);
    aur__config_free(c);
}
END_TEST

START_TEST(host_options_and_plugin_sections)
{
    struct aur__config *c;
    const struct aur_cfg *s;
    struct aur_error err;
    int64_t v;
    int b;

    put("host.ini",
        "[host]\n"
        "plugins    = transport-stdio ext-tool-contract ; deployed set\n"
        "plugin_dir = /opt/aur/plugins\n"
        "journal    = /var/tmp/j.sqlite3\n"
        "log_file   = logs/host.log\n"
        "log_level  = debug\n"
        "[mcp]\n"
        "enabled = false\n"
        "start_concurrency = 256\n"
        "\n"
        "max_pages = 100000\n"
        "max_tools = 1\n"
        "max_relist = 0\n"
        "[transport-stdio]\n"
        "stderr_line_max = 4096\n"
        "flag = true\n"
        "flag = false\n"
        "odd = 12x\n"
        "neg = -42\n"
        "big = 99999999999999999999\n");
    c = load_ok();
    ck_assert_uint_eq(c->nplugins, 2);
    ck_assert_str_eq(c->plugins[1], "ext-tool-contract");
    ck_assert_str_eq(c->plugin_dir, "/opt/aur/plugins");
    ck_assert_str_eq(c->journal, "/var/tmp/j.sqlite3");
    ck_assert_ptr_nonnull(strstr(c->log_file, "/logs/host.log"));
    ck_assert_int_eq(c->log_level, AUR_LOG_DEBUG);
    ck_assert(!c->mcp_enabled);
    ck_assert_int_eq(c->start_concurrency, 256);
    ck_assert_int_eq(c->max_pages, 100000);
    ck_assert_int_eq(c->max_tools, 1);
    ck_assert_int_eq(c->max_relist, 0);
    ck_assert_uint_eq(c->napps, 0); /* no apps.d */

    s = aur__config_plugin_section(c, "transport-stdio");
    ck_assert_str_eq(s->section, "transport-stdio");
    ck_assert_int_eq(aur__cfg_int(s, "stderr_line_max", 1, &v, &err), 0);
    ck_assert_int_eq(v, 4096);
    ck_assert_int_eq(aur__cfg_int(s, "absent", 7, &v, &err), 0);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(aur__cfg_int(s, "neg", 7, &v, &err), 0);
    ck_assert_int_eq(v, -42);
    ck_assert_int_eq(aur__cfg_int(s, "odd", 7, &v, &err), AUR_E_CONFIG);
    ck_assert_str_eq(err.msg, "host.ini:18: odd: not an integer");
    ck_assert_int_eq(aur__cfg_int(s, "big", 7, &v, &err), AUR_E_CONFIG);
    /* last value wins */
    ck_assert_str_eq(aur__cfg_str(s, "flag", "x"), "false");
    ck_assert_int_eq(aur__cfg_bool(s, "flag", 1, &b, &err), 0);
    ck_assert_int_eq(b, 0);
    ck_assert_int_eq(aur__cfg_bool(s, "nope", 1, &b, &err), 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(aur__cfg_bool(s, "odd", 1, &b, &err), AUR_E_CONFIG);
    ck_assert_uint_eq(aur__cfg_count(s, "flag"), 2);
    ck_assert_str_eq(aur__cfg_str_at(s, "flag", 0), "true");

    s = aur__config_plugin_section(c, "ext-tool-contract");
    ck_assert_uint_eq(s->n, 0);
    ck_assert_str_eq(aur__cfg_str(s, "x", "d"), "d");
    ck_assert_str_eq(aur__cfg_str(NULL, "x", "d"), "d");
    ck_assert_uint_eq(aur__cfg_count(NULL, "x"), 0);
    aur__config_free(c);
}
END_TEST

START_TEST(config_order_and_ignored_files)
{
    struct aur__config *c;

    put("host.ini", HOST_ALL);
    put("apps.d/b.ini", APP_HEAD("org.b.b", "false", "stdio", "1")
                        STDIO_TAIL);
    put("apps.d/a.ini", APP_HEAD("org.a.a", "false", "stdio", "1")
                        STDIO_TAIL);
    put("apps.d/B.ini", APP_HEAD("org.up.b", "false", "stdio", "1")
                        STDIO_TAIL);
    put("apps.d/10.ini", APP_HEAD("org.ten.x", "false", "stdio", "1")
                         STDIO_TAIL);
    put("apps.d/README", "not ini\n");
    put("apps.d/c.ini.bak", "garbage\n");
    put("apps.d/.ini", "garbage\n");
    c = load_ok();
    ck_assert_uint_eq(c->napps, 4);
    ck_assert_str_eq(c->apps[0].file, "apps.d/10.ini");
    ck_assert_str_eq(c->apps[1].file, "apps.d/B.ini");
    ck_assert_str_eq(c->apps[2].file, "apps.d/a.ini");
    ck_assert_str_eq(c->apps[3].package, "org.b.b");
    aur__config_free(c);
}
END_TEST

START_TEST(syntax_details)
{
    struct aur__config *c;
    char url[400];
    char text[1200];

    /* inline comments, indentation (never a continuation), CRLF, BOM. */
    put("host.ini",
        "\xef\xbb\xbf; comment\r\n"
        "# another\r\n"
        "[host]   ; header comment\r\n"
        "   plugins = transport-stdio transport-http ; two\r\n"
        "\tjournal = j.db\r\n"
        "[mcp]\r\n");
    memset(url, 'q', sizeof url);
    memcpy(url, "https://h.example/x?", 20);
    url[sizeof url - 1] = '\0';
    snprintf(text, sizeof text,
             APP_HEAD("org.example.web", "true", "streamable_http",
                      "0.0001")
             "event_mode = disabled\n"
             "[http]\n"
             "    url = %s   ; a long line with a comment\n"
             "    auth_env = AUR_TEST_TOKEN\n",
             url);
    put("apps.d/web.ini", text);
    put("apps.d/cli.ini",
        APP_HEAD("org.example.cli", "true", "stdio", ".5")
        "[stdio]\n"
        "command = ./bin/tool;x\n"
        "  arg = a;b\n"
        "  arg = #hash\n"
        "working_dir = sub\\dir/./\n");
    mkdir_rel("sub");
    mkdir_rel("sub/dir");
    setenv("AUR_TEST_TOKEN", "secret-value", 1);
    c = load_ok();
    ck_assert_uint_eq(c->nplugins, 2);
    ck_assert_ptr_nonnull(strstr(c->journal, "/j.db"));
    ck_assert_uint_eq(c->napps, 2);
    ck_assert_str_eq(c->apps[0].command, "./bin/tool;x");
    ck_assert_uint_eq(c->apps[0].nargs, 2);
    ck_assert_str_eq(c->apps[0].args[0], "a;b");
    ck_assert_str_eq(c->apps[0].args[1], "#hash");
    ck_assert_int_eq(c->apps[0].timeout_ms, 500);
    ck_assert_ptr_nonnull(strstr(c->apps[0].working_dir_abs, "/sub/dir"));
    ck_assert_str_eq(c->apps[1].url, url);
    ck_assert_str_eq(c->apps[1].auth_env, "AUR_TEST_TOKEN");
    ck_assert_int_eq(c->apps[1].timeout_ms, 1);
    ck_assert_int_eq(c->apps[1].endpoint.kv[1].line, 9);
    aur__config_free(c);
}
END_TEST

START_TEST(inactive_apps_skip_existence_checks)
{
    struct aur__config *c;

    /* A disabled App with a missing dir and an unset auth_env is fine. */
    put("host.ini", HOST_ALL);
    put("apps.d/a.ini", APP_HEAD("org.example.clock", "false", "stdio", "30")
                        STDIO_TAIL);
    put("apps.d/b.ini",
        APP_HEAD("org.example.web", "false", "streamable_http", "5")
        HTTP_TAIL "auth_env = AUR_TEST_SURELY_UNSET\nca_file = no.pem\n");
    unsetenv("AUR_TEST_SURELY_UNSET");
    c = load_ok();
    ck_assert_uint_eq(c->napps, 2);
    ck_assert(!c->apps[0].enabled);
    ck_assert_ptr_nonnull(strstr(c->apps[0].working_dir_abs, "/srv"));
    aur__config_free(c);

    /* Master switch off: an enabled App is not active either. */
    put("host.ini", "[host]\nplugins = transport-stdio transport-http\n"
                    "journal = j\n[mcp]\nenabled = false\n");
    put("apps.d/a.ini", APP_STDIO);
    put("apps.d/b.ini", APP_HTTP "auth_env = AUR_TEST_SURELY_UNSET\n");
    c = load_ok();
    ck_assert_uint_eq(c->napps, 2);
    ck_assert(c->apps[0].enabled);
    aur__config_free(c);
}
END_TEST

START_TEST(symlink_inside_is_resolved)
{
    struct aur__config *c;
    char *real, want[PATH_MAX * 2];

    put("host.ini", HOST_ALL);
    put("apps.d/a.ini", APP_STDIO);
    mkdir_rel("real");
    symlink_rel("real", "srv");
    c = load_ok();
    real = realpath(tmp, NULL);
    snprintf(want, sizeof want, "%s/real", real);
    ck_assert_str_eq(c->apps[0].working_dir_abs, want);
    free(real);
    aur__config_free(c);
}
END_TEST

START_TEST(agents_patterns_kept_verbatim)
{
    struct aur__config *c;
    char text[400];

    put("host.ini", HOST_ALL);
    snprintf(text, sizeof text,
             "[agent root]\n"
             "tools = aur.mcp.org.example.clock.*\n"
             "tools = !aur.mcp.org.example.clock.reset ; no reset\n"
             "tools = aur.mcp.**\n"
             "tools = aur.core.[a-c]?x\n"
             "[agent %s]\n"
             "[agent   sub.agent-1]\n"
             "tools = aur.core.echo\n",
             "a_very_long_agent_identifier_that_is_longer_than_fifty_chars");
    put("agents.ini", text);
    c = load_ok();
    ck_assert_str_eq(c->agents_file, "agents.ini");
    ck_assert_uint_eq(c->nagents, 3);
    ck_assert_str_eq(c->agents[0].id, "root");
    ck_assert_uint_eq(c->agents[0].ntools, 4);
    ck_assert_str_eq(c->agents[0].tools[1],
                     "!aur.mcp.org.example.clock.reset");
    ck_assert_int_eq(c->agents[0].tool_lines[1], 3);
    ck_assert_str_eq(c->agents[1].id,
        "a_very_long_agent_identifier_that_is_longer_than_fifty_chars");
    ck_assert_uint_eq(c->agents[1].ntools, 0);
    ck_assert_str_eq(c->agents[2].id, "sub.agent-1");
    aur__config_free(c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* bad configs                                                        */
/* ------------------------------------------------------------------ */

static void rmdir_rel(const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(rmdir(p), 0);
}

static void prep_no_host(void) { unlink_rel("host.ini"); }
static void prep_no_srv(void) { rmdir_rel("srv"); }
static void prep_srv_file(void)
{
    rmdir_rel("srv");
    put("srv", "not a dir\n");
}
static void prep_escape(void)
{
    rmdir_rel("srv");
    symlink_rel("/tmp", "srv");
}
static void prep_escape_deep(void) { symlink_rel("../..", "srv/up"); }
static void prep_dangling(void)
{
    rmdir_rel("srv");
    symlink_rel("/nonexistent/x", "srv");
}
static void prep_unset(void) { unsetenv("AUR_TEST_TOKEN"); }
static void prep_empty(void) { setenv("AUR_TEST_TOKEN", "", 1); }

struct bad {
    const char *name;
    const char *host;  /* NULL: HOST_ALL */
    const char *app;   /* apps.d/a.ini; NULL: APP_STDIO */
    const char *app2;  /* apps.d/b.ini or NULL */
    const char *agents;
    void (*prep)(void);
    const char *file;
    int line; /* -1: not checked */
    const char *key;
};

#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10
#define HTTP_WITH(extra)                                                     \
    APP_HEAD("org.example.web", "true", "streamable_http", "5")              \
    "\n[http]\n" extra

static const struct bad bads[] = {
    /* host.ini */
    {"missing host.ini", NULL, NULL, NULL, NULL, prep_no_host, "host.ini", 0,
     ""},
    {"no [host]", "[mcp]\nenabled = true\n", NULL, NULL, NULL, NULL,
     "host.ini", 0, "[host]"},
    {"plugins missing", "[host]\njournal = j\n", NULL, NULL, NULL, NULL,
     "host.ini", 1, "plugins"},
    {"plugins empty", "[host]\nplugins =   ; none\njournal = j\n", NULL, NULL,
     NULL, NULL, "host.ini", 2, "plugins"},
    {"plugin name", "[host]\nplugins = transport_stdio\njournal = j\n", NULL,
     NULL, NULL, NULL, "host.ini", 2, "plugins"},
    {"plugin twice", "[host]\nplugins = a b a\njournal = j\n", NULL, NULL,
     NULL, NULL, "host.ini", 2, "plugins"},
    {"journal missing", "[host]\nplugins = transport-stdio\n", NULL, NULL,
     NULL, NULL, "host.ini", 1, "journal"},
    {"journal blank", "[host]\nplugins = transport-stdio\njournal =\n", NULL,
     NULL, NULL, NULL, "host.ini", 3, "journal"},
    {"log_level", "[host]\nplugins = transport-stdio\njournal = j\n"
                  "log_level = verbose\n",
     NULL, NULL, NULL, NULL, "host.ini", 4, "log_level"},
    {"mcp enabled yes", "[host]\nplugins = transport-stdio\njournal = j\n"
                        "[mcp]\nenabled = yes\n",
     NULL, NULL, NULL, NULL, "host.ini", 5, "enabled"},
    {"mcp enabled repeated", HOST_ALL "enabled = false\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, "enabled"},
    {"start_concurrency 0", HOST_ALL "start_concurrency = 0\n", NULL, NULL,
     NULL, NULL, "host.ini", 7, "start_concurrency"},
    {"start_concurrency 257", HOST_ALL "start_concurrency = 257\n", NULL,
     NULL, NULL, NULL, "host.ini", 7, "start_concurrency"},
    {"unknown mcp key", HOST_ALL "max_message_bytes = 1023\n", NULL, NULL,
     NULL, NULL, "host.ini", 7, "max_message_bytes"},
    {"max_relist", HOST_ALL "max_relist = 1.5\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, "max_relist"},
    {"host section twice", HOST_ALL "[host]\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, "[host]"},
    {"host key", "[host]\nplugins = transport-stdio\njournal = j\n"
                 "colour = red\n",
     NULL, NULL, NULL, NULL, "host.ini", 4, "colour"},
    {"mcp unknown key", HOST_ALL "timeout = 3\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, "timeout"},
    {"unknown section", HOST_ALL "[transport-sse]\nx = 1\n", NULL, NULL,
     NULL, NULL, "host.ini", 7, "[transport-sse]"},
    {"syntax error", HOST_ALL "garbage line\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, ""},
    {"unterminated header", HOST_ALL "[mcp\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, ""},
    {"key before section", "plugins = x\n" HOST_ALL, NULL, NULL, NULL, NULL,
     "host.ini", 1, ""},
    {"long garbage line", HOST_ALL X100 X100 X100 "\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, ""},
    {"long unknown key", HOST_ALL "k" X100 X100 " = 1\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, "k" X10 X10 X10 X10 X10 X10 "xx"},
    {"control char", HOST_ALL "max_pages = 1\x02\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, ""},
    {"bad utf-8", HOST_ALL "; \xff\n", NULL, NULL, NULL, NULL, "host.ini", 7,
     ""},
    /* [app] */
    {"no [app]", NULL, "[stdio]\ncommand = x\nworking_dir = .\n", NULL, NULL,
     NULL, "apps.d/a.ini", 0, "[app]"},
    {"app section twice", NULL, APP_STDIO "[app]\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "[app]"},
    {"missing timeout",
     NULL, "[app]\npackage = org.a.b\nenabled = true\ntransport = stdio\n"
           STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 1, "timeout_seconds"},
    {"missing package",
     NULL, "[app]\nenabled = true\ntransport = stdio\ntimeout_seconds = 1\n"
           STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 1, "package"},
    {"missing enabled",
     NULL, "[app]\npackage = org.a.b\ntransport = stdio\ntimeout_seconds = 1\n"
           STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 1, "enabled"},
    {"timeout 0", NULL, APP_HEAD("org.a.b", "true", "stdio", "0") STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout -1", NULL, APP_HEAD("org.a.b", "true", "stdio", "-1")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout nan", NULL, APP_HEAD("org.a.b", "true", "stdio", "nan")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout inf", NULL, APP_HEAD("org.a.b", "true", "stdio", "inf")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout true", NULL, APP_HEAD("org.a.b", "true", "stdio", "true")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout 0.0", NULL, APP_HEAD("org.a.b", "true", "stdio", "0.0")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout exp", NULL, APP_HEAD("org.a.b", "true", "stdio", "1e3")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"timeout huge", NULL, APP_HEAD("org.a.b", "true", "stdio",
                                    "99999999999") STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 5, "timeout_seconds"},
    {"package one segment", NULL, APP_HEAD("clock", "true", "stdio", "1")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 2, "package"},
    {"package upper", NULL, APP_HEAD("Org.example.clock", "true", "stdio",
                                     "1") STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 2, "package"},
    {"package empty segment", NULL, APP_HEAD("org..clock", "true", "stdio",
                                             "1") STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 2, "package"},
    {"package digit segment", NULL, APP_HEAD("org.1x", "true", "stdio", "1")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 2, "package"},
    {"package trailing dot", NULL, APP_HEAD("org.example.", "true", "stdio",
                                            "1") STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 2, "package"},
    {"package blank", NULL, APP_HEAD("", "true", "stdio", "1") STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 2, "package"},
    {"repeated package key", NULL, "[app]\npackage = org.a.b\n"
                                   "package = org.a.c\nenabled = true\n"
                                   "transport = stdio\ntimeout_seconds = 1\n"
                                   STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 3, "package"},
    {"duplicate package", NULL, NULL, APP_HEAD("org.example.clock", "false",
                                               "stdio", "9") STDIO_TAIL,
     NULL, NULL, "apps.d/b.ini", 2, "package"},
    {"enabled yes", NULL, APP_HEAD("org.a.b", "yes", "stdio", "1")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 3, "enabled"},
    {"transport tcp", NULL, APP_HEAD("org.a.b", "true", "tcp", "1")
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 4, "transport"},
    {"event_mode unknown", NULL, APP_HEAD("org.a.b", "true", "stdio", "1")
     "event_mode = vendor_events\n" STDIO_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 6, "event_mode"},
    {"http world_events", NULL, APP_HEAD("org.a.b", "true", "streamable_http",
                                         "1") "event_mode = world_events\n"
                                HTTP_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 6, "event_mode"},
    {"unknown app key", NULL, APP_HEAD("org.a.b", "true", "stdio", "1")
     "colour = red\n" STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 6,
     "colour"},
    {"unknown app section", NULL, APP_STDIO "[extra]\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "[extra]"},
    {"key outside section", NULL, "package = org.a.b\n" APP_STDIO, NULL,
     NULL, NULL, "apps.d/a.ini", 1, ""},
    /* plugin set */
    {"stdio not deployed", "[host]\nplugins = transport-http\njournal = j\n",
     NULL, NULL, NULL, NULL, "apps.d/a.ini", 4, "transport"},
    {"http not deployed", "[host]\nplugins = transport-stdio\njournal = j\n",
     APP_HTTP, NULL, NULL, NULL, "apps.d/a.ini", 4, "transport"},
    {"events not deployed",
     "[host]\nplugins = transport-stdio\njournal = j\n",
     APP_HEAD("org.a.b", "true", "stdio", "1") "event_mode = world_events\n"
     STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 6, "event_mode"},
    {"legacy not deployed",
     "[host]\nplugins = transport-http\njournal = j\n",
     APP_HEAD("org.a.b", "true", "streamable_http", "1")
     "event_mode = legacy_aurora_event\n" HTTP_TAIL,
     NULL, NULL, NULL, "apps.d/a.ini", 6, "event_mode"},
    /* [stdio] */
    {"stdio missing section", NULL, APP_HEAD("org.a.b", "true", "stdio", "1"),
     NULL, NULL, NULL, "apps.d/a.ini", 4, "[stdio]"},
    {"stdio with [http]", NULL, APP_STDIO HTTP_TAIL, NULL, NULL, NULL,
     "apps.d/a.ini", 13, "[http]"},
    {"stdio url", NULL, APP_STDIO "url = https://h/x\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "url"},
    {"stdio auth_env", NULL, APP_STDIO "auth_env = X\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "auth_env"},
    {"command in [app]", NULL, APP_HEAD("org.a.b", "true", "stdio", "1")
     "command = node\n" STDIO_TAIL, NULL, NULL, NULL, "apps.d/a.ini", 6,
     "command"},
    {"missing command", NULL, APP_HEAD("org.a.b", "true", "stdio", "1")
     "[stdio]\nworking_dir = srv\n", NULL, NULL, NULL, "apps.d/a.ini", 6,
     "command"},
    {"blank command", NULL, APP_HEAD("org.a.b", "true", "stdio", "1")
     "[stdio]\ncommand =\nworking_dir = srv\n", NULL, NULL, NULL,
     "apps.d/a.ini", 7, "command"},
    {"two commands", NULL, APP_STDIO "command = python3\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "command"},
    {"blank arg", NULL, APP_STDIO "arg =   ; nothing\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "arg"},
    {"bad env name", NULL, APP_STDIO "env = BAD-NAME\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "env"},
    {"non-ascii env", NULL, APP_STDIO "env = \xc3\x84X\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "env"},
    {"duplicate env", NULL, APP_STDIO "env = CLOCK_TOKEN\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "env"},
    {"env LD_PRELOAD", NULL, APP_STDIO "env = LD_PRELOAD\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env LD_LIBRARY_PATH", NULL, APP_STDIO "env = LD_LIBRARY_PATH\n", NULL,
     NULL, NULL, "apps.d/a.ini", 12, "env"},
    {"env DYLD_INSERT_LIBRARIES", NULL,
     APP_STDIO "env = DYLD_INSERT_LIBRARIES\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "env"},
    {"env NODE_OPTIONS", NULL, APP_STDIO "env = NODE_OPTIONS\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env PYTHONPATH", NULL, APP_STDIO "env = PYTHONPATH\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env BASH_ENV", NULL, APP_STDIO "env = BASH_ENV\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "env"},
    {"missing working_dir", NULL, APP_HEAD("org.a.b", "true", "stdio", "1")
     "[stdio]\ncommand = x\n", NULL, NULL, NULL, "apps.d/a.ini", 6,
     "working_dir"},
    {"absolute working_dir", NULL, APP_HEAD("org.a.b", "false", "stdio", "1")
     "[stdio]\ncommand = x\nworking_dir = /tmp\n", NULL, NULL, NULL,
     "apps.d/a.ini", 8, "working_dir"},
    {"dotdot working_dir", NULL, APP_HEAD("org.a.b", "false", "stdio", "1")
     "[stdio]\ncommand = x\nworking_dir = a/../../b\n", NULL, NULL, NULL,
     "apps.d/a.ini", 8, "working_dir"},
    {"backslash dotdot", NULL, APP_HEAD("org.a.b", "false", "stdio", "1")
     "[stdio]\ncommand = x\nworking_dir = a\\..\n", NULL, NULL, NULL,
     "apps.d/a.ini", 8, "working_dir"},
    {"drive working_dir", NULL, APP_HEAD("org.a.b", "false", "stdio", "1")
     "[stdio]\ncommand = x\nworking_dir = C:\\x\n", NULL, NULL, NULL,
     "apps.d/a.ini", 8, "working_dir"},
    {"blank working_dir", NULL, APP_HEAD("org.a.b", "false", "stdio", "1")
     "[stdio]\ncommand = x\nworking_dir =\n", NULL, NULL, NULL,
     "apps.d/a.ini", 8, "working_dir"},
    {"working_dir missing (active)", NULL, NULL, NULL, NULL, prep_no_srv,
     "apps.d/a.ini", 10, "working_dir"},
    {"working_dir is a file", NULL, NULL, NULL, NULL, prep_srv_file,
     "apps.d/a.ini", 10, "working_dir"},
    {"symlink escape", NULL, NULL, NULL, NULL, prep_escape, "apps.d/a.ini",
     10, "working_dir"},
    {"symlink escape (disabled)", NULL,
     APP_HEAD("org.a.b", "false", "stdio", "1") STDIO_TAIL, NULL, NULL,
     prep_escape, "apps.d/a.ini", 10, "working_dir"},
    {"symlink escape deep", NULL,
     APP_HEAD("org.a.b", "false", "stdio", "1")
     "[stdio]\ncommand = x\nworking_dir = srv/up/x\n", NULL, NULL,
     prep_escape_deep, "apps.d/a.ini", 8, "working_dir"},
    {"dangling symlink", NULL, APP_HEAD("org.a.b", "false", "stdio", "1")
     STDIO_TAIL, NULL, NULL, prep_dangling, "apps.d/a.ini", 10,
     "working_dir"},
    /* [http] */
    {"http missing section", NULL,
     APP_HEAD("org.a.b", "true", "streamable_http", "1"), NULL, NULL, NULL,
     "apps.d/a.ini", 4, "[http]"},
    {"http with [stdio]", NULL, APP_HTTP "[stdio]\n", NULL, NULL, NULL,
     "apps.d/a.ini", 9, "[stdio]"},
    {"http env", NULL, APP_HTTP "env = X\n", NULL, NULL, NULL,
     "apps.d/a.ini", 9, "env"},
    {"http working_dir", NULL, APP_HTTP "working_dir = srv\n", NULL, NULL,
     NULL, "apps.d/a.ini", 9, "working_dir"},
    {"http missing url", NULL, HTTP_WITH("auth_env = X\n"), NULL, NULL, NULL,
     "apps.d/a.ini", 7, "url"},
    {"url http", NULL, HTTP_WITH("url = http://h/rpc\n"), NULL, NULL, NULL,
     "apps.d/a.ini", 8, "url"},
    {"url userinfo", NULL, HTTP_WITH("url = https://u:p@h/rpc\n"), NULL,
     NULL, NULL, "apps.d/a.ini", 8, "url"},
    {"url user only", NULL, HTTP_WITH("url = https://u@h/rpc\n"), NULL, NULL,
     NULL, "apps.d/a.ini", 8, "url"},
    {"url fragment", NULL, HTTP_WITH("url = https://h/rpc#f\n"), NULL, NULL,
     NULL, "apps.d/a.ini", 8, "url"},
    {"url no host", NULL, HTTP_WITH("url = https:///missing-host\n"), NULL,
     NULL, NULL, "apps.d/a.ini", 8, "url"},
    {"url empty port", NULL, HTTP_WITH("url = https://h:/x\n"), NULL, NULL,
     NULL, "apps.d/a.ini", 8, "url"},
    {"url port 0", NULL, HTTP_WITH("url = https://h:0/x\n"), NULL, NULL, NULL,
     "apps.d/a.ini", 8, "url"},
    {"url port big", NULL, HTTP_WITH("url = https://h:65536/x\n"), NULL,
     NULL, NULL, "apps.d/a.ini", 8, "url"},
    {"url port letters", NULL, HTTP_WITH("url = https://h:8x/x\n"), NULL,
     NULL, NULL, "apps.d/a.ini", 8, "url"},
    {"url space", NULL, HTTP_WITH("url = https://h/a b\n"), NULL, NULL, NULL,
     "apps.d/a.ini", 8, "url"},
    {"url single slash", NULL, HTTP_WITH("url = https:/h/x\n"), NULL, NULL,
     NULL, "apps.d/a.ini", 8, "url"},
    {"url bad escape", NULL, HTTP_WITH("url = https://h/%zz\n"), NULL, NULL,
     NULL, "apps.d/a.ini", 8, "url"},
    {"url ipv6 open", NULL, HTTP_WITH("url = https://[::1/x\n"), NULL, NULL,
     NULL, "apps.d/a.ini", 8, "url"},
    {"bad auth_env name", NULL, APP_HTTP "auth_env = BAD-NAME\n", NULL, NULL,
     NULL, "apps.d/a.ini", 9, "auth_env"},
    {"auth_env unset", NULL, APP_HTTP "auth_env = AUR_TEST_TOKEN\n", NULL,
     NULL, prep_unset, "apps.d/a.ini", 9, "auth_env"},
    {"auth_env empty", NULL, APP_HTTP "auth_env = AUR_TEST_TOKEN\n", NULL,
     NULL, prep_empty, "apps.d/a.ini", 9, "auth_env"},
    {"ca_file missing (active)", NULL, APP_HTTP "ca_file = certs/ca.pem\n",
     NULL, NULL, NULL, "apps.d/a.ini", 9, "ca_file"},
    {"ca_file absolute", NULL, APP_HTTP "ca_file = /etc/passwd\n", NULL, NULL,
     NULL, "apps.d/a.ini", 9, "ca_file"},
    {"two urls", NULL, APP_HTTP "url = https://other/\n", NULL, NULL, NULL,
     "apps.d/a.ini", 9, "url"},
    /* agents.ini */
    {"agents unterminated class", NULL, NULL, NULL,
     "[agent root]\ntools = aur.core.echo\ntools = aur.[abc\n", NULL,
     "agents.ini", 3, "tools"},
    {"agents bang alone", NULL, NULL, NULL, "[agent root]\ntools = !\n",
     NULL, "agents.ini", 2, "tools"},
    {"agents empty pattern", NULL, NULL, NULL, "[agent root]\ntools =\n",
     NULL, "agents.ini", 2, "tools"},
    {"agents empty segment", NULL, NULL, NULL,
     "[agent root]\ntools = aur..x\n", NULL, "agents.ini", 2, "tools"},
    {"agents backwards range", NULL, NULL, NULL,
     "[agent root]\ntools = aur.[z-a]\n", NULL, "agents.ini", 2, "tools"},
    {"agents unknown key", NULL, NULL, NULL,
     "[agent root]\nmodel = big\n", NULL, "agents.ini", 2, "model"},
    {"agents unknown section", NULL, NULL, NULL, "[crew root]\n", NULL,
     "agents.ini", 1, "[crew root]"},
    {"agents no id", NULL, NULL, NULL, "[agent]\n", NULL, "agents.ini", 1,
     "[agent]"},
    {"agents bad id", NULL, NULL, NULL, "[agent a/b]\n", NULL, "agents.ini",
     1, "[agent a/b]"},
    {"agents twice", NULL, NULL, NULL, "[agent a]\n[agent  a]\n", NULL,
     "agents.ini", 2, "[agent  a]"},
};

static void write_bad(const struct bad *b)
{
    put("host.ini", b->host ? b->host : HOST_ALL);
    put("apps.d/a.ini", b->app ? b->app : APP_STDIO);
    if (b->app2)
        put("apps.d/b.ini", b->app2);
    if (b->agents)
        put("agents.ini", b->agents);
    mkdir_rel("srv");
    setenv("AUR_TEST_TOKEN", "t0ken", 1);
}

START_TEST(bad_config)
{
    const struct bad *b = &bads[_i];
    struct aur__config *c = (struct aur__config *)&c;
    struct aur__config_diag diag;
    struct aur_error err;
    char prefix[600];
    int rc;

    write_bad(b);
    if (b->prep)
        b->prep();
    rc = aur__config_load(tmp, &c, &diag, &err);
    ck_assert_msg(rc == AUR_E_CONFIG, "[%s] rc %d (%s)", b->name, rc,
                  rc ? err.msg : "loaded");
    ck_assert_ptr_null(c);
    ck_assert_int_eq(err.code, AUR_E_CONFIG);
    ck_assert_msg(strcmp(diag.file, b->file) == 0, "[%s] file %s: %s",
                  b->name, diag.file, err.msg);
    ck_assert_msg(strcmp(diag.key, b->key) == 0, "[%s] key '%s': %s",
                  b->name, diag.key, err.msg);
    if (b->line >= 0)
        ck_assert_msg(diag.line == b->line, "[%s] line %d: %s", b->name,
                      diag.line, err.msg);
    /* The message starts with "<file>[:<line>][: <key>]: ". */
    snprintf(prefix, sizeof prefix, "%s", diag.file);
    if (diag.line)
        snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix),
                 ":%d", diag.line);
    if (diag.key[0])
        snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix),
                 ": %s", diag.key);
    strcat(prefix, ": ");
    ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0,
                  "[%s] message '%s' lacks '%s'", b->name, err.msg, prefix);
    if (getenv("AUR_TEST_VERBOSE"))
        fprintf(stderr, "%-30s %s\n", b->name, err.msg);
    /* Secrets never reach the message. */
    ck_assert_ptr_null(strstr(err.msg, "t0ken"));
}
END_TEST

START_TEST(message_format)
{
    struct aur__config *c;
    struct aur__config_diag diag;
    struct aur_error err;

    put("host.ini", HOST_ALL);
    put("apps.d/clock.ini",
        APP_HEAD("org.example.clock", "true", "stdio", "-3") STDIO_TAIL);
    mkdir_rel("srv");
    ck_assert_int_eq(aur__config_load(tmp, &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_msg(strncmp(err.msg, "apps.d/clock.ini:5: timeout_seconds: ",
                          37) == 0, "%s", err.msg);
    /* diag is optional */
    ck_assert_int_eq(aur__config_load(tmp, &c, NULL, &err), AUR_E_CONFIG);
    ck_assert_int_eq(aur__config_load("/nonexistent/aur-config", &c, &diag,
                                      &err), AUR_E_CONFIG);
    ck_assert_str_eq(diag.file, "/nonexistent/aur-config");
    /* A denied variable is named, with the reason. */
    put("apps.d/clock.ini", APP_STDIO "env = NODE_OPTIONS\n");
    ck_assert_int_eq(aur__config_load(tmp, &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_msg(strstr(err.msg, "apps.d/clock.ini:12: env: NODE_OPTIONS ") &&
                      strstr(err.msg, "never passed to an App"),
                  "%s", err.msg);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *good = tcase_create("good");
    TCase *bad = tcase_create("bad");

    tcase_add_checked_fixture(good, setup, teardown);
    tcase_add_test(good, demo_config_loads);
    tcase_add_test(good, full_config_values_and_defaults);
    tcase_add_test(good, host_options_and_plugin_sections);
    tcase_add_test(good, config_order_and_ignored_files);
    tcase_add_test(good, syntax_details);
    tcase_add_test(good, inactive_apps_skip_existence_checks);
    tcase_add_test(good, symlink_inside_is_resolved);
    tcase_add_test(good, agents_patterns_kept_verbatim);
    suite_add_tcase(s, good);

    tcase_add_checked_fixture(bad, setup, teardown);
    tcase_add_loop_test(bad, bad_config, 0, (int)AUR__ARRAY_LEN(bads));
    tcase_add_test(bad, message_format);
    suite_add_tcase(s, bad);
    return s;
}

int main(void) { return aur_check_main(config_suite(), NULL); }
