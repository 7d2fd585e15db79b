/*
 * The demo tools.  Argument problems are reported as isError results (the
 * model can read them and retry), never as protocol errors.
 */
#define _POSIX_C_SOURCE 200809L
#include "demo_server.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct json_object *demo_text_result(const char *text, bool is_error)
{
    struct json_object *res = json_object_new_object();
    struct json_object *content = json_object_new_array();
    struct json_object *block = json_object_new_object();

    json_object_object_add(block, "type", json_object_new_string("text"));
    json_object_object_add(block, "text", json_object_new_string(text));
    json_object_array_add(content, block);
    json_object_object_add(res, "content", content);
    if (is_error)
        json_object_object_add(res, "isError", json_object_new_boolean(1));
    return res;
}

/* Text plus a one-member structuredContent {key: n}. */
static struct json_object *counted_result(const char *key, int64_t n)
{
    char text[32];
    struct json_object *res, *sc;

    snprintf(text, sizeof(text), "%" PRId64, n);
    res = demo_text_result(text, false);
    sc = json_object_new_object();
    json_object_object_add(sc, key, json_object_new_int64(n));
    json_object_object_add(res, "structuredContent", sc);
    return res;
}

static const char *string_arg(struct json_object *args, const char *key)
{
    struct json_object *v;

    if (!json_object_object_get_ex(args, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/*
 * json-c stores integers beyond int64 as uint64 or saturates; only accept
 * values that round-trip through int64 so the sum is exact.
 */
static bool int_arg(struct json_object *args, const char *key, int64_t *out)
{
    struct json_object *v;

    if (!json_object_object_get_ex(args, key, &v) ||
        !json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_int64(v);
    if (*out == INT64_MAX && json_object_get_uint64(v) != (uint64_t)INT64_MAX)
        return false;
    return true;
}

static struct json_object *run_echo(struct json_object *args)
{
    const char *text = string_arg(args, "text");

    if (!text)
        return demo_text_result("echo: argument 'text' must be a string",
                                true);
    return demo_text_result(text, false);
}

static struct json_object *run_add(struct json_object *args)
{
    int64_t a, b, sum;

    if (!int_arg(args, "a", &a) || !int_arg(args, "b", &b))
        return demo_text_result("add: arguments 'a' and 'b' must be "
                                "64-bit integers", true);
    if (__builtin_add_overflow(a, b, &sum))
        return demo_text_result("add: the sum overflows a 64-bit integer",
                                true);
    return counted_result("sum", sum);
}

static struct json_object *run_now(struct json_object *args)
{
    char text[32];
    struct tm tm;
    time_t t = time(NULL);

    if (!gmtime_r(&t, &tm) ||
        strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return demo_text_result("now: the clock is unavailable", true);
    return demo_text_result(text, false);
}

static struct json_object *run_fail(struct json_object *args)
{
    return demo_text_result("fail: this demo tool always fails", true);
}

static struct json_object *run_word_count(struct json_object *args)
{
    const char *text = string_arg(args, "text");
    int64_t words = 0;
    bool in_word = false;

    if (!text)
        return demo_text_result("WordCount: argument 'text' must be a "
                                "string", true);
    /* Words are runs of non-blank bytes, so UTF-8 text counts sensibly. */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        bool blank = *p < 0x80 && isspace(*p);

        if (!blank && !in_word)
            words++;
        in_word = !blank;
    }
    return counted_result("words", words);
}

static const struct demo_tool tools[] = {
    { "echo", "Echo the given text back",
      "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
      "\"description\":\"Text to return\"}},\"required\":[\"text\"]}",
      run_echo },
    { "add", "Add two integers",
      "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
      "\"b\":{\"type\":\"integer\"}},\"required\":[\"a\",\"b\"]}",
      run_add },
    { "now", "Current UTC time as YYYY-MM-DDTHH:MM:SSZ",
      "{\"type\":\"object\",\"properties\":{},\"required\":[]}",
      run_now },
    { "fail", "Always fails (returns isError)",
      "{\"type\":\"object\",\"properties\":{},\"required\":[]}",
      run_fail },
    { "WordCount", "Count the whitespace-separated words of a text",
      "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
      "\"required\":[\"text\"]}",
      run_word_count },
};

const struct demo_tool *demo_tools(size_t *count)
{
    *count = sizeof(tools) / sizeof(tools[0]);
    return tools;
}

const struct demo_tool *demo_tool_find(const char *name)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    return NULL;
}
