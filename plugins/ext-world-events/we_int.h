/*
 * we_int.h - ext-world-events internals shared by its files: we_plugin.c
 * (descriptor, negotiation, sessions, status), we_validate.c (the payload
 * rules of docs/protocol.md) and we_writer.c (the
 * per-session queue and the thread that commits it in batches).
 *
 * Threads: we_event_parse is pure and reentrant.  The we_writer_*
 * functions are thread-safe per session (see each).  Ownership: struct
 * we_event only borrows from the payload it came from; the writer copies
 * what it keeps.
 */
#ifndef AUR_WE_INT_H
#define AUR_WE_INT_H

#include <aurora/aur_plugin.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "rfc3339.h" /* AUR__UTC_SIZE */

#define WE_CAP_KEY "org.aurorabot/world-events"
#define WE_METHOD_EVENT "notifications/org.aurorabot/world-events/event"
#define WE_METHOD_MESSAGE "notifications/message"
#define WE_LEGACY_LOGGER "aurora/event"

/* A validated event.  Strings and data borrowed from the payload; data
 * is NULL when the payload had none (= {}). */
struct we_event {
    const char *event_id;
    const char *scope;
    const char *kind;
    const char *summary;
    struct json_object *data;
    char occurred_at[AUR__UTC_SIZE]; /* converted to UTC (rfc3339.h) */
};

/*
 * Validate payload (borrowed) strictly, in the order docs/protocol.md
 * lists, and
 * fill *ev.  AUR_E_EVENT with err->msg naming the field (never a value)
 * on the first violation.
 */
int we_event_parse(struct json_object *payload, struct we_event *ev,
                   struct aur_error *err);

enum we_mode { WE_MODE_WORLD = 1, WE_MODE_LEGACY = 2 };

struct we_pending; /* one queued event, private to we_writer.c */
struct we_batch;   /* the writer thread's arrays, ditto */

/*
 * One App's event session.  The strings and mode are frozen after
 * accept_server.  The counters are read by status from any thread; the
 * ones the journal's answers move (committed, duplicates, queued, the
 * rejections of a batch) change together under mu, once per batch, so a
 * status read under mu adds up: every accepted event is in exactly one
 * of queued, committed, duplicates, rejected.  mu also guards everything
 * below it.
 */
struct we_session {
    struct we_session *next;
    const struct aur_host *host;
    bool batched; /* the host has world_write_batch (ABI >= 1.1) */
    struct aur_self *self;
    enum we_mode mode;
    char *app_scope; /* aurora:mcp:<P> */
    char *source;    /* mcp:<P> */
    char *id_prefix; /* mcp:<P>:event: */
    size_t id_prefix_len;
    atomic_bool ended; /* close began: nothing more is queued */
    atomic_uint_fast64_t received; /* every event notification seen */
    atomic_uint_fast64_t committed, duplicates, rejected, dropped;
    atomic_uint_fast64_t bad_payload, conflicts, write_failures; /* why */
    atomic_uint_fast64_t queued; /* accepted, the journal not yet asked */

    pthread_mutex_t mu;
    pthread_cond_t work;  /* writer: something queued, or stop */
    pthread_cond_t space; /* producers: room in the queue */
    struct we_pending **ring;
    size_t head, count;   /* ring[head .. head+count) modulo WE_QUEUE_MAX */
    bool stop, thread_started, thread_joined;
    pthread_t thread;
    struct we_batch *batch; /* the writer's; allocated with the thread */
    struct we_pending *spent; /* committed entries to free (we_writer.c) */
    /* duplicate counting for a host without world_write_batch (writer
     * thread only) */
    uint64_t *seen;
    size_t seen_cap, seen_n;
};

/* Most events queued per session: two batches, so the producer fills one
 * while the writer commits the other.  A flood beyond it waits in
 * on_notify (and so in the server's pipe) instead of growing memory;
 * each entry holds its commit's data tree, about 2 KiB for a small event. */
#ifndef WE_QUEUE_MAX
#define WE_QUEUE_MAX 2048
#endif
/* Most events per transaction, and the longest the writer waits after
 * the first queued event for more to join it. */
#ifndef WE_BATCH_MAX
#define WE_BATCH_MAX 1024
#endif
/* (the three are overridable at build time, e.g. a long linger for
 * instruction counts under valgrind, whose slowed producer would
 * otherwise never fill a batch) */
#ifndef WE_LINGER_MS
#define WE_LINGER_MS 2
#endif
/* How long on_notify waits for room before the event counts as a journal
 * failure (the journal's own busy timeout is 5 s per transaction). */
#define WE_QUEUE_WAIT_MS 30000

/* Set up s's queue (mu, conditions); the thread starts with the first
 * event.  AUR_E_NOMEM on failure (nothing to undo). */
int we_writer_init(struct we_session *s, struct aur_error *err);

/*
 * Queue a validated event for commit (copies what it needs from ev).
 * AUR_OK = queued; it is committed within one transaction's time, or at
 * we_writer_stop at the latest.  AUR_E_STATE = close began, not queued.
 * AUR_E_NOMEM / AUR_E_JOURNAL (queue stayed full) = not queued.  Called
 * by on_notify only (one thread per session).
 */
int we_writer_submit(struct we_session *s, const struct we_event *ev,
                     struct aur_error *err);

/*
 * Close the queue (later submits get AUR_E_STATE), commit everything still
 * queued and join the thread.  Idempotent; any thread but the writer.
 */
void we_writer_stop(struct we_session *s);

/* Free s (after we_writer_stop). */
void we_session_free(struct we_session *s);

#endif /* AUR_WE_INT_H */
