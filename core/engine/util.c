#include "aur_setup.h"

#include "engine.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>

char *aur__strdup_printf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (!s)
        abort(); /* tiny strings only: running out here is fatal anyway */
    return s;
}

void aur__set_str(char **slot, const char *v)
{
    free(*slot);
    *slot = v ? strdup(v) : NULL;
}

bool aur__is_blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && (*s < '\t' || *s > '\r'))
            return false;
    return true;
}

bool aur__transport_marker(struct json_object *err_obj, int *http_status,
                           bool *delivered)
{
    struct json_object *data, *m, *v;
    if (!json_object_object_get_ex(err_obj, "data", &data) ||
        !json_object_object_get_ex(data, "org.aurorabot/transport", &m) ||
        !json_object_is_type(m, json_type_object))
        return false;
    *http_status = json_object_object_get_ex(m, "http_status", &v)
                       ? json_object_get_int(v)
                       : 0;
    *delivered = !json_object_object_get_ex(m, "delivered", &v) ||
                 json_object_get_boolean(v);
    return true;
}

struct json_object *aur__json_copy(struct json_object *v)
{
    struct json_object *c = NULL;
    if (v && json_object_deep_copy(v, &c, NULL) != 0)
        abort(); /* only on allocation failure */
    return c;
}
