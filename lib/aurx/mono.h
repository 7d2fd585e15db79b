/*
 * mono.h - timed waits on the monotonic clock, for the core and every
 * plugin that waits on a condition variable: a wall-clock step (NTP,
 * a suspended VM) must neither end a wait early nor stretch it.
 * Compiled into each binary that uses it, never exported.  Thread-safe.
 */
#ifndef AURX_MONO_H
#define AURX_MONO_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* A condition variable whose timed waits use CLOCK_MONOTONIC.  0 or an
 * errno. */
int aur__mono_cond_init(pthread_cond_t *cv);

/* The CLOCK_MONOTONIC time ms milliseconds from now (ms >= 0), for
 * pthread_cond_timedwait on such a condition variable. */
void aur__mono_deadline(struct timespec *ts, int64_t ms);

#endif
