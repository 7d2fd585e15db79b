/*
 * mcp_lineio: newline-delimited MCP framing on raw file descriptors, shared
 * by the bundled demo server and the test fixture server (json-c only, no
 * core dependency).
 *
 * stdio buffering is avoided on purpose: every message must reach the pipe
 * whole and at once, and the input size must stay bounded.  Nothing here is
 * thread-safe; each reader belongs to one thread.
 */
#ifndef MCP_LINEIO_H
#define MCP_LINEIO_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/* Longest accepted input line; longer ones are dropped whole. */
#define MCPL_MAX_LINE (64u * 1024u * 1024u)

/* Failures of the writers below. */
#define MCPL_ERR_WRITE (-1)     /* the fd failed or hit end of file */
#define MCPL_ERR_NOMEM (-2)     /* nothing was written */

enum mcpl_read { MCPL_LINE, MCPL_EOF, MCPL_TOO_LONG, MCPL_READ_ERROR };

/*
 * Bounded line reader over a raw fd (borrowed, never closed).  The reader
 * owns its buffer; a returned line is borrowed and valid until the next call.
 */
struct mcpl_reader {
    int fd;
    char *buf;
    size_t start, len, cap;
    bool skipping;      /* inside an over-long line, dropping bytes */
    bool eof;
};

void mcpl_reader_init(struct mcpl_reader *rd, int fd);
void mcpl_reader_free(struct mcpl_reader *rd);
/*
 * Next line without its "\n" (and a trailing "\r"); NUL-terminated.  A line
 * over MCPL_MAX_LINE yields one MCPL_TOO_LONG and is skipped to its end.
 */
enum mcpl_read mcpl_read_line(struct mcpl_reader *rd, char **line,
                              size_t *len);

/* Writes all len bytes of buf (borrowed); 0 or MCPL_ERR_WRITE. */
int mcpl_write_all(int fd, const char *buf, size_t len);

/*
 * Writes msg (borrowed) as one plain JSON line from a single buffer;
 * 0, MCPL_ERR_WRITE or MCPL_ERR_NOMEM.
 */
int mcpl_send(int fd, struct json_object *msg);

/* A new {"name":name,"version":version}; the strings are copied. */
struct json_object *mcpl_server_info(const char *name, const char *version);

/*
 * Adds the members every modern (2026-07-28) result carries to res
 * (borrowed, an object): resultType, ttlMs and cacheScope when cacheable,
 * and _meta with the serverInfo of name/version.
 */
void mcpl_finish_modern(struct json_object *res, bool cacheable,
                        const char *name, const char *version);

#endif
