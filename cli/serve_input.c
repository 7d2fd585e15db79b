/*
 * serve_input.c - `aurora-mcp serve`'s standard input, split into request
 * lines by hand (not stdio), so that a wait for input can be cut short by
 * a signal or a wake-up descriptor (poll on stdin and those together).
 *
 * Threads: a serve_input belongs to whichever thread holds serve's reader
 * role (serve_pool.c); none of this locks.
 */
#define _GNU_SOURCE 1
#include "cli.h"
#include "grow.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int serve_input_next(struct serve_input *in, const char **line, size_t *len,
                     const int *wake, int nwake, int timeout_ms,
                     size_t *budget)
{
    for (;;) {
        while (in->scan < in->n) {
            char *nl = memchr(in->buf + in->scan, '\n', in->n - in->scan);
            size_t start = in->off, l;

            if (!nl) {
                in->scan = in->n;
                break;
            }
            l = (size_t)(nl - in->buf) - start;
            in->off = in->scan = (size_t)(nl - in->buf) + 1;
            if (in->dropping) {
                in->dropping = false;
                continue;
            }
            if (l && in->buf[start + l - 1] == '\r')
                l--;
            if (l) {
                *line = in->buf + start;
                *len = l;
                return 1;
            }
        }
        if (in->eof) {
            /* What is left is a last line without LF: a request too. */
            size_t start = in->off, l = in->n - in->off;
            bool drop = in->dropping;

            in->off = in->scan = in->n;
            in->dropping = false;
            if (l && in->buf[start + l - 1] == '\r')
                l--;
            if (drop || !l)
                return 0;
            *line = in->buf + start;
            *len = l;
            return 1;
        }
        if (in->off) {
            memmove(in->buf, in->buf + in->off, in->n - in->off);
            in->n -= in->off;
            in->scan -= in->off;
            in->off = 0;
        }
        if (in->n == in->cap) {
            char *g = aur__grow(in->buf, &in->cap, in->n + 1, 1, 0, SERVE_MAX_LINE);
            if (g) {
                in->buf = g;
            } else if (errno == EFBIG) {
                /* An endless line: answered once, skipped to its end. */
                in->dropping = true;
                in->n = in->scan = 0;
                return SERVE_INPUT_TOO_LONG;
            } else {
                in->eof = true;
                return 0;
            }
        }
        if (in->before_wait && in->before_wait(in->before_wait_arg))
            return SERVE_INPUT_YIELD;
        struct pollfd p[4] = {{0, POLLIN, 0}};
        size_t want = in->cap - in->n;
        ssize_t got;
        int r;
        if (budget && *budget == 0) {
            /* What was counted is read; only an end of input that is
             * already there (readable, nothing to read) is read still,
             * so a last line without LF is not lost. */
            int avail = -1;
            if (poll(p, 1, 0) != 1 || ioctl(0, FIONREAD, &avail) != 0 ||
                avail != 0)
                return -1;
        } else {
            for (int i = 0; i < nwake; i++)
                p[1 + i] = (struct pollfd){wake[i], POLLIN, 0};
            if ((r = poll(p, (nfds_t)(1 + nwake), timeout_ms)) < 0) {
                if (errno == EINTR)
                    continue;
                in->eof = true;
                return 0;
            }
            for (int i = 0; i < nwake; i++)
                if (p[1 + i].revents)
                    return -1;
            if (r == 0)
                return -1;
            if (budget && want > *budget)
                want = *budget;
        }
        got = read(0, in->buf + in->n, want);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0) {
            in->eof = true;
            continue; /* a last line without LF */
        }
        if (budget)
            *budget -= (size_t)got < *budget ? (size_t)got : *budget;
        in->n += (size_t)got;
    }
}

bool serve_input_buffered(const struct serve_input *in)
{
    return in->scan < in->n &&
           memchr(in->buf + in->scan, '\n', in->n - in->scan);
}
