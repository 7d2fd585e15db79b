/*
 * stdio_warm.c - an App's supervisor started before its open (the
 * prepare hook, ABI 1.7; unprepare, 1.8).
 *
 * A start's longest wait before the App runs is its supervisor's own
 * start: the spawn, the exec of aur-contain and libc's start-up, about
 * 1.5 ms on a small virtual machine (docs/benchmarks.md).  The host asks
 * for it early for the first App that will start, on its starting
 * thread, before it opens its journal.  Here the App's pipes are made and
 * the supervisor is spawned for them (stdio_spawner_begin); the thread
 * returns once the spawn did, and the supervisor's start runs while the
 * journal opens.
 *
 * Nothing of the App runs before its open: the supervisor waits for its
 * frame (the App's command, environment and directory) on the lifeline,
 * and only open writes it (stdio_child_start takes the slot and hands it
 * to stdio_spawner_run).  One slot: a prepare while one waits does
 * nothing.  A slot that no open takes is undone by unprepare (a failed
 * start) or at fini (the supervisor
 * killed and reaped, its cgroup removed); a host that dies first closes
 * the lifeline, and the supervisor removes the App's cgroup and exits on
 * its EOF, as every supervisor that never got its frame does
 * (docs/containment.md).  What fails here is not reported: open then
 * starts the App the usual way and reports what fails there, and so it
 * does when the supervisor died while it waited (stdio_warm_take).
 *
 * Thread rules: prepare runs on the host's starting thread, take on an
 * opening thread, fini on the host's last; st->warm_mu guards the slot.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <stdlib.h>

/* The spawner answers within this, or the start is left to open. */
#define PREPARE_WAIT_MS 1000

void stdio_prepare(void *state, const struct aur_cfg *endpoint)
{
    struct stdio_state *st = state;
    const struct aur_host *h = st->host;
    int in[2] = {-1, -1}, op[2] = {-1, -1}, ep[2] = {-1, -1};
    struct stdio_warm *w;
    bool busy;

    pthread_mutex_lock(&st->warm_mu);
    busy = st->warm != NULL;
    pthread_mutex_unlock(&st->warm_mu);
    if (busy || !endpoint || !(w = calloc(1, sizeof *w)))
        return;
    w->endpoint = endpoint;
    w->job.title = h->cfg_str(endpoint, "package", "stdio-app");
    if (stdio_pipe_high(in) != 0 || stdio_pipe_high(op) != 0 ||
        stdio_pipe_high(ep) != 0)
        goto fail;
    w->job.fd_in = in[0];
    w->job.fd_out = op[1];
    w->job.fd_err = ep[1];
    if (stdio_spawner_begin(st->spawner, &w->job,
                            stdio_mono_ms() + PREPARE_WAIT_MS) != 0)
        goto fail;
    /* The supervisor has the App's ends now; ours are closed. */
    stdio_close_fd(&in[0]);
    stdio_close_fd(&op[1]);
    stdio_close_fd(&ep[1]);
    w->job.fd_in = w->job.fd_out = w->job.fd_err = -1;
    w->job.title = NULL;
    w->in_w = in[1];
    w->out_r = op[0];
    w->err_r = ep[0];
    pthread_mutex_lock(&st->warm_mu);
    busy = st->warm != NULL;
    if (!busy)
        st->warm = w;
    pthread_mutex_unlock(&st->warm_mu);
    if (busy) { /* another prepare came first */
        stdio_warm_undo(w);
        free(w);
        return;
    }
    h->log(st->self, AUR_LOG_DEBUG, "%s: supervisor %d started ahead of "
           "the App's open", h->cfg_str(endpoint, "package", ""),
           (int)w->job.pid);
    return;
fail:
    for (int i = 0; i < 2; i++) {
        stdio_close_fd(&in[i]);
        stdio_close_fd(&op[i]);
        stdio_close_fd(&ep[i]);
    }
    free(w);
}

/* The slot, if it was prepared for endpoint (the caller's then). */
static struct stdio_warm *slot_take(struct stdio_state *st,
                                    const struct aur_cfg *endpoint)
{
    struct stdio_warm *w = NULL;

    pthread_mutex_lock(&st->warm_mu);
    if (st->warm && st->warm->endpoint == endpoint) {
        w = st->warm;
        st->warm = NULL;
    }
    pthread_mutex_unlock(&st->warm_mu);
    return w;
}

bool stdio_warm_take(struct stdio_state *st, const struct aur_cfg *endpoint,
                     struct stdio_warm *out)
{
    struct stdio_warm *w = slot_take(st, endpoint);

    if (!w)
        return false;
    /* A supervisor that died while it waited (killed, say, while the
     * journal opened) would take the frame to the grave and the App
     * would be blamed for it: start afresh instead (the undo reaps it). */
    if (stdio_child_state(w->job.pid) != 1) {
        st->host->log(st->self, AUR_LOG_DEBUG,
                      "%s: the supervisor started ahead had exited; "
                      "starting another", st->host->cfg_str(endpoint,
                                                            "package", ""));
        stdio_warm_undo(w);
        free(w);
        return false;
    }
    *out = *w;
    free(w);
    return true;
}

void stdio_unprepare(void *state, const struct aur_cfg *endpoint)
{
    struct stdio_warm *w = slot_take(state, endpoint);

    if (w) {
        stdio_warm_undo(w);
        free(w);
    }
}

void stdio_warm_undo(struct stdio_warm *w)
{
    stdio_spawner_undo(&w->job);
    stdio_close_fd(&w->in_w);
    stdio_close_fd(&w->out_r);
    stdio_close_fd(&w->err_r);
}

void stdio_warm_fini(struct stdio_state *st)
{
    struct stdio_warm *w = st->warm;

    st->warm = NULL;
    if (w) {
        stdio_warm_undo(w);
        free(w);
    }
}
