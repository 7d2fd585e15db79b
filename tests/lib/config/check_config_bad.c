/*
 * check_config_bad.c - a table of bad configs, each of which must fail
 * with AUR_E_CONFIG naming the file, line and key, with nothing loaded
 * and no secret in the message; and the message format.  Part of
 * check_config.
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
#include <stdlib.h>
#include <string.h>

Suite *config_bad_suite(void);

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
    /* a PostgreSQL journal: the password lives in the environment only */
    {"journal uri with password",
     "[host]\nplugins = transport-stdio\n"
     "journal = postgresql://u:t0ken@db:5432/w\n",
     NULL, NULL, NULL, NULL, "host.ini", 3, "journal"},
    {"journal uri password param",
     "[host]\nplugins = transport-stdio\n"
     "journal = postgres://u@db/w?sslmode=require&password=t0ken\n",
     NULL, NULL, NULL, NULL, "host.ini", 3, "journal"},
    {"journal_password_env unset",
     "[host]\nplugins = transport-stdio\njournal = postgresql://u@db/w\n"
     "journal_password_env = AUR_TEST_TOKEN\n",
     NULL, NULL, NULL, prep_unset, "host.ini", 4, "journal_password_env"},
    {"journal_password_env empty",
     "[host]\nplugins = transport-stdio\njournal = postgresql://u@db/w\n"
     "journal_password_env = AUR_TEST_TOKEN\n",
     NULL, NULL, NULL, prep_empty, "host.ini", 4, "journal_password_env"},
    {"journal_password_env name",
     "[host]\nplugins = transport-stdio\njournal = postgresql://u@db/w\n"
     "journal_password_env = 9PW\n",
     NULL, NULL, NULL, NULL, "host.ini", 4, "journal_password_env"},
    {"journal_wait_ms range",
     "[host]\nplugins = transport-stdio\njournal = postgresql://u@db/w\n"
     "journal_wait_ms = 50\n",
     NULL, NULL, NULL, NULL, "host.ini", 4, "journal_wait_ms"},
    {"journal_wait_ms on a file",
     "[host]\nplugins = transport-stdio\njournal = j\n"
     "journal_wait_ms = 5000\n",
     NULL, NULL, NULL, NULL, "host.ini", 4, "journal_wait_ms"},
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
     "host.ini", 1, "plugins"},
    {"long garbage line", HOST_ALL X100 X100 X100 "\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, ""},
    {"long unknown key", HOST_ALL "k" X100 X100 " = 1\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, "k" X10 X10 X10 X10 X10 X10 "xx"},
    {"control char", HOST_ALL "max_pages = 1\x02\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, "max_pages"},
    {"control char in key", HOST_ALL "max\x02pages = 1\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, ""},
    {"control char, colon", HOST_ALL "  max_tools : 1\x7f\x01\n", NULL, NULL,
     NULL, NULL, "host.ini", 7, "max_tools"},
    {"bad utf-8", HOST_ALL "; \xff\n", NULL, NULL, NULL, NULL, "host.ini", 7,
     ""},
    {"bad utf-8 value", HOST_ALL "max_pages = 1\xc3\n", NULL, NULL, NULL,
     NULL, "host.ini", 7, "max_pages"},
    {"text after header", HOST_ALL "[transport-stdio] x = 1\n", NULL, NULL,
     NULL, NULL, "host.ini", 7, "[transport-stdio]"},
    {"empty section name", HOST_ALL "[ ]\n", NULL, NULL, NULL, NULL,
     "host.ini", 7, "[]"},
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
     NULL, NULL, "apps.d/a.ini", 1, "package"},
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
     NULL, NULL, NULL, "apps.d/a.ini", 4, "transport"},
    {"stdio with [http]", NULL, APP_STDIO HTTP_TAIL, NULL, NULL, NULL,
     "apps.d/a.ini", 14, "url"},
    {"stdio with empty [http]", NULL, APP_STDIO "[http]\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "[http]"},
    {"stdio with [http] auth_env", NULL, APP_STDIO "[http]\nauth_env = X\n",
     NULL, NULL, NULL, "apps.d/a.ini", 13, "auth_env"},
    {"stdio url", NULL, APP_STDIO "url = https://h/x\n", NULL, NULL, NULL,
     "apps.d/a.ini", 12, "url"},
    /* The keys the host adds to a transport's section are its own. */
    {"stdio config_dir", NULL, APP_STDIO "config_dir = /etc\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "config_dir"},
    {"http package", NULL, APP_HTTP "package = org.x.y\n", NULL, NULL, NULL,
     "apps.d/a.ini", 9, "package"},
    {"stdio timeout_ms", NULL, APP_STDIO "timeout_ms = 5\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "timeout_ms"},
    {"transport by plugin name, wrong section", NULL,
     APP_HEAD("org.a.b", "true", "transport-http", "1") STDIO_TAIL, NULL,
     NULL, NULL, "apps.d/a.ini", 8, "command"},
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
    {"env SHELLOPTS", NULL, APP_STDIO "env = SHELLOPTS\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env PS4", NULL, APP_STDIO "env = PS4\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env PROMPT_COMMAND", NULL, APP_STDIO "env = PROMPT_COMMAND\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env BASHOPTS", NULL, APP_STDIO "env = BASHOPTS\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env OPENSSL_CONF", NULL, APP_STDIO "env = OPENSSL_CONF\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env OPENSSL_MODULES", NULL, APP_STDIO "env = OPENSSL_MODULES\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env PYTHONWARNINGS", NULL, APP_STDIO "env = PYTHONWARNINGS\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env PYTHONBREAKPOINT", NULL, APP_STDIO "env = PYTHONBREAKPOINT\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env DOTNET_STARTUP_HOOKS", NULL, APP_STDIO "env = DOTNET_STARTUP_HOOKS\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env CORECLR_PROFILER_PATH (prefix CORECLR_)", NULL, APP_STDIO "env = CORECLR_PROFILER_PATH\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env COMPlus_GCName (prefix COMPlus_)", NULL, APP_STDIO "env = COMPlus_GCName\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env GIT_CONFIG_KEY_0 (prefix GIT_CONFIG_)", NULL, APP_STDIO "env = GIT_CONFIG_KEY_0\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env GCONV_PATH", NULL, APP_STDIO "env = GCONV_PATH\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
    {"env ld_preload (lowercase)", NULL, APP_STDIO "env = ld_preload\n", NULL, NULL,
     NULL, "apps.d/a.ini", 12, "env"},
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
     "apps.d/a.ini", 4, "transport"},
    {"http with [stdio]", NULL, APP_HTTP "[stdio]\n", NULL, NULL, NULL,
     "apps.d/a.ini", 9, "[stdio]"},
    {"http with [stdio] command", NULL, APP_HTTP "[stdio]\ncommand = x\n",
     NULL, NULL, NULL, "apps.d/a.ini", 10, "command"},
    {"http with [stdio] env", NULL, APP_HTTP "[stdio]\n; why\nenv = X\n",
     NULL, NULL, NULL, "apps.d/a.ini", 11, "env"},
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
    rc = aur__config_load(tmp, T(), NT(), &c, &diag, &err);
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
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_msg(strncmp(err.msg, "apps.d/clock.ini:5: timeout_seconds: ",
                          37) == 0, "%s", err.msg);
    /* diag is optional */
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, NULL, &err), AUR_E_CONFIG);
    ck_assert_int_eq(aur__config_load("/nonexistent/aur-config", T(), NT(), &c, &diag,
                                      &err), AUR_E_CONFIG);
    ck_assert_str_eq(diag.file, "/nonexistent/aur-config");
    /* A key of the other transport's section: its own line and name. */
    put("apps.d/clock.ini", APP_STDIO "\n[http]\nurl = https://h/x\n");
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_str_eq(err.msg, "apps.d/clock.ini:14: url: [http] is not "
                              "allowed with transport = stdio (line 4)");
    /* A transport word one letter off is suggested. */
    put("apps.d/clock.ini",
        APP_HEAD("org.example.clock", "true", "stdoi", "30") STDIO_TAIL);
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err),
                     AUR_E_CONFIG);
    ck_assert_msg(strstr(err.msg, "apps.d/clock.ini:4: transport: ") &&
                      strstr(err.msg, "did you mean stdio?"),
                  "%s", err.msg);
    /* The plugin's own name chooses it as well as its word. */
    put("apps.d/clock.ini",
        APP_HEAD("org.example.clock", "true", "transport-stdio", "30")
        STDIO_TAIL);
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err),
                     AUR_OK);
    ck_assert_str_eq(c->apps[0].transport->name, "transport-stdio");
    aur__config_free(c);
    /* A denied variable is named, with the reason. */
    put("apps.d/clock.ini", APP_STDIO "env = NODE_OPTIONS\n");
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_msg(strstr(err.msg, "apps.d/clock.ini:12: env: NODE_OPTIONS ") &&
                      strstr(err.msg, "never passed to an App"),
                  "%s", err.msg);
    /* So is one of a family, as written, on its own line. */
    put("apps.d/clock.ini", APP_STDIO "env = CLOCK_TOKEN_2\n"
                            "env = DOTNET_STARTUP_HOOKS\n");
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_str_eq(diag.file, "apps.d/clock.ini");
    ck_assert_int_eq(diag.line, 13);
    ck_assert_str_eq(diag.key, "env");
    ck_assert_msg(strncmp(err.msg, "apps.d/clock.ini:13: env: "
                                   "DOTNET_STARTUP_HOOKS ", 47) == 0,
                  "%s", err.msg);
}
END_TEST

/* Each key of [stdio] and [http], and an unknown one, in the section of
 * the other transport: the error names that key on its own line, not the
 * section header. */
static const struct {
    const char *transport; /* of the App */
    const char *section;   /* the other transport's */
    const char *line;      /* key = value */
    const char *key;
} misplaced[] = {
    {"stdio", "http", "url = https://h/x", "url"},
    {"stdio", "http", "auth_env = X", "auth_env"},
    {"stdio", "http", "ca_file = certs/ca.pem", "ca_file"},
    {"stdio", "http", "colour = red", "colour"},
    {"streamable_http", "stdio", "command = node", "command"},
    {"streamable_http", "stdio", "arg = x", "arg"},
    {"streamable_http", "stdio", "working_dir = srv", "working_dir"},
    {"streamable_http", "stdio", "env = X", "env"},
    {"streamable_http", "stdio", "colour = red", "colour"},
};

START_TEST(misplaced_section_key)
{
    struct aur__config *c = (struct aur__config *)&c;
    struct aur__config_diag diag;
    struct aur_error err;
    char app[512], want[256];
    bool stdio = strcmp(misplaced[_i].transport, "stdio") == 0;

    /* Lines: 1-5 [app], 6 blank, from 7 the App's own section (3 lines
     * for stdio, 2 for http), a blank, the other section, a comment, the
     * misplaced key: line 13 (stdio App) or 12 (HTTP App). */
    snprintf(app, sizeof app,
             "[app]\npackage = org.a.b\nenabled = true\ntransport = %s\n"
             "timeout_seconds = 1\n\n%s\n\n[%s]\n; misplaced\n%s\n",
             misplaced[_i].transport,
             stdio ? "[stdio]\ncommand = x\nworking_dir = srv"
                   : "[http]\nurl = https://h/x",
             misplaced[_i].section, misplaced[_i].line);
    put("host.ini", HOST_ALL);
    put("apps.d/a.ini", app);
    mkdir_rel("srv");
    ck_assert_int_eq(aur__config_load(tmp, T(), NT(), &c, &diag, &err), AUR_E_CONFIG);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(diag.file, "apps.d/a.ini");
    ck_assert_msg(diag.line == (stdio ? 13 : 12), "%s", err.msg);
    ck_assert_str_eq(diag.key, misplaced[_i].key);
    snprintf(want, sizeof want, "apps.d/a.ini:%d: %s: [%s] is not allowed",
             stdio ? 13 : 12, misplaced[_i].key, misplaced[_i].section);
    ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
}
END_TEST

Suite *config_bad_suite(void)
{
    Suite *s = suite_create("config_bad");
    TCase *bad = tcase_create("bad");

    tcase_add_checked_fixture(bad, setup, teardown);
    tcase_add_loop_test(bad, bad_config, 0, (int)AUR__ARRAY_LEN(bads));
    tcase_add_test(bad, message_format);
    tcase_add_loop_test(bad, misplaced_section_key, 0,
                        (int)AUR__ARRAY_LEN(misplaced));
    suite_add_tcase(s, bad);
    return s;
}
