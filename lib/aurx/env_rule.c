/*
 * env_rule.c - the environment name grammar and denylist (env_rule.h).
 */
#include "env_rule.h"

#include <string.h>

static bool is_upper(int c) { return c >= 'A' && c <= 'Z'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || is_upper(c); }
static bool is_alnum(int c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

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
 * The environment denylist (docs/containment.md has the same table
 * with sources): variables that make a child's loader, shell,
 * interpreter, runtime or a library it links run or load code the App
 * did not ship.  The host's environment is the operator's;
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
