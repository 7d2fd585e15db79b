/*
 * fuzz_serve_request.c - libFuzzer target for `serve`'s fast request path
 * (serve_request_fast, cli/serve_request.c) against its general path
 * (serve_request_parse_tree).
 *
 * The fast path may decline anything; a line it takes must be one the
 * general path takes as the same call: op call, the same tool, an id of
 * the same type and value, equal arguments (none and {} alike: the core
 * reads a NULL arguments object as {}).  Any disagreement aborts.
 *
 * The replay build (-DAUR_FUZZ_REPLAY; CMake target
 * fuzz_serve_request_replay, CTest fuzz_serve_request_corpus) also runs
 * the table below: lines the fast path must take and lines it must leave
 * to the general path, so a fast path that declined everything, or took
 * what it must not, fails there.
 * Build: fuzz/run.sh fuzz_serve_request.
 */
#include "aur_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"

#ifdef FUZZ_OWN_JSON_PARSE
#include "jsonx.h"
/* libFuzzer builds compile only what a target needs: the host's parser
 * is this one line of lib/engine/host.c. */
int aur_json_parse(const char *buf, size_t len, struct json_object **out,
                   struct aur_error *err)
{
    return aur__json_parse(buf, len, 128, out, err);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_args(struct json_object *a, struct json_object *b)
{
    if (!a || !b) {
        struct json_object *o = a ? a : b;
        return !o || (json_object_is_type(o, json_type_object) &&
                      json_object_object_length(o) == 0);
    }
    return json_object_equal(a, b) != 0;
}

/* 1: the fast path took the line (and the general path agreed), 0: it
 * declined. */
static int check(const char *line, size_t len)
{
    struct serve_request a, b;
    char msg[200];
    bool fast = serve_request_fast(line, len, &a);
    const char *code =
        serve_request_parse_tree(line, len, false, &b, msg, sizeof msg);

    if (fast &&
        (code || b.op != SERVE_OP_CALL || a.op != SERVE_OP_CALL ||
         strcmp(a.tool, b.tool) != 0 || !a.id || !b.id ||
         json_object_get_type(a.id) != json_object_get_type(b.id) ||
         !json_object_equal(a.id, b.id) || !same_args(a.args, b.args))) {
        fprintf(stderr, "fast and general paths disagree on: %.*s\n",
                (int)len, line);
        abort();
    }
    if (!fast && (a.root || a.own_args || a.op != SERVE_OP_UNKNOWN)) {
        fprintf(stderr, "a declined line left state: %.*s\n", (int)len,
                line);
        abort();
    }
    serve_request_clear(&a);
    serve_request_clear(&b);
    return fast;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check((const char *)data, size);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
static const char *const take[] = {
    "{\"id\":1,\"op\":\"call\",\"tool\":\"aur.mcp.p.t\",\"arguments\":{}}",
    "{\"id\":0,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{ }}\n",
    "{\"id\":-999999999999999999,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"op\":\"call\",\"tool\":\"t\",\"id\":\"req 7\"}",
    (" { \"id\" : 3 , \"arguments\" : {\"a\":[1,{\"b\":\"}]\\\"\"}],"
     "\"n\":12345678901234567890123},\"tool\":\"t\",\"op\":\"call\"}\r\n"),
    "{\"id\":1,\"op\":\"call\",\"tool\":\"\",\"arguments\":{\"\\u00e9\":1}}",
    /* escapes in argument strings: quotes and backslashes escaped */
    "{\"id\":2,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{\"s\":\"a\\\\\\\"b\\\\\",\"t\":\"{[\\\"]}\",\"u\":\"\\\\\\\\\"}}",
};
static const char *const leave[] = {
    "{\"id\":1.0,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":1e3,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":-0,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":01,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":1234567890123456789,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":null,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":true,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":\"a\\\"b\",\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":\"\xc3\xa9\",\"op\":\"call\",\"tool\":\"t\"}",
    "{\"i\\u0064\":1,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":1,\"id\":2,\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"argumnts\":{}}",
    "{\"id\":1,\"op\":\"status\"}",
    "{\"id\":1,\"op\":\"call\"}",
    "{\"op\":\"call\",\"tool\":\"t\"}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"arguments\":[]}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{\"a\":}}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{}} x",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{}}}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\\u0000x\"}",
    "[{\"id\":1,\"op\":\"call\",\"tool\":\"t\"}]",
    /* an argument string its escape never lets end */
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{\"a\":\"x\\\"}}",
    "{\"id\":1,\"op\":\"call\",\"tool\":\"t\",\"arguments\":{\"a\":\"x\\",
};

#define FUZZ_NAME "fuzz_serve_request"
int replay_main(int argc, char **argv);
#define main replay_main
#include "fuzz_replay.h"
#undef main

int main(int argc, char **argv)
{
    char deep[1024];
    size_t n = 0;
    int bad = 0;

    for (size_t i = 0; i < sizeof take / sizeof *take; i++)
        if (!check(take[i], strlen(take[i]))) {
            fprintf(stderr, "the fast path declined: %s\n", take[i]);
            bad = 1;
        }
    for (size_t i = 0; i < sizeof leave / sizeof *leave; i++)
        if (check(leave[i], strlen(leave[i]))) {
            fprintf(stderr, "the fast path took: %s\n", leave[i]);
            bad = 1;
        }
    /* arguments nested past what the fast path skips go to the general
     * path (which applies the parser's depth to the whole line) */
    n += (size_t)snprintf(deep, sizeof deep,
                          "{\"id\":1,\"op\":\"call\",\"tool\":\"t\","
                          "\"arguments\":");
    for (int d = 0; d < 101; d++)
        deep[n++] = '{', deep[n++] = '"', deep[n++] = 'a', deep[n++] = '"',
        deep[n++] = ':';
    deep[n++] = '1';
    memset(deep + n, '}', 102);
    n += 102;
    if (check(deep, n)) {
        fprintf(stderr, "the fast path took arguments 101 deep\n");
        bad = 1;
    }
    return replay_main(argc, argv) || bad;
}
#endif
