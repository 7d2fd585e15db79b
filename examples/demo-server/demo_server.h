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

#endif
