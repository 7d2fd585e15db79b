/*
 * http_headers.c - one header line of transport-http: "name: value" with
 * its bound (HTTP_MAX_HEADER), and the header value encoding of a
 * JSON value into one (string as is or =?base64?...?=, integer, boolean).
 *
 * A file of its own below its users: the request headers (http_post.c)
 * and the Mcp-Param-* headers of x-mcp-header (http_xheader.c) both build
 * lines here, and neither calls the other for it.  No locks, no logs.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* "name: v"; an empty v keeps curl's meaning of "name:" (do not send
 * curl's own header of that name), as for Expect. */
int http_add_hdr(struct curl_slist **l, const char *name, const char *v)
{
    char small[1024], *line = small;
    struct curl_slist *n;
    size_t nl = strlen(name), vl = strlen(v), need = nl + vl + 3;

    if (need > HTTP_MAX_HEADER)
        return AUR_E_LIMIT;
    if (need > sizeof small && !(line = malloc(need)))
        return AUR_E_NOMEM;
    memcpy(line, name, nl);
    memcpy(line + nl, ": ", 2);
    memcpy(line + nl + 2, v, vl + 1);
    n = curl_slist_append(*l, line);
    if (line != small)
        free(line);
    if (!n)
        return AUR_E_NOMEM;
    *l = n;
    return AUR_OK;
}

int http_add_encoded(struct curl_slist **l, const char *name,
                     struct json_object *v)
{
    char num[32], *enc;
    const char *s;
    int rc;

    switch (json_object_get_type(v)) {
    case json_type_string:
        enc = http_header_value(json_object_get_string(v),
                                (size_t)json_object_get_string_len(v));
        if (!enc)
            return AUR_E_NOMEM;
        if (enc[0]) {
            rc = http_add_hdr(l, name, enc);
        } else {
            /* An empty string is a value, not an absent one: curl sends
             * "name;" as a header with no content. */
            char line[300];
            struct curl_slist *n = NULL;
            rc = (size_t)snprintf(line, sizeof line, "%s;", name) <
                         sizeof line
                     ? AUR_OK
                     : AUR_E_LIMIT;
            if (rc == AUR_OK && !(n = curl_slist_append(*l, line)))
                rc = AUR_E_NOMEM;
            if (n)
                *l = n;
        }
        free(enc);
        return rc;
    case json_type_int:
        snprintf(num, sizeof num, "%lld", (long long)json_object_get_int64(v));
        s = num;
        break;
    case json_type_boolean:
        s = json_object_get_boolean(v) ? "true" : "false";
        break;
    default:
        return AUR_OK; /* null, absent or not a primitive: no header */
    }
    return http_add_hdr(l, name, s);
}

const char *http_str_member(struct json_object *o, const char *k)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}
