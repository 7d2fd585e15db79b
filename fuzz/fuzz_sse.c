/*
 * fuzz_sse.c - libFuzzer target for the text/event-stream parser of
 * transport-http (plugins/transport-http/http_sse.c, compiled in).
 *
 * Input: byte 0 picks the event-size budget, bytes 1-4 seed the chunk
 * splitter, the rest is the stream.  The stream is parsed three times:
 * in one chunk, in chunks whose lengths come from the seed, and one byte
 * at a time.  All three must dispatch the same events (type, data,
 * last id) and end in the same state (ok or sticky failure): a line end,
 * a CRLF or a BOM split across chunks must not change anything.  Every
 * event must respect the budget, and the parser's buffers must stay
 * bounded by it.  Any violation aborts.
 *
 * Fuzzing build: see fuzz/run.sh.  With -DAUR_FUZZ_REPLAY (CMake target
 * fuzz_sse_replay, CTest fuzz_sse_corpus) main() replays files.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "fuzz_sse"
/* Events remembered per run; more are only counted and hashed. */
#define KEEP_EVENTS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    size_t max_event;
    size_t n;
    uint64_t hash; /* over every event, also those not kept */
    struct {
        char *type, *data, *id;
        size_t data_len;
    } ev[KEEP_EVENTS];
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* field separator */
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        abort();
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int on_event(void *ud, const struct sse_event *ev)
{
    struct seen *s = ud;
    size_t tl, il;

    if (!ev->type || !ev->data || !ev->last_id)
        abort();
    tl = strlen(ev->type);
    il = strlen(ev->last_id);
    /* The budget holds for every dispatched event, and the data is a
     * NUL-terminated buffer of exactly data_len bytes. */
    if (ev->data_len > s->max_event || ev->data[ev->data_len] != '\0')
        abort();
    if (tl == 0 || tl >= 64 || il >= 256)
        abort();
    s->hash = mix(s->hash, ev->type, tl);
    s->hash = mix(s->hash, ev->data, ev->data_len);
    s->hash = mix(s->hash, ev->last_id, il);
    if (s->n < KEEP_EVENTS) {
        s->ev[s->n].type = dup_n(ev->type, tl);
        s->ev[s->n].data = dup_n(ev->data, ev->data_len);
        s->ev[s->n].data_len = ev->data_len;
        s->ev[s->n].id = dup_n(ev->last_id, il);
    }
    s->n++;
    return 0;
}

static void seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n && i < KEEP_EVENTS; i++) {
        free(s->ev[i].type);
        free(s->ev[i].data);
        free(s->ev[i].id);
    }
}

static void same(const struct seen *a, const struct seen *b)
{
    if (a->n != b->n || a->hash != b->hash)
        abort();
    for (size_t i = 0; i < a->n && i < KEEP_EVENTS; i++)
        if (strcmp(a->ev[i].type, b->ev[i].type) != 0 ||
            a->ev[i].data_len != b->ev[i].data_len ||
            memcmp(a->ev[i].data, b->ev[i].data, a->ev[i].data_len) != 0 ||
            strcmp(a->ev[i].id, b->ev[i].id) != 0)
            abort();
}

/* Buffers never grow past the budget (or the first 256-byte block). */
static void bounded(const struct sse_parser *p)
{
    size_t cap = p->max_event + 1 > 256 ? p->max_event + 1 : 256;
    if (p->line_cap > cap || p->data_cap > cap)
        abort();
    if (p->line_len > p->max_event || p->data_len > p->max_event + 1)
        abort();
}

/* chunk == 0: one chunk; otherwise lengths from a xorshift of seed,
 * 1..chunk bytes each. */
static int run(const char *buf, size_t len, size_t max_event, uint32_t seed,
               size_t chunk, struct seen *s)
{
    struct sse_parser p;
    size_t off = 0;
    int rc = SSE_OK, last = SSE_OK;

    memset(s, 0, sizeof *s);
    s->max_event = max_event;
    s->hash = 1469598103934665603ull;
    sse_init(&p, max_event);
    while (off < len || (off == 0 && len == 0)) {
        size_t n = len - off;
        if (chunk) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            size_t want = 1 + seed % chunk;
            if (want < n)
                n = want;
        }
        rc = sse_feed(&p, buf + off, n, on_event, s);
        if (rc == SSE_STOPPED)
            abort(); /* the callback never asks to stop */
        /* A failure is sticky: every later feed reports it again. */
        if (last < 0 && rc != last)
            abort();
        last = rc;
        bounded(&p);
        off += n;
        if (len == 0)
            break;
    }
    if (rc < 0 && sse_feed(&p, "\n\n", 2, on_event, s) != rc)
        abort();
    sse_finish(&p);
    /* After the end of a stream nothing pending may be dispatched. */
    if (p.failed == 0 && (p.line_len != 0 || p.data_len != 0))
        abort();
    sse_free(&p);
    return rc < 0 ? rc : SSE_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t budgets[8] = {1, 2, 8, 16, 64, 255, 256, 4096};
    struct seen *one, *split, *bytes;
    size_t max_event = 4096, chunk = 7;
    uint32_t seed = 2463534242u;
    const char *buf = (const char *)data;
    int r1, r2, r3;

    if (size >= 1) {
        max_event = budgets[data[0] & 7];
        chunk = 1 + (data[0] >> 3);
    }
    if (size >= 5) {
        memcpy(&seed, data + 1, 4);
        if (seed == 0)
            seed = 1; /* xorshift has no zero state */
    }
    if (size > 5) {
        buf += 5;
        size -= 5;
    } else {
        size = 0;
    }
    one = calloc(3, sizeof *one);
    if (!one)
        abort();
    split = one + 1;
    bytes = one + 2;
    r1 = run(buf, size, max_event, seed, 0, one);
    r2 = run(buf, size, max_event, seed, chunk, split);
    r3 = run(buf, size, max_event, seed, 1, bytes);
    if (r1 != r2 || r1 != r3 || r1 == SSE_NOMEM)
        abort();
    same(one, split);
    same(one, bytes);
    seen_free(one);
    seen_free(split);
    seen_free(bytes);
    free(one);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif
