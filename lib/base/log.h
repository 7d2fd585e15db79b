/*
 * log.h - the host log: one struct aur__log per host (its level, its
 * optional file, and a sink the embedding program may give it instead of
 * stderr), so two hosts in one process never re-target each other's log.
 * A NULL log is the process default (stderr at INFO, aur__log_setup),
 * for code that runs without a host.
 *
 * Never pass environment values, tokens, tool arguments or results, or
 * event data: nothing here redacts for you.  Thread-safe: each line is
 * written whole under its log's mutex (stderr, shared by every log, has
 * its own).  Rate-limited per log and tag (bytes of output, with a
 * "suppressed N log lines" summary; ERROR always passes): see log.c and
 * docs/budgets.md, "Log volume".
 */
#ifndef AUR_LOG_H
#define AUR_LOG_H

#include "aur_setup.h"

#include <aurora/aur_host.h> /* aur_log_fn */

#include <stdarg.h>

struct aur__log;

/* A host's log at level, appending to path too (NULL = no file).
 * *out (transfer) only on AUR_OK; free with aur__log_close. */
int aur__log_open(int level, const char *path, struct aur__log **out,
                  struct aur_error *err);
/* Say what is still suppressed, close the file, free.  NULL allowed. */
void aur__log_close(struct aur__log *lg);

/* The process default's level and file; may be called again (the
 * previous file is closed).  teardown closes them. */
int aur__log_setup(int level, const char *path, struct aur_error *err);
void aur__log_teardown(void);

/* Set the level alone (clamped to ERROR..DEBUG); any thread. */
void aur__log_set_level(struct aur__log *lg, int level);
int aur__log_level(struct aur__log *lg);

/* Lines of lg go to fn (NULL: back to stderr) instead of stderr; the
 * file still gets them.  fn runs on the logging thread, one line at a
 * time per log (under its mutex: it must not log through lg). */
void aur__log_set_sink(struct aur__log *lg, aur_log_fn *fn, void *ud);

/* One line "<time> <LEVEL> <tag>: <message>". tag may be NULL. */
void aur__log(struct aur__log *lg, int level, const char *tag,
              const char *fmt, ...) AUR_PRINTF(4, 5);
void aur__vlog(struct aur__log *lg, int level, const char *tag,
               const char *fmt, va_list ap);

#endif
