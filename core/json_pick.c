/*
 * json_pick.c - several members of a small object in one walk: what the
 * engine reads of every message and every tools/call result.
 */
#include "aur_setup.h"

#include "jsonx.h"

#include <json-c/json.h>
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
