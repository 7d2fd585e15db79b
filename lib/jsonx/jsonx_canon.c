/*
 * jsonx_canon.c - deterministic JSON (docs/protocol.md), integer
 * text and compact json-c text.
 *
 * The canonical form is what Python's json.dumps(v, ensure_ascii=False,
 * sort_keys=True, separators=(",", ":")) prints for the value.  Python
 * strings cannot hold invalid UTF-8, so neither may ours: a string or key
 * that is not valid UTF-8 (possible only for values built outside our
 * parser) makes the value unserialisable (AUR_E_INVAL), like a
 * non-finite double.  Recursion is bounded by MAX_DEPTH, far above any
 * parser budget, because json-c values built by hand have no bound.
 */
#include "aur_setup.h"

#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>

#include "grow.h"
#include "jsonx_int.h"
#include "jsonx.h"

#define MAX_DEPTH 1000

struct member {
    const char *key;
    struct json_object *val;
};

static int put(struct aur__buf *o, const void *p, size_t n,
               struct aur_error *err)
{
    if (aur__buf_put(o, p, n, SIZE_MAX) != 0)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM,
                        "out of memory while serialising JSON");
    return AUR_OK;
}

static int put_str(struct aur__buf *o, const char *s, struct aur_error *err)
{
    return put(o, s, strlen(s), err);
}

static int put_quoted(struct aur__buf *o, const char *str, size_t n,
                      struct aur_error *err)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run, k;
    char esc[8];
    int rc;

    if ((rc = put(o, "\"", 1, err)) != AUR_OK)
        return rc;
    while (i < n) {
        /* Bytes that go out unchanged are copied as one run: printable
         * ASCII a word at a time (aur__json_plain_span), UTF-8 checked
         * sequence by sequence. */
        for (run = i; run < n;) {
            run += aur__json_plain_span(s + run, n - run);
            if (run == n || s[run] < 0x80)
                break;
            k = aur__utf8_next(s + run, n - run, NULL);
            if (k == 0)
                return aur_fail(err, AUR_E_INVAL, 0,
                                "string is not valid UTF-8");
            run += k;
        }
        if ((rc = put(o, s + i, run - i, err)) != AUR_OK)
            return rc;
        if (run == n)
            break;
        switch (s[run]) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        case '\b': strcpy(esc, "\\b"); break;
        case '\f': strcpy(esc, "\\f"); break;
        default: snprintf(esc, sizeof esc, "\\u%04x", s[run]); break;
        }
        if ((rc = put_str(o, esc, err)) != AUR_OK)
            return rc;
        i = run + 1;
    }
    return put(o, "\"", 1, err);
}

/* strcmp compares as unsigned char: UTF-8 byte order, which is code
 * point order, which is how Python sorts str keys. */
static int member_cmp(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->key,
                  ((const struct member *)b)->key);
}

static int emit(struct aur__buf *o, struct json_object *v, int depth,
                struct aur_error *err);

static int emit_object(struct aur__buf *o, struct json_object *v, int depth,
                       struct aur_error *err)
{
    size_t n = (size_t)json_object_object_length(v), i = 0;
    struct member local[16], *m = local; /* most objects are small */
    int rc = AUR_OK;

    if (n > AUR__ARRAY_LEN(local) && !(m = malloc(n * sizeof *m)))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM,
                        "out of memory while serialising JSON");
    if (n) {
        json_object_object_foreach(v, key, val) {
            if (i == n)
                break;
            m[i].key = key;
            m[i++].val = val;
        }
        n = i;
        if (n <= AUR__ARRAY_LEN(local)) {
            /* Insertion sort: cheaper than qsort's calls for a few. */
            for (size_t a = 1; a < n; a++)
                for (size_t b = a; b > 0 && strcmp(m[b - 1].key,
                                                   m[b].key) > 0; b--) {
                    struct member t = m[b];
                    m[b] = m[b - 1];
                    m[b - 1] = t;
                }
        } else {
            qsort(m, n, sizeof *m, member_cmp);
        }
    }
    if ((rc = put(o, "{", 1, err)) != AUR_OK)
        goto out;
    for (i = 0; i < n; i++) {
        if ((i && (rc = put(o, ",", 1, err)) != AUR_OK) ||
            (rc = put_quoted(o, m[i].key, strlen(m[i].key), err)) !=
                AUR_OK ||
            (rc = put(o, ":", 1, err)) != AUR_OK ||
            (rc = emit(o, m[i].val, depth + 1, err)) != AUR_OK)
            goto out;
    }
    rc = put(o, "}", 1, err);
out:
    if (m != local)
        free(m);
    return rc;
}

static int emit(struct aur__buf *o, struct json_object *v, int depth,
                struct aur_error *err)
{
    char num[AUR__JSON_REPR_SIZE];
    const char *digits;
    size_t i, n;
    int rc;

    if (depth > MAX_DEPTH)
        return aur_fail(err, AUR_E_LIMIT, 0,
                        "JSON nesting deeper than %d", MAX_DEPTH);
    switch (json_object_get_type(v)) {
    case json_type_null:
        return put_str(o, "null", err);
    case json_type_boolean:
        return put_str(o, json_object_get_boolean(v) ? "true" : "false",
                       err);
    case json_type_int:
        aur__json_integer_text(v, num, sizeof num);
        return put_str(o, num, err);
    case json_type_double:
        if (aur__json_big_digits(v, &digits))
            return put_str(o, digits, err);
        if (aur__json_repr_double(json_object_get_double(v), num,
                                  sizeof num) < 0)
            return aur_fail(err, AUR_E_INVAL, 0,
                            "non-finite number has no JSON form");
        return put_str(o, num, err);
    case json_type_string:
        return put_quoted(o, json_object_get_string(v),
                          (size_t)json_object_get_string_len(v), err);
    case json_type_array:
        n = json_object_array_length(v);
        if ((rc = put(o, "[", 1, err)) != AUR_OK)
            return rc;
        for (i = 0; i < n; i++) {
            if (i && (rc = put(o, ",", 1, err)) != AUR_OK)
                return rc;
            rc = emit(o, json_object_array_get_idx(v, i), depth + 1, err);
            if (rc != AUR_OK)
                return rc;
        }
        return put(o, "]", 1, err);
    case json_type_object:
        return emit_object(o, v, depth, err);
    }
    return aur_fail(err, AUR_E_INVAL, 0, "unknown json-c type");
}

int aur__json_canonical_put(struct aur__buf *o, struct json_object *v,
                            struct aur_error *err)
{
    return emit(o, v, 0, err);
}

int aur__json_quoted_put(struct aur__buf *o, const char *s, size_t n,
                         struct aur_error *err)
{
    return put_quoted(o, s, n, err);
}

int aur__json_canonical(struct json_object *v, char **out, size_t *len,
                        struct aur_error *err)
{
    struct aur__buf o = {0};
    int rc;

    if (!out)
        return aur_fail(err, AUR_E_INVAL, 0, "no output pointer");
    rc = emit(&o, v, 0, err);
    if (rc != AUR_OK) {
        free(o.p);
        return rc;
    }
    *out = o.p;
    if (len)
        *len = o.n;
    return AUR_OK;
}

int aur__json_integer_text(struct json_object *v, char *buf, size_t size)
{
    char tmp[24];
    const char *s = tmp;
    size_t n;
    int64_t i;

    if (json_object_is_type(v, json_type_int)) {
        /* json-c saturates get_int64 for values stored as uint64; only
         * then does get_uint64 hold the real value. */
        i = json_object_get_int64(v);
        if (i == INT64_MAX)
            snprintf(tmp, sizeof tmp, "%" PRIu64, json_object_get_uint64(v));
        else
            snprintf(tmp, sizeof tmp, "%" PRId64, i);
    } else if (!aur__json_big_digits(v, &s)) {
        return AUR_E_INVAL;
    }
    n = strlen(s);
    if (!buf || n >= size)
        return AUR_E_LIMIT;
    memcpy(buf, s, n + 1);
    return AUR_OK;
}

char *aur__json_compact(struct json_object *v)
{
    const char *s = json_object_to_json_string_ext(
        v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

    return s ? strdup(s) : NULL;
}
