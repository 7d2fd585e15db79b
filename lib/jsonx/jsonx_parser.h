/*
 * jsonx_parser.h - the parser's state and heap model, shared by its two
 * halves: jsonx_lex.c reads tokens (strings, numbers, literals, keys) and
 * jsonx_parse.c builds the json-c tree from them.  Private to lib/jsonx;
 * a struct parser belongs to one call of aur__json_parse_mem and one
 * thread.
 */
#ifndef AUR_JSONX_PARSER_H
#define AUR_JSONX_PARSER_H

#include "aur_setup.h"

#include <json-c/json.h>

#include "grow.h"

struct parser {
    const unsigned char *in; /* borrowed */
    size_t len, pos;
    size_t mem, max_mem; /* the tree's estimated heap so far, its bound */
    size_t last_mem;     /* what the scalar aur__jp_scalar made takes */
    bool compact;        /* shrink containers as they close */
    struct aur__buf key; /* the key whose value is being parsed */
    int key_idx; /* or this vocab index (-1: the key is in key) */
    bool key_plain; /* the key had no escapes */
    struct aur__buf tmp; /* string values and number text (never larger
                          * than the input they copy from) */
    struct aur_error *err;
};


/*
 * Memory.  What a json-c 0.16 tree costs on the heap, counted the way
 * glibc malloc hands out chunks (8 bytes of header, 16-byte steps, 32 at
 * least).  The sizes are json-c's private structs; a later json-c that
 * changes them only makes the estimate a little off, never unbounded.
 */
#define JC_BASE 40         /* struct json_object */
#define JC_LH_TABLE 56     /* struct lh_table */
#define JC_LH_ENTRY 40     /* struct lh_entry */
#define JC_ARRAY_LIST 32   /* struct array_list */
#define JC_DEF_ENTRIES 16  /* JSON_OBJECT_DEF_HASH_ENTRIES */
#define JC_DEF_SLOTS 32    /* ARRAY_LIST_DEFAULT_SIZE */
/* Inputs at least this long get their containers shrunk to fit as they
 * close: json-c gives every object a 16-entry table (784 bytes of heap
 * for "{}" in all, 176 once shrunk) and every array 32 slots, the main
 * reason a tools/list page took 20 to 80 times its bytes.  Smaller
 * messages are transient and skip the extra allocation. */
#define COMPACT_MIN_LEN 4096

static inline size_t chunk(size_t n)
{
    n = (n + 8 + 15) & ~(size_t)15;
    return n < 32 ? 32 : n;
}

/* What the scalars the parser makes take (json_object_string keeps its
 * bytes inline). */
#define STRING_MEM(len) chunk(JC_BASE + 8 + (size_t)(len) + 8)
#define INT_MEM chunk(JC_BASE + 16)
#define BOOL_MEM chunk(JC_BASE + 8)

/* The wire vocabulary: keys stored as json-c constant keys (one bit each
 * in an object's seen set, so at most VOCAB_BITS of them). */
#define VOCAB_BITS 128
extern const char *const aur__jp_vocab[];
extern const size_t aur__jp_vocab_len;

/* The index in the vocabulary of the key s[0..n) (not NUL-terminated),
 * or -1. */
int aur__jp_intern(const unsigned char *s, size_t n);

/* A parse error at byte at (AUR_E_PROTOCOL), or no memory (AUR_E_NOMEM);
 * both fill ps->err and return the code. */
int aur__jp_fail_at(struct parser *ps, size_t at, const char *what);
int aur__jp_no_memory(struct parser *ps);

/* Past the JSON blanks at ps->pos. */
void aur__jp_skip_ws(struct parser *ps);

/* The scalar (not a container) at ps->pos into *out (transfer), its heap
 * cost in ps->last_mem. */
int aur__jp_scalar(struct parser *ps, struct json_object **out);

/* `"key" :` at the next non-blank: into ps->key, or ps->key_idx when it
 * is a vocabulary key. */
int aur__jp_key(struct parser *ps);

#endif
