/*
 * aurora-mcp-demo-server: dual-era MCP server on stdio.
 *
 * Era pinning follows the TS v2 dual-era server: server/discover never pins;
 * the first valid enveloped request pins modern (2026-07-28), the first
 * request without an envelope pins legacy (initialize handshake era).  A
 * modern connection rejects initialize with -32022; a legacy one rejects
 * modern envelopes with -32600.
 */
#define _POSIX_C_SOURCE 200809L
#include "demo_server.h"
#include "mcp_lineio.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DEMO_VERSION
#define DEMO_VERSION "0.0.0"
#endif

#define SERVER_NAME "aurora-mcp-demo-server"
#define MODERN_VERSION "2026-07-28"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SUB "io.modelcontextprotocol/subscriptionId"
#define MAX_PAGE_SIZE 100000u

enum era { ERA_UNPINNED, ERA_LEGACY, ERA_MODERN };

struct server {
    enum era era;
    size_t page_size;                 /* 0: every tool on one page */
};

static const char *const legacy_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
};

static void send_or_die(struct json_object *msg)
{
    int rc = mcpl_send(STDOUT_FILENO, msg);

    json_object_put(msg);
    if (rc < 0) {
        fprintf(stderr, SERVER_NAME ": stdout closed, exiting\n");
        exit(1);
    }
}

/* id: borrowed, NULL for "id":null. */
static void send_error(struct json_object *id, int code, const char *message,
                       struct json_object *data)
{
    struct json_object *msg = json_object_new_object();
    struct json_object *err = json_object_new_object();

    json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(msg, "id", json_object_get(id));
    json_object_object_add(err, "code", json_object_new_int(code));
    json_object_object_add(err, "message", json_object_new_string(message));
    if (data)
        json_object_object_add(err, "data", data);
    json_object_object_add(msg, "error", err);
    send_or_die(msg);
}

/* result: transferred. */
static void send_result(struct json_object *id, struct json_object *result)
{
    struct json_object *msg = json_object_new_object();

    json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(msg, "id", json_object_get(id));
    json_object_object_add(msg, "result", result);
    send_or_die(msg);
}

/* Adds the members every modern result carries. */
static void finish_modern(struct json_object *res, bool cacheable)
{
    mcpl_finish_modern(res, cacheable, SERVER_NAME, DEMO_VERSION);
}

static struct json_object *capabilities(void)
{
    struct json_object *caps = json_object_new_object();
    struct json_object *tools = json_object_new_object();
    struct json_object *ext = json_object_new_object();
    struct json_object *contract = json_object_new_object();

    json_object_object_add(tools, "listChanged", json_object_new_boolean(1));
    json_object_object_add(caps, "tools", tools);
    json_object_object_add(contract, "version", json_object_new_int(1));
    json_object_object_add(ext, "org.aurorabot/tool-contract", contract);
    json_object_object_add(caps, "extensions", ext);
    return caps;
}

static const char instructions[] =
    "Demo MCP server bundled with aurora-mcp. Tools: echo, add, now, fail, "
    "WordCount.";

static const char missing_envelope[] =
    "Request is missing the required _meta envelope for protocol revision "
    MODERN_VERSION " (" META_VERSION ", " META_CAPS ")";

/* Whether params._meta claims the modern era (names a reserved key). */
static bool has_claim(struct json_object *params)
{
    struct json_object *meta;

    if (!params || !json_object_object_get_ex(params, "_meta", &meta) ||
        !json_object_is_type(meta, json_type_object))
        return false;
    return json_object_object_get_ex(meta, META_VERSION, NULL) ||
           json_object_object_get_ex(meta, META_CAPS, NULL);
}

static void send_unsupported(struct json_object *id, const char *requested)
{
    char msg[256];
    struct json_object *data = json_object_new_object();
    struct json_object *sup = json_object_new_array();

    snprintf(msg, sizeof(msg), "Unsupported protocol version: %.200s",
             requested);
    json_object_array_add(sup, json_object_new_string(MODERN_VERSION));
    json_object_object_add(data, "supported", sup);
    json_object_object_add(data, "requested",
                           json_object_new_string(requested));
    send_error(id, -32022, msg, data);
}

/* Validates the envelope; on failure answers the request and returns false. */
static bool envelope_ok(struct json_object *id, struct json_object *params)
{
    struct json_object *meta, *ver, *caps;

    if (!has_claim(params)) {
        send_error(id, -32602, missing_envelope, NULL);
        return false;
    }
    json_object_object_get_ex(params, "_meta", &meta);
    if (!json_object_object_get_ex(meta, META_VERSION, &ver) ||
        !json_object_is_type(ver, json_type_string) ||
        !json_object_object_get_ex(meta, META_CAPS, &caps) ||
        !json_object_is_type(caps, json_type_object)) {
        send_error(id, -32602, "Invalid _meta envelope for protocol revision "
                   MODERN_VERSION, NULL);
        return false;
    }
    if (strcmp(json_object_get_string(ver), MODERN_VERSION) != 0) {
        send_unsupported(id, json_object_get_string(ver));
        return false;
    }
    return true;
}

static void handle_discover(struct json_object *id)
{
    struct json_object *res = json_object_new_object();
    struct json_object *sup = json_object_new_array();

    json_object_array_add(sup, json_object_new_string(MODERN_VERSION));
    json_object_object_add(res, "supportedVersions", sup);
    json_object_object_add(res, "capabilities", capabilities());
    json_object_object_add(res, "instructions",
                           json_object_new_string(instructions));
    finish_modern(res, true);
    send_result(id, res);
}

static void handle_initialize(struct json_object *id,
                              struct json_object *params)
{
    struct json_object *ver, *res;
    const char *chosen = legacy_versions[0];

    if (!params || !json_object_object_get_ex(params, "protocolVersion",
                                              &ver) ||
        !json_object_is_type(ver, json_type_string)) {
        send_error(id, -32602, "initialize: protocolVersion must be a string",
                   NULL);
        return;
    }
    for (size_t i = 0; i < sizeof(legacy_versions) / sizeof(*legacy_versions);
         i++)
        if (strcmp(json_object_get_string(ver), legacy_versions[i]) == 0)
            chosen = legacy_versions[i];
    res = json_object_new_object();
    json_object_object_add(res, "protocolVersion",
                           json_object_new_string(chosen));
    json_object_object_add(res, "capabilities", capabilities());
    json_object_object_add(res, "serverInfo",
                           mcpl_server_info(SERVER_NAME, DEMO_VERSION));
    json_object_object_add(res, "instructions",
                           json_object_new_string(instructions));
    send_result(id, res);
}

/*
 * The tool set never changes, so a subscription needs no state: after the
 * ack nothing more is ever sent for it, which also satisfies a cancel.
 */
static void handle_listen(struct json_object *id,
                          struct json_object *params)
{
    struct json_object *filter, *want, *msg, *p, *honoured, *meta;

    honoured = json_object_new_object();
    if (json_object_object_get_ex(params, "notifications", &filter) &&
        json_object_is_type(filter, json_type_object) &&
        json_object_object_get_ex(filter, "toolsListChanged", &want) &&
        json_object_is_type(want, json_type_boolean) &&
        json_object_get_boolean(want))
        json_object_object_add(honoured, "toolsListChanged",
                               json_object_new_boolean(1));
    msg = json_object_new_object();
    p = json_object_new_object();
    meta = json_object_new_object();
    json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(msg, "method", json_object_new_string(
                               "notifications/subscriptions/acknowledged"));
    json_object_object_add(p, "notifications", honoured);
    json_object_object_add(meta, META_SUB, json_object_get(id));
    json_object_object_add(p, "_meta", meta);
    json_object_object_add(msg, "params", p);
    send_or_die(msg);
}

/* Cursors are "o:<offset>"; anything else is an invalid cursor. */
static bool parse_cursor(struct json_object *params, size_t count,
                         size_t *offset)
{
    struct json_object *c;
    const char *text;
    char *end;
    unsigned long long v;

    *offset = 0;
    if (!params || !json_object_object_get_ex(params, "cursor", &c) ||
        json_object_is_type(c, json_type_null))
        return true;
    if (!json_object_is_type(c, json_type_string))
        return false;
    text = json_object_get_string(c);
    if (strncmp(text, "o:", 2) != 0 || text[2] < '0' || text[2] > '9')
        return false;
    errno = 0;
    v = strtoull(text + 2, &end, 10);
    if (errno || *end || v >= count)
        return false;
    *offset = (size_t)v;
    return true;
}

static void handle_list(struct server *s, struct json_object *id,
                        struct json_object *params, bool modern)
{
    size_t count, offset, end;
    const struct demo_tool *tools = demo_tools(&count);
    struct json_object *res, *arr;

    if (!parse_cursor(params, count, &offset)) {
        send_error(id, -32602, "Invalid cursor", NULL);
        return;
    }
    end = s->page_size ? offset + s->page_size : count;
    if (end > count)
        end = count;
    res = json_object_new_object();
    arr = json_object_new_array();
    for (size_t i = offset; i < end; i++) {
        struct json_object *t = json_object_new_object();

        json_object_object_add(t, "name",
                               json_object_new_string(tools[i].name));
        json_object_object_add(t, "description",
                               json_object_new_string(tools[i].description));
        json_object_object_add(t, "inputSchema",
                               json_tokener_parse(tools[i].input_schema));
        json_object_array_add(arr, t);
    }
    json_object_object_add(res, "tools", arr);
    if (end < count) {
        char cur[32];

        snprintf(cur, sizeof(cur), "o:%zu", end);
        json_object_object_add(res, "nextCursor",
                               json_object_new_string(cur));
    }
    if (modern)
        finish_modern(res, true);
    send_result(id, res);
}

static void handle_call(struct json_object *id, struct json_object *params,
                        bool modern)
{
    struct json_object *name, *args = NULL, *res, *owned = NULL;
    const struct demo_tool *tool;
    char msg[256];

    if (!params || !json_object_object_get_ex(params, "name", &name) ||
        !json_object_is_type(name, json_type_string)) {
        send_error(id, -32602, "tools/call: name must be a string", NULL);
        return;
    }
    tool = demo_tool_find(json_object_get_string(name));
    if (!tool) {
        snprintf(msg, sizeof(msg), "Tool %.200s not found",
                 json_object_get_string(name));
        send_error(id, -32602, msg, NULL);
        return;
    }
    if (!json_object_object_get_ex(params, "arguments", &args) ||
        json_object_is_type(args, json_type_null))
        args = owned = json_object_new_object();
    if (!json_object_is_type(args, json_type_object)) {
        send_error(id, -32602, "tools/call: arguments must be an object",
                   NULL);
        return;
    }
    res = tool->run(args);
    json_object_put(owned);
    if (modern)
        finish_modern(res, false);
    send_result(id, res);
}

/* Tool methods: era by envelope, then pin. */
static void handle_tools(struct server *s, const char *method,
                         struct json_object *id, struct json_object *params)
{
    bool modern;

    if (has_claim(params)) {
        if (s->era == ERA_LEGACY) {
            send_error(id, -32600, "Invalid Request: modern _meta envelope "
                       "on a legacy (initialized) connection", NULL);
            return;
        }
        if (!envelope_ok(id, params))
            return;
        s->era = ERA_MODERN;
        modern = true;
    } else {
        if (s->era == ERA_MODERN) {
            send_error(id, -32602, missing_envelope, NULL);
            return;
        }
        s->era = ERA_LEGACY;
        modern = false;
    }
    if (strcmp(method, "tools/list") == 0)
        handle_list(s, id, params, modern);
    else
        handle_call(id, params, modern);
}

static void handle_request(struct server *s, const char *method,
                           struct json_object *id, struct json_object *params)
{
    if (strcmp(method, "tools/list") == 0 ||
        strcmp(method, "tools/call") == 0) {
        handle_tools(s, method, id, params);
    } else if (strcmp(method, "server/discover") == 0) {
        if (envelope_ok(id, params))
            handle_discover(id);
    } else if (strcmp(method, "subscriptions/listen") == 0) {
        if (s->era == ERA_LEGACY) {
            send_error(id, -32601, "Method not found", NULL);
        } else if (envelope_ok(id, params)) {
            s->era = ERA_MODERN;
            handle_listen(id, params);
        }
    } else if (strcmp(method, "initialize") == 0) {
        struct json_object *ver = NULL;

        if (s->era == ERA_MODERN) {
            if (params)
                json_object_object_get_ex(params, "protocolVersion", &ver);
            send_unsupported(id, json_object_is_type(ver, json_type_string)
                                 ? json_object_get_string(ver) : "");
            return;
        }
        s->era = ERA_LEGACY;
        handle_initialize(id, params);
    } else if (strcmp(method, "ping") == 0 && s->era != ERA_MODERN &&
               !has_claim(params)) {
        send_result(id, json_object_new_object());
    } else {
        send_error(id, -32601, "Method not found", NULL);
    }
}

static void handle_line(struct server *s, const char *line, size_t len)
{
    struct json_tokener *tok = json_tokener_new_ex(128);
    struct json_object *msg, *method = NULL, *id = NULL, *params = NULL;
    bool has_id;
    size_t end;

    if (!tok) {
        fprintf(stderr, SERVER_NAME ": out of memory\n");
        exit(1);
    }
    msg = json_tokener_parse_ex(tok, line, (int)len);
    end = json_tokener_get_parse_end(tok);
    while (msg && end < len && strchr(" \t\r", line[end]))
        end++;
    json_tokener_free(tok);
    if (!msg || end != len) {
        json_object_put(msg);
        send_error(NULL, -32700, "Parse error", NULL);
        return;
    }
    if (!json_object_is_type(msg, json_type_object)) {
        send_error(NULL, -32600, "Invalid Request", NULL);
        goto out;
    }
    has_id = json_object_object_get_ex(msg, "id", &id);
    if (!json_object_object_get_ex(msg, "method", &method)) {
        /* A response: this server never sends requests, so drop it. */
        if (json_object_object_get_ex(msg, "result", NULL) ||
            json_object_object_get_ex(msg, "error", NULL))
            goto out;
        send_error(NULL, -32600, "Invalid Request", NULL);
        goto out;
    }
    if (has_id && !json_object_is_type(id, json_type_string) &&
        !json_object_is_type(id, json_type_int)) {
        send_error(NULL, -32600, "Invalid Request: bad id", NULL);
        goto out;
    }
    if (!json_object_is_type(method, json_type_string)) {
        if (has_id)
            send_error(id, -32600, "Invalid Request: bad method", NULL);
        goto out;
    }
    json_object_object_get_ex(msg, "params", &params);
    if (params && json_object_is_type(params, json_type_null))
        params = NULL;
    if (!has_id)
        goto out;       /* notifications need no action and no answer */
    if (params && !json_object_is_type(params, json_type_object)) {
        send_error(id, -32602, "Invalid params: params must be an object",
                   NULL);
        goto out;
    }
    handle_request(s, json_object_get_string(method), id, params);
out:
    json_object_put(msg);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " SERVER_NAME " [--page-size N] [--help] [--version]\n"
            "MCP demo server on stdin/stdout (revisions " MODERN_VERSION
            ", 2025-11-25,\n2025-06-18, 2025-03-26, 2024-11-05).\n"
            "  --page-size N  tools/list pages of N tools (also env "
            "AURORA_DEMO_PAGE_SIZE)\n");
}

static int parse_size(const char *text, size_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' ||
        v > MAX_PAGE_SIZE)
        return -1;
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct server s = { ERA_UNPINNED, 0 };
    struct mcpl_reader rd;
    const char *env = getenv("AURORA_DEMO_PAGE_SIZE");
    int rc = 0;

    if (env && *env && parse_size(env, &s.page_size) < 0) {
        fprintf(stderr, SERVER_NAME ": bad AURORA_DEMO_PAGE_SIZE\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf(SERVER_NAME " " DEMO_VERSION "\n");
            return 0;
        } else if (strcmp(argv[i], "--page-size") == 0 && i + 1 < argc &&
                   parse_size(argv[i + 1], &s.page_size) == 0) {
            i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    mcpl_reader_init(&rd, STDIN_FILENO);
    for (;;) {
        char *line;
        size_t len;
        enum mcpl_read r = mcpl_read_line(&rd, &line, &len);

        if (r == MCPL_EOF)
            break;
        if (r == MCPL_READ_ERROR) {
            fprintf(stderr, SERVER_NAME ": reading stdin failed\n");
            rc = 1;
            break;
        }
        if (r == MCPL_TOO_LONG) {
            fprintf(stderr, SERVER_NAME ": dropped a line over 64 MiB\n");
            send_error(NULL, -32700, "Parse error: message too large", NULL);
            continue;
        }
        if (len > 0)
            handle_line(&s, line, len);
    }
    mcpl_reader_free(&rd);
    return rc;
}
