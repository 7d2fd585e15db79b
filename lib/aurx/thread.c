/*
 * thread.c - see thread.h.
 */
#define _POSIX_C_SOURCE 200809L /* sigset_t, pthread_sigmask under C11 */
#include "thread.h"

#include <signal.h>

int aur__thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int e;

    /* The new thread inherits the mask it is created under: block
     * everything for the call alone. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    e = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
}
