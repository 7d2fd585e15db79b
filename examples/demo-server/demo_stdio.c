/*
 * Newline-delimited framing on the raw file descriptors.  stdio buffering
 * is avoided on purpose: every message must reach the pipe whole and at
 * once, and the input size must stay bounded.
 */
#define _POSIX_C_SOURCE 200809L
#include "demo_server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK 65536u

void demo_reader_init(struct demo_reader *rd, int fd)
{
    memset(rd, 0, sizeof(*rd));
    rd->fd = fd;
}

void demo_reader_free(struct demo_reader *rd)
{
    free(rd->buf);
    rd->buf = NULL;
}

/* Make room for one more chunk; the cap never exceeds a line plus a chunk. */
static int reserve(struct demo_reader *rd)
{
    size_t want;
    char *nb;

    if (rd->start > 0) {
        memmove(rd->buf, rd->buf + rd->start, rd->len - rd->start);
        rd->len -= rd->start;
        rd->start = 0;
    }
    if (rd->cap - rd->len > READ_CHUNK)
        return 0;
    want = rd->cap ? rd->cap * 2 : 4 * READ_CHUNK;
    if (want > DEMO_MAX_LINE + 2 * READ_CHUNK)
        want = DEMO_MAX_LINE + 2 * READ_CHUNK;
    if (want < rd->len + READ_CHUNK + 1)
        want = rd->len + READ_CHUNK + 1;
    nb = realloc(rd->buf, want);
    if (!nb)
        return -1;
    rd->buf = nb;
    rd->cap = want;
    return 0;
}

static char *take(struct demo_reader *rd, size_t end, size_t *len)
{
    char *line = rd->buf + rd->start;
    size_t n = end - rd->start;

    rd->start = end < rd->len ? end + 1 : end;
    if (n > 0 && line[n - 1] == '\r')
        n--;
    line[n] = '\0';
    *len = n;
    return line;
}

enum demo_read demo_read_line(struct demo_reader *rd, char **line,
                              size_t *len)
{
    size_t scanned = 0;

    for (;;) {
        char *nl = NULL;
        ssize_t n;

        if (rd->len > rd->start + scanned)
            nl = memchr(rd->buf + rd->start + scanned, '\n',
                        rd->len - rd->start - scanned);
        if (nl) {
            size_t end = (size_t)(nl - rd->buf);

            if (rd->skipping) {
                rd->skipping = false;
                rd->start = end + 1;
                scanned = 0;
                continue;
            }
            *line = take(rd, end, len);
            return DEMO_LINE;
        }
        scanned = rd->len - rd->start;
        if (rd->skipping) {
            rd->start = rd->len = 0;
            scanned = 0;
        } else if (scanned > DEMO_MAX_LINE) {
            rd->start = rd->len = 0;
            scanned = 0;
            rd->skipping = true;
            return DEMO_TOO_LONG;
        }
        if (rd->eof) {
            if (rd->len > rd->start && !rd->skipping) {
                *line = take(rd, rd->len, len);
                return DEMO_LINE;
            }
            return DEMO_EOF;
        }
        if (reserve(rd) < 0)
            return DEMO_READ_ERROR;
        n = read(rd->fd, rd->buf + rd->len, rd->cap - rd->len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return DEMO_READ_ERROR;
        if (n == 0)
            rd->eof = true;
        rd->len += (size_t)n;
    }
}

int demo_send(struct json_object *msg)
{
    size_t n;
    const char *text = json_object_to_json_string_length(
        msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    char *line = malloc(n + 1);
    size_t off = 0;
    int rc = 0;

    if (!line)
        return -1;
    memcpy(line, text, n);
    line[n] = '\n';
    while (off < n + 1) {
        ssize_t w = write(STDOUT_FILENO, line + off, n + 1 - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    free(line);
    return rc;
}
