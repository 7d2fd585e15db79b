/*
 * fuzz_call_reply.c - libFuzzer target for the tools/call reply scanner
 * (lib/engine/call_reply.c) against the general path.
 *
 * The scanner may decline anything; what it accepts must be what the
 * general path makes of the same bytes: aur__json_parse accepts them,
 * rpc.c's sink takes them as a response to that integer id, and
 * call.c's map_result turns the result into "succeeded" with exactly the
 * scanner's text.  The reference below is that path, written again on the
 * parsed tree.  Any disagreement aborts.
 *
 * Build: fuzz/run.sh fuzz_call_reply.  Built with -DAUR_FUZZ_REPLAY
 * (CMake target fuzz_call_reply_replay, CTest fuzz_call_reply_corpus),
 * main() replays the corpus files named on the command line.
 */
#include "aur_setup.h"

#include <stdio.h>

#include <json-c/json.h>

#include "engine.h"
#include "jsonx.h"
#include "call_reply.h"
#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct json_object *member(struct json_object *o, const char *k,
                                  bool *has)
{
    struct json_object *v = NULL;

    *has = json_object_object_get_ex(o, k, &v);
    return v;
}

/* The general path: true when the reply is a success for *id with
 * *text (malloc'd, the map_result text before the fixed fallback). */
static bool reference(struct json_object *msg, int64_t *id, char **text)
{
    struct json_object *v, *res, *content;
    bool has;
    size_t n, len = 0;
    char *out;

    v = member(msg, "jsonrpc", &has);
    if (!json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), "2.0") != 0)
        return false;
    member(msg, "method", &has);
    if (has)
        return false;
    v = member(msg, "id", &has);
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
        return false;
    *id = json_object_get_int64(v);
    member(msg, "error", &has);
    if (has)
        return false;
    res = member(msg, "result", &has);
    if (!json_object_is_type(res, json_type_object))
        return false;
    v = member(res, "resultType", &has);
    if (has && (!json_object_is_type(v, json_type_string) ||
                strcmp(json_object_get_string(v), "complete") != 0))
        return false;
    v = member(res, "isError", &has);
    if (has && (!json_object_is_type(v, json_type_boolean) ||
                json_object_get_boolean(v)))
        return false;
    member(res, "structuredContent", &has);
    if (has)
        return false;
    content = member(res, "content", &has);
    if (!json_object_is_type(content, json_type_array))
        return false;
    n = json_object_array_length(content);
    out = malloc(1);
    if (!out)
        abort();
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        struct json_object *b = json_object_array_get_idx(content, i), *ty,
                           *tx;
        const char *s;
        size_t sl;

        ty = member(b, "type", &has);
        tx = member(b, "text", &has);
        if (!json_object_is_type(b, json_type_object) ||
            !json_object_is_type(ty, json_type_string) ||
            strcmp(json_object_get_string(ty), "text") != 0 ||
            !json_object_is_type(tx, json_type_string)) {
            free(out);
            return false; /* shape problem or an unsupported type */
        }
        s = json_object_get_string(tx);
        sl = (size_t)json_object_get_string_len(tx);
        if (aur__is_blank(s))
            continue;
        out = realloc(out, len + sl + 2);
        if (!out)
            abort();
        if (len)
            out[len++] = '\n';
        memcpy(out + len, s, sl);
        len += sl;
        out[len] = '\0';
    }
    *text = out;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *msg = NULL;
    struct aur_error err;
    int64_t id = -1, rid = -1;
    char *text = NULL, *rtext = NULL;
    size_t tlen = 0;

    if (!aur__call_reply_scan((const char *)data, size, &id, &text, &tlen))
        return 0;
    if (!text || tlen != strlen(text))
        abort();
    if (aur__json_parse((const char *)data, size, AUR__JSON_MAX_DEPTH, &msg,
                        &err) != AUR_OK ||
        !json_object_is_type(msg, json_type_object))
        abort(); /* accepted what the parser rejects */
    if (!reference(msg, &rid, &rtext))
        abort(); /* accepted what the general path does not call success */
    if (rid != id || strcmp(rtext, text) != 0)
        abort();
    free(text);
    free(rtext);
    json_object_put(msg);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#define FUZZ_NAME "fuzz_call_reply"
#include "fuzz_replay.h"
#endif
