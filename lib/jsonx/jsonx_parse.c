/*
 * jsonx_parse.c - the strict RFC 8259 parser of jsonx.h: the json-c tree
 * and its memory bound (tokens come from jsonx_lex.c).
 *
 * json-c's tokener saturates integers past 64 bits and is lenient in
 * ways we do not want, so this is our own parser building json-c values.
 * It is iterative: open containers live on a heap stack bounded by
 * max_depth, so hostile nesting costs neither C stack nor more than
 * max_depth pointers.  Each container is attached to its parent as soon
 * as it is opened, so on any error freeing the root frees everything.
 * A leading UTF-8 byte order mark is rejected (as Python does for str).
 */
#include "aur_setup.h"

#include <stdio.h>

#include <json-c/linkhash.h>

#include "jsonx.h"
#include "jsonx_parser.h"

/* The smallest table json-c fills with count keys without growing it
 * (it grows before an insert that finds count >= size * LH_LOAD_FACTOR).
 * A full table is fine to read: a lookup probes at most size slots. */
static int fit_entries(int count)
{
    int n = count > 0 ? count : 1;
    while (count - 1 >= n * LH_LOAD_FACTOR)
        n++;
    return n;
}

/* Charge n bytes of the tree being built; over max_mem is an error. */
static int charge(struct parser *ps, size_t n)
{
    ps->mem += n;
    if (ps->max_mem && ps->mem > ps->max_mem)
        return aur_fail(ps->err, AUR_E_LIMIT, 0,
                        "JSON value of %zu bytes needs more than %zu bytes "
                        "of memory (stopped at byte %zu)",
                        ps->len, ps->max_mem, ps->pos);
    return AUR_OK;
}

/* An open container: its full default table or slots, plus an upper
 * bound on growth per member (charged in attach) until it closes. */
#define OPEN_OBJECT_MEM                                                       \
    (chunk(JC_BASE + 8) + chunk(JC_LH_TABLE) +                                \
     chunk(JC_DEF_ENTRIES * JC_LH_ENTRY))
#define OPEN_ARRAY_MEM                                                        \
    (chunk(JC_BASE + 8) + chunk(JC_ARRAY_LIST) +                              \
     chunk(JC_DEF_SLOTS * sizeof(void *)))
/* A table never holds more than 2 / LH_LOAD_FACTOR (about 3) entries
 * per key, an array list twice its length. */
#define GROW_PER_KEY (3 * JC_LH_ENTRY)
#define GROW_PER_ITEM (2 * sizeof(void *))

/* A container closes: shrink it to fit (compact) and replace its open
 * charges by what it really holds. */
static void close_container(struct parser *ps, struct json_object *v)
{
    /* lh_table_resize is declared in json-c's public linkhash.h (0.13 to
     * 0.18) but versioned JSONC_PRIVATE in the library: no other way
     * exists to give an object a smaller table. */
    if (json_object_is_type(v, json_type_object)) {
        struct lh_table *t = json_object_get_object(v);
        int count = t->count, fit = fit_entries(count);
        size_t open = chunk(JC_DEF_ENTRIES * JC_LH_ENTRY) +
                      (size_t)count * GROW_PER_KEY;
        if (ps->compact && fit < t->size)
            (void)lh_table_resize(t, fit); /* no memory: keep it as is */
        ps->mem -= open;
        ps->mem += chunk((size_t)t->size * JC_LH_ENTRY);
    } else {
        size_t n = json_object_array_length(v);
        struct array_list *al = json_object_get_array(v);
        size_t open = chunk(JC_DEF_SLOTS * sizeof(void *)) + n * GROW_PER_ITEM;
        if (ps->compact && al && al->size > (n ? n : 1))
            (void)json_object_array_shrink(v, 0);
        ps->mem -= open;
        ps->mem += chunk((al ? al->size : n) * sizeof(void *));
    }
}

/*
 * Which keys an open object already has, so json-c need not look a key up
 * before adding it: one bit per vocabulary key, and whether any key came
 * with escapes (it may spell a vocabulary key, so then every key is looked
 * up).  A plain key outside the vocabulary is always looked up.
 */
struct seen {
    uint64_t bits[VOCAB_BITS / 64];
    bool escaped;
};

/* Put v (transfer) into the innermost open container, under the pending
 * key for an object; duplicate keys replace (last wins).  seen: that
 * object's keys, or NULL (unknown: look every key up). */
static int attach(struct parser *ps, struct json_object *parent,
                  struct json_object *v, struct seen *seen)
{
    int r;

    if (json_object_is_type(parent, json_type_object)) {
        unsigned flags = 0;

        if (charge(ps, GROW_PER_KEY + (ps->key_idx >= 0
                                           ? 0
                                           : chunk(ps->key.n + 1))) !=
            AUR_OK) {
            json_object_put(v);
            return AUR_E_LIMIT;
        }

        if (ps->key_idx >= 0) {
            uint64_t bit = 1ull << (ps->key_idx % 64);
            uint64_t *w = seen ? &seen->bits[ps->key_idx / 64] : NULL;

            flags = JSON_C_OBJECT_ADD_CONSTANT_KEY;
            if (w && !seen->escaped && !(*w & bit))
                flags |= JSON_C_OBJECT_ADD_KEY_IS_NEW;
            if (w)
                *w |= bit;
            r = json_object_object_add_ex(parent, aur__jp_vocab[ps->key_idx], v,
                                          flags);
        } else {
            if (seen && !ps->key_plain)
                seen->escaped = true;
            r = json_object_object_add(parent, ps->key.p, v);
        }
    } else {
        if (charge(ps, GROW_PER_ITEM) != AUR_OK) {
            json_object_put(v);
            return AUR_E_LIMIT;
        }
        r = json_object_array_add(parent, v);
    }
    if (r != 0) {
        json_object_put(v);
        return aur__jp_no_memory(ps);
    }
    return AUR_OK;
}

int aur__json_parse(const char *buf, size_t len, int max_depth,
                    struct json_object **out, struct aur_error *err)
{
    return aur__json_parse_mem(buf, len, max_depth, AUR__JSON_MAX_MEM, out,
                               NULL, err);
}

int aur__json_parse_mem(const char *buf, size_t len, int max_depth,
                        size_t max_mem, struct json_object **out,
                        size_t *mem, struct aur_error *err)
{
    struct parser ps = {.in = (const unsigned char *)buf, .len = len,
                        .err = err, .max_mem = max_mem,
                        .compact = len >= COMPACT_MIN_LEN};
    /* Most messages nest a few levels: the stack starts on the C stack. */
    struct json_object *local[32];
    struct seen seen[AUR__ARRAY_LEN(local)]; /* for the first 32 levels */
    struct json_object **stack = local, *root = NULL, *v;
    size_t depth = 0, cap = AUR__ARRAY_LEN(local);
    unsigned char c;
    bool opened, is_obj;
    int rc = AUR_OK;

    if (!buf && len)
        return aur_fail(err, AUR_E_INVAL, 0, "JSON input is NULL");
    /* Every pass parses one value and consumes at least one byte, and the
     * closing loop pops at most one container per byte: bounded by len. */
    for (;;) {
        aur__jp_skip_ws(&ps);
        if (ps.pos >= ps.len) {
            rc = aur__jp_fail_at(&ps, ps.pos, "unexpected end of input");
            goto out;
        }
        c = ps.in[ps.pos];
        opened = c == '{' || c == '[';
        if (opened) {
            if (max_depth < 0 || depth >= (size_t)max_depth) {
                char what[64];

                snprintf(what, sizeof what, "nesting deeper than %d",
                         max_depth < 0 ? 0 : max_depth);
                rc = aur__jp_fail_at(&ps, ps.pos, what);
                goto out;
            }
            if (depth == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                struct json_object **ns;

                ns = realloc(stack == local ? NULL : stack,
                             ncap * sizeof *ns);
                if (!ns) {
                    rc = aur__jp_no_memory(&ps);
                    goto out;
                }
                if (stack == local)
                    memcpy(ns, local, sizeof local);
                stack = ns;
                cap = ncap;
            }
            v = c == '{' ? json_object_new_object()
                         : json_object_new_array();
            if (!v) {
                rc = aur__jp_no_memory(&ps);
                goto out;
            }
            ps.pos++;
            if ((rc = charge(&ps, c == '{' ? OPEN_OBJECT_MEM
                                           : OPEN_ARRAY_MEM)) != AUR_OK) {
                json_object_put(v);
                goto out;
            }
        } else if ((rc = aur__jp_scalar(&ps, &v)) != AUR_OK) {
            goto out;
        } else if ((rc = charge(&ps, ps.last_mem)) != AUR_OK) {
            json_object_put(v);
            goto out;
        }
        if (depth == 0) {
            root = v;
        } else if ((rc = attach(&ps, stack[depth - 1], v,
                                depth - 1 < AUR__ARRAY_LEN(seen)
                                    ? &seen[depth - 1]
                                    : NULL)) != AUR_OK) {
            goto out;
        }
        if (opened) {
            if (depth < AUR__ARRAY_LEN(seen))
                memset(&seen[depth], 0, sizeof seen[depth]);
            stack[depth++] = v;
            aur__jp_skip_ws(&ps);
            if (ps.pos < ps.len && ps.in[ps.pos] == (c == '{' ? '}' : ']')) {
                ps.pos++;
                close_container(&ps, v);
                depth--;
            } else if (c == '{') {
                if ((rc = aur__jp_key(&ps)) != AUR_OK)
                    goto out;
                continue;
            } else {
                continue;
            }
        }
        /* A value is complete: close containers until one wants more. */
        while (depth > 0) {
            is_obj = json_object_is_type(stack[depth - 1], json_type_object);

            aur__jp_skip_ws(&ps);
            if (ps.pos >= ps.len) {
                rc = aur__jp_fail_at(&ps, ps.pos, "unexpected end of input");
                goto out;
            }
            c = ps.in[ps.pos];
            if (c == ',') {
                ps.pos++;
                if (is_obj && (rc = aur__jp_key(&ps)) != AUR_OK)
                    goto out;
                break;
            }
            if (c != (is_obj ? '}' : ']')) {
                rc = aur__jp_fail_at(&ps, ps.pos,
                             is_obj ? "expected ',' or '}'"
                                    : "expected ',' or ']'");
                goto out;
            }
            ps.pos++;
            close_container(&ps, stack[depth - 1]);
            depth--;
        }
        if (depth == 0)
            break;
    }
    aur__jp_skip_ws(&ps);
    if (ps.pos != ps.len) {
        rc = aur__jp_fail_at(&ps, ps.pos,
                             "trailing characters after JSON value");
        goto out;
    }
    *out = root;
    root = NULL;
    if (mem)
        *mem = ps.mem;
out:
    json_object_put(root);
    if (stack != local)
        free(stack);
    free(ps.key.p);
    free(ps.tmp.p);
    return rc;
}
