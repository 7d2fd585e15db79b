/*
 * serve.c - `aurora-mcp serve`: JSON lines on stdin, one response line per
 * request on stdout, calls run concurrently on a worker pool and may answer
 * out of order.  EOF, SIGINT and SIGTERM shut down cleanly.
 *
 * This file is the process: it starts the host, makes the epoll set the
 * workers park in, prints the ready line, starts the pool
 * (serve_pool.c), and once requests have ended drains what is left and
 * closes.  serve_lines.c says what each line gets.
 *
 * Threads: the main thread only; the workers are serve_pool.c's.
 */
#define _GNU_SOURCE 1
#include "serve_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

static bool readable(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

/*
 * The main thread once requests have ended and no thread leads: answer
 * every line still coming shutting_down while the accepted calls finish;
 * a signal meanwhile closes the Apps at once.  When every worker is done,
 * answer the lines that have arrived by then (what FIONREAD counts), and
 * return.
 */
static void drain(struct server *s, bool signalled)
{
    bool done = false;
    size_t budget = 0;

    for (;;) {
        int wake[2], nwake = 0;
        const char *line;
        size_t len;

        if (!signalled)
            wake[nwake++] = serve_sig_fd;
        if (!done)
            wake[nwake++] = s->done_fd;
        if (!s->in.eof) {
            int r = serve_input_next(&s->in, &line, &len, wake, nwake,
                                     done ? 0 : -1, done ? &budget : NULL);
            if (r == SERVE_INPUT_TOO_LONG) {
                serve_respond(s, NULL, NULL, "bad_request", "line too long");
                continue;
            }
            if (r == 1) {
                serve_refuse_line(s, line, len);
                continue;
            }
            if (r == 0)
                continue; /* EOF: wait for the workers only */
        } else if (!done) {
            struct pollfd p[2];
            for (int i = 0; i < nwake; i++)
                p[i] = (struct pollfd){wake[i], POLLIN, 0};
            if (poll(p, (nfds_t)nwake, -1) < 0 && errno != EINTR)
                return;
        }
        if (done)
            return;
        if (!signalled && readable(serve_sig_fd)) {
            signalled = true;
            pthread_mutex_lock(&s->mu);
            s->signalled = true;
            pthread_mutex_unlock(&s->mu);
            /* Calls in flight end unknown, queued ones shutting_down. */
            aur_mcp_shutdown(s->h);
        }
        if (readable(s->done_fd)) {
            int avail = 0;
            done = true;
            if (!s->in.eof && ioctl(0, FIONREAD, &avail) == 0 && avail > 0)
                budget = (size_t)avail;
        }
    }
}

static void close_fds(struct server *s)
{
    /* The handler writes to serve_stop_fd and serve_sig_fd: not once they are closed
     * and their numbers free for reuse. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    if (s->ep >= 0)
        close(s->ep);
    if (s->pass_fd >= 0)
        close(s->pass_fd);
    if (s->done_fd >= 0)
        close(s->done_fd);
    if (s->queue_fd >= 0)
        close(s->queue_fd);
    if (s->tick_fd >= 0)
        close(s->tick_fd);
    close(serve_stop_fd);
    close(serve_sig_fd);
    serve_stop_fd = serve_sig_fd = -1;
}

/* The epoll set, with the token armed on stdin (or passed, for a file).
 * Nothing may be added "disarmed": epoll always adds EPOLLHUP and
 * EPOLLERR, so a stdin added without EPOLLIN would still wake a second
 * reader when the writer closes.  The pass eventfd has no HUP or ERR. */
static int setup_epoll(struct server *s)
{
    struct epoll_event stop = {EPOLLIN, {.u32 = EV_STOP}};
    struct epoll_event pass = {EPOLLONESHOT, {.u32 = EV_PASS}};
    struct epoll_event in = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_STDIN}};
    struct epoll_event queue = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_QUEUE}};
    struct epoll_event tick = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_TICK}};

    if ((s->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (s->pass_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (s->queue_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (s->tick_fd = timerfd_create(CLOCK_MONOTONIC,
                                     TFD_CLOEXEC | TFD_NONBLOCK)) < 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tick_fd, &tick) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, serve_stop_fd, &stop) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->queue_fd, &queue) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->pass_fd, &pass) != 0)
        return -1;
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, 0, &in) == 0) {
        s->stdin_watched = true;
        return 0;
    }
    /* A regular file cannot be watched (EPERM), and needs no watching:
     * it is always readable. */
    if (errno != EPERM)
        return -1;
    pass.events |= EPOLLIN;
    return epoll_ctl(s->ep, EPOLL_CTL_MOD, s->pass_fd, &pass);
}

int cli_serve(const char *dir)
{
    struct server s;
    struct sigaction sa;
    int rc;

    memset(&s, 0, sizeof s);
    s.ep = s.pass_fd = s.done_fd = s.queue_fd = s.tick_fd = -1;
    /* serve's own descriptors come before the Apps': a host that runs
     * out of them does so while starting an App, which names the App,
     * not after a start that went well. */
    s.in.before_wait = serve_batch_pending;
    s.in.before_wait_arg = &s;
    s.in.cap = 65536;
    s.in.buf = malloc(s.in.cap);
    if (!s.in.buf || (serve_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (serve_sig_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        setup_epoll(&s) != 0) {
        perror("aurora-mcp serve");
        free(s.in.buf);
        close_fds(&s);
        return EXIT_RUNTIME;
    }
    /* During startup a signal cancels it (main.c's signal thread: the
     * start ends "interrupted"); from the ready line on, serve's own
     * handler ends the loop.  A signal in between stays pending. */
    rc = cli_start(dir, &s.h);
    int early = cli_signals_stop();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = serve_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    if (rc != EXIT_OK) {
        free(s.in.buf);
        close_fds(&s);
        return rc;
    }
    /* A signal just after a successful start was taken by the thread:
     * hand it to serve's handler, which ends serve as any signal does. */
    if (early)
        raise(early);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.end_cv, NULL);
    pthread_cond_init(&s.q_cv, NULL);
    pthread_mutex_init(&s.out_mu, NULL);
    {
        /* Before any thread can read a request and answer it. */
        struct json_object *ready = json_object_new_object();
        json_object_object_add(ready, "ready", json_object_new_boolean(1));
        json_object_object_add(ready, "tools",
                               json_object_new_int64(
                                   (int64_t)aur_mcp_tool_count(s.h)));
        cli_print_json(ready);
        json_object_put(ready);
    }
    /* The reader and one more; calls add threads as they need them, to
     * WORKERS calls at once plus the reader. */
    pthread_mutex_lock(&s.mu);
    while (s.nth < 2 && serve_grow(&s))
        ;
    if (s.live == 0)
        serve_poke(s.done_fd);
    /* A reader alone would queue calls nobody runs: give up as on a read
     * error. */
    bool starved = s.nth < 2;
    if (starved) {
        fprintf(stderr, "aurora-mcp serve: cannot start worker threads\n");
        serve_end_requests(&s, false);
    }
    while (!s.ended)
        pthread_cond_wait(&s.end_cv, &s.mu);
    bool signalled = s.signalled;
    pthread_mutex_unlock(&s.mu);

    /* EOF or shutdown: let accepted calls finish (each is bounded by its
     * timeout), then close.  A signal closes the Apps first: calls in
     * flight end as unknown and are still answered. */
    if (signalled)
        aur_mcp_shutdown(s.h);
    pthread_mutex_lock(&s.mu);
    while (s.leading)
        pthread_cond_wait(&s.end_cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    drain(&s, signalled);
    /* Every worker has returned (drain waited for live == 0), so none
     * can grow the pool any more. */
    pthread_mutex_lock(&s.mu);
    size_t made = s.nth;
    pthread_mutex_unlock(&s.mu);
    for (size_t i = 0; i < made; i++)
        pthread_join(s.th[i], NULL);
    aur_mcp_shutdown(s.h);
    aur_mcp_destroy(s.h);
    free(s.in.buf);
    close_fds(&s);
    return starved ? EXIT_RUNTIME : EXIT_OK;
}
