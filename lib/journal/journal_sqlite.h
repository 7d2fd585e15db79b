/*
 * journal_int.h - shared between the journal*.c files only.
 *
 * journal.c opens the database, runs the schema migrations, prepares every
 * statement once and reads commits back; journal_append.c validates and
 * writes them.  The handle's mutex guards the connection and every cached
 * statement: hold it around any use of db or st[] (the connection is
 * opened SQLITE_OPEN_NOMUTEX because this lock already serialises it).
 */
#ifndef AUR_JOURNAL_INT_H
#define AUR_JOURNAL_INT_H

#include "aur_setup.h"

#include <pthread.h>
#include <sqlite3.h>

#include "journal.h"

/* Deepest container nesting accepted in commit data (the top object is
 * level 1).  Reading back uses a tokener with room to spare. */
#define AUR__JOURNAL_MAX_DEPTH 128
#define AUR__JOURNAL_TOKENER_DEPTH (2 * AUR__JOURNAL_MAX_DEPTH)
/* Most scopes one commit may name. */
#define AUR__JOURNAL_MAX_SCOPES 256

/* The cached statements, prepared once at open. */
enum aur__jst {
    AUR__JST_BEGIN,        /* BEGIN IMMEDIATE */
    AUR__JST_COMMIT,       /* COMMIT */
    AUR__JST_ROLLBACK,     /* ROLLBACK */
    AUR__JST_FIND,         /* commit by commit_id */
    AUR__JST_SCOPES,       /* (scope, sequence) of one commit, by scope */
    AUR__JST_INSERT,       /* one world_commits row */
    AUR__JST_INSERT_SCOPE, /* one scope row with sequence = max + 1 */
    AUR__JST_SCOPE_MAX,    /* the highest sequence of one scope */
    AUR__JST_INSERT_AT,    /* one scope row with a given sequence */
    AUR__JST_COUNT,        /* COUNT(*) */
    AUR__JST_MAX_SEQ,      /* MAX(seq) */
    AUR__JST_PAGE,         /* commits in (after, upto], seq order */
    AUR__JST_PAGE_SCOPE,   /* the same, only those touching ?4 */
    AUR__JST_N
};

struct aur__journal {
    pthread_mutex_t mu;
    sqlite3 *db;
    sqlite3_stmt *st[AUR__JST_N];
};

/* AUR_E_JOURNAL "journal: <what>: <sqlite message>", detail = src.
 * Call with j->mu held (the message belongs to the connection). */
int aur__journal_db_fail(struct aur__journal *j, int src, const char *what,
                         struct aur_error *err);

/* Parse stored commit data text[0..len) (must be one JSON object).
 * *out transfer.  AUR_E_JOURNAL if the text is not an object. */
int aur__journal_parse_data(const char *text, size_t len,
                            struct json_object **out, struct aur_error *err);

#endif
