/*
 * stdio_io.c - the per-child I/O thread and the stdin writer.
 *
 * One thread per child polls its stdout, stderr, pidfd and stop pipe, so
 * stdout and stderr are always drained (a full pipe would wedge the App)
 * and the thread can always be told to stop, even when an escaped
 * grandchild keeps the pipes open.  on_closed is decided here, once.
 * A caller waiting for the reply to a lone tools/call may read stdout
 * itself for a moment ("assist", below), so the reply needs no hand-off
 * between threads.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "aur_perturb.h"

#define CHUNK (64 * 1024)
/* A shrunken line buffer is kept up to this size between frames. */
#define KEEP_LINE_CAP (1024 * 1024)
/* How long an exit waits for stdout EOF (and EOF for the exit) so the last
 * frames are delivered before on_closed, and the exit status is known. */
#define LINGER_MS 200
/* Without a pidfd the exit is noticed by polling at this period. */
#define EXIT_POLL_MS 50
#define MAX_WAIT_MS (24 * 3600 * 1000LL)

/* ------------------------------------------------------------------ */
/* Monotonic waits                                                    */
/* ------------------------------------------------------------------ */

int stdio_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);

    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

bool stdio_cond_wait(const struct aur_host *h, pthread_cond_t *cv,
                     pthread_mutex_t *mu, int64_t until_ms)
{
    int64_t rem = until_ms - h->now_ms();
    struct timespec ts;

    if (rem <= 0)
        return false;
    if (rem > MAX_WAIT_MS) /* callers loop; keeps tv_sec sane */
        rem = MAX_WAIT_MS;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(rem / 1000);
    ts.tv_nsec += (long)(rem % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
    return true;
}

/* ------------------------------------------------------------------ */
/* Sink calls: never after retirement, counted so stop can wait them   */
/* ------------------------------------------------------------------ */

static bool sink_enter(struct stdio_child *ch, bool closing_call)
{
    bool ok;

    pthread_mutex_lock(&ch->mu);
    ok = !ch->retired && !ch->reported;
    if (ok) {
        ch->busy++;
        if (closing_call)
            ch->reported = true;
    }
    pthread_mutex_unlock(&ch->mu);
    return ok;
}

static void sink_leave(struct stdio_child *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->busy--;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

static void deliver(struct stdio_child *ch, struct json_object *msg)
{
    struct aur_conn *c = ch->conn;

    if (!sink_enter(ch, false)) {
        json_object_put(msg);
        return;
    }
    c->sink.on_message(c->sink.ctx, msg);
    sink_leave(ch);
}

/* why == NULL: clean end. */
static void report_closed(struct stdio_child *ch, const struct aur_error *why)
{
    struct aur_conn *c = ch->conn;

    if (!sink_enter(ch, true)) {
        /* Retired or already reported: remember it all the same so the
         * thread stops deciding. */
        pthread_mutex_lock(&ch->mu);
        ch->reported = true;
        pthread_mutex_unlock(&ch->mu);
        return;
    }
    c->sink.on_closed(c->sink.ctx, why);
    sink_leave(ch);
}

static void read_stderr_into(struct stdio_child *ch, char *chunk,
                             size_t size);
static void stderr_emit(struct stdio_child *ch);

/* What the exited child left in its stderr pipe, without waiting: a
 * grandchild may hold the pipe open.  At most 64 KiB. */
static void drain_stderr(struct stdio_child *ch)
{
    char chunk[4096];
    struct pollfd p = {.fd = ch->err_fd, .events = POLLIN};

    for (int i = 0; i < 16 && !ch->err_done; i++) {
        if (poll(&p, 1, 0) <= 0 || !p.revents)
            return;
        read_stderr_into(ch, chunk, sizeof chunk);
    }
}

static void report_exit(struct stdio_child *ch)
{
    struct aur_error e;
    const char *pkg = ch->conn->package;
    char how[64];

    aur_error_clear(&e);
    if (ch->exit_code == CLD_EXITED && ch->exit_status == 0) {
        report_closed(ch, NULL);
        return;
    }
    if (ch->exit_code == CLD_EXITED)
        snprintf(how, sizeof how, "exited with status %d", ch->exit_status);
    else if (ch->exit_code != CLD_KILLED && ch->exit_code != CLD_DUMPED)
        snprintf(how, sizeof how, "exited");
    else
        snprintf(how, sizeof how, "killed by signal %d (%s)",
                 ch->exit_status, sigabbrev_np(ch->exit_status)
                                      ? sigabbrev_np(ch->exit_status)
                                      : "?");
    /* Why a server died is mostly in its last stderr lines. */
    drain_stderr(ch);
    if (ch->eline_len > 0 || ch->etrunc)
        stderr_emit(ch);
    pthread_mutex_lock(&ch->mu);
    snprintf(ch->exit_why, sizeof ch->exit_why, "App process %s%s%s%s", how,
             ch->etail_len ? "; its stderr ended: \"" : "", ch->etail,
             ch->etail_len ? "\"" : "");
    aur_fail(&e, AUR_E_CLOSED,
             ch->exit_code == CLD_EXITED || ch->exit_code == CLD_KILLED ||
                     ch->exit_code == CLD_DUMPED
                 ? ch->exit_status
                 : 0,
             "%s: %s", pkg, ch->exit_why);
    pthread_cond_broadcast(&ch->cv); /* a writer may wait for it */
    pthread_mutex_unlock(&ch->mu);
    report_closed(ch, &e);
}

static void set_flag(struct stdio_child *ch, bool *flag)
{
    pthread_mutex_lock(&ch->mu);
    *flag = true;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

/* ------------------------------------------------------------------ */
/* Log volume                                                         */
/* ------------------------------------------------------------------ */

/*
 * What one child can make us log (docs/budgets.md, "Log volume"): a token
 * bucket of bytes of log per kind, charged with each line's length plus
 * what a log line adds to it (time, level, tag, package).  The buckets
 * are thread-local: stderr is only ever read by the child's own I/O
 * thread, so each child has its own, and nothing is locked.  A line that
 * finds its bucket empty is counted, not logged; the next one that
 * passes, and the end of the stream, report the count.
 */
#define LOG_LINE_COST 96 /* bytes a log line adds to its text */
/* A quarter of what the host log allows one statement of a plugin (all
 * children's stderr lines share that one), so one child cannot drown
 * the others' lines there. */
#define STDERR_BURST_BYTES (64 * 1024)
#define STDERR_RATE_BYTES (4 * 1024) /* per second */
#define WARN_BURST_BYTES (16 * 1024)  /* "dropped malformed frame" */
#define WARN_RATE_BYTES 1024

struct log_budget {
    bool started;
    bool closed; /* emptied: nothing passes until a second's worth is in */
    int64_t tokens, at_ms;
    uint64_t suppressed;
};

static _Thread_local struct log_budget stderr_budget, warn_budget;

/* true: log a line of len bytes now. */
static bool budget_take(const struct aur_host *h, struct log_budget *b,
                        int64_t burst, int64_t rate, size_t len)
{
    int64_t now = h->now_ms();

    if (!b->started) {
        b->started = true;
        b->tokens = burst;
        b->at_ms = now;
    }
    if (now > b->at_ms) {
        b->tokens += (now - b->at_ms) * rate / 1000;
        if (b->tokens > burst)
            b->tokens = burst;
        b->at_ms = now;
    }
    /* Once empty, closed until a second of refill is in: then the
     * held-back count goes out once per second at most, not per line. */
    if (b->closed && b->tokens >= rate)
        b->closed = false;
    if (b->closed || b->tokens <= 0) {
        b->closed = true;
        b->suppressed++;
        return false;
    }
    b->tokens -= (int64_t)(len + LOG_LINE_COST);
    return true;
}

/* The count of lines b held back, if any. */
static void budget_report(struct stdio_child *ch, struct log_budget *b,
                          const char *what, int64_t burst, int64_t rate)
{
    const struct stdio_state *st = ch->conn->st;

    if (!b->suppressed)
        return;
    st->host->log(st->self, AUR_LOG_WARN,
                  "[%s] suppressed %llu %s (rate limit: %lld bytes at once, "
                  "%lld bytes per second)",
                  ch->conn->package, (unsigned long long)b->suppressed, what,
                  (long long)burst, (long long)rate);
    b->suppressed = 0;
}

/* ------------------------------------------------------------------ */
/* stdout: newline-delimited JSON                                     */
/* ------------------------------------------------------------------ */

static void limit_exceeded(struct stdio_child *ch)
{
    struct aur_error e;

    aur_fail(&e, AUR_E_LIMIT, 0, "%s: message exceeds max_line_bytes (%zu)",
             ch->conn->package, ch->conn->st->max_line);
    set_flag(ch, &ch->out_done);
    report_closed(ch, &e);
}

/* One complete line (without its LF).  false: framing is lost. */
static bool frame(struct stdio_child *ch, const char *buf, size_t len)
{
    const struct stdio_state *st = ch->conn->st;
    const struct aur_sink *sink = &ch->conn->sink;
    struct json_object *msg = NULL;
    struct aur_error e;
    int rc;

    if (len > 0 && buf[len - 1] == '\r')
        len--;
    if (len == 0)
        return true;
    if (len > st->max_line) {
        limit_exceeded(ch);
        return false;
    }
    AUR_PERTURB("stdio.frame");
    if (sink->on_text) {
        /* The host parses (or reads a call's reply without a tree). */
        if (!sink_enter(ch, false))
            return true;
        rc = sink->on_text(sink->ctx, buf, len, stdio_response_seen, ch, &e);
        sink_leave(ch);
    } else {
        rc = st->host->json_parse(buf, len, &msg, &e);
        if (rc == AUR_OK && !json_object_is_type(msg, json_type_object))
            rc = AUR_E_PROTOCOL;
        if (rc == AUR_OK) {
            if (__atomic_load_n(&ch->n_ids, __ATOMIC_RELAXED))
                stdio_note_response(ch, msg);
            deliver(ch, msg);
        } else {
            json_object_put(msg);
        }
    }
    /* The content may be anything the App printed: never log it.  A
     * frame over the memory budget is named as such (the error names the
     * key and the App). */
    if (rc != AUR_OK &&
        budget_take(st->host, &warn_budget, WARN_BURST_BYTES,
                    WARN_RATE_BYTES, 0)) {
        budget_report(ch, &warn_budget, "malformed-frame warnings",
                      WARN_BURST_BYTES, WARN_RATE_BYTES);
        if (rc == AUR_E_LIMIT)
            st->host->log(st->self, AUR_LOG_WARN,
                          "%s: dropped a frame (%zu bytes): %s",
                          ch->conn->package, len, e.msg);
        else
            st->host->log(st->self, AUR_LOG_WARN,
                          "%s: dropped malformed frame (%zu bytes)",
                          ch->conn->package, len);
    }
    return true;
}

static bool line_append(struct stdio_child *ch, const char *p, size_t n)
{
    size_t need = ch->line_len + n, cap = ch->line_cap;
    size_t max = ch->conn->st->max_line + 1; /* room for a CR */

    if (need > cap) {
        char *nb;
        if (cap < CHUNK)
            cap = CHUNK;
        while (cap < need)
            cap = cap > max / 2 ? max : cap * 2;
        nb = realloc(ch->line, cap);
        if (!nb)
            return false;
        ch->line = nb;
        ch->line_cap = cap;
    }
    memcpy(ch->line + ch->line_len, p, n);
    ch->line_len = need;
    return true;
}

static void line_reset(struct stdio_child *ch)
{
    ch->line_len = 0;
    if (ch->line_cap > KEEP_LINE_CAP) {
        /* One huge frame must not pin megabytes for the connection. */
        free(ch->line);
        ch->line = NULL;
        ch->line_cap = 0;
    }
}

void stdio_stdout_bytes(struct stdio_child *ch, const char *p, size_t n)
{
    const char *end = p + n;
    size_t max = ch->conn->st->max_line + 1;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t seg = (size_t)((nl ? nl : end) - p);
        bool ok;

        if (ch->line_len + seg > max) {
            limit_exceeded(ch);
            return;
        }
        if (nl && ch->line_len == 0) {
            ok = frame(ch, p, seg); /* whole line in the chunk: no copy */
        } else if (!line_append(ch, p, seg)) {
            struct aur_error e;
            aur_fail(&e, AUR_E_NOMEM, 0, "%s: no memory for a frame",
                     ch->conn->package);
            set_flag(ch, &ch->out_done);
            report_closed(ch, &e);
            return;
        } else if (nl) {
            ok = frame(ch, ch->line, ch->line_len);
            line_reset(ch);
        } else {
            ok = true;
        }
        if (!ok)
            return;
        p += seg + (nl ? 1 : 0);
    }
}

static void read_stdout(struct stdio_child *ch, char *chunk)
{
    ssize_t n = read(ch->out_fd, chunk, CHUNK);

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n > 0) {
        stdio_stdout_bytes(ch, chunk, (size_t)n);
        return;
    }
    /* EOF (or a read error, which ends the stream the same way).  A
     * final unterminated line is still a frame. */
    if (ch->line_len > 0 && frame(ch, ch->line, ch->line_len))
        line_reset(ch);
    set_flag(ch, &ch->out_done);
}

/* ------------------------------------------------------------------ */
/* stderr: one log line per line, capped and sanitised                */
/* ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char b = s[0], lo = 0x80, hi = 0xbf;
    size_t k, i;

    if (b >= 0xc2 && b <= 0xdf)
        k = 2;
    else if (b >= 0xe0 && b <= 0xef)
        k = 3;
    else if (b >= 0xf0 && b <= 0xf4)
        k = 4;
    else
        return 0;
    if (b == 0xe0)
        lo = 0xa0;
    else if (b == 0xed)
        hi = 0x9f;
    else if (b == 0xf0)
        lo = 0x90;
    else if (b == 0xf4)
        hi = 0x8f;
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

/* In place: control bytes and invalid UTF-8 become '?'.  A sequence cut
 * by truncation at the end is dropped.  Returns the new length. */
static size_t sanitise(char *buf, size_t n, bool cut)
{
    unsigned char *s = (unsigned char *)buf;
    size_t i = 0, o = 0;

    while (i < n) {
        size_t k;
        if (s[i] < 0x80) {
            s[o++] = (s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
            i++;
            continue;
        }
        k = utf8_seq(s + i, n - i);
        if (k == 0 && cut && n - i < 4 && s[i] >= 0xc2)
            break; /* probably a character the cap split */
        if (k == 0) {
            s[o++] = '?';
            i++;
            continue;
        }
        memmove(s + o, s + i, k);
        o += k;
        i += k;
    }
    return o;
}

/* In place: every whitelisted value in buf[0..n) becomes "***".  Returns
 * the new length. */
static size_t redact(const struct stdio_child *ch, char *buf, size_t n)
{
    for (size_t k = 0; k < ch->n_redact; k++) {
        const char *v = ch->redact[k];
        size_t vl = strlen(v), at = 0;
        char *hit;
        while (at < n && (hit = memmem(buf + at, n - at, v, vl))) {
            size_t off = (size_t)(hit - buf);
            memcpy(hit, "***", 3);
            memmove(hit + 3, hit + vl, n - off - vl);
            n -= vl - 3;
            at = off + 3;
        }
    }
    return n;
}

/* Keep the end of stderr: line after line, joined by " | ", the oldest
 * bytes dropped first. */
static void tail_add(struct stdio_child *ch, const char *line, size_t n)
{
    size_t cap = STDIO_STDERR_TAIL, sep = ch->etail_len ? 3 : 0;

    if (n == 0)
        return;
    if (n > cap) { /* the end of a long line */
        line += n - cap;
        n = cap;
        sep = 0;
        ch->etail_len = 0;
    }
    if (ch->etail_len + sep + n > cap) {
        size_t drop = ch->etail_len + sep + n - cap;
        if (drop >= ch->etail_len) {
            ch->etail_len = 0;
            sep = 0;
        } else {
            memmove(ch->etail, ch->etail + drop, ch->etail_len - drop);
            ch->etail_len -= drop;
            /* a UTF-8 character cut at the front goes entirely */
            while (ch->etail_len &&
                   ((unsigned char)ch->etail[0] & 0xc0) == 0x80) {
                memmove(ch->etail, ch->etail + 1, --ch->etail_len);
            }
        }
    }
    if (sep)
        memcpy(ch->etail + ch->etail_len, " | ", 3);
    memcpy(ch->etail + ch->etail_len + sep, line, n);
    ch->etail_len += sep + n;
    ch->etail[ch->etail_len] = '\0';
}

static void stderr_emit(struct stdio_child *ch)
{
    const struct stdio_state *st = ch->conn->st;
    size_t n = ch->eline_len;

    if (!ch->etrunc && n > 0 && ch->eline[n - 1] == '\r')
        n--;
    n = sanitise(ch->eline, n, ch->etrunc);
    n = redact(ch, ch->eline, n);
    tail_add(ch, ch->eline, n);
    if ((n > 0 || ch->etrunc) &&
        budget_take(st->host, &stderr_budget, STDERR_BURST_BYTES,
                    STDERR_RATE_BYTES, n)) {
        budget_report(ch, &stderr_budget, "stderr lines",
                      STDERR_BURST_BYTES, STDERR_RATE_BYTES);
        st->host->log(st->self, AUR_LOG_INFO, "[%s] stderr: %.*s%s",
                      ch->conn->package, (int)n, ch->eline,
                      ch->etrunc ? " [truncated]" : "");
    }
    ch->eline_len = 0;
    ch->etrunc = false;
}

static void stderr_bytes(struct stdio_child *ch, const char *p, size_t n)
{
    const char *end = p + n;
    size_t cap = ch->conn->st->stderr_line;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t seg = (size_t)((nl ? nl : end) - p);
        size_t room = cap - ch->eline_len;
        size_t take = seg < room ? seg : room;

        memcpy(ch->eline + ch->eline_len, p, take);
        ch->eline_len += take;
        if (take < seg)
            ch->etrunc = true; /* the rest of this line is skipped */
        if (nl)
            stderr_emit(ch);
        p += seg + (nl ? 1 : 0);
    }
}

static void read_stderr(struct stdio_child *ch, char *chunk)
{
    read_stderr_into(ch, chunk, CHUNK);
}

static void read_stderr_into(struct stdio_child *ch, char *chunk, size_t size)
{
    ssize_t n = read(ch->err_fd, chunk, size);

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n > 0) {
        stderr_bytes(ch, chunk, (size_t)n);
        return;
    }
    if (ch->eline_len > 0 || ch->etrunc)
        stderr_emit(ch);
    budget_report(ch, &stderr_budget, "stderr lines", STDERR_BURST_BYTES,
                  STDERR_RATE_BYTES);
    set_flag(ch, &ch->err_done);
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */
/* ------------------------------------------------------------------ */

/* Peek without reaping: the zombie keeps the pid and process group id
 * reserved until stdio_child_stop has signalled the group. */
static void check_exit(struct stdio_child *ch)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)ch->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno != ECHILD)
            return;
        /* Reaped behind our back (a host with SIGCHLD set to SIG_IGN):
         * gone, status unknown.  Without this a readable pidfd would spin
         * the loop. */
        si.si_code = 0;
        si.si_status = -1;
    } else if (si.si_pid != ch->pid) {
        return;
    }
    pthread_mutex_lock(&ch->mu);
    ch->exit_code = si.si_code;
    ch->exit_status = si.si_status;
    ch->exited = true;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

/* Exit and stdout EOF normally come together; either alone waits
 * LINGER_MS for the other before on_closed.  Returns the poll timeout. */
static int decide(struct stdio_child *ch, int64_t *linger_until)
{
    const struct aur_host *h = ch->conn->st->host;
    bool reported, out_done;
    int64_t now;

    pthread_mutex_lock(&ch->mu);
    reported = ch->reported;
    out_done = ch->out_done;
    pthread_mutex_unlock(&ch->mu);
    if (reported || (!ch->exited && !out_done)) {
        *linger_until = -1;
        return -1;
    }
    if (ch->exited && out_done) {
        report_exit(ch);
        return -1;
    }
    now = h->now_ms();
    if (*linger_until < 0)
        *linger_until = now + LINGER_MS;
    if (now >= *linger_until) {
        if (ch->exited)
            report_exit(ch);
        else
            report_closed(ch, NULL); /* it closed stdout: clean EOF */
        *linger_until = -1;
        return -1;
    }
    return (int)(*linger_until - now);
}

void *stdio_io_main(void *arg)
{
    struct stdio_child *ch = arg;
    const struct aur_host *h = ch->conn->st->host;
    int64_t linger_until = -1;
    int timeout = -1, kick[2] = {-1, -1};
    char *chunk = malloc(CHUNK);

    if (!chunk) {
        struct aur_error e;
        aur_fail(&e, AUR_E_NOMEM, 0, "%s: no memory for the reader",
                 ch->conn->package);
        report_closed(ch, &e);
        return NULL;
    }
    /* Without the kick pipe no caller reads stdout (no assist). */
    if (pipe2(kick, O_CLOEXEC | O_NONBLOCK) == 0) {
        pthread_mutex_lock(&ch->mu);
        ch->kick_w1 = kick[1] + 1;
        pthread_mutex_unlock(&ch->mu);
    }
    for (;;) {
        struct pollfd p[5];
        int n = 0, io = -1, ie = -1, ip = -1, ik = -1, t = timeout;
        bool out_done, park;

        pthread_mutex_lock(&ch->mu);
        out_done = ch->out_done;
        park = ch->out_owner == 2 ||
               (ch->park_until > 0 && h->now_ms() < ch->park_until);
        ch->io_parked = park && !out_done;
        pthread_mutex_unlock(&ch->mu);

        p[n++] = (struct pollfd){.fd = ch->stop_r, .events = POLLIN};
        if (!out_done && !park) {
            io = n;
            p[n++] = (struct pollfd){.fd = ch->out_fd, .events = POLLIN};
        } else if (!out_done) {
            /* Parked: a caller reads stdout; look again soon, or when
             * kicked. */
            ik = n;
            p[n++] = (struct pollfd){.fd = kick[0], .events = POLLIN};
            if (t < 0 || t > STDIO_PARK_MS)
                t = STDIO_PARK_MS;
        }
        if (!ch->err_done) {
            ie = n;
            p[n++] = (struct pollfd){.fd = ch->err_fd, .events = POLLIN};
        }
        if (!ch->exited && ch->pidfd >= 0) {
            ip = n;
            p[n++] = (struct pollfd){.fd = ch->pidfd, .events = POLLIN};
        } else if (!ch->exited && (t < 0 || t > EXIT_POLL_MS)) {
            t = EXIT_POLL_MS;
        }
        if (poll(p, (nfds_t)n, t) < 0 && errno != EINTR)
            break; /* cannot happen with valid fds; stop will join us */
        if (p[0].revents)
            break;
        if (ik >= 0 && p[ik].revents) {
            char drain[64];
            while (read(kick[0], drain, sizeof drain) > 0)
                ;
        }
        if (!ch->exited && (ip < 0 || p[ip].revents))
            check_exit(ch);
        if (io >= 0 && p[io].revents) {
            bool mine;

            pthread_mutex_lock(&ch->mu);
            mine = ch->out_owner == 0;
            if (mine)
                ch->out_owner = 1;
            pthread_mutex_unlock(&ch->mu);
            /* Not mine: a caller took stdout meanwhile; park next time. */
            if (mine) {
                read_stdout(ch, chunk);
                pthread_mutex_lock(&ch->mu);
                ch->out_owner = 0;
                pthread_mutex_unlock(&ch->mu);
            }
        }
        if (ie >= 0 && p[ie].revents)
            read_stderr(ch, chunk);
        timeout = decide(ch, &linger_until);
    }
    /* Stopped before stderr ended: still say what was held back. */
    budget_report(ch, &stderr_budget, "stderr lines", STDERR_BURST_BYTES,
                  STDERR_RATE_BYTES);
    budget_report(ch, &warn_budget, "malformed-frame warnings",
                  WARN_BURST_BYTES, WARN_RATE_BYTES);
    pthread_mutex_lock(&ch->mu);
    ch->kick_w1 = 0;
    ch->io_parked = false;
    free(ch->ids);
    ch->ids = NULL;
    __atomic_store_n(&ch->n_ids, 0, __ATOMIC_RELAXED);
    ch->cap_ids = 0;
    pthread_mutex_unlock(&ch->mu);
    if (kick[0] >= 0) {
        close(kick[0]);
        close(kick[1]);
    }
    free(chunk);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The writer                                                         */
/* ------------------------------------------------------------------ */

static int write_all(int fd, const char *buf, size_t len, aur_deadline dl,
                     const struct aur_host *h, size_t *done, int *eno)
{
    size_t total = len + 1;

    while (*done < total) {
        struct iovec iov[2];
        int cnt = 0;
        ssize_t n;

        if (*done < len)
            iov[cnt++] = (struct iovec){(void *)(buf + *done), len - *done};
        iov[cnt++] = (struct iovec){(void *)"\n", 1};
        AUR_PERTURB("stdio.write");
        n = writev(fd, iov, cnt);
        if (n > 0) {
            *done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int64_t rem = aur_remaining_ms(h, dl);
            if (rem == 0)
                return AUR_E_TIMEOUT;
            poll(&p, 1, rem > INT_MAX ? INT_MAX : (int)rem);
            continue; /* POLLERR shows up as EPIPE on the next writev */
        }
        *eno = n < 0 ? errno : EIO;
        return *eno == EPIPE ? AUR_E_CLOSED : AUR_E_IO;
    }
    return AUR_OK;
}

/* A write found stdin closed: the child is most likely dying.  Wait for
 * its exit to be decided (LINGER_MS and a little; never past dl) so the
 * error can say how it ended and what it printed, not only "closed its
 * stdin". */
static int closed_stdin(struct stdio_child *ch, aur_deadline dl,
                        struct aur_error *err)
{
    const struct aur_host *h = ch->conn->st->host;
    int64_t until = h->now_ms() + 2 * LINGER_MS;
    char why[AUR_ERR_MSG_SIZE] = "";

    if (dl < until)
        until = dl;
    pthread_mutex_lock(&ch->mu);
    while (!ch->exit_why[0] && !ch->retired &&
           stdio_cond_wait(h, &ch->cv, &ch->mu, until))
        ;
    snprintf(why, sizeof why, "%s", ch->exit_why);
    pthread_mutex_unlock(&ch->mu);
    if (why[0])
        return aur_fail(err, AUR_E_NOT_SENT, EPIPE, "%s: %s",
                        ch->conn->package, why);
    return aur_fail(err, AUR_E_NOT_SENT, EPIPE, "%s: App closed its stdin",
                    ch->conn->package);
}

int stdio_child_write(struct stdio_child *ch, const char *buf, size_t len,
                      aur_deadline dl, struct aur_error *err)
{
    const char *pkg = ch->conn->package;
    sigset_t pipe_set, old, pending;
    struct sigaction sa;
    bool was_pending;
    size_t done = 0;
    bool exited;
    int rc, eno = 0;

    int64_t id;
    bool is_call, tracked = stdio_request_id(buf, len, &id, &is_call);

    pthread_mutex_lock(&ch->mu);
    exited = ch->exited;
    /* Before the bytes leave: the reply may come first. */
    if (tracked && !exited)
        stdio_ids_add(ch, id);
    pthread_mutex_unlock(&ch->mu);
    if (exited || ch->in_fd < 0 || ch->in_broken) {
        if (tracked && !exited) {
            pthread_mutex_lock(&ch->mu);
            stdio_ids_remove(ch, id);
            pthread_mutex_unlock(&ch->mu);
        }
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED, "%s: %s", pkg,
                        ch->in_broken ? "stdin framing lost by an "
                                        "earlier failed write"
                                      : "App process has exited");
    }

    /* The host normally ignores SIGPIPE; if it does not, a write to a dead
     * child must still not kill it: block the signal on this thread and
     * swallow the one our EPIPE raised.  Asking costs one system call per
     * write instead of the three of the masking. */
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
        rc = write_all(ch->in_fd, buf, len, dl, ch->conn->st->host, &done,
                       &eno);
    } else {
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        sigpending(&pending);
        was_pending = sigismember(&pending, SIGPIPE) == 1;
        rc = write_all(ch->in_fd, buf, len, dl, ch->conn->st->host, &done,
                       &eno);
        if (rc == AUR_E_CLOSED && !was_pending) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_set, NULL, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }

    if (rc == AUR_OK)
        return AUR_OK;
    if (tracked) {
        pthread_mutex_lock(&ch->mu);
        stdio_ids_remove(ch, id);
        pthread_mutex_unlock(&ch->mu);
    }
    if (rc == AUR_E_CLOSED || done > 0)
        ch->in_broken = true;
    /* Some bytes out and no newline: the App may still read them as a
     * message (a last line without LF is a frame to many readers), so
     * only a write that put nothing in the pipe is "not sent". */
    if (done > 0)
        return aur_fail(err, rc, eno,
                        "%s: %s after %zu of %zu bytes; the message may "
                        "have reached the App",
                        pkg,
                        rc == AUR_E_TIMEOUT  ? "App did not read its stdin "
                                               "before the deadline"
                        : rc == AUR_E_CLOSED ? "App closed its stdin"
                                             : "write to App stdin failed",
                        done, len + 1);
    if (rc == AUR_E_TIMEOUT)
        return aur_fail(err, AUR_E_NOT_SENT, rc,
                        "%s: App did not read its stdin before the deadline",
                        pkg);
    if (rc == AUR_E_CLOSED)
        return closed_stdin(ch, dl, err);
    return aur_fail(err, AUR_E_NOT_SENT, eno, "%s: write to App stdin failed",
                    pkg);
}
