#include "aur_setup.h"

#include "clock.h"
#include "log.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

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
        /* Never through a symlink (someone else's file would be appended
         * to), and readable by its owner only: logs name Apps and tools. */
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
                                O_CLOEXEC,
                      0600);
        if (fd < 0 || !(f = fdopen(fd, "a"))) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            return aur_fail(err, AUR_E_IO, e, "cannot open log file %s: %s%s",
                            path, strerror(e),
                            e == ELOOP ? " (a symlink is refused)" : "");
        }
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

/*
 * One physical line per record, and nothing a terminal acts on: text from
 * servers (stderr lines, error messages, names) reaches the log, and an
 * escape sequence in it could rewrite what an operator sees.  C0 controls,
 * DEL and the C1 controls (U+0080..U+009F, CSI among them) become \xNN
 * (C1 as the two bytes of their UTF-8 form); the rest is kept.
 */
static void escape_controls(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;

    while (*p) {
        size_t take = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f ? 2
                      : p[0] < 0x20 || p[0] == 0x7f                ? 1
                                                                   : 0;
        if (!take) {
            if (o + 2 > size)
                break;
            out[o++] = (char)*p++;
            continue;
        }
        if (o + 4 * take + 1 > size)
            break;
        for (size_t k = 0; k < take; k++, p++) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

void aur__vlog(int level, const char *tag, const char *fmt, va_list ap)
{
    char line[2048], out[4 * 2048], ts[40];
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
    escape_controls(line, out, sizeof out);
    pthread_mutex_lock(&log_mu);
    fprintf(stderr, "%s\n", out);
    if (log_file)
        fprintf(log_file, "%s\n", out);
    pthread_mutex_unlock(&log_mu);
}

void aur__log(int level, const char *tag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    aur__vlog(level, tag, fmt, ap);
    va_end(ap);
}
