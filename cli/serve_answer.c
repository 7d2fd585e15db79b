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

static void put(struct line *l, const char *s, size_t n)
{
    if (!l->oom && aur__buf_put(&l->b, s, n, SIZE_MAX) != 0)
        l->oom = true;
}

static void put_lit(struct line *l, const char *s)
{
    put(l, s, strlen(s));
}

/* json-c's escaping with JSON_C_TO_STRING_NOSLASHESCAPE: the short
 * escapes, \u00xx for the other control characters, all else verbatim. */
static void put_str(struct line *l, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t from = 0;

    put(l, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7] = "\\";
        size_t en = 2;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            en = 6;
        }
        put(l, s + from, i - from);
        put(l, esc, en);
        from = i + 1;
    }
    put(l, s + from, n - from);
    put(l, "\"", 1);
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
    put_lit(l, v ? json_object_to_json_string_ext(
                       v, JSON_C_TO_STRING_PLAIN |
                              JSON_C_TO_STRING_NOSLASHESCAPE)
                 : "null");
}

static void put_scopes(struct line *l, const char *key,
                       const char *const *v, size_t n)
{
    put(l, ",\"", 2);
    put_lit(l, key);
    put(l, "\":[", 3);
    for (size_t i = 0; i < n; i++) {
        if (i)
            put(l, ",", 1);
        put_str(l, v[i], strlen(v[i]));
    }
    put(l, "]", 1);
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
    put_lit(&l, "{\"id\":");
    put_value(&l, id);
    put_lit(&l, ",\"result\":{\"status\":\"");
    put_lit(&l, aur_call_status_word(o->status));
    put_lit(&l, "\",\"content\":");
    put_str(&l, o->content, o->content_len);
    if (o->observe && o->publish) {
        put_scopes(&l, "observe", o->observe, o->n_observe);
        put_scopes(&l, "publish", o->publish, o->n_publish);
    }
    put(&l, "}}\n", 3);
    if (l.oom) {
        free(l.b.p);
        return NULL;
    }
    *len = l.b.n;
    return l.b.p;
}
