/*
 * slack.h - how long a test waits for what it does not control: one
 * definition for the support modules (harness.c, plugin_host.c,
 * http_host.c, we_host.c) and the suites that include it.
 *
 * AUR_TEST_TIME_SCALE (default 1; scripts/valgrind.sh sets 4,
 * scripts/tsan.sh 3) stretches a wait for the host's background work, a
 * deadline a test needs met, or slack above a bound, so that a slow run
 * on a busy machine waits longer instead of failing.  It never stretches
 * a limit the test asserts is enforced.
 *
 * Threads: any; no state.
 */
#ifndef AUR_TEST_SLACK_H
#define AUR_TEST_SLACK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ms stretched by AUR_TEST_TIME_SCALE (1 to 100; anything else is 1). */
static inline int64_t slack_ms(int64_t ms)
{
    const char *s = getenv("AUR_TEST_TIME_SCALE");
    int k = s ? atoi(s) : 1;
    return ms * (k > 0 && k <= 100 ? k : 1);
}

/* CLOCK_MONOTONIC milliseconds. */
static inline int64_t slack_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until cond holds, looking again every step_ms, for at most
 * slack_ms(ms); the caller asserts cond after it.  No wait for the
 * host's background work is a fixed count of sleeps. */
#define H_WAIT_UNTIL(cond, ms, step_ms)                                      \
    do {                                                                     \
        int64_t h_until_ = slack_now_ms() + slack_ms(ms);                    \
        while (!(cond) && slack_now_ms() < h_until_)                         \
            usleep((useconds_t)(step_ms) * 1000);                            \
    } while (0)

#endif
