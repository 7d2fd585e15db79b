/*
 * journal.h - the world journal: SQLite (WAL), schema versioned,
 * idempotent commits by commit_id (README: The world journal).
 *
 * Threads: every function may be called from any thread; one internal
 * mutex serialises writers.  Ownership: commit and its strings borrowed.
 */
#ifndef AUR_JOURNAL_H
#define AUR_JOURNAL_H

#include "aur_setup.h"

struct aur__journal;
struct json_object;

/* Open or create the journal at path (parent directories created).  A
 * newer schema version than supported: AUR_E_JOURNAL. */
int aur__journal_open(const char *path, struct aur__journal **out,
                      struct aur_error *err);
void aur__journal_close(struct aur__journal *j);

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

/* Number of commits (for tests). */
int64_t aur__journal_count(struct aur__journal *j);

#endif
