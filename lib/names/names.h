/*
 * names.h - the name grammars of docs/protocol.md (full-match, ASCII
 * classes; lengths in Unicode code points).  Pure functions, thread-safe.
 */
#ifndef AUR_NAMES_H
#define AUR_NAMES_H

#include "aur_setup.h"

#include "env_rule.h"

/* [a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+ */
bool aur__valid_package(const char *s);
/* [A-Za-z][A-Za-z0-9_-]* */
bool aur__valid_raw_name(const char *s);
/* builtin ids: aur(\.[a-z][a-z0-9_-]*){2,} */
bool aur__valid_builtin_id(const char *s);
/* Scope: non-empty, no surrounding (Python) whitespace, <= 256 code
 * points, no U+0000..U+001F, valid UTF-8. */
bool aur__valid_scope(const char *s);
/* Event id: [A-Za-z0-9][A-Za-z0-9._:-]{0,159} */
bool aur__valid_event_id(const char *s);

/* Number of code points of valid UTF-8 s, or -1 if s is not UTF-8. */
long aur__utf8_len(const char *s, size_t n);

/*
 * agents.ini patterns (README: Configuration): segments split on '.',
 * '*' any run of non-dot chars, '?' one non-dot char, [..] [!..] [^..] classes, a segment
 * that is exactly "**" matches anything including dots.  The leading '!'
 * of an exclusion is not part of pat.
 */
bool aur__pattern_match(const char *pat, const char *id);
/* True if pat contains a wildcard character (* ? [). */
bool aur__pattern_has_wildcard(const char *pat);

#endif
