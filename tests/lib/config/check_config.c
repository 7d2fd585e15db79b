/*
 * check_config.c - the configuration loader: the demo config, good
 * configs with every optional feature, and a table of bad configs, each
 * of which must fail with AUR_E_CONFIG naming the file, line and key.
 *
 * The fixture is config_fixture.c; the bad configs are in
 * check_config_bad.c (one binary).
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_fixture.h"
#include "support/transports.h"

Suite *config_bad_suite(void);

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
    size_t nt;
    const struct aur__transport_def *t = test_transports(&nt);
    rc = aur__config_load(demo, t, nt, &c, &diag, &err);
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
    ck_assert_str_eq(a->transport->name, "transport-stdio");
    ck_assert_int_eq(a->timeout_ms, 10000);
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "command", ""),
                     "aurora-mcp-demo-server");
    ck_assert_uint_eq(aur__cfg_count(&a->endpoint, "arg"), 0);
    ck_assert_uint_eq(aur__cfg_count(&a->endpoint, "env"), 0);
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "working_dir", ""), ".");
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "config_dir", ""), real);
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
    ck_assert_uint_eq(aur__cfg_count(&a->endpoint, "env"), 2);
    ck_assert_str_eq(aur__cfg_str_at(&a->endpoint, "env", 0), "CLOCK_TOKEN");
    ck_assert_str_eq(aur__cfg_str_at(&a->endpoint, "env", 1), "OTHER");
    /* endpoint: keys as written, order kept, then the host's. */
    ck_assert_str_eq(a->endpoint.section, "stdio");
    ck_assert_str_eq(a->endpoint.file, "apps.d/a.ini");
    ck_assert_uint_eq(aur__cfg_count(&a->endpoint, "arg"), 2);
    ck_assert_str_eq(aur__cfg_str_at(&a->endpoint, "arg", 0), "server.mjs");
    ck_assert_str_eq(aur__cfg_str_at(&a->endpoint, "arg", 1), "--x");
    ck_assert_ptr_null(aur__cfg_str_at(&a->endpoint, "arg", 2));
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "working_dir", ""), "srv");
    ck_assert_str_eq(aur__cfg_str(&a->endpoint, "timeout_ms", ""), "30000");
    ck_assert_str_eq(a->endpoint.kv[a->endpoint.n - 3].key, "package");
    ck_assert_str_eq(a->endpoint.kv[a->endpoint.n - 2].key, "timeout_ms");
    ck_assert_str_eq(a->endpoint.kv[a->endpoint.n - 1].key, "config_dir");
    ck_assert_str_eq(a->endpoint.kv[a->endpoint.n - 1].value, real);

    h = &c->apps[1];
    ck_assert_str_eq(h->transport->name, "transport-http");
    ck_assert_int_eq(h->event_mode, AUR__EV_LEGACY);
    ck_assert(h->timeout_s == 2.5);
    ck_assert_int_eq(h->timeout_ms, 2500);
    ck_assert_str_eq(aur__cfg_str(&h->endpoint, "url", ""),
                     "HTTPS://[::1]:8443/mcp?x=1&y=%41");
    ck_assert_ptr_null(aur__cfg_str(&h->endpoint, "auth_env", NULL));
    ck_assert_str_eq(aur__cfg_str(&h->endpoint, "ca_file", ""),
                     "certs/ca.pem");
    ck_assert_str_eq(aur__cfg_str(&h->endpoint, "package", ""),
                     "org.example.web");
    ck_assert_str_eq(aur__transport_word(h->transport), "streamable_http");
    ck_assert_str_eq(aur__event_mode_word(h->event_mode),
                     "legacy_aurora_event");
    ck_assert_str_eq(aur__event_mode_word(AUR__EV_WORLD), "world_events");
    ck_assert_str_eq(aur__transport_word(a->transport), "stdio");
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
    /* values as written: the transport reads paths against config_dir */
    ck_assert_str_eq(aur__cfg_str(&c->apps[0].endpoint, "command", ""),
                     "./bin/tool;x");
    ck_assert_uint_eq(aur__cfg_count(&c->apps[0].endpoint, "arg"), 2);
    ck_assert_str_eq(aur__cfg_str_at(&c->apps[0].endpoint, "arg", 0), "a;b");
    ck_assert_str_eq(aur__cfg_str_at(&c->apps[0].endpoint, "arg", 1),
                     "#hash");
    ck_assert_int_eq(c->apps[0].timeout_ms, 500);
    ck_assert_str_eq(aur__cfg_str(&c->apps[0].endpoint, "working_dir", ""),
                     "sub\\dir/./");
    ck_assert_str_eq(aur__cfg_str(&c->apps[1].endpoint, "url", ""), url);
    ck_assert_str_eq(aur__cfg_str(&c->apps[1].endpoint, "auth_env", ""),
                     "AUR_TEST_TOKEN");
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

/* A link that stays inside passes the transport's check (where it leads
 * is check_transport_stdio's working_dir_config_relative). */
START_TEST(symlink_inside_is_resolved)
{
    struct aur__config *c;

    put("host.ini", HOST_ALL);
    put("apps.d/a.ini", APP_STDIO);
    mkdir_rel("real");
    symlink_rel("real", "srv");
    c = load_ok();
    ck_assert_str_eq(aur__cfg_str(&c->apps[0].endpoint, "working_dir", ""),
                     "srv");
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

/* A PostgreSQL journal is taken as written (not joined to the config
 * directory); the password variable is kept by name, never by value. */
START_TEST(journal_uri_and_password_env)
{
    struct aur__config *c;

    setenv("AUR_TEST_PG_PW", "s3cret", 1);
    put("host.ini", "[host]\nplugins = transport-stdio\n"
                    "journal = postgresql://aurora@db.example:5432/world"
                    "?sslmode=verify-full&sslrootcert=/etc/ca.pem\n"
                    "journal_password_env = AUR_TEST_PG_PW\n"
                    "journal_wait_ms = 2500\n");
    c = load_ok();
    ck_assert_str_eq(c->journal, "postgresql://aurora@db.example:5432/world"
                                 "?sslmode=verify-full&sslrootcert=/etc/ca.pem");
    ck_assert_str_eq(c->journal_password_env, "AUR_TEST_PG_PW");
    ck_assert_int_eq(c->journal_wait_ms, 2500);
    aur__config_free(c);

    /* defaults; a user name alone is no password */
    put("host.ini", "[host]\nplugins = transport-stdio\n"
                    "journal = postgres://me@localhost/w\n");
    c = load_ok();
    ck_assert_str_eq(c->journal, "postgres://me@localhost/w");
    ck_assert_ptr_null(c->journal_password_env);
    ck_assert_int_eq(c->journal_wait_ms, 10000);
    aur__config_free(c);
    unsetenv("AUR_TEST_PG_PW");
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *good = tcase_create("good");

    tcase_add_checked_fixture(good, setup, teardown);
    tcase_add_test(good, demo_config_loads);
    tcase_add_test(good, full_config_values_and_defaults);
    tcase_add_test(good, host_options_and_plugin_sections);
    tcase_add_test(good, journal_uri_and_password_env);
    tcase_add_test(good, config_order_and_ignored_files);
    tcase_add_test(good, syntax_details);
    tcase_add_test(good, inactive_apps_skip_existence_checks);
    tcase_add_test(good, symlink_inside_is_resolved);
    tcase_add_test(good, agents_patterns_kept_verbatim);
    suite_add_tcase(s, good);

    return s;
}

int main(void)
{
    return aur_check_main(config_suite(), config_bad_suite());
}
