/*
 * pg_read.c - the PostgreSQL journal's read side: the head, pages of
 * commits, the count, and waiting for the head to move (LISTEN and
 * NOTIFY).
 *
 * Reads need no transaction: a commit and its scope rows become visible
 * together and never change after, so a page and the scopes of its
 * commits, read by two statements, always agree.
 */
#include "pg_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Commits per page query: bounds the memory of one result whatever max
 * the caller passes. */
#define READ_CHUNK 512
/* The scratch buffer reads use (append uses the ones before it). */
#define B_READ 11

/* ------------------------------------------------------------------ */
/* Head, pages, count                                                 */
/* ------------------------------------------------------------------ */

int pg__head(void *h, int64_t *seq, struct aur_error *err)
{
    struct pg *b = h;
    PGresult *r;
    int rc = pg__query(b, PG_HEAD, 0, NULL, NULL, "reading the head", &r, err);
    if (rc != AUR_OK)
        return rc;
    *seq = PQntuples(r) > 0 ? pg__col_i64(r, 0, 0) : 0;
    PQclear(r);
    return AUR_OK;
}

int64_t pg__count(void *h)
{
    PGresult *r;
    int64_t n = -1;
    if (pg__query(h, PG_COUNT, 0, NULL, NULL, "counting", &r, NULL) != AUR_OK)
        return -1;
    if (PQntuples(r) > 0)
        n = pg__col_i64(r, 0, 0);
    PQclear(r);
    return n;
}

/* The scope rows of the commits of page (one statement for them all),
 * then fn for each commit in order; *last = the last seq visited. */
static int visit(struct pg *b, const PGresult *page,
                 int (*fn)(void *ud, const struct aur__jread *c), void *ud,
                 size_t *n, bool *stop, int64_t *last, struct aur_error *err)
{
    struct pg_buf *lit = &b->scratch[B_READ];
    int rows = PQntuples(page), i, p = 0, ns, rc;
    const char *v[1], **scopes = NULL;
    int lens[1];
    int64_t *seqv = NULL;
    PGresult *sr;

    pg__arr_begin(lit, PG_OID_INT8);
    for (i = 0; i < rows; i++)
        pg__arr_i64(lit, pg__col_i64(page, i, 0));
    if (!(v[0] = pg__arr_end(lit)))
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    lens[0] = (int)lit->len;
    rc = pg__query(b, PG_SCOPES, 1, v, lens, "reading scopes", &sr, err);
    if (rc != AUR_OK)
        return rc;
    ns = PQntuples(sr);
    scopes = malloc((size_t)(ns ? ns : 1) * sizeof *scopes);
    seqv = malloc((size_t)(ns ? ns : 1) * sizeof *seqv);
    if (!scopes || !seqv)
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    /* both results are in seq order: one merge pass */
    for (i = 0; rc == AUR_OK && i < rows && !*stop; i++) {
        struct aur__jread c;
        int start;
        memset(&c, 0, sizeof c);
        c.seq = pg__col_i64(page, i, 0);
        while (p < ns && pg__col_i64(sr, p, 0) < c.seq)
            p++;
        for (start = p; p < ns && pg__col_i64(sr, p, 0) == c.seq; p++) {
            scopes[p] = PQgetvalue(sr, p, 1);
            seqv[p] = pg__col_i64(sr, p, 2);
        }
        c.row.commit_id = PQgetvalue(page, i, 1);
        c.row.kind = PQgetvalue(page, i, 2);
        c.row.source = PQgetvalue(page, i, 3);
        c.row.summary = PQgetvalue(page, i, 4);
        c.row.occurred_at = PQgetvalue(page, i, 5);
        c.row.data = PQgetvalue(page, i, 6);
        c.row.data_len = (size_t)PQgetlength(page, i, 6);
        c.row.scopes = scopes + start;
        c.row.n_scopes = (size_t)(p - start);
        c.sequences = seqv + start;
        (*n)++;
        *last = c.seq;
        *stop = fn(ud, &c) != 0;
    }
    free(scopes);
    free(seqv);
    PQclear(sr);
    return rc;
}

int pg__read(void *h, int64_t after, int64_t upto, const char *scope,
             size_t max, int (*fn)(void *ud, const struct aur__jread *c),
             void *ud, size_t *n, struct aur_error *err)
{
    struct pg *b = h;
    bool stop = false;
    int rc = AUR_OK;

    *n = 0;
    if (!fn)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: no callback");
    while (rc == AUR_OK && !stop && *n < max && after < upto) {
        size_t want = max - *n < READ_CHUNK ? max - *n : READ_CHUNK;
        char a[24], u[24], l[24];
        const char *v[4] = {pg__i64(a, after), pg__i64(u, upto),
                            pg__i64(l, (int64_t)want), scope};
        PGresult *page;
        int rows;

        rc = pg__query(b, scope ? PG_PAGE_SCOPE : PG_PAGE, scope ? 4 : 3, v,
                       NULL, "reading commits", &page, err);
        if (rc != AUR_OK)
            break;
        rows = PQntuples(page);
        if (rows > 0)
            rc = visit(b, page, fn, ud, n, &stop, &after, err);
        PQclear(page);
        if ((size_t)rows < want)
            break;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Waiting                                                            */
/* ------------------------------------------------------------------ */

/* Take what the server sent; the number of notifications, -1 when the
 * session is gone (the handle is then down). */
static int drain(struct pg *b)
{
    PGnotify *nf;
    int n = 0;
    if (!PQconsumeInput(b->conn)) {
        pg__failed(b, NULL, "wait", NULL);
        return -1;
    }
    while ((nf = PQnotifies(b->conn))) {
        PQfreemem(nf);
        n++;
    }
    return n;
}

/*
 * Every append NOTIFYs aurora_world inside its transaction, so the
 * notification arrives when the commit is visible.  LISTEN comes before
 * the look at the head: a commit after the look is then always heard.
 * A database that is away is waited out (reconnecting when the backoff
 * allows), not reported: state() says it is down.
 */
int pg__wait(void *h, int64_t seq, int timeout_ms, struct aur_error *err)
{
    struct pg *b = h;
    int64_t end = pg__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    uint64_t checked = 0; /* the session whose head was read; 0 = none */
    PGresult *r;
    enum pg_err kind;

    for (;;) {
        int64_t now = pg__now_ms(), left = end - now;
        if (!b->conn) {
            if (left <= 0)
                return AUR_OK;
            pg__revive(b, end);
            continue;
        }
        if (!b->listening) {
            r = PQexec(b->conn, "LISTEN aurora_world");
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                kind = pg__failed(b, r, "listen", err);
                PQclear(r);
                if (kind == PG_ERR_CONN)
                    continue;
                return AUR_E_JOURNAL;
            }
            PQclear(r);
            b->listening = true;
        }
        if (checked != b->generation) {
            int64_t head;
            /* what came before this look is covered by it */
            if (drain(b) < 0)
                continue;
            if (pg__exec(b, PG_HEAD, 0, NULL, NULL, "wait", &r, &kind, err) !=
                AUR_OK) {
                if (kind == PG_ERR_CONN)
                    continue;
                return AUR_E_JOURNAL;
            }
            head = PQntuples(r) ? pg__col_i64(r, 0, 0) : 0;
            PQclear(r);
            checked = b->generation;
            if (head > seq)
                return AUR_OK;
        }
        int got = drain(b);
        if (got < 0)
            continue;
        if (got > 0 || left <= 0)
            return AUR_OK;
        struct pollfd pfd = {PQsocket(b->conn), POLLIN, 0};
        if (poll(&pfd, 1, left > 60000 ? 60000 : (int)left) < 0 &&
            errno != EINTR)
            return pg__fail(b, err, "wait", strerror(errno));
    }
}

