/*
 * main.c - aurora-mcp: argument parsing and the one-shot commands
 * (check, discover, call, journal, plugin-info).  See docs/aurora-mcp.1.
 */
#define _GNU_SOURCE 1
#include "cli.h"
#include "grow.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char usage[] =
    "usage:\n"
    "  aurora-mcp --help | --version\n"
    "  aurora-mcp check       -c DIR                 validate config and "
    "plugins; starts nothing\n"
    "  aurora-mcp discover    -c DIR                 start, freeze, print the "
    "catalog, shut down\n"
    "  aurora-mcp call        -c DIR TOOL_ID [ARGS]  call one tool; ARGS a "
    "JSON object, '-' = stdin\n"
    "  aurora-mcp serve       -c DIR                 answer JSON lines on "
    "stdin\n"
    "  aurora-mcp journal     -c DIR [--after N] [--scope S] [--follow]\n"
    "  aurora-mcp plugin-info FILE.so\n"
    "  aurora-mcp import      FILE [-o DIR]          mcpServers JSON of other "
    "hosts -> DIR/apps.d (default .)\n"
    "  aurora-mcp doctor      -c DIR [--json]        start each App alone "
    "and say how far it got\n"
    "options: -v/--verbose, -q/--quiet (repeatable): more or less log on\n"
    "         stderr than host.ini's log_level, one level each\n"
    "         --app PKG (repeatable): start only these Apps\n"
    "         --disable PKG (repeatable): leave this App out\n"
    "         --format table|json: tables (default on a terminal) or JSON\n"
    "         (default otherwise, byte for byte as always)\n"
    "exit status: 0 ok, 1 startup/runtime failure, 2 usage or config error,\n"
    "             3 the call failed, 4 the call's effect is unknown\n";

static int cmd_check(const char *dir)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct json_object *o;

    memset(&serr, 0, sizeof serr);
    if (aur_mcp_create(dir, NULL, &h, &serr, &err) != AUR_OK) {
        cli_print_startup_error(&serr);
        return EXIT_USAGE;
    }
    if (cli_apply_options(h) != EXIT_OK) {
        aur_mcp_destroy(h);
        return EXIT_USAGE;
    }
    o = aur_mcp_status_jsonc(h, 0);
    json_object_object_add(o, "ok", json_object_new_boolean(1));
    if (cli_table())
        cli_print_status_table(o);
    else
        cli_print_json(o);
    json_object_put(o);
    aur_mcp_destroy(h);
    return EXIT_OK;
}

static int cmd_discover(const char *dir)
{
    struct aur_mcp *h = NULL;
    struct aur_error err = {0};
    int rc = cli_start(dir, &h);
    if (rc != EXIT_OK)
        return rc;
    if (cli_table()) {
        struct json_object *o = aur_mcp_status_jsonc(h, 1);
        aur_mcp_shutdown(h);
        if (o)
            cli_print_status_table(o);
        else
            aur_fail(&err, AUR_E_NOMEM, 0, "out of memory");
        json_object_put(o);
    } else {
        /* The catalog goes out as the library writes it, piece by piece:
         * no tree, and never the whole text at once. */
        fflush(stdout);
        if (aur_mcp_status_write(h, 1, STDOUT_FILENO, &err) == AUR_OK) {
            fputc('\n', stdout);
            fflush(stdout);
        }
        aur_mcp_shutdown(h);
    }
    if (err.code != AUR_OK) {
        fprintf(stderr, "aurora-mcp: discover: %s\n", err.msg);
        rc = EXIT_RUNTIME;
    }
    cli_destroy(h);
    return rc;
}

#define MAX_STDIN (64u << 20)

/* All of stdin, bounded (tool arguments are not meant to be huge). */
static char *read_stdin(size_t *len)
{
    struct aur__buf b = {0};
    char chunk[65536];
    size_t got;

    while ((got = fread(chunk, 1, sizeof chunk, stdin)) > 0)
        if (aur__buf_put(&b, chunk, got, MAX_STDIN) != 0) {
            free(b.p);
            return NULL;
        }
    if (!b.p && aur__buf_put(&b, "", 0, MAX_STDIN) != 0)
        return NULL;
    *len = b.n;
    return b.p;
}

static int cmd_call(const char *dir, const char *tool, const char *args_text)
{
    struct json_object *args = NULL, *o;
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    char *owned = NULL;
    size_t len;
    int rc;

    if (args_text && strcmp(args_text, "-") == 0) {
        owned = read_stdin(&len);
        if (!owned) {
            fprintf(stderr, "aurora-mcp: cannot read arguments from stdin\n");
            return EXIT_USAGE;
        }
        args_text = owned;
    } else if (args_text) {
        len = strlen(args_text);
    }
    if (args_text) {
        if (aur_json_parse(args_text, len, &args, &err) != AUR_OK ||
            !json_object_is_type(args, json_type_object)) {
            fprintf(stderr, "aurora-mcp: ARGS must be a JSON object%s%s\n",
                    args ? "" : ": ", args ? "" : err.msg);
            json_object_put(args);
            free(owned);
            return EXIT_USAGE;
        }
    }
    free(owned);
    /* Only now: while reading arguments no child exists yet, and the
     * default action (die) is the right answer to a signal. */
    cli_signals_start();
    rc = cli_start(dir, &h);
    if (rc != EXIT_OK) {
        json_object_put(args);
        return rc;
    }
    aur_mcp_call_jsonc(h, tool, args, -1, &out);
    json_object_put(args);
    aur_mcp_shutdown(h);
    o = cli_output_json(&out);
    if (cli_table())
        cli_print_call_table(&out);
    else
        cli_print_json(o);
    json_object_put(o);
    rc = out.status == AUR_CALL_SUCCEEDED ? EXIT_OK
         : out.status == AUR_CALL_FAILED  ? EXIT_FAILED
                                          : EXIT_UNKNOWN;
    aur_tool_output_clear(&out);
    cli_destroy(h);
    return rc;
}

static void emit_line(void *ud, const char *line)
{
    struct json_object *row = NULL;
    struct aur_error err;
    (void)ud;
    if (cli_table() &&
        aur_json_parse(line, strlen(line), &row, &err) == AUR_OK) {
        cli_print_journal_row(row);
        json_object_put(row);
        return;
    }
    fputs(line, stdout);
    fputc('\n', stdout);
}

/* --follow: SIGINT and SIGTERM stay blocked and are polled between lines
 * and at each idle wake-up, so a follow ends between two whole lines. */
static sigset_t follow_sigs;
static int follow_out_errno;

static int follow_line(void *ud, const char *line)
{
    sigset_t pending;
    if (line) {
        emit_line(ud, line);
        if (fflush(stdout) != 0) {
            follow_out_errno = errno ? errno : EIO;
            return 1;
        }
    }
    return sigpending(&pending) == 0 &&
           (sigismember(&pending, SIGINT) == 1 ||
            sigismember(&pending, SIGTERM) == 1);
}

static int cmd_journal(const char *dir, long long after, const char *scope,
                       bool follow)
{
    struct aur_error err;
    int rc;
    if (follow) {
        sigemptyset(&follow_sigs);
        sigaddset(&follow_sigs, SIGINT);
        sigaddset(&follow_sigs, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &follow_sigs, NULL);
        rc = aur_journal_follow(dir, after, scope, 200, follow_line, NULL,
                                &err);
    } else {
        rc = aur_journal_dump(dir, after, scope, emit_line, NULL, &err);
    }
    if (rc != AUR_OK) {
        fprintf(stderr, "aurora-mcp: journal: %s\n", err.msg);
        return err.code == AUR_E_CONFIG ? EXIT_USAGE : EXIT_RUNTIME;
    }
    /* a reader that went away (| head) ends a follow; nothing is lost */
    if (follow_out_errno && follow_out_errno != EPIPE) {
        fprintf(stderr, "aurora-mcp: journal: stdout: %s\n",
                strerror(follow_out_errno));
        return EXIT_RUNTIME;
    }
    fflush(stdout);
    return EXIT_OK;
}

static int cmd_plugin_info(const char *path)
{
    struct aur_error err;
    struct json_object *o = aur_plugin_info_jsonc(path, &err);
    if (!o) {
        struct json_object *e = json_object_new_object();
        struct json_object *in = json_object_new_object();
        json_object_object_add(in, "code", json_object_new_string("plugin_invalid"));
        json_object_object_add(in, "message", json_object_new_string(err.msg));
        json_object_object_add(e, "error", in);
        cli_print_json(e);
        json_object_put(e);
        return EXIT_USAGE;
    }
    cli_print_json(o);
    json_object_put(o);
    return EXIT_OK;
}

/*
 * The soft limit on open descriptors up to the hard limit, once, before
 * any host exists; never lowered.  Each App holds about ten
 * descriptors for as long as it runs (docs/budgets.md, "File
 * descriptors"), so the usual soft limit of 1024 would end a host at
 * about 100 Apps.  The program's choice, not the library's: an embedding
 * program may still use select(), which cannot take a descriptor past
 * 1023, so libaurora-mcp never touches the process's limits.  The Apps
 * inherit the raised limit.  Nothing to do (or nothing allowed) is not
 * an error: running out later is, and says so.
 */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    rlim_t cur;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    cur = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0 || rl.rlim_max != RLIM_INFINITY)
        return;
    /* A hard limit of "unlimited" is refused as a soft one: the kernel's
     * ceiling is fs.nr_open. */
    FILE *f = fopen("/proc/sys/fs/nr_open", "re");
    unsigned long long nr = 0;
    if (f) {
        if (fscanf(f, "%llu", &nr) != 1)
            nr = 0;
        fclose(f);
    }
    if (nr > (unsigned long long)cur) {
        rl.rlim_cur = (rlim_t)nr;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int bad_usage(const char *why)
{
    fprintf(stderr, "aurora-mcp: %s\n%s", why, usage);
    return EXIT_USAGE;
}

static const char *const commands[] = {
    "check", "discover", "call", "serve", "journal", "plugin-info", "import",
    "doctor"};
#define NCOMMANDS (sizeof commands / sizeof *commands)

static bool known_command(const char *cmd)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(cmd, commands[i]) == 0)
            return true;
    return false;
}

static int unknown_command(const char *cmd)
{
    const char *near = aur_suggest(cmd, commands, NCOMMANDS);
    fprintf(stderr, "aurora-mcp: unknown command '%s'%s%s%s\n%s", cmd,
            near ? " (did you mean " : "", near ? near : "", near ? "?)" : "",
            usage);
    return EXIT_USAGE;
}

/*
 * glibc gives every thread that allocates an arena of its own, up to 8
 * per CPU.  Each App's reader parses its pages on its own thread, so a
 * host of 20 Apps kept about 12 arenas, each holding the free space of
 * pages it had parsed: 0.8 MiB of the 8 MiB peak of discover of 20 Apps
 * x 100 tools (docs/benchmarks.md).  Arenas beyond one per CPU buy no
 * parallelism here.  The library leaves the allocator alone (it belongs
 * to whoever embeds it); a MALLOC_ARENA_MAX or GLIBC_TUNABLES the user
 * set wins.
 */
static void limit_malloc_arenas(void)
{
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
    const char *tun = getenv("GLIBC_TUNABLES");
    long n;

    if (getenv("MALLOC_ARENA_MAX") || (tun && strstr(tun, "arena_max")))
        return;
    n = sysconf(_SC_NPROCESSORS_ONLN);
    n = n < 2 ? 2 : n > 8 ? 8 : n;
    (void)mallopt(M_ARENA_MAX, (int)n);
#endif
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"config", required_argument, NULL, 'c'},
        {"after", required_argument, NULL, 'a'},
        {"scope", required_argument, NULL, 's'},
        {"follow", no_argument, NULL, 'f'},
        {"verbose", no_argument, NULL, 'v'},
        {"app", required_argument, NULL, 'A'},
        {"disable", required_argument, NULL, 'D'},
        {"output", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'J'},
        {"format", required_argument, NULL, 'F'},
        {"quiet", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *scope = NULL, *outdir = ".", *cmd;
    bool json = false;
    long long after = 0;
    bool follow = false;
    char *end;
    int c;

    /* This program's choice, not the library's (which leaves the
     * disposition to whoever embeds it): a reader of our stdout that went
     * away is an EPIPE to report, not a reason to die mid-call. */
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    limit_malloc_arenas();
    /* Options may follow the command: "+" is not used on purpose. */
    while ((c = getopt_long(argc, argv, "hVc:vqo:", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            outdir = optarg;
            break;
        case 'J':
            json = true;
            break;
        case 'F':
            if (strcmp(optarg, "json") == 0)
                cli_format = CLI_FORMAT_JSON;
            else if (strcmp(optarg, "table") == 0)
                cli_format = CLI_FORMAT_TABLE;
            else
                return bad_usage("--format takes table or json");
            break;
        case 'v':
        case 'q':
            cli_add_verbosity(c == 'v' ? 1 : -1);
            break;
        case 'A':
        case 'D':
            if (!cli_add_pick(optarg, c == 'A'))
                return bad_usage("at most 256 --app and 256 --disable");
            break;
        case 'h':
            fputs(usage, stdout);
            return EXIT_OK;
        case 'V':
            printf("aurora-mcp %s (plugin ABI %d.%d)\n", AUR_VERSION_STRING,
                   AUR_ABI_MAJOR, AUR_ABI_MINOR);
            return EXIT_OK;
        case 'c':
            dir = optarg;
            break;
        case 'a':
            errno = 0;
            after = strtoll(optarg, &end, 10);
            if (errno || *end || after < 0)
                return bad_usage("--after takes a non-negative integer");
            break;
        case 's':
            scope = optarg;
            break;
        case 'f':
            follow = true;
            break;
        default:
            return bad_usage("unknown option");
        }
    }
    if (optind >= argc)
        return bad_usage("missing command");
    cmd = argv[optind++];
    if (!known_command(cmd))
        return unknown_command(cmd);
    if (strcmp(cmd, "import") == 0) {
        if (argc - optind != 1)
            return bad_usage("import takes one FILE");
        return cli_import(argv[optind], outdir);
    }
    if (strcmp(cmd, "plugin-info") == 0) {
        if (argc - optind != 1)
            return bad_usage("plugin-info takes one FILE.so");
        return cmd_plugin_info(argv[optind]);
    }
    if (!dir)
        return bad_usage("missing -c DIR");
    if (strcmp(cmd, "check") == 0 && optind == argc)
        return cmd_check(dir);
    if (strcmp(cmd, "doctor") == 0 && optind == argc)
        return cli_doctor(dir, json || cli_format == CLI_FORMAT_JSON);
    if (strcmp(cmd, "discover") == 0 && optind == argc) {
        cli_signals_start();
        c = cmd_discover(dir);
        cli_signals_stop();
        return c;
    }
    if (strcmp(cmd, "serve") == 0 && optind == argc) {
        cli_signals_start(); /* a signal during startup cancels it */
        return cli_serve(dir);
    }
    if (strcmp(cmd, "journal") == 0 && optind == argc)
        return cmd_journal(dir, after, scope, follow);
    if (strcmp(cmd, "call") == 0 &&
        (argc - optind == 1 || argc - optind == 2)) {
        c = cmd_call(dir, argv[optind],
                     argc - optind == 2 ? argv[optind + 1] : NULL);
        cli_signals_stop();
        return c;
    }
    return bad_usage("bad arguments for this command");
}
