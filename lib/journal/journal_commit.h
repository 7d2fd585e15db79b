/*
 * journal_commit.h - the front's rules for commits, shared by journal.c:
 * what a valid commit is, the row a backend stores for it, and the JSON
 * object a stored commit reads back as.  Pure functions on their
 * arguments; no lock of their own.
 */
#ifndef AUR_JOURNAL_COMMIT_H
#define AUR_JOURNAL_COMMIT_H

#include "aur_setup.h"

#include "journal_backend.h"
#include "rfc3339.h"

struct json_object;

/* Deepest container nesting accepted in commit data (the top object is
 * level 1).  Reading back uses a tokener with room to spare. */
#define AUR__JOURNAL_MAX_DEPTH 128
#define AUR__JOURNAL_TOKENER_DEPTH (2 * AUR__JOURNAL_MAX_DEPTH)
/* Most scopes one commit may name. */
#define AUR__JOURNAL_MAX_SCOPES 256

/* A validated commit and its row.  Borrows the commit's strings; scopes
 * points at stack_scopes or the heap (aur__jprep_free). */
struct aur__jprep {
    struct aur__jrow row;
    const char **scopes; /* sorted, distinct */
    const char *stack_scopes[16];
    char occurred_at[AUR__UTC_SIZE];
};

/* Validate c and fill p's row, all but data (AUR_E_INVAL naming what is
 * wrong; AUR_E_NOMEM).  p needs aur__jprep_free either way. */
int aur__jprep_make(const struct aur_commit *c, struct aur__jprep *p,
                    struct aur_error *err);
/* Fill p's row.data from c->data and check the data rules on that text
 * (finite numbers, nesting; AUR_E_INVAL naming them).  Under the
 * journal's lock: json-c caches the text inside the object, so two
 * appends of one shared object must not race. */
int aur__jprep_data(struct aur__jprep *p, const struct aur_commit *c,
                    struct aur_error *err);
void aur__jprep_free(struct aur__jprep *p);

/* The object `aurora-mcp journal` prints for r (docs/aurora-mcp.1).
 * *out transfer. */
int aur__jread_json(const struct aur__jread *r, struct json_object **out,
                    struct aur_error *err);

/* Stored commit data text[0..len) (must be one JSON object).  *out
 * transfer.  AUR_E_JOURNAL if the text is not an object. */
int aur__journal_parse_data(const char *text, size_t len,
                            struct json_object **out, struct aur_error *err);

/* 1 if two data texts are the same JSON object (key order aside). */
int aur__journal_data_equal(const char *a, size_t alen, const char *b,
                            size_t blen);

#endif
