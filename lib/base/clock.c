#include "aur_setup.h"

#include "clock.h"

#include <time.h>

int64_t aur__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int aur__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         aur_deadline dl)
{
    struct timespec ts;
    if (dl == AUR_NO_DEADLINE)
        return pthread_cond_wait(cv, mu);
    if (dl <= aur__now_ms())
        return ETIMEDOUT;
    ts.tv_sec = (time_t)(dl / 1000);
    ts.tv_nsec = (long)(dl % 1000) * 1000000L;
    return pthread_cond_timedwait(cv, mu, &ts);
}

void aur__utc_now(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L);
}
