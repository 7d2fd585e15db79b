/*
 * http_sse.c - text/event-stream parser (WHATWG rules; docs/protocol.md,
 * Framing).
 *
 * Pure: bytes in, events out through a callback; no I/O, no threads, no
 * host.  Line ends are CRLF, LF or a lone CR, and may be split across
 * chunks at any byte (a trailing CR is remembered so a following LF in
 * the next chunk is not a second, empty line).  One leading UTF-8 BOM is
 * dropped even when it arrives split.  Memory is bounded by max_event:
 * a line or an event's data growing past it fails the stream for good
 * (SSE_TOO_BIG) instead of buffering without end.
 *
 * What the parser does NOT decide: which event types matter and whether
 * empty data is meaningful.  It dispatches every event whose data buffer
 * is non-empty (even if the data is ""); the MCP layer in http_post.c
 * skips empty data (priming events) and types other than "message".
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char BOM[3] = {0xEF, 0xBB, 0xBF};

/* A line or data buffer grown past this by one big event is freed after
 * it (a long-lived stream must not pin max_event bytes, twice, for good
 * because of one message). */
#define SSE_KEEP_CAP (1024 * 1024)

static void shrink(char **buf, size_t *cap)
{
    if (*cap > SSE_KEEP_CAP) {
        free(*buf);
        *buf = NULL;
        *cap = 0;
    }
}

void sse_init(struct sse_parser *p, size_t max_event)
{
    memset(p, 0, sizeof *p);
    p->max_event = max_event ? max_event : 1;
    p->retry_ms = -1;
}

void sse_free(struct sse_parser *p)
{
    free(p->line);
    free(p->data);
    p->line = p->data = NULL;
    p->line_len = p->line_cap = p->data_len = p->data_cap = 0;
}

/* Grow *buf to hold need bytes (plus a NUL), never past max + 1. */
static int reserve(char **buf, size_t *cap, size_t need, size_t max)
{
    /* The budget bounds the first block too: a line or event never
     * grows past it. */
    char *b = aur__grow(*buf, cap, need, 1, 256, max + 1);

    if (!b)
        return errno == EFBIG ? SSE_TOO_BIG : SSE_NOMEM;
    *buf = b;
    return SSE_OK;
}

static void reset_event(struct sse_parser *p)
{
    p->data_len = 0;
    shrink(&p->data, &p->data_cap);
    p->type[0] = '\0';
    p->type_long = false;
}

static int dispatch(struct sse_parser *p, sse_cb cb, void *ud)
{
    struct sse_event ev;
    int stop;

    if (p->data_len == 0) {
        reset_event(p);
        return SSE_OK;
    }
    p->data_len--; /* the LF appended after the last data line */
    p->data[p->data_len] = '\0';
    /* An over-long name cannot be one we know: make it match nothing. */
    ev.type = p->type_long ? "\x01" : p->type[0] ? p->type : "message";
    ev.data = p->data;
    ev.data_len = p->data_len;
    ev.last_id = p->last_id;
    stop = cb ? cb(ud, &ev) : 0;
    reset_event(p);
    return stop ? SSE_STOPPED : SSE_OK;
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* One complete line in p->line[0..line_len). */
static int process_line(struct sse_parser *p, sse_cb cb, void *ud)
{
    const char *l = p->line, *colon, *val;
    size_t n = p->line_len, flen, vlen;
    int rc;

    if (n == 0)
        return dispatch(p, cb, ud);
    if (l[0] == ':')
        return SSE_OK; /* comment: keep-alive */
    colon = memchr(l, ':', n);
    if (colon) {
        flen = (size_t)(colon - l);
        val = colon + 1;
        vlen = n - flen - 1;
        if (vlen && *val == ' ') {
            val++;
            vlen--;
        }
    } else {
        flen = n;
        val = l + n;
        vlen = 0;
    }
    if (flen == 4 && memcmp(l, "data", 4) == 0) {
        rc = reserve(&p->data, &p->data_cap, p->data_len + vlen + 2,
                     p->max_event);
        if (rc != SSE_OK)
            return rc;
        memcpy(p->data + p->data_len, val, vlen);
        p->data_len += vlen;
        p->data[p->data_len++] = '\n';
        p->data[p->data_len] = '\0';
    } else if (flen == 5 && memcmp(l, "event", 5) == 0) {
        p->type_long = vlen >= sizeof p->type;
        if (!p->type_long) {
            memcpy(p->type, val, vlen);
            p->type[vlen] = '\0';
        }
    } else if (flen == 2 && memcmp(l, "id", 2) == 0) {
        /* An id containing NUL is ignored; one too long for us is too. */
        if (!memchr(val, '\0', vlen) && vlen < sizeof p->last_id) {
            memcpy(p->last_id, val, vlen);
            p->last_id[vlen] = '\0';
        }
    } else if (flen == 5 && memcmp(l, "retry", 5) == 0) {
        /* The line buffer is not NUL-terminated: parse exactly vlen. */
        if (all_digits(val, vlen) && vlen < 10) {
            long ms = 0;
            for (size_t i = 0; i < vlen; i++)
                ms = ms * 10 + (val[i] - '0');
            p->retry_ms = ms;
        }
    }
    return SSE_OK; /* unknown fields are ignored */
}

static int end_line(struct sse_parser *p, sse_cb cb, void *ud)
{
    int rc = process_line(p, cb, ud);
    p->line_len = 0;
    shrink(&p->line, &p->line_cap);
    return rc;
}

static int feed_byte_run(struct sse_parser *p, const char *buf, size_t len,
                         sse_cb cb, void *ud)
{
    size_t i = 0;
    int rc;

    while (i < len) {
        char ch = buf[i];
        if (p->cr_pending) {
            p->cr_pending = false;
            if (ch == '\n') {
                i++;
                continue;
            }
        }
        if (ch == '\r' || ch == '\n') {
            p->cr_pending = ch == '\r';
            i++;
            rc = end_line(p, cb, ud);
            if (rc != SSE_OK)
                return rc;
            continue;
        }
        /* Copy the rest of this line in one go. */
        size_t j = i;
        while (j < len && buf[j] != '\r' && buf[j] != '\n')
            j++;
        rc = reserve(&p->line, &p->line_cap, p->line_len + (j - i) + 1,
                     p->max_event);
        if (rc != SSE_OK)
            return rc;
        memcpy(p->line + p->line_len, buf + i, j - i);
        p->line_len += j - i;
        i = j;
    }
    return SSE_OK;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t len, sse_cb cb,
             void *ud)
{
    int rc;

    if (p->failed)
        return p->failed;
    while (!p->bom_done && len > 0) {
        if ((unsigned char)*buf == BOM[p->bom_pos]) {
            buf++;
            len--;
            if (++p->bom_pos == 3)
                p->bom_done = true;
            continue;
        }
        /* Not a BOM after all: the matched prefix is ordinary text. */
        p->bom_done = true;
        if (p->bom_pos > 0) {
            rc = feed_byte_run(p, (const char *)BOM, (size_t)p->bom_pos, cb,
                               ud);
            if (rc < 0)
                return p->failed = rc;
            if (rc == SSE_STOPPED)
                return rc;
        }
    }
    rc = feed_byte_run(p, buf, len, cb, ud);
    if (rc < 0)
        p->failed = rc;
    return rc;
}

void sse_finish(struct sse_parser *p)
{
    /* WHATWG: pending data at EOF is discarded, not dispatched. */
    p->line_len = 0;
    reset_event(p);
    p->cr_pending = false;
}
