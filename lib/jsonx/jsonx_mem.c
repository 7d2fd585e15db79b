/*
 * jsonx_mem.c - what a json-c tree already built costs on the heap, by the
 * model in jsonx_parser.h (the parser charges the same sizes as it
 * builds).  Thread-safe: it only reads the tree.
 */
#include "aur_setup.h"

#include <json-c/linkhash.h>

#include "jsonx.h"
#include "jsonx_parser.h"

size_t aur__json_mem(struct json_object *v)
{
    size_t m = 0;

    switch (json_object_get_type(v)) {
    case json_type_null:
        return 0;
    case json_type_boolean:
    case json_type_double:
        m = chunk(JC_BASE + 8);
        if (json_object_get_userdata(v))
            m += chunk(strlen(json_object_get_userdata(v)) + 1);
        return m;
    case json_type_int:
        return INT_MEM;
    case json_type_string:
        return STRING_MEM(json_object_get_string_len(v));
    case json_type_array: {
        struct array_list *al = json_object_get_array(v);
        size_t n = json_object_array_length(v);
        m = chunk(JC_BASE + 8) + chunk(JC_ARRAY_LIST) +
            chunk((al ? al->size : n) * sizeof(void *));
        for (size_t i = 0; i < n; i++)
            m += aur__json_mem(json_object_array_get_idx(v, i));
        return m;
    }
    case json_type_object: {
        struct lh_table *t = json_object_get_object(v);
        struct lh_entry *e;
        m = chunk(JC_BASE + 8) + chunk(JC_LH_TABLE) +
            chunk((size_t)t->size * JC_LH_ENTRY);
        for (e = lh_table_head(t); e; e = lh_entry_next(e)) {
            if (!e->k_is_constant)
                m += chunk(strlen(lh_entry_k(e)) + 1);
            m += aur__json_mem((struct json_object *)lh_entry_v(e));
        }
        return m;
    }
    }
    return m;
}
