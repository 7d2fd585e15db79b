/*
 * fuzz_event.c - libFuzzer target for the world-event payload validator
 * (plugins/ext-world-events/we_validate.c, compiled in), against the
 * rules of docs/protocol.md (org.aurorabot/world-events).
 *
 * Input: a JSON text, parsed by the core's strict parser (depth 64); a
 * parse failure ends the run.  The value is validated as an event
 * payload.  Properties, any violation aborts:
 *  - an accepted event has an event_id matching
 *    [A-Za-z0-9][A-Za-z0-9._:-]{0,159}, a valid scope, a kind
 *    without a reserved prefix, a summary without U+0000, data absent or
 *    an object, and only the six known keys;
 *  - its occurred_at is UTC and matches YYYY-MM-DDTHH:MM:SS(.f{6})?Z,
 *    and it is the instant the payload named: recomputed here with
 *    timegm/gmtime_r from the payload's own fields and offset;
 *  - a refusal is AUR_E_EVENT with a message that quotes no value.
 *
 * Fuzzing build: see fuzz/run.sh.  With -DAUR_FUZZ_REPLAY (CMake target
 * fuzz_event_replay, CTest fuzz_event_corpus) main() replays files.
 */
#define _GNU_SOURCE
#include "we_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonx.h"

#define FUZZ_NAME "fuzz_event"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *sget(struct json_object *o, const char *k)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) ||
        !json_object_is_type(v, json_type_string))
        abort(); /* accepted: all five strings are present */
    return json_object_get_string(v);
}

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* YYYY-MM-DDTHH:MM:SS(.ffffff)?Z */
static void check_utc_shape(const char *t)
{
    size_t n = strlen(t);
    if (n != 20 && n != 27)
        abort();
    if (!digits(t, 4) || t[4] != '-' || !digits(t + 5, 2) || t[7] != '-' ||
        !digits(t + 8, 2) || t[10] != 'T' || !digits(t + 11, 2) ||
        t[13] != ':' || !digits(t + 14, 2) || t[16] != ':' ||
        !digits(t + 17, 2) || t[n - 1] != 'Z')
        abort();
    if (n == 27 && (t[19] != '.' || !digits(t + 20, 6)))
        abort();
}

static int two(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* The UTC text of the payload's date-time, computed independently. */
static void expect_utc(const char *in, char *out, size_t size)
{
    struct tm tm, u;
    const char *p = in + 19, *frac = NULL;
    size_t nfrac = 0;
    long off = 0;
    time_t t;
    char f[7] = "000000";

    memset(&tm, 0, sizeof tm);
    tm.tm_year = atoi(in) - 1900; /* 4 digits, checked by the validator */
    tm.tm_mon = two(in + 5) - 1;
    tm.tm_mday = two(in + 8);
    tm.tm_hour = two(in + 11);
    tm.tm_min = two(in + 14);
    tm.tm_sec = two(in + 17);
    if (*p == '.') {
        frac = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        nfrac = (size_t)(p - frac);
    }
    if (*p == '+' || *p == '-')
        off = (*p == '+' ? 1 : -1) * (two(p + 1) * 3600L + two(p + 4) * 60L);
    t = timegm(&tm) - off;
    if (!gmtime_r(&t, &u))
        abort();
    memcpy(f, frac ? frac : "", nfrac < 6 ? nfrac : 6);
    if (strcmp(f, "000000") != 0)
        snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%sZ",
                 u.tm_year + 1900, u.tm_mon + 1, u.tm_mday, u.tm_hour,
                 u.tm_min, u.tm_sec, f);
    else
        snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02dZ",
                 u.tm_year + 1900, u.tm_mon + 1, u.tm_mday, u.tm_hour,
                 u.tm_min, u.tm_sec);
}

static void check_event_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 160)
        abort();
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                     (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || !strchr("._:-", c)))
            abort();
    }
}

/* The scope rule on a NUL-free string (the parser has made it valid UTF-8). */
static void check_scope(const char *s, size_t len)
{
    static const char *const edge[] = {
        " ",            "\xc2\x85",     "\xc2\xa0",     "\xe1\x9a\x80",
        "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f",
        "\xe3\x80\x80", NULL};
    size_t cps = 0;

    if (len == 0 || strlen(s) != len)
        abort();
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            abort();
        if ((c & 0xc0) != 0x80)
            cps++;
    }
    if (cps > 256)
        abort();
    for (size_t i = 0; edge[i]; i++) {
        size_t k = strlen(edge[i]);
        if (strncmp(s, edge[i], k) == 0 ||
            (len >= k && memcmp(s + len - k, edge[i], k) == 0))
            abort();
    }
    /* U+2000..U+200A */
    if ((len >= 3 && (unsigned char)s[0] == 0xe2 &&
         (unsigned char)s[1] == 0x80 && (unsigned char)s[2] <= 0x8a) ||
        (len >= 3 && (unsigned char)s[len - 3] == 0xe2 &&
         (unsigned char)s[len - 2] == 0x80 &&
         (unsigned char)s[len - 1] <= 0x8a))
        abort();
}

static void check_accepted(struct json_object *payload,
                           const struct we_event *ev)
{
    static const char *const keys[] = {"event_id", "scope",   "kind",
                                       "occurred_at", "summary", "data",
                                       NULL};
    static const char *const reserved[] = {"engine.", "tool.",    "output.",
                                           "cadence.", "ops.", "mcp.", NULL};
    struct json_object *v;
    char want[128];
    const char *at;

    json_object_object_foreach(payload, key, val)
    {
        bool known = false;
        (void)val;
        for (size_t i = 0; keys[i]; i++)
            known = known || strcmp(key, keys[i]) == 0;
        if (!known)
            abort();
    }
    if (strcmp(ev->event_id, sget(payload, "event_id")) != 0)
        abort();
    check_event_id(ev->event_id);
    json_object_object_get_ex(payload, "scope", &v);
    check_scope(ev->scope, (size_t)json_object_get_string_len(v));
    for (size_t i = 0; reserved[i]; i++)
        if (strncmp(ev->kind, reserved[i], strlen(reserved[i])) == 0)
            abort();
    json_object_object_get_ex(payload, "summary", &v);
    if (strlen(ev->summary) != (size_t)json_object_get_string_len(v))
        abort();
    if (json_object_object_get_ex(payload, "data", &v)) {
        if (ev->data != v || !json_object_is_type(v, json_type_object))
            abort();
    } else if (ev->data) {
        abort();
    }
    check_utc_shape(ev->occurred_at);
    at = sget(payload, "occurred_at");
    expect_utc(at, want, sizeof want);
    if (strcmp(want, ev->occurred_at) != 0)
        abort();
}

/* A refusal names a field, a reserved prefix or an identifier-like key
 * of the payload, in fixed text: never a value. */
static void check_reason(struct json_object *payload, const char *why)
{
    static const char *const fixed[] = {
        "the payload is not a JSON object",
        "unexpected key",
        "event_id does not match [A-Za-z0-9][A-Za-z0-9._:-]{0,159}",
        "scope is not a valid MCP scope (non-empty, no surrounding "
        "whitespace, no control character, at most 256 code points)",
        "kind is blank or contains a control character",
        "summary is blank",
        "summary contains U+0000",
        "occurred_at is not an RFC 3339 date-time with Z or an offset",
        "data is not a JSON object",
        NULL};
    static const char *const fields[] = {"event_id", "scope", "kind",
                                         "occurred_at", "summary", NULL};
    static const char *const prefixes[] = {"engine.", "tool.", "output.",
                                           "cadence.", "ops.", "mcp.", NULL};
    char buf[256];

    for (size_t i = 0; fixed[i]; i++)
        if (strcmp(why, fixed[i]) == 0)
            return;
    for (size_t i = 0; fields[i]; i++) {
        snprintf(buf, sizeof buf, "%s is missing", fields[i]);
        if (strcmp(why, buf) == 0)
            return;
        snprintf(buf, sizeof buf, "%s is not a JSON string", fields[i]);
        if (strcmp(why, buf) == 0)
            return;
    }
    for (size_t i = 0; prefixes[i]; i++) {
        snprintf(buf, sizeof buf, "kind uses the reserved prefix %s",
                 prefixes[i]);
        if (strcmp(why, buf) == 0)
            return;
    }
    if (strncmp(why, "unexpected key ", 15) == 0 &&
        json_object_is_type(payload, json_type_object) &&
        json_object_object_get_ex(payload, why + 15, NULL) &&
        strlen(why + 15) <= 64)
        return;
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *v = NULL;
    struct we_event ev;
    struct aur_error err;
    int rc;

    aur_error_clear(&err);
    if (aur__json_parse((const char *)data, size, 64, &v, &err) != AUR_OK)
        return 0;
    rc = we_event_parse(v, &ev, &err);
    if (rc == AUR_OK) {
        check_accepted(v, &ev);
    } else {
        if (rc != AUR_E_EVENT ||
            strncmp(err.msg, "invalid business event: ", 24) != 0)
            abort();
        check_reason(v, err.msg + 24);
    }
    json_object_put(v);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif
