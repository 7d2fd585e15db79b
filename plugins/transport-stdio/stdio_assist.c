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
 * forgets its id (stdio_response_seen); that list is stdio_ids.c's.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

/* A caller reads stdout for its own tools/call for at most this long. */
#define ASSIST_MS 2

/* The I/O thread reads stdout again at once: a reply nobody assists
 * must not wait out a park.  mu held. */
static void unpark_locked(struct stdio_child *ch)
{
    if (!ch->park_until)
        return;
    ch->park_until = 0;
    if (ch->io_parked && ch->kick_w1 && write(ch->kick_w1 - 1, "k", 1) < 0) {
        /* full: a wake-up is pending anyway */
    }
}

void stdio_unpark(struct stdio_child *ch)
{
    pthread_mutex_lock(&ch->mu);
    unpark_locked(ch);
    pthread_mutex_unlock(&ch->mu);
}

/* After sending buf (a request), read its reply on this thread when it is
 * a tools/call the child owes alone (the file's header says why), for at
 * most ASSIST_MS or until dl. */
void stdio_child_assist(struct stdio_child *ch, const char *buf, size_t len,
                        aur_deadline dl)
{
    const struct aur_host *h = ch->conn->st->host;
    char chunk[16384];
    int64_t id, end;
    bool call, ok, found = false, eof = false;

    if (!stdio_request_id(buf, len, &id, &call) || !call) {
        stdio_unpark(ch);
        return;
    }
    pthread_mutex_lock(&ch->mu);
    ok = ch->kick_w1 && ch->out_owner == 0 && !ch->out_done &&
         !ch->retired && !ch->reported && ch->n_ids == 1 &&
         ch->ids[0] == id;
    if (ok)
        ch->out_owner = 2;
    else
        unpark_locked(ch);
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
