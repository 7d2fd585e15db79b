/*
 * jsonx.h - the core's strict JSON intake and deterministic output.
 * Thread-safe; no global state.
 *
 * Integers that do not fit int64/uint64 are kept exact: they become json-c
 * doubles made with json_object_new_double_s(approx, digits); the userdata
 * is the exact digit string and json-c's userdata printer emits it, so
 * json_object_to_json_string and json_object_deep_copy stay exact.  Read
 * them with aur__json_integer_text.
 *
 * aur__json_compact writes into the object's own print buffer: two threads
 * must not call it on the same object at once.
 */
#ifndef AUR_JSONX_H
#define AUR_JSONX_H

#include "aur_setup.h"

struct json_object;

/* Bound on nesting of every inbound message. */
#define AUR__JSON_MAX_DEPTH 128

/* Bound on the memory of any tree aur__json_parse builds (as
 * aur__json_mem counts it): what a parse without a bound of its own
 * (a plugin's json_parse, serve's requests, stored journal data) may
 * take.  The default of max_app_memory_bytes. */
#define AUR__JSON_MAX_MEM ((size_t)160 << 20)

/*
 * Parse exactly one RFC 8259 JSON value from buf[0..len) (surrounding
 * whitespace allowed, nothing else), into a tree of at most
 * AUR__JSON_MAX_MEM bytes (aur__json_parse_mem, below).  Strict: no comments, no trailing
 * commas, no NaN, valid UTF-8 only, \u escapes with proper surrogate
 * pairs (a lone surrogate is an error), nesting depth <= max_depth
 * (containers: [[1]] is depth 2).
 * Duplicate object keys: the last one wins.  *out (transfer) only on
 * AUR_OK; on failure AUR_E_PROTOCOL with the byte offset in err->msg.
 */
int aur__json_parse(const char *buf, size_t len, int max_depth,
                    struct json_object **out, struct aur_error *err);

/*
 * aur__json_parse with a memory bound: max_mem (0 = none) bounds the heap
 * the tree may take, as aur__json_mem counts it, and is checked while the
 * tree grows, so a value over it costs no more than max_mem before it is
 * refused (AUR_E_LIMIT, "needs more than N bytes of memory").  *mem
 * (optional) is set on AUR_OK to what the tree takes.  Inputs of 4 KiB
 * or more get every container shrunk to fit as it closes (json-c's
 * defaults: 16 table entries per object, 32 slots per array).
 */
int aur__json_parse_mem(const char *buf, size_t len, int max_depth,
                        size_t max_mem, struct json_object **out,
                        size_t *mem, struct aur_error *err);

/* The heap a json-c tree takes (its objects, tables, slots, strings and
 * keys, in glibc malloc chunks): an estimate, close for json-c 0.16. */
size_t aur__json_mem(struct json_object *v);

/* Decimal text of a JSON integer of any size (int64, uint64 or a kept big
 * integer) into buf; AUR_E_INVAL if v is not an integer. */
int aur__json_integer_text(struct json_object *v, char *buf, size_t size);

/*
 * Deterministic JSON, equivalent to Python json.dumps(v,
 * ensure_ascii=False, sort_keys=True, separators=(",", ":")) - see
 * docs/protocol.md.  *out malloc'd (transfer), NUL-terminated;
 * *len optional.  Non-finite doubles: AUR_E_INVAL.
 */
int aur__json_canonical(struct json_object *v, char **out, size_t *len,
                        struct aur_error *err);

/* The same text appended to o (the caller's buffer, unchanged but for
 * what was appended before a failure): a document written piece by
 * piece from trees that are only read, never copied or printed into
 * (json-c's own printer caches its text in the object, a write).
 * aur__json_quoted_put appends s[0..n) as a JSON string. */
struct aur__buf;
int aur__json_canonical_put(struct aur__buf *o, struct json_object *v,
                            struct aur_error *err);
int aur__json_quoted_put(struct aur__buf *o, const char *s, size_t n,
                         struct aur_error *err);

/* Compact json-c text (no slash escaping) into a malloc'd string. */
char *aur__json_compact(struct json_object *v);

/* The members keys[0..n-1] of o (borrowed; NULL when absent or o is not
 * an object; has[i], when has is not NULL, tells a JSON null from an
 * absent key) in one walk over o.  The objects of a message have a few
 * members: comparing their keys costs less than hashing every key asked
 * for, and a reply is looked into on every call. */
void aur__json_pick(struct json_object *o, const char *const *keys,
                    struct json_object **v, bool *has, size_t n);

/*
 * Strings that name something (a method, a tool, a type, a version, an
 * id) are compared whole: json-c keeps a string's length, but C string
 * functions stop at an embedded U+0000, so "text\u0000x" would read as
 * "text".  aur__json_name: v's string when v is a string without U+0000,
 * else NULL (borrowed).  aur__json_str_is: v is a string equal to lit,
 * byte for byte and length for length.
 */
const char *aur__json_name(struct json_object *v);
bool aur__json_str_is(struct json_object *v, const char *lit);

/* json-c reference counts are not atomic (Debian builds it without
 * threading): an object shared between threads is only ever read, and a
 * thread that needs to keep or attach it takes a deep copy (transfer;
 * NULL for NULL, and when memory runs out). */
struct json_object *aur__json_copy(struct json_object *v);

/*
 * Building a tree when memory may run out (the policy of aur_host.h): v
 * (transfer, whatever happens) becomes member k of o, or is appended to
 * array a.  false when o, a or v is NULL (a constructor that ran out) or
 * the add failed; a builder ANDs the results and gives the tree up on
 * false.  A JSON null member needs json_object_object_add itself.
 */
bool aur__json_set(struct json_object *o, const char *k,
                   struct json_object *v);
bool aur__json_push(struct json_object *a, struct json_object *v);
/* o when ok, else NULL (o freed): the end of such a builder. */
struct json_object *aur__json_built(struct json_object *o, bool ok);

#endif
