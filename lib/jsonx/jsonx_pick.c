/*
 * jsonx_pick.c - reading members: several of a small object in one walk
 * (what the engine reads of every message and every tools/call result),
 * and strings that name something, compared whole.
 */
#include "aur_setup.h"

#include "jsonx.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

void aur__json_pick(struct json_object *o, const char *const *keys,
                    struct json_object **v, bool *has, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = NULL;
        if (has)
            has[i] = false;
    }
    if (!json_object_is_type(o, json_type_object))
        return;
    json_object_object_foreach(o, k, val) {
        for (size_t i = 0; i < n; i++) {
            if (k[0] == keys[i][0] && strcmp(k, keys[i]) == 0) {
                v[i] = val;
                if (has)
                    has[i] = true;
                break;
            }
        }
    }
}

const char *aur__json_name(struct json_object *v)
{
    const char *s;
    if (!json_object_is_type(v, json_type_string))
        return NULL;
    s = json_object_get_string(v);
    return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

bool aur__json_str_is(struct json_object *v, const char *lit)
{
    size_t n = strlen(lit);
    return json_object_is_type(v, json_type_string) &&
           (size_t)json_object_get_string_len(v) == n &&
           memcmp(json_object_get_string(v), lit, n) == 0;
}

struct json_object *aur__json_copy(struct json_object *v)
{
    struct json_object *c = NULL;
    if (v && json_object_deep_copy(v, &c, NULL) != 0)
        return NULL; /* only on allocation failure */
    return c;
}

bool aur__json_set(struct json_object *o, const char *k,
                   struct json_object *v)
{
    if (o && v && json_object_object_add(o, k, v) == 0)
        return true;
    json_object_put(v);
    return false;
}

struct json_object *aur__json_built(struct json_object *o, bool ok)
{
    if (ok)
        return o;
    json_object_put(o);
    return NULL;
}

bool aur__json_push(struct json_object *a, struct json_object *v)
{
    if (a && v && json_object_array_add(a, v) == 0)
        return true;
    json_object_put(v);
    return false;
}
