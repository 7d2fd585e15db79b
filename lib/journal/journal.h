/*
 * journal.h - the world journal: idempotent commits by commit_id, one
 * global order, per-scope sequences (docs/journal.md).  Two backends
 * behind one front (journal_backend.h): a SQLite file (WAL), the default,
 * and PostgreSQL, named by a postgresql:// URI and loaded on first use.
 *
 * Threads: every function may be called from any thread; one mutex per
 * handle serialises all backend work, aur__journal_follow's waits for new
 * commits included (up to idle_ms each): follow on a handle no one else
 * writes through, as the CLI's `journal --follow` does.  Ownership:
 * commits and their strings borrowed for the call.
 */
#ifndef AUR_JOURNAL_H
#define AUR_JOURNAL_H

#include "aur_setup.h"

struct aur__journal;
struct aur__jstate;
struct json_object;

/* How to reach a journal beyond its target (all optional). */
struct aur__journal_conf {
    /* PostgreSQL: the password, already read from the environment;
     * borrowed for the open (the backend keeps its own copy) */
    const char *password;
    /* PostgreSQL: how long a batch waits for the database to come back
     * before its commits fail (0 = the default, 10 000 ms) */
    int64_t wait_ms;
};

/* true if target names a PostgreSQL database rather than a file. */
bool aur__journal_is_uri(const char *target);

/* Open or create the journal at target: a file path (parent directories
 * created) or a postgresql:// URI.  conf may be NULL.  A newer schema
 * version than supported, a foreign database, an unreachable server:
 * AUR_E_JOURNAL.  *out transfer. */
int aur__journal_open(const char *target, const struct aur__journal_conf *conf,
                      struct aur__journal **out, struct aur_error *err);
void aur__journal_close(struct aur__journal *j);
/* Begin copying what is committed into the store (SQLite: the WAL's
 * checkpoint and its syncs) on a thread of the journal's own, so that it
 * runs while the caller does other work before aur__journal_close (which
 * joins it, then copies and syncs only what came since).  Nothing about
 * what is committed or durable changes.  Writes may go on meanwhile; they
 * wait for the lock as for any other call.  Once per handle, owner
 * thread; a journal with nothing to settle or no thread: nothing. */
void aur__journal_settle(struct aur__journal *j);
/* Ahead of a run's first write (a host's start), do on a thread of the
 * journal's own what would make that write wait (SQLite: the sync of an
 * emptied WAL's new header), so that it overlaps the caller's work.  No
 * commit and nothing durable changes; it never waits for another
 * connection's lock.  Once per handle, owner thread, joined by close; a
 * journal with nothing to do or no thread: nothing. */
void aur__journal_prime(struct aur__journal *j);

/*
 * Append one commit.  Same commit_id with the same kind, source, summary,
 * scope set and data (occurred_at not compared): AUR_OK, *inserted = 0,
 * nothing written.  Different content: AUR_E_CONFLICT, nothing written.
 * New: per-scope sequences = max+1 (allocated in sorted scope order),
 * *inserted = 1, *seq = the global insertion sequence.  occurred_at NULL
 * = now (UTC).  seq and inserted optional.
 */
int aur__journal_append(struct aur__journal *j, const struct aur_commit *c,
                        int64_t *seq, int *inserted, struct aur_error *err);

/*
 * Append v[0..n) in one transaction.  results[i] (writable, n entries):
 * AUR_OK = inserted; AUR_DECLINE (1) = already present with the same
 * content (also when an earlier item of this batch wrote it), nothing
 * written; AUR_E_CONFLICT; AUR_E_INVAL for an invalid commit.  None of
 * the last three stops the others, and nothing of such an item is
 * written.  Returns AUR_OK once the transaction committed.  A storage
 * failure undoes the whole batch: AUR_E_JOURNAL (or AUR_E_NOMEM) and every
 * results[i] set to it.  v and its commits borrowed.
 */
int aur__journal_append_batch(struct aur__journal *j,
                              const struct aur_commit *const *v, size_t n,
                              int *results, struct aur_error *err);

/*
 * Visit commits with seq > after (and touching scope, if non-NULL) in
 * seq order.  Each is the JSON object `aurora-mcp journal` prints
 * (docs/aurora-mcp.1):
 * {"seq","commit_id","kind","source","summary","occurred_at","scopes",
 * "data"}, borrowed for the callback.  A non-zero return stops.
 * Commits are read in pages and fn runs without the journal
 * lock, so fn may append; commits appended after the call started are
 * not visited.
 */
int aur__journal_each(struct aur__journal *j, int64_t after,
                      const char *scope,
                      int (*fn)(void *ud, struct json_object *commit),
                      void *ud, struct aur_error *err);

/*
 * aur__journal_each, then every commit as it is committed (by any host),
 * until fn returns non-zero.  While nothing new comes, fn is called with
 * commit NULL about every idle_ms, so the caller can stop.  A database
 * that is away is waited for, not an error.
 */
int aur__journal_follow(struct aur__journal *j, int64_t after,
                        const char *scope, int idle_ms,
                        int (*fn)(void *ud, struct json_object *commit),
                        void *ud, struct aur_error *err);

/* The backend's state for status (journal_backend.h). */
void aur__journal_state(struct aur__journal *j, struct aur__jstate *st);

/* Number of commits (for tests). */
int64_t aur__journal_count(struct aur__journal *j);

#endif
