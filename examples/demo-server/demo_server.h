/*
 * aurora-mcp-demo-server: a small dual-era MCP server over stdio.
 *
 * Private to the demo program (never installed, no core dependency).  The
 * program is single-threaded; nothing here is thread-safe.
 */
#ifndef DEMO_SERVER_H
#define DEMO_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/*
 * One demo tool.  run() gets the call's arguments (borrowed, always an
 * object) and returns a new CallToolResult without era-specific members
 * (no resultType, no _meta); the caller owns the returned object.
 */
struct demo_tool {
    const char *name;
    const char *description;
    const char *input_schema;       /* JSON text of the inputSchema */
    struct json_object *(*run)(struct json_object *args);
};

/* The static tool table, in listing order; *count receives its length. */
const struct demo_tool *demo_tools(size_t *count);

/* The tool named name, or NULL. */
const struct demo_tool *demo_tool_find(const char *name);

/* A new {"content":[{"type":"text","text":text}]} (+ "isError":true). */
struct json_object *demo_text_result(const char *text, bool is_error);

/*
 * Bounded stdin line reader.  The reader owns its buffer; a returned line is
 * borrowed and valid until the next call.
 */
#define DEMO_MAX_LINE (64u * 1024u * 1024u)

enum demo_read { DEMO_LINE, DEMO_EOF, DEMO_TOO_LONG, DEMO_READ_ERROR };

struct demo_reader {
    int fd;
    char *buf;
    size_t start, len, cap;
    bool skipping;      /* inside an over-long line, dropping bytes */
    bool eof;
};

void demo_reader_init(struct demo_reader *rd, int fd);
void demo_reader_free(struct demo_reader *rd);
/* Next line without its "\n" (and a trailing "\r"); NUL-terminated. */
enum demo_read demo_read_line(struct demo_reader *rd, char **line,
                              size_t *len);

/* Write msg (borrowed) as one line with a single write; 0 or -1. */
int demo_send(struct json_object *msg);

#endif
