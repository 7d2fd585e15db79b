/*
 * stdio_stderr.c - what one child may make us log: its stderr, one log
 * line per line (capped, cleaned, redacted, rate-limited), the end of it
 * kept for the error its exit makes, and the budget of the warnings about
 * its malformed frames.
 *
 * Thread rules: the child's I/O thread only (a caller reading stdout for
 * an assist may take a warning: its budget is then that thread's own).
 */
#define _GNU_SOURCE
#include "stdio_int.h"
#include "utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
/* stderr: one log line per line, capped and sanitised                */
/* ------------------------------------------------------------------ */

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
        k = aur__utf8_next(s + i, n - i, NULL);
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

bool stdio_stderr_read(struct stdio_child *ch, char *chunk, size_t size)
{
    ssize_t n = read(ch->err_fd, chunk, size);

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return false;
    if (n > 0) {
        stderr_bytes(ch, chunk, (size_t)n);
        return false;
    }
    stdio_stderr_flush(ch);
    budget_report(ch, &stderr_budget, "stderr lines", STDERR_BURST_BYTES,
                  STDERR_RATE_BYTES);
    return true;
}

void stdio_stderr_flush(struct stdio_child *ch)
{
    if (ch->eline_len > 0 || ch->etrunc)
        stderr_emit(ch);
}

bool stdio_warn_take(struct stdio_child *ch)
{
    if (!budget_take(ch->conn->st->host, &warn_budget, WARN_BURST_BYTES,
                     WARN_RATE_BYTES, 0))
        return false;
    budget_report(ch, &warn_budget, "malformed-frame warnings",
                  WARN_BURST_BYTES, WARN_RATE_BYTES);
    return true;
}

void stdio_log_held_back(struct stdio_child *ch)
{
    budget_report(ch, &stderr_budget, "stderr lines", STDERR_BURST_BYTES,
                  STDERR_RATE_BYTES);
    budget_report(ch, &warn_budget, "malformed-frame warnings",
                  WARN_BURST_BYTES, WARN_RATE_BYTES);
}
