/*
 * nosigpipe.h - writing to a pipe whose reader may be gone without
 * touching the process's SIGPIPE disposition, which belongs to the
 * program that embeds us: the signal is blocked on the writing thread
 * alone, and the one the write raised is taken back.  For the core's
 * stderr log and transport-stdio's writes to an App.  Compiled into each
 * binary that uses it, never exported.  Thread-safe (per-thread state).
 */
#ifndef AURX_NOSIGPIPE_H
#define AURX_NOSIGPIPE_H

#include <signal.h>
#include <stdbool.h>

struct aur__nosigpipe {
    sigset_t old;
    bool masked;      /* the process does not ignore SIGPIPE: blocked here */
    bool was_pending; /* one was already pending on this thread: not ours */
};

/* Before the write.  When the process already ignores SIGPIPE this costs
 * one system call and blocks nothing. */
void aur__nosigpipe_begin(struct aur__nosigpipe *s);

/* After it; epipe: the write failed with EPIPE (so it raised one). */
void aur__nosigpipe_end(struct aur__nosigpipe *s, bool epipe);

#endif
