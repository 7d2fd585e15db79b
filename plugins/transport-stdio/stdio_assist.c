/*
 * stdio_assist.c - a caller reads its own reply ("assist").
 *
 * A reply read by the I/O thread costs a thread hand-off: the I/O thread
 * wakes, reads and parses, then wakes the waiting caller (a futex wake and
 * a context switch, about a quarter of a no-op call over a pipe).  When a
 * tools/call is the only request the child owes an answer to, the caller
 * reads stdout itself for up to ASSIST_MS, so the reply wakes it directly.
 * Everything it reads goes through the same framing and sink as on the
 * I/O thread (stdio_stdout_bytes), in pipe order: one owner reads stdout
 * at a time (out_owner).  EOF, a read error or an unanswered call hand
 * stdout back to the I/O thread at once (kick pipe); an answered one lets
 * it stay parked for STDIO_PARK_MS.
 *
 * To know when a call is alone, the writer remembers the integer ids of
 * the requests it sent (stdio_ids_*), and every frame that is a response
 * forgets its id (stdio_response_seen).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

/* A caller reads stdout for its own tools/call for at most this long. */
#define ASSIST_MS 2
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
    if (ch->n_ids == ch->cap_ids) {
        size_t cap = ch->cap_ids ? ch->cap_ids * 2 : 8;
        int64_t *g;

        if (cap > MAX_IDS)
            return;
        g = realloc(ch->ids, cap * sizeof *g);
        if (!g)
            return;
        ch->ids = g;
        ch->cap_ids = cap;
    }
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

/*
 * A reply read by the I/O thread costs a thread hand-off: the I/O thread
 * wakes, reads and parses, then wakes the waiting caller (a futex wake and
 * a context switch, about a quarter of a no-op call over a pipe).  When a
 * tools/call is the only request the child owes an answer to, the caller
 * reads stdout itself for up to ASSIST_MS, so the reply wakes it directly.
 * Everything it reads goes through the same framing and sink as on the
 * I/O thread, in pipe order: one owner reads stdout at a time.  EOF, a
 * read error or an unanswered call hand stdout back to the I/O thread at
 * once (kick pipe); an answered one lets it stay parked for STDIO_PARK_MS.
 */
void stdio_child_assist(struct stdio_child *ch, const char *buf, size_t len,
                        aur_deadline dl)
{
    const struct aur_host *h = ch->conn->st->host;
    char chunk[16384];
    int64_t id, end;
    bool call, ok, found = false, eof = false;

    if (!stdio_request_id(buf, len, &id, &call) || !call)
        return;
    pthread_mutex_lock(&ch->mu);
    ok = ch->kick_w1 && ch->out_owner == 0 && !ch->out_done &&
         !ch->retired && !ch->reported && ch->n_ids == 1 &&
         ch->ids[0] == id;
    if (ok)
        ch->out_owner = 2;
    pthread_mutex_unlock(&ch->mu);
    if (!ok)
        return;
    end = h->now_ms() + ASSIST_MS;
    if (dl != AUR_NO_DEADLINE && dl < end)
        end = dl;
    /* Bounded by end: every pass polls for the time left. */
    while (!found && !eof) {
        int64_t rem = end - h->now_ms();
        struct pollfd p = {.fd = ch->out_fd, .events = POLLIN};
        ssize_t n;
        bool done;

        if (rem <= 0)
            break;
        if (poll(&p, 1, (int)rem) <= 0)
            continue; /* EINTR, or the time is up (checked above) */
        n = read(ch->out_fd, chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            eof = true; /* the I/O thread reads it again and decides */
            break;
        }
        stdio_stdout_bytes(ch, chunk, (size_t)n);
        pthread_mutex_lock(&ch->mu);
        found = !stdio_ids_has(ch, id);
        done = ch->out_done;
        pthread_mutex_unlock(&ch->mu);
        if (done)
            break;
    }
    pthread_mutex_lock(&ch->mu);
    ch->out_owner = 0;
    if (found && !eof && ch->n_ids == 0) {
        ch->park_until = h->now_ms() + STDIO_PARK_MS;
    } else {
        ch->park_until = 0;
        if (ch->io_parked && ch->kick_w1 &&
            write(ch->kick_w1 - 1, "k", 1) < 0) {
            /* full: a wake-up is pending anyway */
        }
    }
    pthread_mutex_unlock(&ch->mu);
}
