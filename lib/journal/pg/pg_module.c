/*
 * pg_module.c - the PostgreSQL journal module's face: open (parse the
 * URI, first connection and migration), close (wiping the secrets),
 * state, and the ops table behind the one exported symbol.
 */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Open, close, state                                                 */
/* ------------------------------------------------------------------ */

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static void pg_close(void *h)
{
    struct pg *b = h;
    size_t i;
    if (!b)
        return;
    PQfinish(b->conn);
    wipe_free(b->uri);
    wipe_free(b->password);
    wipe_free(b->uri_password);
    for (i = 0; i < sizeof b->scratch / sizeof *b->scratch; i++)
        pg__buf_free(&b->scratch[i]);
    free(b);
}

/*
 * What the URI says that is needed before connecting: that it parses
 * (libpq's parse errors quote the offending text, which may be the
 * password, so they are not shown), its password (blanked from messages)
 * and its connect_timeout (the attempts here are non-blocking, so libpq
 * would not apply it).  The parsed copy is wiped before it is freed.
 */
static int parse_uri(struct pg *b, struct aur_error *err)
{
    char *msg = NULL;
    PQconninfoOption *o = PQconninfoParse(b->uri, &msg), *p;
    int rc = AUR_OK;

    if (!o) {
        if (msg) {
            explicit_bzero(msg, strlen(msg));
            PQfreemem(msg);
        }
        return aur_fail(err, AUR_E_JOURNAL, 0,
                        "journal: the PostgreSQL URI does not parse (it is "
                        "not shown: it may hold a password)");
    }
    for (p = o; p->keyword; p++) {
        if (!p->val)
            continue;
        if (strcmp(p->keyword, "password") == 0 && *p->val &&
            !(b->uri_password = strdup(p->val)))
            rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        if (strcmp(p->keyword, "connect_timeout") == 0) {
            /* libpq: 0 or less waits for ever (bounded here), 1 is 2 */
            long s = strtol(p->val, NULL, 10);
            b->connect_ms = s <= 0 ? 60000 : s < 2 ? 2000 : s * 1000;
        }
        explicit_bzero(p->val, strlen(p->val));
    }
    PQconninfoFree(o);
    return rc;
}

static int pg_open(const char *target, const struct aur__jopts *o,
                   void **out, struct aur_error *err)
{
    struct pg *b;
    int rc;

    *out = NULL;
    if (!target || (strncmp(target, "postgresql://", 13) != 0 &&
                    strncmp(target, "postgres://", 11) != 0))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "journal: not a postgresql:// URI");
    b = calloc(1, sizeof *b);
    if (!b)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    b->wait_ms = o && o->wait_ms > 0 ? o->wait_ms : 0;
    b->data_equal = o ? o->data_equal : NULL;
    b->connect_ms = 5000;
    snprintf(b->target, sizeof b->target, "(not connected)");
    b->uri = strdup(target);
    if (!b->uri || (o && o->password && !(b->password = strdup(o->password)))) {
        pg_close(b);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    rc = parse_uri(b, err);
    if (rc == AUR_OK)
        rc = pg__connect_first(b, err);
    if (rc != AUR_OK) {
        pg_close(b);
        return rc;
    }
    b->last_error[0] = '\0';
    *out = b;
    return AUR_OK;
}

static void pg_state(void *h, struct aur__jstate *st)
{
    struct pg *b = h;
    st->backend = "postgresql";
    snprintf(st->target, sizeof st->target, "%s", b->target);
    st->reconnects = b->reconnects;
    st->failures = b->failures;
    snprintf(st->last_error, sizeof st->last_error, "%s", b->last_error);
    if (!b->down) {
        st->state = "connected";
        st->down_ms = 0;
    } else {
        st->down_ms = pg__now_ms() - b->down_since;
        st->state = st->down_ms < b->wait_ms ? "reconnecting" : "unavailable";
    }
}

/* ------------------------------------------------------------------ */
/* The module's entry                                                 */
/* ------------------------------------------------------------------ */

static const struct aur__journal_ops pg_ops = {
    .version = AUR__JOURNAL_BACKEND_VERSION,
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .append = pg__append,
    .head = pg__head,
    .read = pg__read,
    .count = pg__count,
    .wait = pg__wait,
    .state = pg_state,
};

const struct aur__journal_ops *aur_journal_pg_ops(void)
{
    return &pg_ops;
}
