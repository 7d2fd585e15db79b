/*
 * journal_commit.c - what a valid world commit is, the row a backend
 * stores for it, and the JSON object a stored commit reads back as
 * (docs/journal.md).  Written once for every backend, so a commit one
 * backend takes the other takes too, and both print the same lines.
 */
#include "aur_setup.h"

#include <ctype.h>
#include <time.h>

#include <json-c/json.h>

#include "journal_commit.h"
#include "jsonx.h"
#include "utf8.h"

/* ------------------------------------------------------------------ */
/* Validation                                                         */
/* ------------------------------------------------------------------ */

static bool blank(const char *s)
{
    if (!s)
        return true;
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

/* Well-formed UTF-8: PostgreSQL refuses anything else, and one bad
 * string must fail its own commit, not the batch it rides in. */
static bool utf8_ok(const char *s)
{
    return aur__utf8_valid((const unsigned char *)s, strlen(s));
}

/*
 * The data rules (finite numbers, nesting at most AUR__JOURNAL_MAX_DEPTH
 * with the top object at level 1), checked on the text json-c printed for
 * the tree rather than on the tree: one pass over contiguous bytes, where
 * walking the tree chased pointers through memory another thread had
 * written (a tenth of the writer's time per event).  The text is exact
 * for both: json-c prints a non-finite double as NaN, Infinity or
 * -Infinity, the only capital letters JSON text can hold outside
 * strings; big integers kept exact by jsonx print their digits.
 */
static bool data_text_ok(const char *t, size_t len)
{
    size_t depth = 0;
    for (size_t i = 0; i < len; i++) {
        switch (t[i]) {
        case '"': /* skip the string, escapes and all */
            for (i++; i < len && t[i] != '"'; i++)
                if (t[i] == '\\')
                    i++;
            break;
        case '{':
        case '[':
            if (++depth > AUR__JOURNAL_MAX_DEPTH)
                return false;
            break;
        case '}':
        case ']':
            depth--;
            break;
        case 'N':
        case 'I':
            return false;
        default:
            break;
        }
    }
    return true;
}

static int text_field(const char *s, const char *name, struct aur_error *err)
{
    if (blank(s))
        return aur_fail(err, AUR_E_INVAL, 0, "commit: blank %s", name);
    if (!utf8_ok(s))
        return aur_fail(err, AUR_E_INVAL, 0, "commit: %s is not UTF-8",
                        name);
    return AUR_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void aur__jprep_free(struct aur__jprep *p)
{
    if (p->scopes != p->stack_scopes)
        free(p->scopes);
    p->scopes = p->stack_scopes;
}

int aur__jprep_make(const struct aur_commit *c, struct aur__jprep *p,
                    struct aur_error *err)
{
    size_t i, n;
    int rc;

    memset(p, 0, sizeof *p);
    p->scopes = p->stack_scopes;
    if (!c)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: missing");
    if ((rc = text_field(c->commit_id, "commit_id", err)) != AUR_OK ||
        (rc = text_field(c->kind, "kind", err)) != AUR_OK ||
        (rc = text_field(c->source, "source", err)) != AUR_OK ||
        (rc = text_field(c->summary, "summary", err)) != AUR_OK)
        return rc;
    if (c->n_scopes == 0 || !c->scopes)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: no scope");
    if (c->n_scopes > AUR__JOURNAL_MAX_SCOPES)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: more than %d scopes",
                        AUR__JOURNAL_MAX_SCOPES);
    for (i = 0; i < c->n_scopes; i++)
        if ((rc = text_field(c->scopes[i], "scope", err)) != AUR_OK)
            return rc;
    /* the rest of the data rules: aur__jprep_data, on its text */
    if (c->data && !json_object_is_type(c->data, json_type_object))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "commit: data must be a JSON object (finite numbers, "
                        "nesting <= %d)", AUR__JOURNAL_MAX_DEPTH);
    /* Commit times are UTC ("Z") only: an event's offset is converted by
     * ext-world-events before it gets here.  Up to nine fraction digits. */
    if (!c->occurred_at) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        aur__utc_format(ts.tv_sec, ts.tv_nsec / 1000, p->occurred_at);
    } else if (!aur__rfc3339_utc(c->occurred_at, strlen(c->occurred_at),
                                 false, 9, p->occurred_at)) {
        return aur_fail(err, AUR_E_INVAL, 0,
                        "commit: occurred_at is not an RFC 3339 UTC time");
    }

    if (c->n_scopes > AUR__ARRAY_LEN(p->stack_scopes)) {
        p->scopes = malloc(c->n_scopes * sizeof *p->scopes);
        if (!p->scopes) {
            p->scopes = p->stack_scopes;
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        }
    }
    memcpy(p->scopes, c->scopes, c->n_scopes * sizeof *p->scopes);
    qsort(p->scopes, c->n_scopes, sizeof *p->scopes, cmp_str);
    for (i = 1, n = 1; i < c->n_scopes; i++)
        if (strcmp(p->scopes[i], p->scopes[n - 1]) != 0)
            p->scopes[n++] = p->scopes[i];
    p->row.commit_id = c->commit_id;
    p->row.kind = c->kind;
    p->row.source = c->source;
    p->row.summary = c->summary;
    p->row.occurred_at = p->occurred_at;
    p->row.scopes = p->scopes;
    p->row.n_scopes = n;
    p->row.data = "{}";
    p->row.data_len = 2;
    return AUR_OK;
}

int aur__jprep_data(struct aur__jprep *p, const struct aur_commit *c,
                    struct aur_error *err)
{
    size_t len = 0;
    const char *text;

    if (!c->data)
        return AUR_OK; /* "{}" from aur__jprep_make */
    text = json_object_to_json_string_length(
        c->data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
        &len);
    if (!text)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (len > INT32_MAX)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: data too large");
    if (!data_text_ok(text, len))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "commit: data must be a JSON object (finite numbers, "
                        "nesting <= %d)", AUR__JOURNAL_MAX_DEPTH);
    p->row.data = text;
    p->row.data_len = len;
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* Reading back                                                       */
/* ------------------------------------------------------------------ */

int aur__journal_parse_data(const char *text, size_t len,
                            struct json_object **out, struct aur_error *err)
{
    struct json_object *v = NULL;

    *out = NULL;
    /* The core's parser keeps integers past 64 bits exact. */
    if (aur__json_parse(text, len, AUR__JOURNAL_TOKENER_DEPTH, &v, NULL) !=
            AUR_OK ||
        !json_object_is_type(v, json_type_object)) {
        json_object_put(v);
        return aur_fail(err, AUR_E_JOURNAL, 0,
                        "journal: stored commit data is not a JSON object");
    }
    *out = v;
    return AUR_OK;
}

int aur__journal_data_equal(const char *a, size_t alen, const char *b,
                            size_t blen)
{
    struct json_object *x = NULL, *y = NULL;
    int same = 0;

    if (alen == blen && memcmp(a, b, alen) == 0)
        return 1;
    if (aur__journal_parse_data(a, alen, &x, NULL) == AUR_OK &&
        aur__journal_parse_data(b, blen, &y, NULL) == AUR_OK)
        same = json_object_equal(x, y) != 0;
    json_object_put(x);
    json_object_put(y);
    return same;
}

static int add(struct json_object *o, const char *key, struct json_object *v)
{
    if (!v || json_object_object_add_ex(o, key, v,
                                        JSON_C_OBJECT_ADD_KEY_IS_NEW |
                                            JSON_C_OBJECT_KEY_IS_CONSTANT)) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

static struct json_object *str(const char *s)
{
    return json_object_new_string(s ? s : "");
}

int aur__jread_json(const struct aur__jread *r, struct json_object **out,
                    struct aur_error *err)
{
    struct json_object *o = json_object_new_object(), *scopes, *data = NULL;
    size_t i;
    int rc;

    *out = NULL;
    if (!o || add(o, "seq", json_object_new_int64(r->seq)) ||
        add(o, "commit_id", str(r->row.commit_id)) ||
        add(o, "kind", str(r->row.kind)) ||
        add(o, "source", str(r->row.source)) ||
        add(o, "summary", str(r->row.summary)) ||
        add(o, "occurred_at", str(r->row.occurred_at)) ||
        !(scopes = json_object_new_object()) || add(o, "scopes", scopes))
        goto nomem;
    for (i = 0; i < r->row.n_scopes; i++) {
        struct json_object *v = json_object_new_int64(r->sequences[i]);
        if (!v || json_object_object_add(scopes, r->row.scopes[i], v)) {
            json_object_put(v);
            goto nomem;
        }
    }
    rc = aur__journal_parse_data(r->row.data ? r->row.data : "",
                                 r->row.data_len, &data, err);
    if (rc != AUR_OK) {
        json_object_put(o);
        return rc;
    }
    if (add(o, "data", data))
        goto nomem;
    *out = o;
    return AUR_OK;
nomem:
    json_object_put(o);
    return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
}
