/*
 * we_writer.c - group commit of business events (docs/protocol.md).
 *
 * The App's dispatch thread delivers notifications one at a time; one
 * SQLite transaction per event made the journal's commit overhead (lock,
 * WAL frames of every touched page) the cost of an event.  So on_notify
 * only validates and queues; one writer thread per session takes
 * everything queued (at most WE_BATCH_MAX) and commits it with one
 * world_write_batch.  It waits at most WE_LINGER_MS after the first
 * queued event for the batch to fill, so a lone event is committed within
 * a few milliseconds and a flood in transactions of WE_BATCH_MAX.
 *
 * Guarantees kept from the one-at-a-time path: the journal decides
 * idempotency (a repeat inside one batch is "already present"), a refused
 * commit writes nothing, a storage failure undoes the whole batch and
 * counts every event in it as journal_error, counters move only once the
 * journal has answered, and we_writer_stop commits what is queued before
 * the session ends.
 *
 * Threads: producers (on_notify) and the writer meet under s->mu; the
 * writer does all journal work and all counting outside it.
 */
/* clock_gettime, pthread_condattr_setclock */
#define _POSIX_C_SOURCE 200809L

#include "we_int.h"

#include "mono.h"
#include "thread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A validated event, copied out of the notification: the params object
 * is borrowed and json-c's reference counts are not atomic, so nothing
 * of it may be kept for another thread.  data is the commit's data
 * object, built afresh by the producer (commit_data) and owned by this
 * entry; the strings live in buf. */
struct we_pending {
    struct we_pending *next; /* on the session's spent list */
    const char *commit_id; /* mcp:<P>:event:<event_id> */
    const char *event_id;  /* the tail of commit_id */
    const char *summary, *scope, *occurred_at;
    struct json_object *data; /* {"event_id","event_kind","data"} */
    char buf[];
};

static void pending_free(struct we_pending *p)
{
    if (p) {
        json_object_put(p->data);
        free(p);
    }
}

/* Entries the writer is done with go back to the producer to be freed
 * (freeing a data tree was a tenth of the writer's time per event, and
 * the writer is the busier thread): s->spent, under mu, taken whole by
 * the next submit, or freed by the writer itself before it sleeps, so
 * an idle session holds none.  Bounded by what one pass of the writer
 * committed since the last submit: at most the queue and a batch. */
static void spent_free(struct we_pending *p)
{
    while (p) {
        struct we_pending *next = p->next;
        pending_free(p);
        p = next;
    }
}

/* The writer's arrays, allocated once with the thread. */
struct we_batch {
    struct we_pending *p[WE_BATCH_MAX];
    struct aur_commit c[WE_BATCH_MAX];
    const struct aur_commit *v[WE_BATCH_MAX];
    const char *scopes[WE_BATCH_MAX][2];
    int res[WE_BATCH_MAX];
};

/* ---------------------------------------------------------------- */
/* Duplicate counting without world_write_batch                     */
/* ---------------------------------------------------------------- */

/* world_write answers AUR_OK for "written" and for "already present",
 * so without the batch service a repeat is told apart by remembering
 * the ids of this session (at most this many). */
#define SEEN_MAX (1u << 16)

static uint64_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static bool seen_grow(struct we_session *s)
{
    size_t cap = s->seen_cap ? s->seen_cap * 2 : 256;
    uint64_t *v = calloc(cap, sizeof *v);
    if (!v)
        return false;
    for (size_t i = 0; i < s->seen_cap; i++) {
        if (!s->seen[i])
            continue;
        size_t j = (size_t)s->seen[i] & (cap - 1);
        while (v[j])
            j = (j + 1) & (cap - 1);
        v[j] = s->seen[i];
    }
    free(s->seen);
    s->seen = v;
    s->seen_cap = cap;
    return true;
}

/* true if id was seen before; remembers it otherwise (while there is
 * room: past SEEN_MAX new ids are simply not remembered). */
static bool seen_check_add(struct we_session *s, const char *id)
{
    uint64_t h = hash_id(id);
    size_t j;

    if (s->seen_cap) {
        for (j = (size_t)h & (s->seen_cap - 1); s->seen[j];
             j = (j + 1) & (s->seen_cap - 1))
            if (s->seen[j] == h)
                return true;
    }
    if (s->seen_n >= SEEN_MAX)
        return false;
    if ((s->seen_n + 1) * 2 > s->seen_cap && !seen_grow(s))
        return false;
    for (j = (size_t)h & (s->seen_cap - 1); s->seen[j];
         j = (j + 1) & (s->seen_cap - 1))
        ;
    s->seen[j] = h;
    s->seen_n++;
    return false;
}

/* ---------------------------------------------------------------- */
/* Committing (writer thread)                                       */
/* ---------------------------------------------------------------- */

/* What one batch did, published at once (see commit_batch). */
struct tally {
    size_t committed, duplicates, conflicts, failures;
};

static void count_result(struct we_session *s, bool exact, int r,
                         const char *event_id, struct tally *t)
{
    if (r == AUR_OK && (exact || !seen_check_add(s, event_id)))
        t->committed++;
    else if (r == AUR_OK || r == AUR_DECLINE)
        t->duplicates++;
    else if (r == AUR_E_CONFLICT)
        t->conflicts++;
    else
        t->failures++;
}

/* Commit b->p[0..n) and count every one of them. */
static void commit_batch(struct we_session *s, struct we_batch *b, size_t n)
{
    bool exact = s->batched;
    struct tally t = {0};
    struct aur_error err;
    size_t i;
    int rc = AUR_OK;

    aur_error_clear(&err);
    for (i = 0; i < n; i++) {
        struct we_pending *p = b->p[i];
        b->scopes[i][0] = p->scope;
        b->scopes[i][1] = s->app_scope;
        b->c[i] = (struct aur_commit){
            .struct_size = sizeof b->c[i],
            .commit_id = p->commit_id,
            .kind = "mcp.event.received",
            .source = s->source,
            .summary = p->summary,
            .occurred_at = p->occurred_at,
            .scopes = b->scopes[i],
            .n_scopes = strcmp(p->scope, s->app_scope) == 0 ? 1 : 2,
            .data = p->data,
        };
        b->v[i] = &b->c[i];
    }
    if (exact) {
        rc = s->host->world_write_batch(s->self, b->v, n, b->res, &err);
        for (i = 0; rc != AUR_OK && i < n; i++)
            b->res[i] = rc;
    } else {
        for (i = 0; i < n; i++)
            b->res[i] = s->host->world_write(s->self, b->v[i], &err);
    }
    for (i = 0; i < n; i++) {
        count_result(s, exact, b->res[i], b->p[i]->event_id, &t);
        b->p[i]->next = i + 1 < n ? b->p[i + 1] : NULL;
    }
    /* Counts only: the journal's own texts may name a commit id.  Logged
     * before the counts are published, so whoever sees an event counted
     * as rejected finds its line in the log already. */
    if (t.conflicts)
        s->host->log(s->self, AUR_LOG_WARN,
                     "events: %zu rejected: event_id already committed with "
                     "different content", t.conflicts);
    if (t.failures)
        s->host->log(s->self, AUR_LOG_WARN,
                     "events: %zu rejected: %s", t.failures,
                     rc != AUR_OK ? aur_rc_word(rc) : "journal_error");
    /* under mu, which status also takes: a status never sees an event
     * both as queued and as answered, so its counts always add up */
    pthread_mutex_lock(&s->mu);
    b->p[n - 1]->next = s->spent;
    s->spent = b->p[0];
    atomic_fetch_add(&s->committed, t.committed);
    atomic_fetch_add(&s->duplicates, t.duplicates);
    atomic_fetch_add(&s->rejected, t.conflicts + t.failures);
    atomic_fetch_add(&s->conflicts, t.conflicts);
    atomic_fetch_add(&s->write_failures, t.failures);
    atomic_fetch_sub(&s->queued, n);
    pthread_mutex_unlock(&s->mu);
}

/* ---------------------------------------------------------------- */
/* The queue                                                        */
/* ---------------------------------------------------------------- */

static void *writer_main(void *arg)
{
    struct we_session *s = arg;
    struct we_batch *b = s->batch;
    struct timespec ts;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* idle: re-check at least every second */
        while (s->count == 0 && !s->stop) {
            if (s->spent) { /* nobody else will free them soon */
                struct we_pending *spent = s->spent;
                s->spent = NULL;
                pthread_mutex_unlock(&s->mu);
                spent_free(spent);
                pthread_mutex_lock(&s->mu);
                continue;
            }
            aur__mono_deadline(&ts, 1000);
            pthread_cond_timedwait(&s->work, &s->mu, &ts);
        }
        if (s->count == 0)
            break; /* stopped and drained */
        /* linger: let a burst fill the batch, but never hold the first
         * event back longer than WE_LINGER_MS */
        if (s->count < WE_BATCH_MAX && !s->stop) {
            aur__mono_deadline(&ts, WE_LINGER_MS);
            while (s->count < WE_BATCH_MAX && !s->stop)
                if (pthread_cond_timedwait(&s->work, &s->mu, &ts) ==
                    ETIMEDOUT)
                    break;
        }
        size_t n = s->count < WE_BATCH_MAX ? s->count : WE_BATCH_MAX;
        for (size_t i = 0; i < n; i++)
            b->p[i] = s->ring[(s->head + i) % WE_QUEUE_MAX];
        s->head = (s->head + n) % WE_QUEUE_MAX;
        s->count -= n;
        pthread_cond_broadcast(&s->space);
        pthread_mutex_unlock(&s->mu);
        commit_batch(s, b, n);
        pthread_mutex_lock(&s->mu);
    }
    struct we_pending *spent = s->spent;
    s->spent = NULL;
    pthread_mutex_unlock(&s->mu);
    spent_free(spent);
    return NULL;
}

int we_writer_init(struct we_session *s, struct aur_error *err)
{
    bool mu = false, work = false;

    s->ring = calloc(WE_QUEUE_MAX, sizeof *s->ring);
    if (!s->ring)
        goto fail;
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        goto fail;
    mu = true;
    if (aur__mono_cond_init(&s->work) == 0) {
        work = true;
        if (aur__mono_cond_init(&s->space) == 0)
            return AUR_OK;
    }
fail:
    if (work)
        pthread_cond_destroy(&s->work);
    if (mu)
        pthread_mutex_destroy(&s->mu);
    free(s->ring);
    s->ring = NULL;
    return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
}

static char *put_str(char **at, const char *src, size_t len)
{
    char *dst = *at;
    memcpy(dst, src, len);
    dst[len] = '\0';
    *at += len + 1;
    return dst;
}

/* The commit's data text, kept on its tree so that the journal prints
 * it instead of walking the tree again on the writer thread. */
struct data_text {
    size_t len;
    char text[];
};

static int print_data_text(struct json_object *o, struct printbuf *pb,
                           int level, int flags)
{
    const struct data_text *t = json_object_get_userdata(o);
    (void)level;
    (void)flags;
    return printbuf_memappend(pb, t->text, (int)t->len);
}

static void free_data_text(struct json_object *o, void *t)
{
    (void)o;
    free(t);
}

/* Append s[0..len) as a JSON string, escaped as json-c escapes it with
 * JSON_C_TO_STRING_NOSLASHESCAPE for text without control characters
 * (the validation refused those): only '"' and '\\'. */
static char *put_json_str(char *at, const char *s, size_t len)
{
    *at++ = '"';
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"' || s[i] == '\\')
            *at++ = '\\';
        *at++ = s[i];
    }
    *at++ = '"';
    return at;
}

/*
 * The commit's data object {"event_id","event_kind","data"}, private to
 * the entry (the params object is borrowed and json-c's reference counts
 * are not atomic), or NULL.  Its text is written once, here: the
 * payload's data as json-c prints it (big integers exact, through the
 * host parser's own serializer), in the wrapper json-c would print around
 * it; the tree is that text parsed by the host's parser, and it prints
 * as that text (the journal's one serialisation is then a copy).  One
 * print and one parse per event, where copying the data through its text
 * and printing the whole object again on the writer took two of each.
 */
static struct json_object *commit_data(struct we_session *s,
                                       const struct we_event *ev)
{
    static const char k_id[] = "{\"event_id\":", k_kind[] = ",\"event_kind\":",
                      k_data[] = ",\"data\":";
    size_t idl = strlen(ev->event_id), kl = strlen(ev->kind), dl = 2;
    const char *dt = "{}";
    struct json_object *d = NULL;
    struct data_text *t;
    char *at;

    if (ev->data) {
        dt = json_object_to_json_string_length(
            ev->data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
            &dl);
        if (!dt)
            return NULL;
    }
    t = malloc(sizeof *t + sizeof k_id + idl + 2 + sizeof k_kind + 2 * kl +
               2 + sizeof k_data + dl + 2);
    if (!t)
        return NULL;
    at = t->text;
    memcpy(at, k_id, sizeof k_id - 1);
    at = put_json_str(at + sizeof k_id - 1, ev->event_id, idl);
    memcpy(at, k_kind, sizeof k_kind - 1);
    at = put_json_str(at + sizeof k_kind - 1, ev->kind, kl);
    memcpy(at, k_data, sizeof k_data - 1);
    at += sizeof k_data - 1;
    memcpy(at, dt, dl);
    at += dl;
    *at++ = '}';
    *at = '\0';
    t->len = (size_t)(at - t->text);
    if (AUR_HAS(s->host, json_parse)) {
        if (s->host->json_parse(t->text, t->len, &d, NULL) != AUR_OK)
            d = NULL;
    } else {
        d = json_tokener_parse(t->text);
    }
    if (!json_object_is_type(d, json_type_object)) {
        json_object_put(d);
        free(t);
        return NULL;
    }
    json_object_set_serializer(d, print_data_text, t, free_data_text);
    return d;
}

/* The queue entry for ev, or NULL (out of memory).  Built on the
 * producer's thread, so the writer only talks to the journal. */
static struct we_pending *pending_new(struct we_session *s,
                                      const struct we_event *ev)
{
    size_t idl = strlen(ev->event_id), sul = strlen(ev->summary);
    size_t scl = strlen(ev->scope), atl = strlen(ev->occurred_at);
    struct json_object *o = commit_data(s, ev);
    struct we_pending *p;
    char *at;

    if (!o)
        return NULL;
    p = malloc(sizeof *p + s->id_prefix_len + idl + sul + scl + atl + 4);
    if (!p) {
        json_object_put(o);
        return NULL;
    }
    at = p->buf;
    p->commit_id = at;
    memcpy(at, s->id_prefix, s->id_prefix_len);
    at += s->id_prefix_len;
    p->event_id = put_str(&at, ev->event_id, idl);
    p->summary = put_str(&at, ev->summary, sul);
    p->scope = put_str(&at, ev->scope, scl);
    p->occurred_at = put_str(&at, ev->occurred_at, atl);
    p->data = o;
    return p;
}

int we_writer_submit(struct we_session *s, const struct we_event *ev,
                     struct aur_error *err)
{
    struct we_pending *p = pending_new(s, ev), *spent;
    struct timespec ts;
    int rc = AUR_OK;

    if (!p)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    pthread_mutex_lock(&s->mu);
    if (!s->stop && !s->thread_started) {
        if (!s->batch)
            s->batch = malloc(sizeof *s->batch);
        if (!s->batch ||
            aur__thread_start(&s->thread, writer_main, s) != 0)
            rc = aur_fail(err, AUR_E_NOMEM, 0,
                          "cannot start the event writer");
        else
            s->thread_started = true;
    }
    if (rc == AUR_OK && s->count == WE_QUEUE_MAX && !s->stop) {
        aur__mono_deadline(&ts, WE_QUEUE_WAIT_MS);
        while (s->count == WE_QUEUE_MAX && !s->stop)
            if (pthread_cond_timedwait(&s->space, &s->mu, &ts) == ETIMEDOUT)
                break;
        if (s->count == WE_QUEUE_MAX && !s->stop)
            rc = aur_fail(err, AUR_E_JOURNAL, 0,
                          "event queue full: the journal is not keeping up");
    }
    if (rc == AUR_OK && s->stop)
        rc = aur_fail(err, AUR_E_STATE, 0, "event dropped: host not active");
    if (rc == AUR_OK) {
        s->ring[(s->head + s->count) % WE_QUEUE_MAX] = p;
        s->count++;
        atomic_fetch_add(&s->queued, 1);
        /* the writer waits for the first event, then for a full batch */
        if (s->count == 1 || s->count == WE_BATCH_MAX)
            pthread_cond_signal(&s->work);
    }
    spent = s->spent;
    s->spent = NULL;
    pthread_mutex_unlock(&s->mu);
    spent_free(spent);
    if (rc != AUR_OK)
        pending_free(p);
    return rc;
}

void we_writer_stop(struct we_session *s)
{
    bool join;

    if (!s->ring)
        return;
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->ended, true);
    s->stop = true;
    join = s->thread_started && !s->thread_joined;
    s->thread_joined = true;
    pthread_cond_broadcast(&s->work);
    pthread_cond_broadcast(&s->space);
    pthread_mutex_unlock(&s->mu);
    /* bounded: the queue is, and so is each transaction (busy timeout) */
    if (join)
        pthread_join(s->thread, NULL);
}

void we_session_free(struct we_session *s)
{
    if (!s)
        return;
    if (s->ring) {
        /* only an unstarted writer can leave events (none: submit starts
         * it before queuing), but free whatever is there */
        for (size_t i = 0; i < s->count; i++)
            pending_free(s->ring[(s->head + i) % WE_QUEUE_MAX]);
        spent_free(s->spent);
        free(s->ring);
        pthread_cond_destroy(&s->space);
        pthread_cond_destroy(&s->work);
        pthread_mutex_destroy(&s->mu);
    }
    free(s->app_scope);
    free(s->source);
    free(s->id_prefix);
    free(s->seen);
    free(s->batch);
    free(s);
}
