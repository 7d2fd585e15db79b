/*
 * nosigpipe.c - see nosigpipe.h.
 */
#define _GNU_SOURCE 1 /* sigtimedwait under C11 */
#include "nosigpipe.h"

#include <pthread.h>
#include <time.h>

void aur__nosigpipe_begin(struct aur__nosigpipe *s)
{
    struct sigaction sa;
    sigset_t pipe_set, pending;

    s->masked = false;
    s->was_pending = false;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
        return;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &s->old);
    sigpending(&pending);
    s->was_pending = sigismember(&pending, SIGPIPE) == 1;
    s->masked = true;
}

void aur__nosigpipe_end(struct aur__nosigpipe *s, bool epipe)
{
    sigset_t pipe_set;
    struct timespec zero = {0, 0};

    if (!s->masked)
        return;
    if (epipe && !s->was_pending) {
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &s->old, NULL);
}
