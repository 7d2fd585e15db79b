/*
 * Newline-delimited framing on raw file descriptors, and the members every
 * modern result carries.  See mcp_lineio.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "mcp_lineio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK 65536u
#define META_SERVER "io.modelcontextprotocol/serverInfo"

void mcpl_reader_init(struct mcpl_reader *rd, int fd)
{
    memset(rd, 0, sizeof(*rd));
    rd->fd = fd;
}

void mcpl_reader_free(struct mcpl_reader *rd)
{
    free(rd->buf);
    rd->buf = NULL;
}

/* Make room for one more chunk; the cap never exceeds a line plus a chunk. */
static int reserve(struct mcpl_reader *rd)
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
    if (want > MCPL_MAX_LINE + 2 * READ_CHUNK)
        want = MCPL_MAX_LINE + 2 * READ_CHUNK;
    if (want < rd->len + READ_CHUNK + 1)
        want = rd->len + READ_CHUNK + 1;
    nb = realloc(rd->buf, want);
    if (!nb)
        return -1;
    rd->buf = nb;
    rd->cap = want;
    return 0;
}

static char *take(struct mcpl_reader *rd, size_t end, size_t *len)
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

enum mcpl_read mcpl_read_line(struct mcpl_reader *rd, char **line,
                              size_t *len)
{
    size_t scanned = 0;

    /* Each pass either returns or reads; read() reaching EOF ends it. */
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
            return MCPL_LINE;
        }
        scanned = rd->len - rd->start;
        if (rd->skipping) {
            rd->start = rd->len = 0;
            scanned = 0;
        } else if (scanned > MCPL_MAX_LINE) {
            rd->start = rd->len = 0;
            scanned = 0;
            rd->skipping = true;
            return MCPL_TOO_LONG;
        }
        if (rd->eof) {
            if (rd->len > rd->start && !rd->skipping) {
                *line = take(rd, rd->len, len);
                return MCPL_LINE;
            }
            return MCPL_EOF;
        }
        if (reserve(rd) < 0)
            return MCPL_READ_ERROR;
        n = read(rd->fd, rd->buf + rd->len, rd->cap - rd->len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return MCPL_READ_ERROR;
        if (n == 0)
            rd->eof = true;
        rd->len += (size_t)n;
    }
}

int mcpl_write_all(int fd, const char *buf, size_t len)
{
    size_t off = 0;

    /* Bounded: every pass but an EINTR one writes at least one byte. */
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return MCPL_ERR_WRITE;
        off += (size_t)w;
    }
    return 0;
}

int mcpl_send(int fd, struct json_object *msg)
{
    size_t n;
    const char *text = json_object_to_json_string_length(
        msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    char *line = malloc(n + 1);
    int rc;

    if (!line)
        return MCPL_ERR_NOMEM;
    memcpy(line, text, n);
    line[n] = '\n';
    rc = mcpl_write_all(fd, line, n + 1);
    free(line);
    return rc;
}

struct json_object *mcpl_server_info(const char *name, const char *version)
{
    struct json_object *info = json_object_new_object();

    json_object_object_add(info, "name", json_object_new_string(name));
    json_object_object_add(info, "version", json_object_new_string(version));
    return info;
}

void mcpl_finish_modern(struct json_object *res, bool cacheable,
                        const char *name, const char *version)
{
    struct json_object *meta = json_object_new_object();

    json_object_object_add(res, "resultType",
                           json_object_new_string("complete"));
    if (cacheable) {
        json_object_object_add(res, "ttlMs", json_object_new_int(0));
        json_object_object_add(res, "cacheScope",
                               json_object_new_string("private"));
    }
    json_object_object_add(meta, META_SERVER,
                           mcpl_server_info(name, version));
    json_object_object_add(res, "_meta", meta);
}
