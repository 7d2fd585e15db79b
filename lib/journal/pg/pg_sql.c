/*
 * pg_sql.c - what the PostgreSQL journal's files share below the
 * session: every statement's name and text (prepared on each new
 * session, pg_conn.c), decimal integers, and the binary arrays rows
 * travel in (one parameter per column, so nothing is formatted into
 * SQL).
 */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pg__stmt_name[PG_N_STMT] = {
    [PG_HEAD] = "aur_head",           [PG_LOCK] = "aur_lock",
    [PG_LOOKUP] = "aur_lookup",       [PG_SCOPE_MAX] = "aur_scope_max",
    [PG_INS_COMMITS] = "aur_ins_commits",
    [PG_INS_SCOPES] = "aur_ins_scopes", [PG_SET_HEAD] = "aur_set_head",
    [PG_PAGE] = "aur_page",           [PG_PAGE_SCOPE] = "aur_page_scope",
    [PG_SCOPES] = "aur_scopes",       [PG_COUNT] = "aur_count",
};

#define PAGE_COLS "seq, commit_id, kind, source, summary, occurred_at, data"

const char *const pg__stmt_sql[PG_N_STMT] = {
    /* a batch (pg_append.c) */
    [PG_LOCK] = "SELECT seq FROM world_head WHERE singleton = 1 FOR UPDATE",
    /* LEFT JOIN: a commit without scope rows cannot be written here, but
     * if one exists it must read as present (and conflict), not as new;
     * scopes in strcmp order, as rows have them */
    [PG_LOOKUP] = "SELECT c.seq, c.commit_id, c.kind, c.source, c.summary,"
                  " c.data, s.scope FROM world_commits AS c"
                  " LEFT JOIN world_commit_scopes AS s"
                  " ON s.commit_seq = c.seq"
                  " WHERE c.commit_id = ANY($1::text[])"
                  " ORDER BY c.seq, s.scope COLLATE \"C\"",
    /* one index descent per scope on the key (scope, sequence); a GROUP BY
     * would read every row of the table */
    [PG_SCOPE_MAX] = "SELECT u.i, (SELECT COALESCE(max(w.sequence), 0)"
                     " FROM world_commit_scopes AS w WHERE w.scope = u.s)"
                     " FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i)",
    /* seq = head + the row's place among the new rows */
    [PG_INS_COMMITS] =
        "INSERT INTO world_commits(seq, commit_id, kind, source, summary,"
        " occurred_at, data) SELECT $1::bigint + u.i, u.id, u.k, u.src,"
        " u.sm, u.t, u.d FROM unnest($2::text[], $3::text[], $4::text[],"
        " $5::text[], $6::text[], $7::text[])"
        " WITH ORDINALITY AS u(id, k, src, sm, t, d, i)",
    [PG_INS_SCOPES] = "INSERT INTO world_commit_scopes(commit_seq, scope,"
                      " sequence) SELECT * FROM unnest($1::bigint[],"
                      " $2::text[], $3::bigint[])",
    [PG_SET_HEAD] = "UPDATE world_head SET seq = $1 WHERE singleton = 1",
    /* reads (pg_read.c) */
    [PG_HEAD] = "SELECT seq FROM world_head WHERE singleton = 1",
    [PG_PAGE] = "SELECT " PAGE_COLS " FROM world_commits"
                " WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3",
    [PG_PAGE_SCOPE] = "SELECT " PAGE_COLS " FROM world_commits AS c"
                      " WHERE seq > $1 AND seq <= $2 AND EXISTS (SELECT 1"
                      " FROM world_commit_scopes AS s"
                      " WHERE s.commit_seq = c.seq AND s.scope = $4)"
                      " ORDER BY seq LIMIT $3",
    /* scopes in strcmp order, as journal_backend.h has them */
    [PG_SCOPES] = "SELECT commit_seq, scope, sequence"
                  " FROM world_commit_scopes"
                  " WHERE commit_seq = ANY($1::bigint[])"
                  " ORDER BY commit_seq, scope COLLATE \"C\"",
    [PG_COUNT] = "SELECT count(*) FROM world_commits",
};

const int *pg__formats(const int *lens, int n, int fmts[PG_MAX_PARAMS])
{
    int i;
    if (!lens)
        return NULL;
    for (i = 0; i < n && i < PG_MAX_PARAMS; i++)
        fmts[i] = lens[i] >= 0;
    return fmts;
}

const char *pg__i64(char buf[24], int64_t v)
{
    snprintf(buf, 24, "%lld", (long long)v);
    return buf;
}

int64_t pg__col_i64(const PGresult *r, int row, int col)
{
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* ------------------------------------------------------------------ */
/* Arrays, in the binary format                                       */
/* ------------------------------------------------------------------ */

/*
 * Rows travel as one-dimensional arrays in PostgreSQL's binary format:
 * a header (dimensions, no-nulls flag, element type, length, lower
 * bound), then each element as its length and its bytes.  The text form
 * ("{...}") made the server unescape every element, some 15% of its time
 * under the World's lock; the binary one is copied as it is.  All
 * integers big-endian.
 */
#define ARR_HEADER 20 /* ndim, flags, elemtype, dim, lbound */

static void put32(char *w, uint32_t v)
{
    w[0] = (char)(v >> 24);
    w[1] = (char)(v >> 16);
    w[2] = (char)(v >> 8);
    w[3] = (char)v;
}

void pg__buf_free(struct pg_buf *buf)
{
    free(buf->p);
    memset(buf, 0, sizeof *buf);
}

static bool reserve(struct pg_buf *buf, size_t more)
{
    size_t cap = buf->cap ? buf->cap : 256;
    char *p;
    if (buf->oom)
        return false;
    if (more > INT32_MAX - buf->len) { /* a parameter's length is an int */
        buf->oom = true;
        return false;
    }
    if (buf->len + more <= buf->cap)
        return true;
    while (cap < buf->len + more)
        cap *= 2;
    if (!(p = realloc(buf->p, cap))) {
        buf->oom = true;
        return false;
    }
    buf->p = p;
    buf->cap = cap;
    return true;
}

void pg__arr_begin(struct pg_buf *buf, uint32_t elem_oid)
{
    buf->len = 0;
    buf->n = 0;
    buf->oom = false;
    buf->oid = elem_oid;
    if (reserve(buf, ARR_HEADER))
        buf->len = ARR_HEADER; /* filled in by pg__arr_end */
}

void pg__arr_text(struct pg_buf *buf, const char *s, size_t len)
{
    if (len > INT32_MAX || !reserve(buf, 4 + len))
        return;
    put32(buf->p + buf->len, (uint32_t)len);
    memcpy(buf->p + buf->len + 4, s, len);
    buf->len += 4 + len;
    buf->n++;
}

void pg__arr_i64(struct pg_buf *buf, int64_t v)
{
    uint64_t u = (uint64_t)v;
    if (!reserve(buf, 12))
        return;
    put32(buf->p + buf->len, 8);
    put32(buf->p + buf->len + 4, (uint32_t)(u >> 32));
    put32(buf->p + buf->len + 8, (uint32_t)u);
    buf->len += 12;
    buf->n++;
}

const char *pg__arr_end(struct pg_buf *buf)
{
    if (buf->oom || buf->len < ARR_HEADER)
        return NULL;
    if (buf->n == 0) { /* an empty array has no dimensions */
        put32(buf->p, 0);
        put32(buf->p + 4, 0);
        put32(buf->p + 8, buf->oid);
        buf->len = 12;
        return buf->p;
    }
    put32(buf->p, 1);
    put32(buf->p + 4, 0);
    put32(buf->p + 8, buf->oid);
    put32(buf->p + 12, buf->n);
    put32(buf->p + 16, 1);
    return buf->p;
}
