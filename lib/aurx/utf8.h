/*
 * utf8.h - strict UTF-8 decoding and Python's whitespace, written once for
 * the core (JSON, names, config) and the plugins that validate text
 * (scopes, event fields, App stderr).  Compiled into each binary that
 * uses it, never exported.  Pure functions; thread-safe.
 */
#ifndef AURX_UTF8_H
#define AURX_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The length of the well-formed UTF-8 sequence that starts s[0..n), n >= 1,
 * with its code point in *cp (cp may be NULL); 0 when it is not one: a
 * stray continuation byte, an overlong form, a surrogate, a value above
 * U+10FFFF or a sequence cut by n.  The same set Python's strict decoder
 * and RFC 3629 accept.
 */
size_t aur__utf8_next(const unsigned char *s, size_t n, uint32_t *cp);

/* s[0..n) is well-formed UTF-8 throughout (aur__utf8_next's set).  Runs
 * of ASCII are passed over eight bytes at a time. */
bool aur__utf8_valid(const unsigned char *s, size_t n);

/* Python's str.isspace() for one code point: what str.strip() removes. */
bool aur__py_space(uint32_t cp);

#endif
