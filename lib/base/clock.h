/*
 * clock.h - monotonic time and condition-variable deadlines.
 * Thread-safe.
 */
#ifndef AUR_CLOCK_H
#define AUR_CLOCK_H

#include "aur_setup.h"

#include <pthread.h>

#include "mono.h" /* aur__mono_cond_init: the condition variables below */

/* Monotonic milliseconds. */
int64_t aur__now_ms(void);

/* Wait on cv (made by aur__mono_cond_init) until dl (AUR_NO_DEADLINE =
 * forever).  Returns 0 on wakeup, ETIMEDOUT once dl has passed. */
int aur__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         aur_deadline dl);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf (>= 32). */
void aur__utc_now(char *buf, size_t size);

#endif
