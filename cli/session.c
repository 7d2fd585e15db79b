/*
 * session.c - one host for one command: the options that shape it (-v,
 * -q, --app, --disable), its start, and the signals that cancel it.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int exit_for(const struct aur_startup_error *e)
{
    return strcmp(e->code, "config_invalid") == 0 ? EXIT_USAGE : EXIT_RUNTIME;
}

/*
 * SIGINT/SIGTERM for the one-shot commands (discover, call).  main blocks
 * both before any host thread exists, so every thread inherits the mask
 * and only the signal thread below, in sigwait, ever receives them (the
 * stdio transport resets the mask in its children).  A signal cancels the
 * host: a running start fails with "interrupted" (printed as the startup
 * error, exit 1), a call in flight returns unknown (exit 4); the normal
 * path then shuts down, which closes the Apps and kills their process
 * groups.  serve uses this for its startup too, then installs its own
 * handlers (serve.c, cli_signals_stop).
 *
 * mu guards host and signalled: the signal thread cancels only a host
 * that main has not yet begun to destroy.
 */
static struct {
    pthread_mutex_t mu;
    sigset_t set;
    pthread_t thread;
    bool running;
    bool done;            /* (mu) main is finished: the thread returns */
    int signalled;        /* (mu) the first signal received, 0 = none */
    struct aur_mcp *host; /* (mu) borrowed */
} sigctl = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *signal_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&sigctl.set, &sig) != 0)
            continue;
        pthread_mutex_lock(&sigctl.mu);
        if (sigctl.done) {
            pthread_mutex_unlock(&sigctl.mu);
            return NULL;
        }
        if (!sigctl.signalled)
            sigctl.signalled = sig;
        /* Idempotent, so a second signal is harmless. */
        if (sigctl.host)
            aur_mcp_cancel(sigctl.host);
        pthread_mutex_unlock(&sigctl.mu);
    }
}

/* Before anything else starts a thread.  Without the thread the default
 * actions stay in place. */
void cli_signals_start(void)
{
    sigemptyset(&sigctl.set);
    sigaddset(&sigctl.set, SIGINT);
    sigaddset(&sigctl.set, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &sigctl.set, NULL) != 0)
        return;
    if (pthread_create(&sigctl.thread, NULL, signal_thread, NULL) != 0) {
        pthread_sigmask(SIG_UNBLOCK, &sigctl.set, NULL);
        return;
    }
    sigctl.running = true;
}

/* The thread wakes on a signal sent to itself (blocked everywhere, so
 * only its sigwait takes it), sees done and returns.  SIGINT and SIGTERM
 * stay blocked in this thread: the caller unblocks them once its own
 * handlers are in place.  Returns the first signal it took (0: none). */
int cli_signals_stop(void)
{
    int sig;

    if (!sigctl.running)
        return 0;
    pthread_mutex_lock(&sigctl.mu);
    sigctl.done = true;
    sigctl.host = NULL;
    sig = sigctl.signalled;
    pthread_mutex_unlock(&sigctl.mu);
    pthread_kill(sigctl.thread, SIGTERM);
    pthread_join(sigctl.thread, NULL);
    sigctl.running = false;
    return sig;
}

/* h may be cancelled by a signal from now on (NULL: no longer); a signal
 * that came before h existed cancels it at once. */
static void signals_attach(struct aur_mcp *h)
{
    pthread_mutex_lock(&sigctl.mu);
    sigctl.host = h;
    if (h && sigctl.signalled)
        aur_mcp_cancel(h);
    pthread_mutex_unlock(&sigctl.mu);
}

void cli_destroy(struct aur_mcp *h)
{
    signals_attach(NULL);
    aur_mcp_destroy(h);
}

/* -v minus -q: steps of log level away from host.ini's. */
static int verbosity;

/* --app (only these) and --disable (not these): argv strings. */
#define MAX_PICKS 256
static const char *only[MAX_PICKS], *skip[MAX_PICKS];
static size_t n_only, n_skip;

bool cli_add_pick(const char *package, bool only_these)
{
    if ((only_these ? n_only : n_skip) >= MAX_PICKS)
        return false;
    if (only_these)
        only[n_only++] = package;
    else
        skip[n_skip++] = package;
    return true;
}

void cli_add_verbosity(int delta)
{
    verbosity += delta;
}

int cli_apply_options(struct aur_mcp *h)
{
    struct aur_error err;
    struct json_object *st = NULL, *apps = NULL;
    int rc = EXIT_OK;

    aur_mcp_log_verbosity(h, verbosity);

    /* --app names are checked (skip 0 is a no-op), --disable ones left
     * out, then with --app every App it does not name. */
    for (size_t i = 0; i < n_only + n_skip && rc == EXIT_OK; i++) {
        bool out = i >= n_only;
        const char *pkg = out ? skip[i - n_only] : only[i];
        if (aur_mcp_skip_app(h, pkg, out, &err) != AUR_OK)
            rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && n_only) {
        st = aur_mcp_status_jsonc(h, 0);
        json_object_object_get_ex(st, "apps", &apps);
        for (size_t i = 0; i < json_object_array_length(apps); i++) {
            const char *pkg = json_object_get_string(json_object_object_get(
                json_object_array_get_idx(apps, i), "package"));
            bool keep = false;
            for (size_t k = 0; k < n_only; k++)
                keep = keep || strcmp(pkg, only[k]) == 0;
            if (!keep)
                aur_mcp_skip_app(h, pkg, 1, &err);
        }
    }
    json_object_put(st);
    if (rc != EXIT_OK) {
        struct aur_startup_error serr = {.struct_size = sizeof serr};
        memset(&serr, 0, sizeof serr);
        snprintf(serr.code, sizeof serr.code, "config_invalid");
        snprintf(serr.phase, sizeof serr.phase, "config");
        snprintf(serr.message, sizeof serr.message, "%s", err.msg);
        cli_print_startup_error(&serr);
    }
    return rc;
}

int cli_start(const char *dir, struct aur_mcp **out)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;

    memset(&serr, 0, sizeof serr);
    if (aur_mcp_create(dir, NULL, &h, &serr, &err) != AUR_OK) {
        cli_print_startup_error(&serr);
        return exit_for(&serr);
    }
    if (cli_apply_options(h) != EXIT_OK) {
        cli_destroy(h);
        return EXIT_USAGE;
    }
    signals_attach(h);
    if (aur_mcp_start(h, &serr, &err) != AUR_OK) {
        cli_print_startup_error(&serr);
        cli_destroy(h);
        return exit_for(&serr);
    }
    *out = h;
    return EXIT_OK;
}

