/*
 * output.c - the JSON the commands print: one document a line, the
 * startup error object (docs/error-codes.md), a call's outcome.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <json-c/json.h>
#include <stdio.h>

void cli_print_json(struct json_object *v)
{
    fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                JSON_C_TO_STRING_NOSLASHESCAPE),
          stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

void cli_print_startup_error(const struct aur_startup_error *e)
{
    struct json_object *o = json_object_new_object();
    struct json_object *err = json_object_new_object();
    json_object_object_add(err, "code", json_object_new_string(e->code));
    json_object_object_add(err, "app",
                           e->app[0] ? json_object_new_string(e->app) : NULL);
    json_object_object_add(err, "phase", json_object_new_string(e->phase));
    json_object_object_add(err, "message", json_object_new_string(e->message));
    json_object_object_add(o, "error", err);
    cli_print_json(o);
    json_object_put(o);
}

static struct json_object *string_array(const char *const *v, size_t n)
{
    struct json_object *a = json_object_new_array_ext(n ? (int)n : 1);
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

struct json_object *cli_output_json(const struct aur_tool_output *o)
{
    struct json_object *j = json_object_new_object();
    json_object_object_add(j, "status",
                           json_object_new_string(aur_call_status_word(o->status)));
    json_object_object_add(j, "content",
                           json_object_new_string_len(o->content,
                                                      (int)o->content_len));
    if (o->observe && o->publish) {
        json_object_object_add(j, "observe",
                               string_array(o->observe, o->n_observe));
        json_object_object_add(j, "publish",
                               string_array(o->publish, o->n_publish));
    }
    return j;
}

