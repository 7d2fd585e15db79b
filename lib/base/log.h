/*
 * log.h - the host log: stderr always, plus an optional file.
 *
 * Never pass environment values, tokens, tool arguments or results, or
 * event data: nothing here redacts for you.  Thread-safe: each line is
 * written whole under one mutex.  Rate-limited per tag (bytes of output,
 * with a "suppressed N log lines" summary; ERROR always passes): see
 * log.c and docs/budgets.md, "Log volume".
 */
#ifndef AUR_LOG_H
#define AUR_LOG_H

#include "aur_setup.h"

#include <stdarg.h>

/* Set the level and (optionally) a log file to append to.  path NULL =
 * stderr only.  May be called again; the previous file is closed. */
int aur__log_setup(int level, const char *path, struct aur_error *err);
void aur__log_teardown(void);
/* Set the level alone (clamped to ERROR..DEBUG); any thread. */
void aur__log_set_level(int level);
int aur__log_level(void);

/* One line "<time> <LEVEL> <tag>: <message>". tag may be NULL. */
void aur__log(int level, const char *tag, const char *fmt, ...)
    AUR_PRINTF(3, 4);
void aur__vlog(int level, const char *tag, const char *fmt, va_list ap);

#endif
