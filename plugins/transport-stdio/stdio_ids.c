/*
 * stdio_ids.c - which requests still wait for their reply: the integer ids
 * the writer sent (stdio_ids_*, stdio_request_id) and the responses that
 * answer them (stdio_response_seen, stdio_note_response).
 *
 * A file of its own below both of its users, so the I/O thread (which
 * sees the responses) and the assist (which reads stdout through the I/O
 * thread's framing, stdio_assist.c) do not call each other: both read the
 * same list here, under the child's mu.
 *
 * The ids of held requests not yet written (unsent) are here too: a
 * response naming one is dropped before the host sees it
 * (stdio_answers_unsent), since the host would end that call with the
 * server's words (say "failed") while the request is still written
 * afterwards, and the server may run it.
 *
 * Thread rules: the writer adds and removes under mu; a response, read by
 * the I/O thread or by a caller in an assist, removes under mu.
 */
#define _GNU_SOURCE
#include "grow.h"
#include "stdio_int.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* Requests whose integer ids we remember (a bound for the lost ones). */
#define MAX_IDS 256
/* Held requests not yet written: STDIO_HELD_MAX holds no more requests
 * of 64 bytes (a tools/call is longer). */
#define MAX_UNSENT (STDIO_HELD_MAX / 64)

/* The id sets (ids, unsent) of a child: mu held.  n is also read
 * without mu (atomically), to skip work while a set is empty. */
static bool set_has(const int64_t *v, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == id)
            return true;
    return false;
}

static void set_remove(int64_t *v, size_t *n, int64_t id)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == id) {
            v[i] = v[*n - 1];
            __atomic_store_n(n, *n - 1, __ATOMIC_RELAXED);
            return;
        }
}

static bool set_add(int64_t **v, size_t *n, size_t *cap, size_t max,
                    int64_t id)
{
    int64_t *g = aur__grow(*v, cap, *n + 1, sizeof *g, 8, max);

    if (!g)
        return false;
    *v = g;
    g[*n] = id;
    __atomic_store_n(n, *n + 1, __ATOMIC_RELAXED);
    return true;
}

/* mu held. */
bool stdio_ids_has(const struct stdio_child *ch, int64_t id)
{
    return set_has(ch->ids, ch->n_ids, id);
}

/* mu held. */
void stdio_ids_remove(struct stdio_child *ch, int64_t id)
{
    set_remove(ch->ids, &ch->n_ids, id);
}

/* mu held.  Full or out of memory: not remembered (no assist then). */
void stdio_ids_add(struct stdio_child *ch, int64_t id)
{
    (void)set_add(&ch->ids, &ch->n_ids, &ch->cap_ids, MAX_IDS, id);
}

/* mu held.  false: full or out of memory, and then the request must not
 * be held (nothing could tell its answer from a forged one). */
bool stdio_unsent_add(struct stdio_child *ch, int64_t id)
{
    return set_add(&ch->unsent, &ch->n_unsent, &ch->cap_unsent, MAX_UNSENT,
                   id);
}

/* mu held. */
void stdio_unsent_remove(struct stdio_child *ch, int64_t id)
{
    set_remove(ch->unsent, &ch->n_unsent, id);
}

/*
 * The integer id of a request as the core writes it (rpc.c's text and
 * json-c's compact print both start {"jsonrpc":"2.0","id":N,"method":),
 * and whether it is a tools/call.  String ids (the probe, the long-lived
 * listen) are not tracked.
 */
bool stdio_request_id(const char *buf, size_t len, int64_t *id,
                       bool *is_call)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    static const char meth[] = ",\"method\":\"";
    static const char call[] = "tools/call\"";
    size_t i = sizeof head - 1, d;
    int64_t v = 0;

    if (len < i || memcmp(buf, head, i) != 0)
        return false;
    for (d = 0; i < len && buf[i] >= '0' && buf[i] <= '9' && d < 18; i++, d++)
        v = v * 10 + (buf[i] - '0');
    if (!d || len - i < sizeof meth - 1 ||
        memcmp(buf + i, meth, sizeof meth - 1) != 0)
        return false;
    i += sizeof meth - 1;
    *id = v;
    *is_call = len - i >= sizeof call - 1 &&
               memcmp(buf + i, call, sizeof call - 1) == 0;
    return true;
}

/* The response to id came: it is no longer awaited.  arg: the child.
 * (The sink's on_response, ABI 1.2.) */
void stdio_response_seen(void *arg, int64_t id)
{
    struct stdio_child *ch = arg;

    if (!__atomic_load_n(&ch->n_ids, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&ch->mu);
    stdio_ids_remove(ch, id);
    pthread_mutex_unlock(&ch->mu);
}

/* The same for a parsed message (a host before ABI 1.2): a response has
 * an integer id and no method. */
void stdio_note_response(struct stdio_child *ch, struct json_object *msg)
{
    struct json_object *id;

    if (json_object_object_get_ex(msg, "id", &id) &&
        json_object_is_type(id, json_type_int) &&
        !json_object_object_get_ex(msg, "method", NULL))
        stdio_response_seen(ch, json_object_get_int64(id));
}

/*
 * The literal member names at the top of a JSON object text: every
 * integer value of an "id" (up to n of them in ids, *n_ids found; more
 * than n counts as n + 1), and whether a "method" is there.  Names with
 * escapes are not literal.  Not a validator: any text goes, and what a
 * text that is not JSON yields is only ever used to drop it.
 */
struct top_keys {
    int64_t ids[4];
    size_t n_ids;
    bool method;
    bool escaped; /* a top-level name with an escape (it may be "id") */
};

/* The value of an "id" member at buf[i]: into k when it is an integer. */
static void top_id(const char *buf, size_t len, size_t i, struct top_keys *k)
{
    size_t d;
    int64_t v = 0;

    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' ||
                       buf[i] == '\n'))
        i++;
    for (d = i; i < len && buf[i] >= '0' && buf[i] <= '9' && i - d < 18; i++)
        v = v * 10 + (buf[i] - '0');
    if (i == d)
        return; /* negative, a string, ...: no held id (they are >= 0) */
    if (k->n_ids < sizeof k->ids / sizeof k->ids[0])
        k->ids[k->n_ids] = v;
    k->n_ids++;
}

static void top_keys_scan(const char *buf, size_t len, struct top_keys *k)
{
    int depth = 0;

    for (size_t i = 0; i < len; i++) {
        size_t s, e;
        bool esc = false;

        if (buf[i] == '{' || buf[i] == '[')
            depth++;
        else if (buf[i] == '}' || buf[i] == ']')
            depth--;
        if (buf[i] != '"')
            continue;
        for (s = ++i; i < len && buf[i] != '"'; i++)
            if (buf[i] == '\\') {
                esc = true;
                i++;
            }
        if (i >= len)
            return;
        e = i;
        while (i + 1 < len && strchr(" \t\r\n", buf[i + 1]))
            i++;
        if (depth != 1 || i + 1 >= len || buf[i + 1] != ':')
            continue; /* a string value, or deeper */
        if (esc) {
            k->escaped = true;
            continue;
        }
        if (e - s == 2 && memcmp(buf + s, "id", 2) == 0)
            top_id(buf, len, i + 2, k);
        else if (e - s == 6 && memcmp(buf + s, "method", 6) == 0)
            k->method = true;
    }
}

/* mu held.  Any of k's ids unsent (or too many ids to tell). */
static bool names_unsent(const struct stdio_child *ch,
                         const struct top_keys *k)
{
    size_t n = sizeof k->ids / sizeof k->ids[0];

    if (k->n_ids > n)
        return true;
    for (size_t i = 0; i < k->n_ids; i++)
        if (set_has(ch->unsent, ch->n_unsent, k->ids[i]))
            return true;
    return false;
}

/*
 * Whether a frame may answer a request held and not yet written (only
 * asked while there are such).  The host finds a response's id more than
 * one way: its reply scan reads the literal "id" member of a frame
 * without a literal "method", its parse takes the last "id" after
 * escapes, and a frame that does not parse ends the request its first
 * literal "id" names.  Every one of those ids is checked: a frame that
 * names an unsent id in any of them is taken for an answer to it.  Only
 * a frame the parse calls a request and that says "method" literally
 * (so no way reads it as a response) is let through.  The parse runs only
 * when a literal id is unsent or a top-level name has an escape.
 */
bool stdio_answers_unsent(struct stdio_child *ch, const char *buf, size_t len)
{
    const struct aur_host *h = ch->conn->st->host;
    struct top_keys k = {.n_ids = 0};
    struct json_object *msg = NULL, *id;
    struct aur_error e;
    bool request = false, parsed = false, named;
    int64_t pid = 0;

    top_keys_scan(buf, len, &k);
    /* Without an escaped top-level name every id the host could read is
     * one of the literal ones: a frame that names no unsent one (every
     * genuine answer) ends here, unparsed. */
    pthread_mutex_lock(&ch->mu);
    named = names_unsent(ch, &k);
    pthread_mutex_unlock(&ch->mu);
    if (!named && !k.escaped)
        return false;
    if (h->json_parse(buf, len, &msg, &e) == AUR_OK &&
        json_object_is_type(msg, json_type_object)) {
        request = json_object_object_get_ex(msg, "method", NULL);
        parsed = !request && json_object_object_get_ex(msg, "id", &id) &&
                 json_object_is_type(id, json_type_int);
        if (parsed)
            pid = json_object_get_int64(id);
    }
    json_object_put(msg);
    if (request && k.method)
        return false;
    pthread_mutex_lock(&ch->mu);
    named = names_unsent(ch, &k) ||
            (parsed && set_has(ch->unsent, ch->n_unsent, pid));
    pthread_mutex_unlock(&ch->mu);
    return named;
}
