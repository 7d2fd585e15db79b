#include "aur_setup.h"

#include "clock.h"
#include "log.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>


static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

/*
 * Rate limit (docs/budgets.md, "Log volume"): a token bucket of bytes of
 * log output per tag and log statement (the tag is "app <package>" for
 * the core's lines about an App, the plugin's name for a plugin's; the
 * statement is the format string), so a server that makes the host log
 * the same thing over and over (a malformed frame, a refused response,
 * an event dropped, a stderr line) cannot turn a little input into a lot
 * of log, and the flood does not hide the App's other lines.  A line is
 * written while its bucket holds tokens and costs its length (it may go
 * into debt); an empty bucket closes until a second's worth of tokens is
 * back, and drops lines uncounted but for their number, before they are
 * even formatted.  Summaries ("app org.x: suppressed N log lines like
 * "<format>"") go out when a line of the same bucket passes again, and
 * with any other line that passes at least a second after the last
 * sweep, so at most one per bucket a second.  ERROR lines always pass.
 * The table is open-addressed by a 64-bit hash of (tag, format): a key
 * takes a free slot among LOG_PROBES, so two statements share a budget
 * only when that many other keys are live around them (never in a test:
 * the format's address moves with ASLR, so a shared slot would make a
 * quiet line vanish one run in a hundred).  With none free it takes over
 * the slot of the probed key with the most tokens (the idlest), after
 * that key's summary, keeping the tokens as they are, so a key that comes
 * back after eviction gets no fresh burst.  Guarded by its log's mutex.
 */
#define LOG_BUCKETS 512
#define LOG_PROBES 8
#define LOG_BURST_BYTES (256 * 1024)
#define LOG_RATE_BYTES (16 * 1024) /* per second */

struct log_bucket {
    bool started;
    uint64_t key;        /* hash of (tag, format) */
    bool closed; /* emptied: closed until a second's worth is in */
    int64_t tokens;
    int64_t at_ms;       /* last refill */
    uint64_t suppressed; /* lines dropped since the last summary */
    char tag[96];        /* of the key, for its summary */
    const char *fmt;     /* ditto (a literal of the caller's) */
};

/* One host's log: its level, file, sink and rate limits.  Its mutex
 * keeps lines whole when Apps and transports log from their own threads;
 * stderr, which every log of the process shares, has its own below. */
struct aur__log {
    pthread_mutex_t mu;
    int level;
    FILE *file;
    aur_log_fn *sink; /* instead of stderr */
    void *sink_ud;
    struct log_bucket buckets[LOG_BUCKETS];
    size_t pending;   /* buckets with suppressed lines */
    int64_t swept_ms; /* the last sweep of their summaries */
};

/* For code that runs without a host (tests, tools): stderr at INFO. */
static struct aur__log default_log = {.mu = PTHREAD_MUTEX_INITIALIZER,
                                      .level = AUR_LOG_INFO};

static struct aur__log *or_default(struct aur__log *lg)
{
    return lg ? lg : &default_log;
}

/*
 * stderr never blocks a caller (docs/budgets.md, "Log volume"): a host
 * whose stderr nobody reads (a full pipe, a stopped terminal) would
 * otherwise stop in the middle of a call with a log's mutex held, and every
 * thread after it.  Lines are written without waiting on a description of
 * stderr of our own: a pipe or terminal is opened again through
 * /proc/self/fd/2 with O_NONBLOCK (never set on fd 2 itself, which the
 * parent shares), a socket is written with MSG_DONTWAIT, a file as it
 * is.  A line it cannot take now is dropped and counted; the count goes
 * out before the next line it takes.  A line goes out in one write of at
 * most PIPE_BUF bytes, so a pipe never holds half of one.  The log file
 * (a regular file) gets every line whole.  Guarded by err_mu, taken
 * after a log's mutex.
 */
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;
static int err_fd = -1;      /* ours, or STDERR_FILENO when reopening failed */
static bool err_sock;        /* send(MSG_DONTWAIT) */
static uint64_t err_dropped; /* lines stderr did not take, not yet said */

static void stderr_open_locked(void)
{
    struct stat st;

    if (err_fd > STDERR_FILENO)
        close(err_fd);
    err_fd = STDERR_FILENO;
    err_sock = false;
    if (fstat(STDERR_FILENO, &st) != 0)
        return;
    if (S_ISSOCK(st.st_mode)) {
        err_sock = true;
    } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        int fd = open("/proc/self/fd/2",
                      O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0)
            err_fd = fd;
    }
}

/* true: all n bytes went to stderr now.  Nothing taken: false at once;
 * half a line taken (a terminal or a socket may): the rest gets ten
 * milliseconds at most. */
static bool stderr_put(const char *b, size_t n)
{
    size_t done = 0;
    int waits = 0;

    while (done < n) {
        struct aur__nosigpipe ns;
        ssize_t w;

        if (err_sock) {
            w = send(err_fd, b + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else { /* a pipe nobody reads must not kill the process */
            aur__nosigpipe_begin(&ns);
            w = write(err_fd, b + done, n - done);
            aur__nosigpipe_end(&ns, w < 0 && errno == EPIPE);
        }
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && done > 0 &&
            waits++ < 10) {
            struct pollfd p = {.fd = err_fd, .events = POLLOUT};
            poll(&p, 1, 1);
            continue;
        }
        return false;
    }
    return true;
}

/* Open path for appending (NULL or "": none) into *f. */
static int open_file(const char *path, FILE **f, struct aur_error *err)
{
    *f = NULL;
    if (path && *path) {
        /* Never through a symlink (someone else's file would be appended
         * to), and readable by its owner only: logs name Apps and tools. */
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
                                O_CLOEXEC,
                      0600);
        if (fd < 0 || !(*f = fdopen(fd, "a"))) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            return aur_fail(err, AUR_E_IO, e, "cannot open log file %s: %s%s",
                            path, strerror(e),
                            e == ELOOP ? " (a symlink is refused)" : "");
        }
        setvbuf(*f, NULL, _IOLBF, 0);
    }
    return AUR_OK;
}

static void reopen_stderr(void)
{
    pthread_mutex_lock(&err_mu);
    stderr_open_locked();
    pthread_mutex_unlock(&err_mu);
}

/* A log's pages as the kernel gives them, zero and untouched: calloc
 * would write all of its 78 KB of buckets (about 19 page faults of every
 * run, docs/benchmarks.md), where a run touches the few it uses. */
static struct aur__log *log_alloc(void)
{
    void *p = mmap(NULL, sizeof(struct aur__log), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int aur__log_open(int level, const char *path, struct aur__log **out,
                  struct aur_error *err)
{
    struct aur__log *lg = log_alloc();
    int rc;

    if (!lg)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    if ((rc = open_file(path, &lg->file, err)) != AUR_OK) {
        munmap(lg, sizeof *lg);
        return rc;
    }
    pthread_mutex_init(&lg->mu, NULL);
    aur__log_set_level(lg, level);
    reopen_stderr(); /* what fd 2 is now */
    *out = lg;
    return AUR_OK;
}

static void flush_summaries_locked(struct aur__log *lg);

void aur__log_close(struct aur__log *lg)
{
    if (!lg)
        return;
    pthread_mutex_lock(&lg->mu);
    flush_summaries_locked(lg);
    pthread_mutex_unlock(&lg->mu);
    if (lg->file)
        fclose(lg->file);
    pthread_mutex_destroy(&lg->mu);
    munmap(lg, sizeof *lg);
}

int aur__log_setup(int level, const char *path, struct aur_error *err)
{
    FILE *f;
    int rc = open_file(path, &f, err);

    if (rc != AUR_OK)
        return rc;
    pthread_mutex_lock(&default_log.mu);
    if (default_log.file)
        fclose(default_log.file);
    default_log.file = f;
    pthread_mutex_unlock(&default_log.mu);
    aur__log_set_level(NULL, level);
    reopen_stderr();
    return AUR_OK;
}

void aur__log_teardown(void)
{
    pthread_mutex_lock(&default_log.mu);
    flush_summaries_locked(&default_log);
    if (default_log.file)
        fclose(default_log.file);
    default_log.file = NULL;
    pthread_mutex_unlock(&default_log.mu);
    pthread_mutex_lock(&err_mu);
    if (err_fd > STDERR_FILENO)
        close(err_fd);
    err_fd = -1;
    pthread_mutex_unlock(&err_mu);
}

void aur__log_set_level(struct aur__log *lg, int level)
{
    if (level < AUR_LOG_ERROR)
        level = AUR_LOG_ERROR;
    if (level > AUR_LOG_DEBUG)
        level = AUR_LOG_DEBUG;
    __atomic_store_n(&or_default(lg)->level, level, __ATOMIC_RELAXED);
}

int aur__log_level(struct aur__log *lg)
{
    return __atomic_load_n(&or_default(lg)->level, __ATOMIC_RELAXED);
}

void aur__log_set_sink(struct aur__log *lg, aur_log_fn *fn, void *ud)
{
    lg = or_default(lg);
    pthread_mutex_lock(&lg->mu);
    lg->sink = fn;
    lg->sink_ud = ud;
    pthread_mutex_unlock(&lg->mu);
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

/* Write one finished line to stderr; err_mu held. */
static void stderr_line_locked(const char *out)
{
    char line[PIPE_BUF];
    size_t n = strlen(out);

    if (err_fd < 0)
        stderr_open_locked(); /* a line before any setup */
    if (err_dropped) {
        char ts[40];
        int k;
        aur__utc_now(ts, sizeof ts);
        k = snprintf(line, sizeof line,
                     "%s WARN log: %llu lines were not written to stderr: "
                     "it did not take them in time (is it read?)\n",
                     ts, (unsigned long long)err_dropped);
        if (k > 0 && stderr_put(line, (size_t)k))
            err_dropped = 0;
    }
    if (n > sizeof line - 1) {
        static const char cut[] = " [cut]";
        n = sizeof line - sizeof cut;
        memcpy(line, out, n);
        memcpy(line + n, cut, sizeof cut - 1);
        n += sizeof cut - 1;
    } else {
        memcpy(line, out, n);
    }
    line[n++] = '\n';
    if (err_dropped || !stderr_put(line, n))
        err_dropped++;
}

/* One finished line of lg at level: its sink or stderr, and its file;
 * lg->mu held. */
static void emit_locked(struct aur__log *lg, int level, const char *out)
{
    if (lg->sink) {
        lg->sink(lg->sink_ud, level, out, strlen(out));
    } else {
        pthread_mutex_lock(&err_mu);
        stderr_line_locked(out);
        pthread_mutex_unlock(&err_mu);
    }
    if (lg->file)
        fprintf(lg->file, "%s\n", out);
}

/* The summary of b's dropped lines, if any; lg->mu held. */
static void summary_locked(struct aur__log *lg, struct log_bucket *b)
{
    char ts[40], line[400], out[1600];

    if (!b->suppressed)
        return;
    aur__utc_now(ts, sizeof ts);
    snprintf(line, sizeof line,
             "%s WARN %s: suppressed %llu log lines like \"%.80s\" (log rate "
             "limit: %d bytes at once, %d bytes per second)",
             ts, b->tag, (unsigned long long)b->suppressed,
             b->fmt ? b->fmt : "", LOG_BURST_BYTES, LOG_RATE_BYTES);
    escape_controls(line, out, sizeof out);
    emit_locked(lg, AUR_LOG_WARN, out);
    b->suppressed = 0;
    lg->pending--;
}

static void flush_summaries_locked(struct aur__log *lg)
{
    for (size_t i = 0; i < LOG_BUCKETS && lg->pending; i++)
        summary_locked(lg, &lg->buckets[i]);
}

/* b's tokens at now: refilled at LOG_RATE_BYTES up to the burst. */
static void refill_locked(struct log_bucket *b, int64_t now)
{
    if (now > b->at_ms) {
        b->tokens += (now - b->at_ms) * LOG_RATE_BYTES / 1000;
        if (b->tokens > LOG_BURST_BYTES)
            b->tokens = LOG_BURST_BYTES;
        b->at_ms = now;
    }
}

/* The bucket of (tag, fmt), refilled; lg->mu held. */
static struct log_bucket *bucket_locked(struct aur__log *lg, const char *tag,
                                        const char *fmt, int64_t now)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)fmt;
    struct log_bucket *b = NULL, *idlest = NULL;

    for (const char *p = tag; *p; p++) /* FNV-1a */
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h ^= h >> 29;
    for (size_t i = 0; i < LOG_PROBES && !b; i++) {
        struct log_bucket *s = &lg->buckets[(h + i) % LOG_BUCKETS];
        if (!s->started) {
            s->started = true;
            s->closed = false;
            s->tokens = LOG_BURST_BYTES;
            s->key = ~h; /* named below */
            b = s;
        } else if (s->key == h) {
            b = s;
        } else {
            refill_locked(s, now);
            if (!idlest || s->tokens > idlest->tokens)
                idlest = s;
        }
    }
    if (!b) {
        b = idlest;
        summary_locked(lg, b);
    }
    if (b->key != h) {
        b->key = h;
        snprintf(b->tag, sizeof b->tag, "%s", tag);
        b->fmt = fmt;
        b->at_ms = now;
    }
    refill_locked(b, now);
    return b;
}

void aur__vlog(struct aur__log *lg, int level, const char *tag,
               const char *fmt, va_list ap)
{
    char line[2048], out[4 * 2048], ts[40];
    struct log_bucket *b = NULL;
    int64_t now = 0;
    int n;
    lg = or_default(lg);
    if (level > aur__log_level(lg))
        return;
    if (level < AUR_LOG_ERROR)
        level = AUR_LOG_ERROR;
    if (level > AUR_LOG_DEBUG)
        level = AUR_LOG_DEBUG;
    now = aur__now_ms();
    if (level > AUR_LOG_ERROR) {
        /* Decided before formatting: a flood costs a lock and a counter
         * per line, nothing more. */
        pthread_mutex_lock(&lg->mu);
        b = bucket_locked(lg, tag ? tag : "log", fmt, now);
        /* Once empty, closed until a second of refill is in. */
        if (b->closed && b->tokens >= LOG_RATE_BYTES)
            b->closed = false;
        if (b->tokens <= 0)
            b->closed = true;
        bool pass = !b->closed;
        if (!pass && b->suppressed++ == 0)
            lg->pending++;
        pthread_mutex_unlock(&lg->mu);
        if (!pass)
            return;
    }
    aur__utc_now(ts, sizeof ts);
    n = snprintf(line, sizeof line, "%s %s %s%s", ts, level_names[level],
                 tag ? tag : "", tag ? ": " : "");
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    escape_controls(line, out, sizeof out);
    pthread_mutex_lock(&lg->mu);
    if (b) {
        summary_locked(lg, b);
        b->tokens -= (int64_t)strlen(out) + 1;
    }
    if (lg->pending && now - lg->swept_ms >= 1000) {
        lg->swept_ms = now;
        flush_summaries_locked(lg);
    }
    emit_locked(lg, level, out);
    pthread_mutex_unlock(&lg->mu);
}

void aur__log(struct aur__log *lg, int level, const char *tag,
              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    aur__vlog(lg, level, tag, fmt, ap);
    va_end(ap);
}
