/*
 * scope_view.c - a scopes object {"observe":[...],"publish":[...]} as the
 * two string lists a call's output hands out (struct aur_tool_output).
 *
 * A tool whose scopes nothing resolves per call gives every call the same
 * lists: the view of its frozen scopes object, built once at freeze and
 * pointing at that object's strings, so a call copies nothing (a json-c
 * copy per call, made and freed, was a third of a call's client
 * instructions).  Scopes an extension resolved for one call are copied
 * into one block the output owns.
 *
 * Threads: a view is read-only once built; any thread may read it.
 */
#include "aur_setup.h"

#include "engine.h"

#include <json-c/json.h>

/* The strings of member key of s: *n of them, their bytes in *bytes.
 * false: not an array of strings.  A missing member is an empty list. */
static bool measure(struct json_object *s, const char *key, size_t *n,
                    size_t *bytes)
{
    struct json_object *a;

    *n = 0;
    if (!json_object_object_get_ex(s, key, &a))
        return true;
    if (!json_object_is_type(a, json_type_array))
        return false;
    *n = json_object_array_length(a);
    for (size_t i = 0; i < *n; i++) {
        struct json_object *v = json_object_array_get_idx(a, i);
        if (!json_object_is_type(v, json_type_string))
            return false;
        *bytes += (size_t)json_object_get_string_len(v) + 1;
    }
    return true;
}

/* Fill list[0..n) from member key; copies go to *text when it is set. */
static void fill(struct json_object *s, const char *key, const char **list,
                 size_t n, char **text)
{
    struct json_object *a = NULL;

    json_object_object_get_ex(s, key, &a);
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(a, i);
        const char *str = json_object_get_string(v);

        if (*text) {
            size_t len = (size_t)json_object_get_string_len(v) + 1;
            memcpy(*text, str, len);
            str = *text;
            *text += len;
        }
        list[i] = str;
    }
}

struct aur__scope_view *aur__scope_view_new(struct json_object *s, bool copy)
{
    size_t no, np, bytes = 0, head;
    struct aur__scope_view *v;
    char *text = NULL;

    if (!json_object_is_type(s, json_type_object) ||
        !measure(s, "observe", &no, &bytes) ||
        !measure(s, "publish", &np, &bytes)) {
        errno = EINVAL;
        return NULL;
    }
    /* One block: the view, both lists (never NULL, even empty), then the
     * copied strings. */
    head = sizeof *v + (no + np + 1) * sizeof(char *);
    v = calloc(1, head + (copy ? bytes : 0));
    if (!v)
        return NULL;
    v->observe = (const char **)(v + 1);
    v->publish = v->observe + no;
    v->n_observe = no;
    v->n_publish = np;
    v->of = s;
    if (copy)
        text = (char *)v + head;
    fill(s, "observe", v->observe, no, &text);
    fill(s, "publish", v->publish, np, &text);
    return v;
}
