/*
 * fdlimit.h - saying "out of file descriptors" the same way everywhere a
 * descriptor is made for an App (the core's startup error, transport-stdio's
 * pipes and spawn, transport-http's connections): which limit was hit and
 * how high it is, so the fix (raise it) is in the message.  Compiled into
 * each binary that uses it, never exported.  Thread-safe.
 */
#ifndef AURX_FDLIMIT_H
#define AURX_FDLIMIT_H

#include <stdbool.h>
#include <stddef.h>

/* The words every such message contains (tests and callers look for it). */
#define AUR__FD_WORDS "out of file descriptors"

/* e is EMFILE (this process is at RLIMIT_NOFILE) or ENFILE (the system's
 * table is full). */
bool aur__fd_exhausted(int e);

/* "out of file descriptors (EMFILE, limit 1024)" or "out of file
 * descriptors (ENFILE, system-wide limit 9223372036854775807)" (the limit
 * as it is now: RLIMIT_NOFILE's soft limit, or fs.file-max), into buf
 * (size bytes, always terminated); returns buf.  For any other e, its
 * strerror text. */
const char *aur__fd_text(int e, char *buf, size_t size);

/* Whether this process may open at least n more descriptors now: fewer
 * than RLIMIT_NOFILE's soft limit minus n are open (counted in
 * /proc/self/fd).  false when that cannot be told. */
bool aur__fd_room(size_t n);

#endif
