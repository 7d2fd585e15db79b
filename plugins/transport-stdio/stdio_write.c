/*
 * stdio_write.c - the stdin writer: one request line, whole or with an
 * honest account of how much of it left.
 *
 * Thread rules: any thread holding the connection's write token.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "aur_perturb.h"
#include "grow.h"
#include "nosigpipe.h"

/* ------------------------------------------------------------------ */
/* The writer                                                         */
/* ------------------------------------------------------------------ */

/* A write waiting for room in a pipe the App does not read looks at its
 * connection this often: a stop or close must not wait for the call's
 * deadline (which may be hours) before it can end the App. */
#define WRITE_SLICE_MS 50

static bool conn_closing(struct aur_conn *c)
{
    bool closing;

    pthread_mutex_lock(&c->mu);
    closing = c->closing;
    pthread_mutex_unlock(&c->mu);
    return closing;
}

/* AUR_E_CLOSED with *eno ECANCELED: the connection began closing while
 * the App left no room for the rest of the line. */
static int write_all(struct aur_conn *c, int fd, const char *buf, size_t len,
                     aur_deadline dl, size_t *done, int *eno)
{
    const struct aur_host *h = c->st->host;
    size_t total = len + 1;

    while (*done < total) {
        struct iovec iov[2];
        int cnt = 0;
        ssize_t n;

        if (*done < len)
            iov[cnt++] = (struct iovec){(void *)(buf + *done), len - *done};
        iov[cnt++] = (struct iovec){(void *)"\n", 1};
        AUR_PERTURB("stdio.write");
        n = writev(fd, iov, cnt);
        if (n > 0) {
            *done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int64_t rem = aur_remaining_ms(h, dl);
            if (rem == 0)
                return AUR_E_TIMEOUT;
            if (conn_closing(c)) {
                *eno = ECANCELED;
                return AUR_E_CLOSED;
            }
            /* Each slice: what this thread holds for other Apps must not
             * wait for this one to read. */
            c->st->before_write_wait(c);
            poll(&p, 1, rem > WRITE_SLICE_MS ? WRITE_SLICE_MS : (int)rem);
            continue; /* POLLERR shows up as EPIPE on the next writev */
        }
        *eno = n < 0 ? errno : EIO;
        return *eno == EPIPE ? AUR_E_CLOSED : AUR_E_IO;
    }
    return AUR_OK;
}

/* A write found stdin closed, or the child gone: it is most likely
 * dying.  Wait for its exit to be decided (STDIO_LINGER_MS and a little;
 * never past dl) so the error can say how it ended and what it printed,
 * not only "closed its stdin" (detail, plain, when it cannot). */
static int closed_stdin(struct stdio_child *ch, aur_deadline dl, int detail,
                        const char *plain, struct aur_error *err)
{
    const struct aur_host *h = ch->conn->st->host;
    int64_t until = h->now_ms() + 2 * STDIO_LINGER_MS;
    char why[AUR_ERR_MSG_SIZE] = "";

    if (dl < until)
        until = dl;
    pthread_mutex_lock(&ch->mu);
    while (!ch->exit_why[0] && !ch->retired &&
           stdio_cond_wait(h, &ch->cv, &ch->mu, until))
        ;
    snprintf(why, sizeof why, "%s", ch->exit_why);
    pthread_mutex_unlock(&ch->mu);
    return aur_fail(err, AUR_E_NOT_SENT, detail, "%s: %s", ch->conn->package,
                    why[0] ? why : plain);
}

int stdio_child_write(struct stdio_child *ch, const char *buf, size_t len,
                      aur_deadline dl, struct aur_error *err)
{
    const char *pkg = ch->conn->package;
    struct aur__nosigpipe ns;
    size_t done = 0;
    bool exited;
    int rc, eno = 0;

    int64_t id;
    bool is_call, tracked = stdio_request_id(buf, len, &id, &is_call);

    pthread_mutex_lock(&ch->mu);
    exited = ch->exited;
    /* Before the bytes leave: the reply may come first. */
    if (tracked && !exited)
        stdio_ids_add(ch, id);
    pthread_mutex_unlock(&ch->mu);
    if (exited || ch->in_fd < 0 || ch->in_broken) {
        if (tracked && !exited) {
            pthread_mutex_lock(&ch->mu);
            stdio_ids_remove(ch, id);
            pthread_mutex_unlock(&ch->mu);
        }
        if (ch->in_broken)
            return aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED, "%s: stdin "
                            "framing lost by an earlier failed write", pkg);
        if (!exited) /* stdin closed by stop: the connection is closing */
            return aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED,
                            "%s: connection is closing", pkg);
        return closed_stdin(ch, dl, AUR_E_CLOSED, "App process has exited",
                            err);
    }

    /* A write to a dead child must not kill the process, whatever the
     * embedding program made of SIGPIPE. */
    aur__nosigpipe_begin(&ns);
    rc = write_all(ch->conn, ch->in_fd, buf, len, dl, &done, &eno);
    aur__nosigpipe_end(&ns, rc == AUR_E_CLOSED);

    if (rc == AUR_OK)
        return AUR_OK;
    if (tracked) {
        pthread_mutex_lock(&ch->mu);
        stdio_ids_remove(ch, id);
        pthread_mutex_unlock(&ch->mu);
    }
    if (rc == AUR_E_CLOSED || done > 0)
        ch->in_broken = true;
    /* Some bytes out and no newline: the App may still read them as a
     * message (a last line without LF is a frame to many readers), so
     * only a write that put nothing in the pipe is "not sent". */
    if (done > 0)
        return aur_fail(err, rc, eno,
                        "%s: %s after %zu of %zu bytes; the message may "
                        "have reached the App",
                        pkg,
                        rc == AUR_E_TIMEOUT  ? "App did not read its stdin "
                                               "before the deadline"
                        : eno == ECANCELED   ? "connection closed while the "
                                               "App did not read its stdin"
                        : rc == AUR_E_CLOSED ? "App closed its stdin"
                                             : "write to App stdin failed",
                        done, len + 1);
    if (rc == AUR_E_TIMEOUT)
        return aur_fail(err, AUR_E_NOT_SENT, rc,
                        "%s: App did not read its stdin before the deadline",
                        pkg);
    if (eno == ECANCELED)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED,
                        "%s: connection is closing", pkg);
    if (rc == AUR_E_CLOSED)
        return closed_stdin(ch, dl, EPIPE, "App closed its stdin", err);
    return aur_fail(err, AUR_E_NOT_SENT, eno, "%s: write to App stdin failed",
                    pkg);
}

/* ------------------------------------------------------------------ */
/* Requests held while a thread corks the connection (ABI 1.6)         */
/* ------------------------------------------------------------------ */

int stdio_held_add(struct stdio_child *ch, struct stdio_held *h,
                   const char *buf, size_t len, aur_deadline dl)
{
    struct stdio_held_msg *m;
    char *nb;
    int64_t id;
    bool is_call, exited, kept;

    /* Only a request whose end the host can be told of is kept: its
     * id, and a sink that hears it. */
    if (!AUR_HAS(&ch->conn->sink, on_request_end) || ch->in_broken ||
        ch->in_fd < 0 || !stdio_request_id(buf, len, &id, &is_call) ||
        len + 1 > STDIO_HELD_MAX - h->len)
        return AUR_DECLINE;
    if (!(nb = aur__grow(h->buf, &h->cap, h->len + len + 1, 1, 4096,
                         STDIO_HELD_MAX)))
        return AUR_DECLINE;
    h->buf = nb;
    if (!(m = aur__grow(h->msg, &h->cap_msg, h->n + 1, sizeof *m, 16,
                        STDIO_HELD_MAX)))
        return AUR_DECLINE;
    h->msg = m;
    pthread_mutex_lock(&ch->mu);
    exited = ch->exited;
    /* Unsent until the flush hands it to write(): no answer to it is
     * taken before (stdio_ids.c).  Awaited from now, as for a write. */
    kept = !exited && stdio_unsent_add(ch, id);
    if (kept)
        stdio_ids_add(ch, id);
    pthread_mutex_unlock(&ch->mu);
    if (!kept) /* written now: exited, it fails as it should */
        return AUR_DECLINE;
    memcpy(h->buf + h->len, buf, len);
    h->buf[h->len + len] = '\n';
    h->len += len + 1;
    if (h->n == 0 || dl < h->dl)
        h->dl = dl;
    m[h->n++] = (struct stdio_held_msg){id, h->len};
    return AUR_OK;
}

void stdio_held_flush(struct stdio_child *ch, struct stdio_held *h,
                      bool closing)
{
    const char *pkg = ch->conn->package;
    struct aur_request_end end = {.struct_size = sizeof end};
    struct aur__nosigpipe ns;
    size_t done = 0, start = 0;
    int rc = AUR_E_CLOSED, eno = 0;

    if (h->n == 0)
        return;
    /* From here their bytes may leave (or never will): an answer naming
     * one is an answer.  Between this and write() taking the bytes, a
     * forged answer could still end a call that is then written; the
     * window is this function's next few lines. */
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < h->n; i++)
        stdio_unsent_remove(ch, h->msg[i].id);
    pthread_mutex_unlock(&ch->mu);
    if (!closing && !ch->in_broken && ch->in_fd >= 0) {
        aur__nosigpipe_begin(&ns);
        /* The held lines end in LF; write_all adds the last one. */
        rc = write_all(ch->conn, ch->in_fd, h->buf, h->len - 1, h->dl,
                       &done, &eno);
        aur__nosigpipe_end(&ns, rc == AUR_E_CLOSED);
    }
    if (done > 0)
        stdio_unpark(ch); /* their replies: nobody assists them */
    if (rc != AUR_OK) {
        if (rc == AUR_E_CLOSED || done > 0)
            ch->in_broken = true;
        end.code = rc == AUR_E_TIMEOUT ? AUR_E_TIMEOUT : AUR_E_IO;
        end.msg = closing ? "connection is closing"
                  : rc == AUR_E_TIMEOUT
                      ? "App did not read its stdin before the deadline"
                  : rc == AUR_E_CLOSED ? "App closed its stdin"
                                       : "write to the App's stdin failed";
        for (size_t i = 0; i < h->n; start = h->msg[i++].end) {
            if (h->msg[i].end <= done)
                continue; /* all of it left */
            /* Part of it left only when the write got past its start. */
            end.delivered = start < done;
            pthread_mutex_lock(&ch->mu);
            stdio_ids_remove(ch, h->msg[i].id);
            pthread_mutex_unlock(&ch->mu);
            stdio_request_ended(ch, h->msg[i].id, &end);
        }
        ch->conn->st->host->log(ch->conn->st->self, AUR_LOG_DEBUG,
                                "%s: %zu of %zu held bytes written: %s", pkg,
                                done, h->len, end.msg);
    }
    h->len = h->n = 0;
}

/* A write to a pipe that holds nothing cannot find it full while it
 * asks no more than the pipe's size: every page of the ring is free.
 * With bytes queued it might (Linux fills a page only while a whole
 * write's tail fits it, so a few queued bytes may take every page), and
 * nothing outside the kernel can tell.  Anything but a pipe: no. */
bool stdio_held_fits(const struct stdio_child *ch, const struct stdio_held *h)
{
    int cap, queued;

    return !ch->in_broken && ch->in_fd >= 0 &&
           (cap = fcntl(ch->in_fd, F_GETPIPE_SZ)) > 0 &&
           ioctl(ch->in_fd, FIONREAD, &queued) == 0 && queued == 0 &&
           h->len <= (size_t)cap;
}

void stdio_held_free(struct stdio_held *h)
{
    free(h->buf);
    free(h->msg);
    *h = (struct stdio_held){0};
}
