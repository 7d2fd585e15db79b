/*
 * journal_fixture.h - check_journal's fixture: a fresh journal path per
 * test under a temporary directory, commits built on the stack, the
 * journal walked into text lines, and raw SQL against the file.  Test
 * thread only, except append(), which concurrent_writers calls from many.
 */
#ifndef AUR_TEST_JOURNAL_FIXTURE_H
#define AUR_TEST_JOURNAL_FIXTURE_H

#include "journal.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

extern char tmpdir[64];
/* <tmpdir>/data/world/world.sqlite3, or with AUR_TEST_JOURNAL_URI set
 * (tests/support/with_pg.sh), the URI of a database made for the test:
 * the same suite runs against both backends. */
extern char dbpath[256];
bool on_pg(void);
/* The table holding the schema version: schema_meta, aurora_schema. */
const char *schema_table(void);

/* Check fixtures: make tmpdir; remove it with everything in it. */
void setup(void);
void teardown(void);
struct aur__journal *open_ok(void);

/* A commit built on the stack; data parsed from JSON text (NULL = none). */
struct tc {
    struct aur_commit c;
    const char *scopes[8];
};
/* mk: scopes_csv split at commas (at most 8); data parsed from JSON text
 * (NULL = none), released by unmk. */
void mk(struct tc *t, const char *id, const char *summary,
        const char *scopes_csv, const char *data_json);
void unmk(struct tc *t);
int append(struct aur__journal *j, struct tc *t, int64_t *seq, int *inserted,
           struct aur_error *err);
/* Append a new commit; asserts it was inserted. */
void append_ok(struct aur__journal *j, const char *id, const char *scopes,
               const char *data);

/* Collects every visited commit as compact text. */
struct lines {
    char *v[64];
    size_t n;
    size_t stop_after; /* 0 = never */
};
int collect(void *ud, struct json_object *o);
void lines_free(struct lines *l);
void each_ok(struct aur__journal *j, int64_t after, const char *scope,
             struct lines *l);
/* The scopes object of visited line i, as text in buf. */
const char *scopes_of(struct lines *l, size_t i, char *buf, size_t size);

/* SQLite: the size of dbpath's WAL file; -1 when there is none. */
long long wal_bytes(void);

/* One integer from a query, or run a statement, on dbpath directly
 * (SQLite or libpq). */
int64_t sql_int(const char *sql);
void sql_exec(const char *sql);

#endif
