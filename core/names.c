/*
 * names.c - the grammars of aurora-semantics §1 and the agents.ini
 * pattern matcher of §3.5.  Pure functions over borrowed strings; no
 * state, so every function is thread-safe.
 *
 * The regexes of the spec are implemented as hand-written scanners: each
 * is a simple concatenation of character classes, and a scanner makes the
 * "ASCII classes, full match" rule explicit without a regex engine.
 */
#include "aur_setup.h"

#include "names.h"

#include <string.h>

static bool is_lower(int c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(int c) { return c >= 'A' && c <= 'Z'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return is_lower(c) || is_upper(c); }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }

/*
 * One lowercase segment [a-z][a-z0-9_-]* starting at *p; advances *p past
 * it.  False if no segment starts there.
 */
static bool lower_segment(const char **p)
{
    const char *s = *p;

    if (!is_lower((unsigned char)*s))
        return false;
    s++;
    while (is_lower((unsigned char)*s) || is_digit((unsigned char)*s) ||
           *s == '_' || *s == '-')
        s++;
    *p = s;
    return true;
}

/* Number of dot-separated lowercase segments that make up all of s, or
 * -1 if s is not exactly such a sequence. */
static long lower_dotted(const char *s)
{
    long n = 0;

    for (;;) {
        if (!lower_segment(&s))
            return -1;
        n++;
        if (*s == '\0')
            return n;
        if (*s != '.')
            return -1;
        s++;
    }
}

bool aur__valid_package(const char *s)
{
    return s && lower_dotted(s) >= 2;
}

bool aur__valid_raw_name(const char *s)
{
    if (!s || !is_alpha((unsigned char)*s))
        return false;
    for (s++; *s; s++)
        if (!is_alnum((unsigned char)*s) && *s != '_' && *s != '-')
            return false;
    return true;
}

bool aur__valid_builtin_id(const char *s)
{
    /* aur(\.seg){2,} is "aur" as its own first segment plus two more. */
    if (!s || strncmp(s, "aur.", 4) != 0)
        return false;
    return lower_dotted(s + 4) >= 2;
}

bool aur__valid_env_name(const char *s)
{
    if (!s || !(is_alpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!is_alnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/*
 * The environment denylist (aurora-semantics.md §4.4, docs/containment.md
 * has the same table with sources): variables that make a child's
 * loader, shell, interpreter, runtime or a library it links run or load
 * code the App did not ship.  The host's environment is the operator's;
 * such a variable there is meant for the host or the operator's tools,
 * never for a third-party App, so an App config cannot whitelist it.
 * Config loading is the one gate.  A row is a whole name, or with prefix
 * the start of every name of a family.  Names compare ignoring ASCII
 * case: a few consumers fold case (the .NET runtime's knobs), and no one
 * needs a lowercase twin of these.
 */
#define P true  /* a prefix family */
#define N false /* one name */
static const struct aur__env_deny env_deny[] = {
    /* glibc and other dynamic loaders */
    {"LD_", P, "ld.so", "LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT ...: load "
                        "shared objects into every program"},
    {"DYLD_", P, "dyld", "the macOS loader's LD_ (DYLD_INSERT_LIBRARIES)"},
    {"GLIBC_TUNABLES", N, "glibc", "loader tunables, parsed before main "
                                   "(CVE-2023-4911)"},
    {"GCONV_PATH", N, "glibc", "iconv loads gconv modules (.so) from it"},
    {"GETCONF_DIR", N, "glibc", "getconf runs the programs it finds there"},
    {"LOCPATH", N, "glibc", "locale data from anywhere"},
    {"NLSPATH", N, "glibc", "message catalogs (format strings) from "
                            "anywhere"},
    {"HOSTALIASES", N, "glibc", "resolver aliases from any file"},
    /* shells */
    {"BASH_ENV", N, "bash", "sourced by every non-interactive bash"},
    {"ENV", N, "sh, dash, ksh, bash --posix", "sourced by interactive "
                                              "shells"},
    {"BASH_FUNC_", P, "bash", "exported functions, run as code "
                              "(Shellshock)"},
    {"SHELLOPTS", N, "bash", "set -o options at startup (xtrace runs PS4)"},
    {"BASHOPTS", N, "bash", "shopt options at startup"},
    {"PS0", N, "bash", "prompt strings undergo command substitution"},
    {"PS1", N, "sh, bash, zsh", "prompt strings undergo command "
                                "substitution"},
    {"PS2", N, "sh, bash, zsh", "prompt strings undergo command "
                                "substitution"},
    {"PS4", N, "sh, bash, dash, zsh", "expanded (with $(...)) before every "
                                      "traced command"},
    {"PROMPT_COMMAND", N, "bash", "run before every prompt"},
    {"MAILPATH", N, "bash", "its messages undergo command substitution"},
    {"BASH_LOADABLES_PATH", N, "bash", "enable -f loads builtins (.so) "
                                       "from it"},
    {"IFS", N, "sh", "re-splits every unquoted expansion of a script"},
    {"ZDOTDIR", N, "zsh", "where .zshenv, sourced by every zsh, is read"},
    {"FPATH", N, "zsh, ksh", "autoloaded functions from anywhere"},
    /* Python */
    {"PYTHONPATH", N, "python", "modules imported first"},
    {"PYTHONHOME", N, "python", "the standard library from anywhere"},
    {"PYTHONSTARTUP", N, "python", "a script run at interactive start"},
    {"PYTHONWARNINGS", N, "python", "a warning category imports any "
                                    "module"},
    {"PYTHONBREAKPOINT", N, "python", "breakpoint() imports and calls any "
                                      "callable"},
    {"PYTHONINSPECT", N, "python", "reads code from stdin after the "
                                   "script"},
    {"PYTHONUSERBASE", N, "python", "user site-packages: .pth files run "
                                    "code"},
    {"PYTHONPLATLIBDIR", N, "python", "the platform library directory"},
    {"PYTHONPYCACHEPREFIX", N, "python", "compiled modules (.pyc) read "
                                         "from anywhere"},
    {"PYTHONEXECUTABLE", N, "python", "the interpreter sys.executable "
                                      "re-runs"},
    {"BROWSER", N, "python webbrowser, xdg", "a command run to open a URL"},
    /* Node.js and relatives */
    {"NODE_OPTIONS", N, "node", "--require, --import, --loader run code"},
    {"NODE_PATH", N, "node", "modules resolved first"},
    {"NODE_REPL_EXTERNAL_MODULE", N, "node", "a module run instead of the "
                                             "REPL"},
    {"ELECTRON_RUN_AS_NODE", N, "electron", "turns an Electron app into a "
                                            "Node.js that runs its "
                                            "arguments"},
    /* Perl, Ruby */
    {"PERL5LIB", N, "perl", "modules loaded first"},
    {"PERLLIB", N, "perl", "modules loaded first"},
    {"PERL5OPT", N, "perl", "switches (-M, -d) applied to every perl"},
    {"PERL5DB", N, "perl", "debugger code run with -d"},
    {"RUBYOPT", N, "ruby", "switches (-r) applied to every ruby"},
    {"RUBYLIB", N, "ruby", "libraries loaded first"},
    {"RUBYPATH", N, "ruby", "where -S finds scripts"},
    {"RUBYGEMS_GEMDEPS", N, "rubygems", "loads the gems of any Gemfile at "
                                        "start"},
    {"GEM_HOME", N, "rubygems", "gems loaded from anywhere"},
    {"GEM_PATH", N, "rubygems", "gems loaded from anywhere"},
    {"BUNDLE_GEMFILE", N, "bundler", "a Gemfile is Ruby code"},
    /* Java */
    {"JAVA_TOOL_OPTIONS", N, "java", "options (-javaagent) of every JVM"},
    {"JDK_JAVA_OPTIONS", N, "java", "options (-javaagent) of the java "
                                    "launcher"},
    {"_JAVA_OPTIONS", N, "java", "options (-javaagent) of every JVM"},
    {"JAVA_OPTS", N, "java launch scripts", "options passed to java"},
    {"CLASSPATH", N, "java", "classes loaded from anywhere"},
    /* .NET */
    {"DOTNET_STARTUP_HOOKS", N, ".NET", "assemblies run before Main"},
    {"DOTNET_ADDITIONAL_DEPS", N, ".NET", "more assemblies to load"},
    {"DOTNET_SHARED_STORE", N, ".NET", "assemblies probed from anywhere"},
    {"DOTNET_JitName", N, ".NET", "the JIT library to load"},
    {"DOTNET_AltJitName", N, ".NET", "an alternative JIT library to load"},
    {"DOTNET_AltJit", N, ".NET", "turns the alternative JIT on"},
    {"DOTNET_GCName", N, ".NET", "the garbage collector library to load"},
    {"COMPlus_", P, ".NET", "every runtime knob (JitName, GCName, ...)"},
    {"CORECLR_", P, ".NET", "CORECLR_PROFILER_PATH ...: a profiler library "
                            "loaded into the runtime"},
    {"COR_", P, ".NET Framework", "COR_PROFILER_PATH ...: a profiler "
                                  "library"},
    /* other interpreters */
    {"LUA_INIT", P, "lua", "code (or @file) run at start, per version"},
    {"LUA_PATH", P, "lua", "modules loaded first"},
    {"LUA_CPATH", P, "lua", "C modules (.so) loaded first"},
    {"TCLLIBPATH", N, "tcl", "packages loaded first"},
    {"PHPRC", N, "php", "php.ini (auto_prepend_file runs code)"},
    {"PHP_INI_SCAN_DIR", N, "php", "more php.ini files"},
    {"R_PROFILE", P, "R", "R code run at start"},
    {"R_ENVIRON", P, "R", "sets R_PROFILE and the library path"},
    {"R_LIBS", P, "R", "packages loaded first"},
    {"JULIA_LOAD_PATH", N, "julia", "packages loaded first"},
    {"JULIA_DEPOT_PATH", N, "julia", "startup.jl and packages from "
                                     "anywhere"},
    {"ERL_AFLAGS", N, "erlang", "emulator flags (-eval runs code)"},
    {"ERL_ZFLAGS", N, "erlang", "emulator flags (-eval runs code)"},
    {"ERL_FLAGS", N, "erlang", "emulator flags (-eval runs code)"},
    {"ERL_LIBS", N, "erlang", "applications loaded first"},
    {"ELIXIR_ERL_OPTIONS", N, "elixir", "emulator flags (-eval runs code)"},
    {"GOFLAGS", N, "go", "flags of go run (-toolexec runs a program)"},
    /* crypto and security libraries */
    {"OPENSSL_CONF", N, "openssl", "its config loads engines and providers "
                                   "(.so)"},
    {"OPENSSL_CONF_INCLUDE", N, "openssl", "where config includes are "
                                           "read"},
    {"OPENSSL_ENGINES", N, "openssl", "engines (.so) loaded from it"},
    {"OPENSSL_MODULES", N, "openssl", "providers (.so) loaded from it"},
    {"SSLKEYLOGFILE", N, "openssl, nss, gnutls", "every TLS session key "
                                                 "written to a file"},
    {"KRB5_CONFIG", N, "kerberos", "its config loads plugins (.so)"},
    {"SASL_PATH", N, "cyrus sasl", "mechanisms (.so) loaded from it"},
    /* libraries that load plugins */
    {"GIO_EXTRA_MODULES", N, "glib", "modules (.so) loaded from it"},
    {"GTK_MODULES", N, "gtk", "modules (.so) loaded into every GTK app"},
    {"GTK3_MODULES", N, "gtk", "modules (.so) loaded into every GTK app"},
    {"GTK_PATH", N, "gtk", "modules and engines (.so) from it"},
    {"GDK_PIXBUF_MODULE_FILE", N, "gdk-pixbuf", "image loaders (.so)"},
    {"GDK_PIXBUF_MODULEDIR", N, "gdk-pixbuf", "image loaders (.so)"},
    {"GST_PLUGIN_", P, "gstreamer", "plugins (.so) and the plugin scanner "
                                    "program"},
    {"QT_PLUGIN_PATH", N, "qt", "plugins (.so) loaded from it"},
    {"QT_QPA_PLATFORM_PLUGIN_PATH", N, "qt", "platform plugins (.so)"},
    {"ASAN_OPTIONS", N, "sanitizers", "external_symbolizer_path runs a "
                                      "program"},
    {"LSAN_OPTIONS", N, "sanitizers", "external_symbolizer_path runs a "
                                      "program"},
    {"MSAN_OPTIONS", N, "sanitizers", "external_symbolizer_path runs a "
                                      "program"},
    {"TSAN_OPTIONS", N, "sanitizers", "external_symbolizer_path runs a "
                                      "program"},
    {"UBSAN_OPTIONS", N, "sanitizers", "external_symbolizer_path runs a "
                                       "program"},
    {"HWASAN_OPTIONS", N, "sanitizers", "external_symbolizer_path runs a "
                                        "program"},
    /* programs that run the command a variable names */
    {"EDITOR", N, "many tools", "a command they run"},
    {"VISUAL", N, "many tools", "a command they run"},
    {"PAGER", N, "many tools", "a command they run"},
    {"LESSOPEN", N, "less", "an input preprocessor command"},
    {"LESSCLOSE", N, "less", "a postprocessor command"},
    {"SSH_ASKPASS", N, "ssh", "a program run for a passphrase"},
    {"SUDO_ASKPASS", N, "sudo", "a program run for a password"},
    {"GIT_SSH", N, "git", "the ssh program"},
    {"GIT_SSH_COMMAND", N, "git", "the ssh command (a shell line)"},
    {"GIT_ASKPASS", N, "git", "a program run for credentials"},
    {"GIT_EXEC_PATH", N, "git", "where git finds its subcommands"},
    {"GIT_EDITOR", N, "git", "a command git runs"},
    {"GIT_SEQUENCE_EDITOR", N, "git", "a command git runs"},
    {"GIT_PAGER", N, "git", "a command git runs"},
    {"GIT_PROXY_COMMAND", N, "git", "a command git runs"},
    {"GIT_EXTERNAL_DIFF", N, "git", "a command git runs"},
    {"GIT_TEMPLATE_DIR", N, "git", "hooks copied into new repositories"},
    {"GIT_CONFIG", N, "git", "a config file (core.fsmonitor, aliases and "
                             "hooks run code)"},
    {"GIT_CONFIG_", P, "git", "GIT_CONFIG_GLOBAL, _SYSTEM, _PARAMETERS, "
                              "_KEY_<n>: config that runs code"},
};
#undef P
#undef N

static int lower(int c) { return is_upper(c) ? c - 'A' + 'a' : c; }

/* s starts with (prefix) or is (otherwise) name, ignoring ASCII case. */
static bool env_match(const char *s, const char *name, bool prefix)
{
    for (; *name; s++, name++)
        if (lower((unsigned char)*s) != lower((unsigned char)*name))
            return false;
    return prefix || *s == '\0';
}

const struct aur__env_deny *aur__env_denylist(size_t *n)
{
    *n = sizeof env_deny / sizeof *env_deny;
    return env_deny;
}

const struct aur__env_deny *aur__env_deny_row(const char *s)
{
    for (size_t i = 0; s && i < sizeof env_deny / sizeof *env_deny; i++)
        if (env_match(s, env_deny[i].name, env_deny[i].prefix))
            return &env_deny[i];
    return NULL;
}

bool aur__env_name_denied(const char *s)
{
    return aur__env_deny_row(s) != NULL;
}

bool aur__valid_event_id(const char *s)
{
    size_t n = 1;

    if (!s || !is_alnum((unsigned char)*s))
        return false;
    for (s++; *s; s++, n++) {
        int c = (unsigned char)*s;
        if (!is_alnum(c) && c != '.' && c != '_' && c != ':' && c != '-')
            return false;
    }
    return n <= 160;
}

/*
 * Decode one code point of s[0..n) into *cp; returns its length in bytes,
 * or 0 if the sequence is not well-formed UTF-8 (overlong forms, surrogates
 * and values above U+10FFFF are rejected, as Python's decoder does).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    uint32_t c, min;
    size_t len, i;

    if (n == 0)
        return 0;
    c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        len = 2, c &= 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, c &= 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, c &= 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

long aur__utf8_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    long count = 0;
    size_t i = 0;

    if (!s)
        return -1;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_decode(p + i, n - i, &cp);
        if (len == 0)
            return -1;
        i += len;
        count++;
    }
    return count;
}

/* Python str.isspace() / str.strip() whitespace (aurora-semantics §1.5). */
static bool py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) ||
           c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

bool aur__valid_scope(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n, i = 0;
    uint32_t cp = 0;
    long count = 0;

    if (!s || *s == '\0')
        return false;
    n = strlen(s);
    while (i < n) {
        size_t len = utf8_decode(p + i, n - i, &cp);
        if (len == 0 || cp < 0x20)
            return false;
        if (i == 0 && py_space(cp))
            return false;
        i += len;
        if (++count > 256)
            return false;
    }
    /* cp now holds the last code point. */
    return !py_space(cp);
}

/* ------------------------------------------------------------------ */
/* agents.ini patterns                                                */
/* ------------------------------------------------------------------ */

/*
 * Match the class starting at p[0] == '[' against c.  *end is set past the
 * closing ']'.  Returns -1 if the class is malformed (no closing ']' in
 * the segment, or a range whose end is below its start), else 1 / 0.
 * A ']' right after "[" or "[!" / "[^" is a literal, as in fnmatch.
 */
static int class_match(const char *p, const char *pend, int c,
                       const char **end)
{
    bool neg = false, hit = false;
    const char *q = p + 1;

    if (q < pend && (*q == '!' || *q == '^')) {
        neg = true;
        q++;
    }
    if (q < pend && *q == ']') {
        hit = hit || c == ']';
        q++;
    }
    while (q < pend && *q != ']') {
        int lo = (unsigned char)*q, hi = lo;
        if (q + 2 < pend && q[1] == '-' && q[2] != ']') {
            hi = (unsigned char)q[2];
            if (hi < lo)
                return -1;
            q += 3;
        } else {
            q++;
        }
        if (c >= lo && c <= hi)
            hit = true;
    }
    if (q >= pend)
        return -1;
    *end = q + 1;
    return hit != neg;
}

/*
 * Glob-match one pattern segment p[0..pl) against one id segment s[0..sl)
 * with '*', '?' and classes.  Classic single-backtrack-point algorithm:
 * O(pl * sl), no recursion.  Malformed classes never match.
 */
static bool segment_match(const char *p, size_t pl, const char *s, size_t sl)
{
    const char *pe = p + pl, *se = s + sl;
    const char *star_p = NULL, *star_s = NULL;

    while (s < se) {
        if (p < pe && *p == '*') {
            star_p = ++p;
            star_s = s;
            continue;
        }
        if (p < pe) {
            const char *next = p + 1;
            int ok;
            if (*p == '?') {
                ok = 1;
            } else if (*p == '[') {
                ok = class_match(p, pe, (unsigned char)*s, &next);
                if (ok < 0)
                    return false;
            } else {
                ok = *p == *s;
            }
            if (ok) {
                p = next;
                s++;
                continue;
            }
        }
        if (!star_p)
            return false;
        p = star_p;
        s = ++star_s;
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

struct seg {
    const char *s;
    size_t n;
};

/* Split s on '.'; returns the number of segments written to out (at most
 * cap), or (size_t)-1 if there are more than cap. */
static size_t split_dots(const char *s, struct seg *out, size_t cap)
{
    size_t n = 0;
    const char *start = s;

    for (;; s++) {
        if (*s == '.' || *s == '\0') {
            if (n == cap)
                return (size_t)-1;
            out[n].s = start;
            out[n].n = (size_t)(s - start);
            n++;
            if (*s == '\0')
                return n;
            start = s + 1;
        }
    }
}

static size_t count_segments(const char *s)
{
    size_t n = 1;

    for (; *s; s++)
        n += *s == '.';
    return n;
}

/*
 * A segment that is exactly "**" matches ONE OR MORE whole id segments.
 * That is what the original's translation (segments joined by "\." with
 * "**" as ".*") accepts for every valid id: an id never has an empty
 * segment, so ".*" between two dots (or at an end) always spans at least
 * one segment.  Hence "aur.mcp.**" matches "aur.mcp.x.y" but not
 * "aur.mcp", and "**" alone matches every id.
 *
 * Dynamic programming over (pattern segment, id segment): O(P * I) time,
 * so a pattern with many "**" cannot blow up.
 */
bool aur__pattern_match(const char *pat, const char *id)
{
    size_t np, ni, i, j;
    struct seg *ps = NULL, *is = NULL;
    bool *row = NULL, *next = NULL, result = false;

    if (!pat || !id)
        return false;
    np = count_segments(pat);
    ni = count_segments(id);
    ps = calloc(np, sizeof *ps);
    is = calloc(ni, sizeof *is);
    row = calloc(ni + 1, sizeof *row);
    next = calloc(ni + 1, sizeof *next);
    if (!ps || !is || !row || !next)
        goto out;
    split_dots(pat, ps, np);
    split_dots(id, is, ni);

    /* row[j]: pattern segments [0, i) match id segments [0, j). */
    row[0] = true;
    for (i = 0; i < np; i++) {
        bool dstar = ps[i].n == 2 && ps[i].s[0] == '*' && ps[i].s[1] == '*';
        bool any = false;
        next[0] = false;
        for (j = 1; j <= ni; j++) {
            if (dstar) {
                /* "**" ends at j if it started right after some k < j
                 * with row[k]: i.e. row[j-1] or "**" already ran to j-1. */
                next[j] = row[j - 1] || next[j - 1];
            } else {
                next[j] = row[j - 1] &&
                          segment_match(ps[i].s, ps[i].n, is[j - 1].s,
                                        is[j - 1].n);
            }
            any = any || next[j];
        }
        memcpy(row, next, (ni + 1) * sizeof *row);
        if (!any)
            goto out;
    }
    result = row[ni];
out:
    free(ps);
    free(is);
    free(row);
    free(next);
    return result;
}

bool aur__pattern_has_wildcard(const char *pat)
{
    return pat && strpbrk(pat, "*?[") != NULL;
}
