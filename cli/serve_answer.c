/*
 * serve_answer.c - the answer line of a serve call, written straight into
 * a buffer.  Building it as a json-c tree and serialising that cost more
 * than the rest of serve's own work per call (two objects with their hash
 * tables, a printbuf, all freed again); the bytes are the same as
 * cli_print_json would print for the tree cli_output_json builds.
 */
#define _GNU_SOURCE 1
#include "cli.h"
#include "grow.h"
#include "quote_span.h"

#include <stdint.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct line {
    struct aur__buf b;
    bool oom;
};

/* Room for n more bytes and the NUL; false (and oom) when there is
 * none to be had.  The line is sized at the start for the usual answer,
 * so this is a compare for nearly every put. */
static bool room(struct line *l, size_t n)
{
    struct aur__buf *b = &l->b;
    char *g;

    if (l->oom)
        return false;
    if (b->p && n < b->cap - b->n)
        return true;
    if (n > SIZE_MAX - 1 - b->n ||
        !(g = aur__grow(b->p, &b->cap, b->n + n + 1, 1, 64, SIZE_MAX))) {
        l->oom = true;
        return false;
    }
    b->p = g;
    return true;
}

static void put(struct line *l, const char *s, size_t n)
{
    if (room(l, n)) {
        memcpy(l->b.p + l->b.n, s, n);
        l->b.n += n;
    }
}

#define PUT_LIT(l, word) put((l), (word), sizeof(word) - 1)

static void put_cstr(struct line *l, const char *s)
{
    put(l, s, strlen(s));
}

/* json-c's escaping with JSON_C_TO_STRING_NOSLASHESCAPE: the short
 * escapes, \u00xx for the other control characters, all else verbatim.
 * Room for the plain case is made once; an escape makes room again. */
static void put_str(struct line *l, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    char *d;

    if (!room(l, n + 2))
        return;
    d = l->b.p + l->b.n;
    *d++ = '"';
    for (;;) {
        size_t from = i;
        unsigned char c;

        i += aur__quote_span(u + i, n - i, false);
        memcpy(d, s + from, i - from);
        d += i - from;
        if (i == n)
            break;
        /* An escape is at most 6 bytes where room was made for 1. */
        l->b.n = (size_t)(d - l->b.p);
        if (!room(l, n - i + 6))
            return;
        d = l->b.p + l->b.n;
        c = u[i++];
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        default:
            memcpy(d, "u00", 3);
            d[3] = hex[c >> 4];
            d[4] = hex[c & 0xf];
            d += 5;
        }
    }
    *d++ = '"';
    l->b.n = (size_t)(d - l->b.p);
}

static void put_value(struct line *l, struct json_object *v)
{
    char num[24];

    switch (json_object_get_type(v)) {
    case json_type_string:
        put_str(l, json_object_get_string(v),
                (size_t)json_object_get_string_len(v));
        return;
    case json_type_int:
        if (json_object_get_int64(v) != INT64_MAX) { /* else maybe uint */
            /* Digits by hand: snprintf was a tenth of this line's cost. */
            int64_t x = json_object_get_int64(v);
            uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
            char *e = num + sizeof num, *d = e;
            do
                *--d = (char)('0' + u % 10);
            while ((u /= 10) != 0);
            if (x < 0)
                *--d = '-';
            put(l, d, (size_t)(e - d));
            return;
        }
        break;
    default:
        break;
    }
    put_cstr(l, v ? json_object_to_json_string_ext(
                       v, JSON_C_TO_STRING_PLAIN |
                              JSON_C_TO_STRING_NOSLASHESCAPE)
                 : "null");
}

static void put_scopes(struct line *l, const char *key,
                       const char *const *v, size_t n)
{
    PUT_LIT(l, ",\"");
    put_cstr(l, key);
    PUT_LIT(l, "\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            PUT_LIT(l, ",");
        put_str(l, v[i], strlen(v[i]));
    }
    PUT_LIT(l, "]");
}

char *cli_call_answer(struct json_object *id, const struct aur_tool_output *o,
                      size_t *len)
{
    struct line l = {{NULL, 0, 0}, false};
    /* Room for the usual line at once (an id, no escapes), not three
     * reallocs on the way there. */
    size_t want = 128 + o->content_len;

    for (size_t i = 0; o->observe && o->publish && i < o->n_observe; i++)
        want += 8 + strlen(o->observe[i]);
    for (size_t i = 0; o->observe && o->publish && i < o->n_publish; i++)
        want += 8 + strlen(o->publish[i]);
    l.b.p = aur__grow(NULL, &l.b.cap, want, 1, 64, SIZE_MAX);
    l.oom = !l.b.p;
    PUT_LIT(&l, "{\"id\":");
    put_value(&l, id);
    PUT_LIT(&l, ",\"result\":{\"status\":\"");
    put_cstr(&l, aur_call_status_word(o->status));
    PUT_LIT(&l, "\",\"content\":");
    put_str(&l, o->content, o->content_len);
    if (o->observe && o->publish) {
        put_scopes(&l, "observe", o->observe, o->n_observe);
        put_scopes(&l, "publish", o->publish, o->n_publish);
    }
    PUT_LIT(&l, "}}\n");
    if (!room(&l, 0)) {
        free(l.b.p);
        return NULL;
    }
    l.b.p[l.b.n] = '\0';
    *len = l.b.n;
    return l.b.p;
}
