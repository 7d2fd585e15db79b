/*
 * check_names.c - the name grammars (docs/protocol.md) and the agents
 * pattern matcher (README: Configuration), from tables of examples.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <stdio.h>

#include <aurora/aur_host.h>
#include <string.h>

#include "names.h"

struct ex {
    const char *s;
    bool ok;
};

#define CHECK_TABLE(fn, table)                                               \
    do {                                                                     \
        size_t i_;                                                           \
        for (i_ = 0; i_ < AUR__ARRAY_LEN(table); i_++)                       \
            ck_assert_msg(fn(table[i_].s) == table[i_].ok,                   \
                          "%s(\"%s\") should be %s", #fn, table[i_].s,       \
                          table[i_].ok ? "true" : "false");                  \
    } while (0)

START_TEST(package_grammar)
{
    static const struct ex t[] = {
        {"org.aurora.clock", true},
        {"com.github.windows_mcp", true},
        {"im.polaris.weather", true},
        {"a.b-c", true},
        {"a.b", true},
        {"a0.b_.c-", true},
        {"clock", false},
        {"Org.example.clock", false},
        {"org..clock", false},
        {"org.example.clock!", false},
        {"org.1x", false},
        {"org.example.", false},
        {".org.example", false},
        {"", false},
        {"org.Example", false},
        {"org._x", false},
        {"org.-x", false},
        {"org.ex ample", false},
        {"org.example\n", false},
    };
    CHECK_TABLE(aur__valid_package, t);
    ck_assert(!aur__valid_package(NULL));
}
END_TEST

START_TEST(raw_name_grammar)
{
    static const struct ex t[] = {
        {"now", true},        {"Screenshot", true}, {"WaitFor", true},
        {"create_event", true}, {"a-b_c9", true},   {"x", true},
        {"", false},          {"a.b", false},       {"x.Y", false},
        {"9lives", false},    {"_x", false},        {"-x", false},
        {" now", false},      {"now ", false},      {"no w", false},
        {"caf\xc3\xa9", false},
    };
    CHECK_TABLE(aur__valid_raw_name, t);
    ck_assert(!aur__valid_raw_name(NULL));
}
END_TEST

START_TEST(builtin_id_grammar)
{
    static const struct ex t[] = {
        {"aur.core.echo", true},
        {"aur.a.b.c", true},
        {"aur.mcp.org.example.clock.alpha", true},
        {"aur.core", false},
        {"aur", false},
        {"aur.", false},
        {"aur.core.Echo", false},
        {"aurx.core.echo", false},
        {"Aur.core.echo", false},
        {"aur.core..echo", false},
        {"aur.mcp.com.github.windows_mcp.Screenshot", false},
        {"aur.core.echo.", false},
    };
    CHECK_TABLE(aur__valid_builtin_id, t);
}
END_TEST

START_TEST(env_name_grammar)
{
    static const struct ex t[] = {
        {"CLOCK_TOKEN", true}, {"_x", true},     {"a1", true},
        {"ANONYMIZED_TELEMETRY", true},          {"BAD-NAME", false},
        {"1X", false},         {"", false},      {"A B", false},
        {"\xc3\x84X", false},  {"A=B", false},
    };
    CHECK_TABLE(aur__valid_env_name, t);
}
END_TEST

/* The environment denylist, row by row (docs/containment.md has the same
 * table with the reasons).  Kept here on its own so that dropping or
 * changing a row of lib/names/names.c fails this test. */
static const struct {
    const char *name;
    bool prefix;
} denied_rows[] = {
    /* loaders */
    {"LD_", true}, {"DYLD_", true}, {"GLIBC_TUNABLES", false},
    {"GCONV_PATH", false}, {"GETCONF_DIR", false}, {"LOCPATH", false},
    {"NLSPATH", false}, {"HOSTALIASES", false},
    /* shells */
    {"BASH_ENV", false}, {"ENV", false}, {"BASH_FUNC_", true},
    {"SHELLOPTS", false}, {"BASHOPTS", false}, {"PS0", false},
    {"PS1", false}, {"PS2", false}, {"PS4", false},
    {"PROMPT_COMMAND", false}, {"MAILPATH", false},
    {"BASH_LOADABLES_PATH", false}, {"IFS", false}, {"ZDOTDIR", false},
    {"FPATH", false},
    /* python */
    {"PYTHONPATH", false}, {"PYTHONHOME", false}, {"PYTHONSTARTUP", false},
    {"PYTHONWARNINGS", false}, {"PYTHONBREAKPOINT", false},
    {"PYTHONINSPECT", false}, {"PYTHONUSERBASE", false},
    {"PYTHONPLATLIBDIR", false}, {"PYTHONPYCACHEPREFIX", false},
    {"PYTHONEXECUTABLE", false}, {"BROWSER", false},
    /* node */
    {"NODE_OPTIONS", false}, {"NODE_PATH", false},
    {"NODE_REPL_EXTERNAL_MODULE", false}, {"ELECTRON_RUN_AS_NODE", false},
    /* perl, ruby */
    {"PERL5LIB", false}, {"PERLLIB", false}, {"PERL5OPT", false},
    {"PERL5DB", false}, {"RUBYOPT", false}, {"RUBYLIB", false},
    {"RUBYPATH", false}, {"RUBYGEMS_GEMDEPS", false}, {"GEM_HOME", false},
    {"GEM_PATH", false}, {"BUNDLE_GEMFILE", false},
    /* java */
    {"JAVA_TOOL_OPTIONS", false}, {"JDK_JAVA_OPTIONS", false},
    {"_JAVA_OPTIONS", false}, {"JAVA_OPTS", false}, {"CLASSPATH", false},
    /* .NET */
    {"DOTNET_STARTUP_HOOKS", false}, {"DOTNET_ADDITIONAL_DEPS", false},
    {"DOTNET_SHARED_STORE", false}, {"DOTNET_JitName", false},
    {"DOTNET_AltJitName", false}, {"DOTNET_AltJit", false},
    {"DOTNET_GCName", false}, {"COMPlus_", true}, {"CORECLR_", true},
    {"COR_", true},
    /* other interpreters */
    {"LUA_INIT", true}, {"LUA_PATH", true}, {"LUA_CPATH", true},
    {"TCLLIBPATH", false}, {"PHPRC", false}, {"PHP_INI_SCAN_DIR", false},
    {"R_PROFILE", true}, {"R_ENVIRON", true}, {"R_LIBS", true},
    {"JULIA_LOAD_PATH", false}, {"JULIA_DEPOT_PATH", false},
    {"ERL_AFLAGS", false}, {"ERL_ZFLAGS", false}, {"ERL_FLAGS", false},
    {"ERL_LIBS", false}, {"ELIXIR_ERL_OPTIONS", false}, {"GOFLAGS", false},
    /* crypto and security libraries */
    {"OPENSSL_CONF", false}, {"OPENSSL_CONF_INCLUDE", false},
    {"OPENSSL_ENGINES", false}, {"OPENSSL_MODULES", false},
    {"SSLKEYLOGFILE", false}, {"KRB5_CONFIG", false}, {"SASL_PATH", false},
    /* plugin-loading libraries */
    {"GIO_EXTRA_MODULES", false}, {"GTK_MODULES", false},
    {"GTK3_MODULES", false}, {"GTK_PATH", false},
    {"GDK_PIXBUF_MODULE_FILE", false}, {"GDK_PIXBUF_MODULEDIR", false},
    {"GST_PLUGIN_", true}, {"QT_PLUGIN_PATH", false},
    {"QT_QPA_PLATFORM_PLUGIN_PATH", false}, {"ASAN_OPTIONS", false},
    {"LSAN_OPTIONS", false}, {"MSAN_OPTIONS", false},
    {"TSAN_OPTIONS", false}, {"UBSAN_OPTIONS", false},
    {"HWASAN_OPTIONS", false},
    /* commands run by name */
    {"EDITOR", false}, {"VISUAL", false}, {"PAGER", false},
    {"LESSOPEN", false}, {"LESSCLOSE", false}, {"SSH_ASKPASS", false},
    {"SUDO_ASKPASS", false}, {"GIT_SSH", false}, {"GIT_SSH_COMMAND", false},
    {"GIT_ASKPASS", false}, {"GIT_EXEC_PATH", false}, {"GIT_EDITOR", false},
    {"GIT_SEQUENCE_EDITOR", false}, {"GIT_PAGER", false},
    {"GIT_PROXY_COMMAND", false}, {"GIT_EXTERNAL_DIFF", false},
    {"GIT_TEMPLATE_DIR", false}, {"GIT_CONFIG", false},
    {"GIT_CONFIG_", true},
};

static void lower_copy(char *dst, const char *src)
{
    for (; *src; src++)
        *dst++ = (char)(*src >= 'A' && *src <= 'Z' ? *src + 32 : *src);
    *dst = '\0';
}

START_TEST(env_denylist_rows)
{
    size_t n, want = AUR__ARRAY_LEN(denied_rows);
    const struct aur__env_deny *t = aur__env_denylist(&n);
    char buf[128];

    ck_assert_uint_eq(n, want);
    for (size_t i = 0; i < want; i++) {
        const char *name = denied_rows[i].name;
        const struct aur__env_deny *r;
        bool listed = false;

        /* The name itself (a prefix is a valid name too) ... */
        r = aur__env_deny_row(name);
        ck_assert_msg(r != NULL, "%s is not denied", name);
        ck_assert_str_eq(r->name, name);
        ck_assert_int_eq(r->prefix, denied_rows[i].prefix);
        ck_assert_msg(r->family && *r->family && r->why && *r->why,
                      "%s: no family or reason", name);
        /* ... in any case ... */
        lower_copy(buf, name);
        ck_assert_msg(aur__env_name_denied(buf), "%s is not denied", buf);
        /* ... and a longer name only for a family. */
        snprintf(buf, sizeof buf, "%sX", name);
        ck_assert_msg(aur__env_name_denied(buf) == denied_rows[i].prefix,
                      "%s should be %s", buf,
                      denied_rows[i].prefix ? "denied" : "allowed");
        snprintf(buf, sizeof buf, "%s1_2", name);
        ck_assert_msg(aur__env_name_denied(buf) == denied_rows[i].prefix,
                      "%s should be %s", buf,
                      denied_rows[i].prefix ? "denied" : "allowed");
        /* A shorter one never (no row is a prefix of another's name). */
        snprintf(buf, sizeof buf, "%.*s", (int)strlen(name) - 1, name);
        if (strcmp(buf, "GIT_CONFIG") != 0) /* GIT_CONFIG_ vs GIT_CONFIG */
            ck_assert_msg(!aur__env_name_denied(buf), "%s is denied", buf);
        /* Every row of the library is one of ours. */
        for (size_t j = 0; j < want && !listed; j++)
            listed = strcmp(t[i].name, denied_rows[j].name) == 0 &&
                     t[i].prefix == denied_rows[j].prefix;
        ck_assert_msg(listed, "row %s is not in this test", t[i].name);
    }
    ck_assert(!aur__env_name_denied(NULL));
    ck_assert_ptr_null(aur__env_deny_row(NULL));
}
END_TEST

/* What an App may still be given: the near misses, and the variables MCP
 * servers commonly need. */
START_TEST(env_denylist_allows)
{
    static const char *const ok[] = {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ",
        "TMPDIR", "LD", "LDFLAGS", "XLD_PRELOAD", "MY_LD_PRELOAD", "ENVX",
        "ENVIRONMENT", "PS", "PS3", "PS10", "IFS2", "PYTHON",
        "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE",
        "PYTHONUTF8", "PYTHONHASHSEED", "NODE_ENV", "NODE_EXTRA_CA_CERTS",
        "NODE_NO_WARNINGS", "JAVA_HOME", "DOTNET_ROOT", "DOTNET_ENVIRONMENT",
        "DOTNET_gcServer", "DOTNET_CLI_TELEMETRY_OPTOUT", "CORE_DIR",
        "CORS_ORIGIN", "GIT_AUTHOR_NAME", "GIT_COMMITTER_EMAIL", "GIT_DIR",
        "GIT_TERMINAL_PROMPT", "GITHUB_TOKEN", "SSH_AUTH_SOCK", "OPENSSL",
        "OPENAI_API_KEY", "LUA", "R_HOME", "GEM", "RUBY_VERSION", "EDITORS",
        "CLOCK_TOKEN", "ANONYMIZED_TELEMETRY", "MEMORY_FILE_PATH", "_x",
    };

    for (size_t i = 0; i < AUR__ARRAY_LEN(ok); i++)
        ck_assert_msg(!aur__env_name_denied(ok[i]), "%s is denied", ok[i]);
}
END_TEST

START_TEST(scope_grammar)
{
    static const struct ex t[] = {
        {"qq:group:100", true},
        {"calendar:personal", true},
        {"aurora:mcp:org.x.y", true},
        {"a b", true},
        {"\xe9\xa2\x91\xe9\x81\x93:\xe4\xb8\x80", true}, /* 频道:一 */
        {"{x}", true},
        {"a\x7f", true},
        {"", false},
        {" qq:1", false},
        {"qq:1 ", false},
        {"scope\nline", false},
        {"\tx", false},
        {"x\x01y", false},
        {"\xc2\xa0x", false},          /* U+00A0 leading */
        {"x\xe3\x80\x80", false},      /* U+3000 trailing */
        {"\xe2\x80\x8ax", false},      /* U+200A leading */
        {"x\xe2\x80\xa8", false},      /* U+2028 trailing */
        {"\xc2\x85x", false},          /* U+0085 leading */
        {"x\xe2\x80\xaf", false},      /* U+202F trailing */
        {"a\xc2\xa0" "b", true},       /* inside is fine */
        {"\xe2\x80\x8bx", true},       /* U+200B is not Python space */
        {"\xff", false},               /* not UTF-8 */
        {"\xc0\xaf", false},           /* overlong */
        {"\xed\xa0\x80", false},       /* surrogate */
    };
    char buf[1024];

    CHECK_TABLE(aur__valid_scope, t);
    ck_assert(!aur__valid_scope(NULL));
    memset(buf, 's', 256);
    buf[256] = '\0';
    ck_assert(aur__valid_scope(buf));
    buf[256] = 's';
    buf[257] = '\0';
    ck_assert(!aur__valid_scope(buf));
    /* 256 code points of 3 bytes each: the limit is code points. */
    for (int i = 0; i < 256; i++)
        memcpy(buf + 3 * i, "\xe4\xb8\x80", 3);
    buf[768] = '\0';
    ck_assert(aur__valid_scope(buf));
    memcpy(buf + 768, "\xe4\xb8\x80", 4);
    ck_assert(!aur__valid_scope(buf));
}
END_TEST

START_TEST(event_id_grammar)
{
    static const struct ex t[] = {
        {"e-1", true},          {"A", true},          {"0:a.b_c-d", true},
        {"contains space", false}, {"-lead", false},  {"", false},
        {".x", false},          {"a/b", false},       {"a\xc3\xa9", false},
    };
    char buf[200];

    CHECK_TABLE(aur__valid_event_id, t);
    memset(buf, 'e', 160);
    buf[160] = '\0';
    ck_assert(aur__valid_event_id(buf));
    buf[160] = 'e';
    buf[161] = '\0';
    ck_assert(!aur__valid_event_id(buf));
}
END_TEST

START_TEST(utf8_length)
{
    ck_assert_int_eq(aur__utf8_len("", 0), 0);
    ck_assert_int_eq(aur__utf8_len("abc", 3), 3);
    ck_assert_int_eq(aur__utf8_len("\xe9\xa2\x91\xe9\x81\x93", 6), 2);
    ck_assert_int_eq(aur__utf8_len("\xf0\x9f\x98\x80x", 5), 2);
    ck_assert_int_eq(aur__utf8_len("\xc3\xa9", 2), 1);
    /* n bounds the scan: a cut sequence is invalid. */
    ck_assert_int_eq(aur__utf8_len("\xc3\xa9", 1), -1);
    ck_assert_int_eq(aur__utf8_len("\xff", 1), -1);
    ck_assert_int_eq(aur__utf8_len("\xc0\x80", 2), -1);
    ck_assert_int_eq(aur__utf8_len("\xe0\x80\xaf", 3), -1);
    ck_assert_int_eq(aur__utf8_len("\xed\xbf\xbf", 3), -1);
    ck_assert_int_eq(aur__utf8_len("\xf4\x90\x80\x80", 4), -1);
    ck_assert_int_eq(aur__utf8_len("\x80", 1), -1);
    ck_assert_int_eq(aur__utf8_len("a\0b", 3), 3);
}
END_TEST

struct pm {
    const char *pat, *id;
    bool ok;
};

START_TEST(pattern_matching)
{
    static const struct pm t[] = {
        {"aur.mcp.org.example.clock.*", "aur.mcp.org.example.clock.now", 1},
        {"aur.mcp.org.example.clock.*", "aur.mcp.org.example.clock.a.b", 0},
        {"aur.mcp.org.example.clock.*", "aur.mcp.org.example.clockx.now", 0},
        {"aur.mcp.**", "aur.mcp.org.example.clock.now", 1},
        {"aur.mcp.**", "aur.mcp.x", 1},
        {"aur.mcp.**", "aur.mcp", 0},
        {"aur.mcp.**", "aur.core.echo", 0},
        {"**", "aur.core.echo", 1},
        {"**.now", "aur.mcp.a.b.now", 1},
        {"**.now", "now", 0},
        {"aur.**.now", "aur.x.now", 1},
        {"aur.**.now", "aur.now", 0},
        {"aur.**.**.now", "aur.a.b.now", 1},
        {"aur.**.**.now", "aur.a.now", 0},
        {"aur.core.echo", "aur.core.echo", 1},
        {"aur.core.echo", "aur.core.echo2", 0},
        {"aur.core.ec?o", "aur.core.echo", 1},
        {"aur.core.ec?o", "aur.core.eco", 0},
        {"aur.core?echo", "aur.core.echo", 0},
        {"aur*", "aur.core.echo", 0},
        {"aur.c*", "aur.core", 1},
        {"aur.*e", "aur.core", 1},
        {"aur.*x*", "aur.core", 0},
        {"aur.c**e", "aur.core", 1},
        {"aur.c**e", "aur.c.e", 0},
        {"aur.[a-c]ore", "aur.core", 1},
        {"aur.[!a-c]ore", "aur.core", 0},
        {"aur.[^a-c]ore", "aur.dore", 1},
        {"aur.[]x]", "aur.]", 1},
        {"aur.[a-]", "aur.-", 1},
        {"aur.[c-a]ore", "aur.core", 0},
        {"aur.[abc", "aur.a", 0},
        {"a.S*", "a.Screenshot", 1},
        {"a.s*", "a.Screenshot", 0},
        {"", "aur.x", 0},
    };
    size_t i;

    for (i = 0; i < AUR__ARRAY_LEN(t); i++)
        ck_assert_msg(aur__pattern_match(t[i].pat, t[i].id) == t[i].ok,
                      "match(\"%s\", \"%s\") should be %d", t[i].pat,
                      t[i].id, t[i].ok);
    ck_assert(!aur__pattern_match(NULL, "a"));
    ck_assert(!aur__pattern_match("a", NULL));
}
END_TEST

START_TEST(pattern_many_double_stars_is_fast)
{
    char pat[4096], id[4096];
    size_t n = 0, m = 0;
    int i;

    for (i = 0; i < 500; i++) {
        memcpy(pat + n, "**.", 3);
        n += 3;
        memcpy(id + m, "a.", 2);
        m += 2;
    }
    memcpy(pat + n, "b", 2);
    memcpy(id + m, "c", 2);
    ck_assert(!aur__pattern_match(pat, id));
    id[m] = 'b';
    ck_assert(aur__pattern_match(pat, id));
}
END_TEST

START_TEST(pattern_wildcards)
{
    ck_assert(aur__pattern_has_wildcard("aur.mcp.*"));
    ck_assert(aur__pattern_has_wildcard("aur.mcp.?"));
    ck_assert(aur__pattern_has_wildcard("aur.[ab]"));
    ck_assert(aur__pattern_has_wildcard("**"));
    ck_assert(!aur__pattern_has_wildcard("aur.core.echo"));
    ck_assert(!aur__pattern_has_wildcard(""));
    ck_assert(!aur__pattern_has_wildcard(NULL));
}
END_TEST

/* "Did you mean": typos within the budget, never a guess. */
START_TEST(suggest_typos)
{
    static const char *const keys[] = {"command", "arg", "working_dir",
                                       "env", "url", "auth_env", "ca_file"};
    static const char *const cmds[] = {"check", "discover", "call", "serve",
                                       "journal", "plugin-info"};
    char longw[300], longn[300];
    const char *names2[2];

    ck_assert_str_eq(aur_suggest("comand", keys, 7), "command");
    ck_assert_str_eq(aur_suggest("workign_dir", keys, 7), "working_dir");
    ck_assert_str_eq(aur_suggest("args", keys, 7), "arg");
    ck_assert_str_eq(aur_suggest("auth-env", keys, 7), "auth_env");
    ck_assert_str_eq(aur_suggest("discovr", cmds, 6), "discover");
    ck_assert_str_eq(aur_suggest("srve", cmds, 6), "serve");
    ck_assert_str_eq(aur_suggest("jorunal", cmds, 6), "journal");
    /* Too far, empty, exact, or a tie: nothing. */
    ck_assert_ptr_null(aur_suggest("frobnicate", cmds, 6));
    ck_assert_ptr_null(aur_suggest("xyz", keys, 7));
    ck_assert_ptr_null(aur_suggest("", keys, 7));
    ck_assert_ptr_null(aur_suggest(NULL, keys, 7));
    ck_assert_ptr_null(aur_suggest("call", cmds, 6));
    names2[0] = "cat";
    names2[1] = "car";
    ck_assert_ptr_null(aur_suggest("caX", names2, 2));
    /* A short word gets one edit, not two. */
    names2[0] = "url";
    ck_assert_str_eq(aur_suggest("urX", names2, 1), "url");
    ck_assert_ptr_null(aur_suggest("uXX", names2, 1));
    /* Long tool ids: the closest of many, bounded lengths. */
    ck_assert_str_eq(aur_suggest("aur.mcp.org.example.fs.read_fiel",
                                 (const char *const[]){
                                     "aur.mcp.org.example.fs.read_file",
                                     "aur.mcp.org.example.fs.write_file",
                                     "aur.mcp.org.example.fs.list"},
                                 3),
                     "aur.mcp.org.example.fs.read_file");
    memset(longw, 'a', 299);
    longw[299] = '\0';
    memcpy(longn, longw, sizeof longn);
    longn[0] = 'b';
    names2[0] = longn;
    ck_assert_ptr_null(aur_suggest(longw, names2, 1));
}
END_TEST

/* The public check import uses: grammar first, then the denylist. */
START_TEST(env_refused_reasons)
{
    ck_assert_ptr_null(aur_env_refused("GITHUB_TOKEN"));
    ck_assert_ptr_null(aur_env_refused("_x1"));
    ck_assert_ptr_nonnull(strstr(aur_env_refused("1X"), "not an environment"));
    ck_assert_ptr_nonnull(strstr(aur_env_refused("A-B"), "not an environment"));
    ck_assert_ptr_nonnull(aur_env_refused(NULL));
    ck_assert_str_eq(aur_env_refused("LD_PRELOAD"),
                     aur__env_deny_row("LD_PRELOAD")->why);
    ck_assert_str_eq(aur_env_refused("node_options"),
                     aur__env_deny_row("NODE_OPTIONS")->why);
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *g = tcase_create("grammars");
    TCase *p = tcase_create("patterns");

    tcase_add_test(g, package_grammar);
    tcase_add_test(g, raw_name_grammar);
    tcase_add_test(g, builtin_id_grammar);
    tcase_add_test(g, env_name_grammar);
    tcase_add_test(g, env_denylist_rows);
    tcase_add_test(g, env_denylist_allows);
    tcase_add_test(g, scope_grammar);
    tcase_add_test(g, event_id_grammar);
    tcase_add_test(g, utf8_length);
    tcase_add_test(g, suggest_typos);
    tcase_add_test(g, env_refused_reasons);
    suite_add_tcase(s, g);
    tcase_add_test(p, pattern_matching);
    tcase_add_test(p, pattern_many_double_stars_is_fast);
    tcase_add_test(p, pattern_wildcards);
    suite_add_tcase(s, p);
    return s;
}

int main(void) { return aur_check_main(names_suite(), NULL); }
