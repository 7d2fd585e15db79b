#include "aur_setup.h"

#include "clock.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>

/* The log is process-wide by nature (stderr is); one mutex keeps lines
 * whole when Apps and transports log from their own threads. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_level = AUR_LOG_INFO;
static FILE *log_file;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

int aur__log_setup(int level, const char *path, struct aur_error *err)
{
    FILE *f = NULL;
    if (path && *path) {
        f = fopen(path, "ae");
        if (!f)
            return aur_fail(err, AUR_E_IO, errno, "cannot open log file %s: %s",
                            path, strerror(errno));
        setvbuf(f, NULL, _IOLBF, 0);
    }
    pthread_mutex_lock(&log_mu);
    if (log_file)
        fclose(log_file);
    log_file = f;
    log_level = level;
    pthread_mutex_unlock(&log_mu);
    return AUR_OK;
}

void aur__log_teardown(void)
{
    pthread_mutex_lock(&log_mu);
    if (log_file)
        fclose(log_file);
    log_file = NULL;
    pthread_mutex_unlock(&log_mu);
}

int aur__log_level(void)
{
    return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void aur__vlog(int level, const char *tag, const char *fmt, va_list ap)
{
    char line[2048], ts[40];
    int n;
    if (level > aur__log_level())
        return;
    if (level < AUR_LOG_ERROR)
        level = AUR_LOG_ERROR;
    if (level > AUR_LOG_DEBUG)
        level = AUR_LOG_DEBUG;
    aur__utc_now(ts, sizeof ts);
    n = snprintf(line, sizeof line, "%s %s %s%s", ts, level_names[level],
                 tag ? tag : "", tag ? ": " : "");
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    /* One physical line per record, whatever the message held. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    pthread_mutex_lock(&log_mu);
    fprintf(stderr, "%s\n", line);
    if (log_file)
        fprintf(log_file, "%s\n", line);
    pthread_mutex_unlock(&log_mu);
}

void aur__log(int level, const char *tag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    aur__vlog(level, tag, fmt, ap);
    va_end(ap);
}
