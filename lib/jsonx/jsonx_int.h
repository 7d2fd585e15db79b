/*
 * jsonx_int.h - shared by the jsonx_*.c files and by the engine's
 * call_reply.c, whose fast reply scanner shares the plain-byte span.
 *
 * A kept big integer (one that fits neither int64 nor uint64) is a json-c
 * double made by json_object_new_double_s(approx, digits): its userdata
 * is the exact decimal text "-?[1-9][0-9]*" and json-c's own userdata
 * printer emits it.  We use json-c's printer rather than a custom one so
 * that json_object_deep_copy keeps these values (it refuses to copy
 * objects with unknown serializers).  json-c's own tokener also keeps
 * the source text of every double it parses as such userdata ("1.50",
 * "2e3"), but never a plain digit string, since it parses those as ints.
 * So: a double whose userdata is a digit string is a kept big integer;
 * any other double is a float.  Nobody may attach non-string userdata to
 * a double.
 *
 * Every function here is thread-safe.
 */
#ifndef AUR_JSON_INT_H
#define AUR_JSON_INT_H

#include "aur_setup.h"
#include "quote_span.h"
#include "utf8.h" /* aur__utf8_next: every UTF-8 check */

struct json_object;

/* strtod in the "C" locale, whatever the process locale is. */
double aur__json_strtod(const char *s);

/* Room for any aur__json_repr_double result plus the NUL. */
#define AUR__JSON_REPR_SIZE 32

/*
 * Python repr() of a finite double into buf (at least AUR__JSON_REPR_SIZE
 * bytes): the shortest digits that round-trip, fixed notation for decimal
 * exponents in [-4, 16) (always with a fraction), else d[.ddd]e+XX.
 * Returns the length, or -1 if d is not finite.
 */
int aur__json_repr_double(double d, char *buf, size_t size);

/* The UTF-8 form of code point cp (at most 0x10FFFF) in u; its length. */
size_t aur__json_utf8_put(unsigned char u[4], unsigned cp);

/* How many bytes of s[0..n) from the start are plain, that is stand for
 * themselves in a JSON string: printable ASCII but the quote and the
 * backslash.  Eight at a time (quote_span.h). */
static inline size_t aur__json_plain_span(const unsigned char *s, size_t n)
{
    return aur__quote_span(s, n, true);
}

/* If v is a kept big integer, set *digits (borrowed from v) and return
 * true. */
bool aur__json_big_digits(struct json_object *v, const char **digits);

#endif
