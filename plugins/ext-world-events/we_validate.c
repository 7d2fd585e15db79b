/*
 * we_validate.c - the business-event payload rules (docs/protocol.md,
 * org.aurorabot/world-events).
 *
 * Lengths count Unicode code points and "whitespace" is Python's
 * str.isspace set, as in the original.  Error texts name the field and
 * never echo a value: event contents must not reach the log.
 */
#include "we_int.h"
#include "utf8.h"

#include <stdint.h>
#include <string.h>

#define EVENT_ID_MAX 160
#define SCOPE_MAX 256

/* The payload's keys.  The strings come first, in the order they are
 * checked (before any grammar). */
enum { K_EVENT_ID, K_SCOPE, K_KIND, K_OCCURRED_AT, K_SUMMARY, K_DATA, K_N };
static const char *const keys[K_N] = {"event_id",    "scope",   "kind",
                                      "occurred_at", "summary", "data"};

static const char *const reserved_prefixes[] = {
    "engine.", "tool.", "output.", "cadence.", "ops.", "mcp.", NULL};

/* What the text rules need to know about s[0..len). */
struct text_facts {
    size_t cps;
    bool blank;    /* empty or only whitespace */
    bool control;  /* any U+0000..U+001F */
    bool nul;      /* U+0000 */
    bool edge_ws;  /* leading or trailing whitespace */
};

static bool text_facts(const char *s, size_t len, struct text_facts *f)
{
    const unsigned char *u = (const unsigned char *)s;
    bool space = false;
    uint32_t cp = 0;
    size_t i = 0, k;

    memset(f, 0, sizeof *f);
    f->blank = true;
    while (i < len) {
        /* Visible ASCII, the common case: one code point a byte, neither
         * space nor control, so nothing to decode. */
        for (k = i; k < len && u[k] > 0x20 && u[k] < 0x80; k++)
            ;
        if (k > i) {
            f->cps += k - i;
            f->blank = false;
            space = false;
            i = k;
            continue;
        }
        /* Malformed UTF-8 fails here too: the host's parser already
         * refuses it, but the plugin does not rely on that. */
        k = aur__utf8_next(u + i, len - i, &cp);
        if (k == 0)
            return false;
        i += k;
        space = aur__py_space(cp);
        if (f->cps == 0 && space)
            f->edge_ws = true;
        f->cps++;
        if (!space)
            f->blank = false;
        if (cp < 0x20)
            f->control = true;
        if (cp == 0)
            f->nul = true;
    }
    if (space)
        f->edge_ws = true;
    return true;
}

static bool event_id_ok(const char *s, size_t len)
{
    if (len < 1 || len > EVENT_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                     (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != ':' &&
                                  c != '-')))
            return false;
    }
    return true;
}

static bool scope_ok(const char *s, size_t len)
{
    struct text_facts f;
    return len > 0 && text_facts(s, len, &f) && !f.edge_ws &&
           !f.control && f.cps <= SCOPE_MAX;
}

/* ---------------------------------------------------------------- */
/* The payload                                                      */
/* ---------------------------------------------------------------- */

/* key's index in keys, or K_N. */
static size_t key_index(const char *key)
{
    size_t i = 0;
    while (i < K_N && strcmp(key, keys[i]) != 0)
        i++;
    return i;
}

/* A server's key is named only when it looks like a plain identifier:
 * anything else could smuggle event content into the log. */
static bool nameable(const char *key)
{
    size_t n = 0;
    for (; key[n]; n++) {
        unsigned char c = (unsigned char)key[n];
        if (n >= 64 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                         c == '.' || c == '/'))
            return false;
    }
    return n > 0;
}

static int reject(struct aur_error *err, const char *what)
{
    return aur_fail(err, AUR_E_EVENT, 0, "invalid business event: %s", what);
}

static const char *str_of(struct json_object *v, size_t *len)
{
    *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

int we_event_parse(struct json_object *payload, struct we_event *ev,
                   struct aur_error *err)
{
    struct json_object *field[K_N] = {NULL};
    bool present[K_N] = {false};
    struct text_facts f;
    const char *s;
    size_t len;

    memset(ev, 0, sizeof *ev);
    if (!json_object_is_type(payload, json_type_object))
        return reject(err, "the payload is not a JSON object");
    /* One pass over the members, where a look-up per key hashed each
     * name again.  A JSON null member is present with a NULL value. */
    json_object_object_foreach(payload, key, val)
    {
        size_t i = key_index(key);
        if (i < K_N) {
            field[i] = val;
            present[i] = true;
            continue;
        }
        if (nameable(key))
            return aur_fail(err, AUR_E_EVENT, 0,
                            "invalid business event: unexpected key %s", key);
        return reject(err, "unexpected key");
    }
    for (size_t i = 0; i < K_DATA; i++) {
        if (!present[i])
            return aur_fail(err, AUR_E_EVENT, 0,
                            "invalid business event: %s is missing", keys[i]);
        if (!json_object_is_type(field[i], json_type_string))
            return aur_fail(err, AUR_E_EVENT, 0,
                            "invalid business event: %s is not a JSON string",
                            keys[i]);
    }

    s = str_of(field[K_EVENT_ID], &len);
    if (!event_id_ok(s, len))
        return reject(err, "event_id does not match "
                           "[A-Za-z0-9][A-Za-z0-9._:-]{0,159}");
    ev->event_id = s;

    s = str_of(field[K_SCOPE], &len);
    if (!scope_ok(s, len))
        return reject(err, "scope is not a valid MCP scope (non-empty, no "
                           "surrounding whitespace, no control character, "
                           "at most 256 code points)");
    ev->scope = s;

    s = str_of(field[K_KIND], &len);
    if (!text_facts(s, len, &f) || f.blank || f.control)
        return reject(err, "kind is blank or contains a control character");
    for (size_t i = 0; reserved_prefixes[i]; i++)
        if (strncmp(s, reserved_prefixes[i], strlen(reserved_prefixes[i])) ==
            0)
            return aur_fail(err, AUR_E_EVENT, 0,
                            "invalid business event: kind uses the reserved "
                            "prefix %s",
                            reserved_prefixes[i]);
    ev->kind = s;

    /* U+0000 cannot cross the C ABI intact, so it is refused rather than
     * silently cut. */
    s = str_of(field[K_SUMMARY], &len);
    if (!text_facts(s, len, &f) || f.blank)
        return reject(err, "summary is blank");
    if (f.nul)
        return reject(err, "summary contains U+0000");
    ev->summary = s;

    s = str_of(field[K_OCCURRED_AT], &len);
    if (!aur__rfc3339_utc(s, len, true, 0, ev->occurred_at))
        return reject(err, "occurred_at is not an RFC 3339 date-time with Z "
                           "or an offset");

    if (present[K_DATA]) {
        if (!json_object_is_type(field[K_DATA], json_type_object))
            return reject(err, "data is not a JSON object");
        ev->data = field[K_DATA];
    }
    return AUR_OK;
}
