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

/* mu held. */
bool stdio_ids_has(const struct stdio_child *ch, int64_t id)
{
    for (size_t i = 0; i < ch->n_ids; i++)
        if (ch->ids[i] == id)
            return true;
    return false;
}

/* mu held. */
void stdio_ids_remove(struct stdio_child *ch, int64_t id)
{
    for (size_t i = 0; i < ch->n_ids; i++)
        if (ch->ids[i] == id) {
            ch->ids[i] = ch->ids[ch->n_ids - 1];
            __atomic_store_n(&ch->n_ids, ch->n_ids - 1, __ATOMIC_RELAXED);
            return;
        }
}

/* mu held.  Full or out of memory: not remembered (no assist then). */
void stdio_ids_add(struct stdio_child *ch, int64_t id)
{
    int64_t *g = aur__grow(ch->ids, &ch->cap_ids, ch->n_ids + 1, sizeof *g, 8,
                           MAX_IDS);

    if (!g)
        return;
    ch->ids = g;
    ch->ids[ch->n_ids] = id;
    __atomic_store_n(&ch->n_ids, ch->n_ids + 1, __ATOMIC_RELAXED);
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
