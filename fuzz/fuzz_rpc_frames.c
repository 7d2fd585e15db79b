/*
 * fuzz_rpc_frames.c - libFuzzer target for JSON-RPC frame intake and
 * response correlation (lib/rpc/rpc.c behind lib/jsonx/jsonx_parse.c).
 *
 * Per input: open a struct aur__rpc over a fake in-process transport
 * (open keeps the sink, send serialises and counts, close does nothing),
 * register pending requests - integer ids 0..3, string ids "probe",
 * "1" (same digits as an integer id: ids are type-sensitive) and "p-2",
 * plus a detached "listen"; the even integer ids are tools/calls whose
 * waiter takes a reply as text - then feed the input split on '\n' as
 * frames: even lines through sink.on_text (ABI 1.2), odd lines through
 * aur__json_parse and, if it parses, sink.on_message.  A line "EOF"
 * reports a clean close, "ERR" a failed one (the transport then goes
 * quiet), "BATCH" lets the session take JSON-RPC batches from then on
 * (aur__rpc_allow_batches: a top-level array before it is refused,
 * after it each element is a message).  Then every pending is waited
 * with a deadline of "now" (the last one is abandoned instead), so
 * nothing blocks; the transport then reports EOF if the input did not,
 * the harness waits (bounded) for the closed handler, which runs after
 * everything queued before it, and the rpc is closed.  The fake send()
 * aborts when called with a connection that is not open.
 *
 * Properties (else abort): with max_pending requests out, one more fails
 * with AUR_E_LIMIT; a wait gives AUR_OK with a reply whose "id" equals
 * the request's id (same JSON type and value) and holds exactly one of
 * "result" / "error", or (a text waiter only) text and no reply, after
 * on_text's on_response heard that id, or AUR_E_TIMEOUT, or AUR_E_CLOSED (only once the
 * transport reported the close); after a close, no new request is
 * accepted.  Leaks and races are the sanitizers' to report.
 *
 * Fuzzing build: see fuzz/run.sh.  With -DAUR_FUZZ_REPLAY (CMake target
 * fuzz_rpc_frames_replay, CTest fuzz_rpc_frames_corpus) main() replays
 * files.
 */
#include "aur_setup.h"

#include <stdio.h>

#include <json-c/json.h>

#include "call_reply.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "rpc.h"

#define FUZZ_NAME "fuzz_rpc_frames"
#define FUZZ_DEPTH 64
#define MAX_PENDING 8
#define N_INT 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------ */
/* the fake transport                                                 */
/* ------------------------------------------------------------------ */

struct aur_conn {
    struct aur_sink sink;
    unsigned long sent;
    bool open; /* between open() and close() */
};

static struct aur_conn the_conn;

static int fake_open(void *state, const struct aur_cfg *endpoint,
                     const struct aur_sink *sink, aur_deadline dl,
                     struct aur_conn **out, uint32_t *out_caps,
                     struct aur_error *err)
{
    the_conn.sink = *sink;
    the_conn.sent = 0;
    __atomic_store_n(&the_conn.open, true, __ATOMIC_SEQ_CST);
    *out = &the_conn;
    *out_caps = 0;
    return AUR_OK;
}

/* Called from the fuzzing thread and the dispatch thread. */
static int fake_send(struct aur_conn *c, struct json_object *msg,
                     aur_deadline dl, struct aur_error *err)
{
    /* A real transport has freed c once close() returned. */
    if (c != &the_conn || !__atomic_load_n(&c->open, __ATOMIC_SEQ_CST)) {
        fprintf(stderr, FUZZ_NAME ": send() on a %s connection\n",
                c ? "closed" : "NULL");
        abort();
    }
    if (!json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN))
        abort();
    __atomic_add_fetch(&c->sent, 1, __ATOMIC_RELAXED);
    return AUR_OK;
}

static void fake_close(struct aur_conn *c, aur_deadline dl)
{
    if (c != &the_conn)
        abort();
    __atomic_store_n(&c->open, false, __ATOMIC_SEQ_CST);
}

static const struct aur_transport_ops fake_ops = {
    .struct_size = sizeof(struct aur_transport_ops),
    .open = fake_open,
    .send = fake_send,
    .close = fake_close,
};

/* ------------------------------------------------------------------ */
/* trivial handlers                                                   */
/* ------------------------------------------------------------------ */

static unsigned h_ordered(void *ud, const char *method, struct json_object *p)
{
    if (!method)
        abort();
    return strcmp(method, "drop") != 0 ? 7u : AUR__RPC_DROP;
}

static void h_notification(void *ud, const char *method,
                           struct json_object *params,
                           struct json_object *msg, unsigned stamp)
{
    if (!method || !msg || (stamp != 7u && stamp != 1u))
        abort();
}

static void h_ended(void *ud, struct json_object *id,
                    const struct aur__rpc_end *end)
{
    if (!id || !end->ended || !end->delivered)
        abort();
}

static struct json_object *h_request(void *ud, const char *method,
                                     struct json_object *params)
{
    if (!method)
        abort();
    /* Half the methods are "unknown", to take the -32601 path. */
    if (method[0] == 'x')
        return NULL;
    return json_object_new_object();
}

static void h_response(void *ud, struct json_object *msg)
{
    if (!json_object_is_type(msg, json_type_object))
        abort();
}

/* h_closed runs after every item queued before the close: the drain. */
static pthread_mutex_t drain_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drain_cv;
static bool drained;

static void h_closed(void *ud, const struct aur_error *why)
{
    if (why && why->msg[0] == '\0')
        abort();
    pthread_mutex_lock(&drain_mu);
    drained = true;
    pthread_cond_signal(&drain_cv);
    pthread_mutex_unlock(&drain_mu);
}

/*
 * Wait (bounded) until the dispatch thread has handled everything queued
 * so far.  aur__rpc_close while the dispatch thread still answers queued
 * server requests makes it send() on the closed (NULL) connection - a
 * core bug, reproducer fuzz/crashes/rpc-close-race-1 - so the harness
 * drains first unless AUR_FUZZ_RPC_UNDRAINED is set in the environment.
 */
static void drain(void)
{
    aur_deadline dl = aur__now_ms() + 5000;

    pthread_mutex_lock(&drain_mu);
    while (!drained) {
        if (aur__cond_wait_until(&drain_cv, &drain_mu, dl) == ETIMEDOUT &&
            !drained) {
            fprintf(stderr, FUZZ_NAME ": dispatch did not drain in 5 s\n");
            abort();
        }
    }
    pthread_mutex_unlock(&drain_mu);
}

/* ------------------------------------------------------------------ */
/* the run                                                            */
/* ------------------------------------------------------------------ */

static bool undrained;

static void setup_once(void)
{
    static bool done;
    struct aur_error err;

    if (done)
        return;
    /* Every malformed frame logs a warning; at fuzzing speed that is
     * nothing but noise. */
    if (aur__log_setup(AUR_LOG_ERROR, NULL, &err) != AUR_OK ||
        aur__mono_cond_init(&drain_cv) != 0)
        abort();
    undrained = getenv("AUR_FUZZ_RPC_UNDRAINED") != NULL;
    done = true;
}

/* True if reply (an object) answers a request sent with id. */
static bool answers(struct json_object *reply, struct json_object *id)
{
    struct json_object *rid;
    bool res, er;

    if (!json_object_is_type(reply, json_type_object) ||
        !json_object_object_get_ex(reply, "id", &rid))
        return false;
    res = json_object_object_get_ex(reply, "result", NULL);
    er = json_object_object_get_ex(reply, "error", NULL);
    if (res == er)
        return false;
    if (json_object_is_type(id, json_type_string))
        return json_object_is_type(rid, json_type_string) &&
               strcmp(json_object_get_string(rid),
                      json_object_get_string(id)) == 0;
    return json_object_is_type(rid, json_type_int) &&
           json_object_get_int64(rid) == json_object_get_int64(id);
}

/* The response ids on_text's on_response heard (0..63). */
static uint64_t heard;

static void on_response(void *arg, int64_t id)
{
    if (arg != &heard || id < 0)
        abort();
    if (id < 64)
        heard |= 1ull << id;
}

/* Feed the frames; returns true if the transport reported a close. */
static bool feed(struct aur__rpc *r, const struct aur_sink *sink,
                 const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    size_t line = 0;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        struct json_object *v = NULL;
        struct aur_error err;

        if (n == 3 && memcmp(p, "EOF", 3) == 0) {
            sink->on_closed(sink->ctx, NULL);
            return true;
        }
        if (n == 5 && memcmp(p, "BATCH", 5) == 0) {
            aur__rpc_allow_batches(r);
            p += n + 1;
            continue;
        }
        if (n == 3 && memcmp(p, "ERR", 3) == 0) {
            aur_fail(&err, AUR_E_IO, 0, "fuzz: connection lost");
            sink->on_closed(sink->ctx, &err);
            return true;
        }
        if (line++ % 2 == 0) {
            if (sink->on_text(sink->ctx, p, n, on_response, &heard, &err) !=
                    AUR_OK &&
                !err.msg[0])
                abort();
        } else if (aur__json_parse(p, n, FUZZ_DEPTH, &v, &err) == AUR_OK) {
            sink->on_message(sink->ctx, v);
        }
        p += n + 1;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sids[] = {"probe", "1", "p-2"};
    struct aur__rpc_handlers h = {
        .ordered = h_ordered,
        .notification = h_notification,
        .request = h_request,
        .response = h_response,
        .ended = h_ended,
        .closed = h_closed,
        .reply_scan = aur__call_reply_scan, /* as the engine hands it in */
    };
    struct aur__rpc_limits lim = {.max_pending = MAX_PENDING,
                                  .max_queue = 4};
    struct aur__pending *p[N_INT + AUR__ARRAY_LEN(sids)], *extra = NULL;
    struct json_object *ids[AUR__ARRAY_LEN(p)];
    struct aur__rpc *r = NULL;
    struct aur_error err;
    size_t i, n = 0;
    bool closed;

    setup_once();
    drained = false;
    heard = 0;
    if (aur__rpc_open(&fake_ops, NULL, NULL, &h, &lim, "fuzz",
                      aur__now_ms() + 1000, &r, &err) != AUR_OK)
        abort();
    for (i = 0; i < AUR__ARRAY_LEN(p); i++, n++) {
        const char *sid = i < N_INT ? NULL : sids[i - N_INT];
        bool maybe_sent;
        int rc = i < N_INT && i % 2 == 0
                     ? aur__rpc_request_text(r, "tools/call", "{}", 2, true,
                                             aur__now_ms() + 1000, &p[i],
                                             &maybe_sent, &err)
                     : aur__rpc_request(r, "tools/list", NULL, sid,
                                        aur__now_ms() + 1000, &p[i], &err);
        if (rc != AUR_OK)
            abort();
        ids[i] = json_object_get(aur__rpc_pending_id(p[i]));
    }
    if (aur__rpc_request_detached(r, "subscriptions/listen", NULL, "listen",
                                  aur__now_ms() + 1000, &err) != AUR_OK)
        abort();
    if (aur__rpc_request(r, "ping", NULL, NULL, aur__now_ms() + 1000, &extra,
                         &err) != AUR_E_LIMIT ||
        err.code != AUR_E_LIMIT)
        abort();

    closed = feed(r, &the_conn.sink, data, size);
    if (closed != aur__rpc_is_closed(r))
        abort();

    for (i = 0; i < n; i++) {
        struct json_object *reply = NULL;
        struct aur__rpc_end end;
        char *text = NULL;
        size_t tlen;
        int rc;

        if (i == n - 1) {
            /* Forgotten: a late reply is dropped, a cancel is sent. */
            aur__rpc_abandon(r, p[i], true);
            json_object_put(ids[i]);
            continue;
        }
        rc = aur__rpc_wait_text(r, p[i], aur__now_ms(), false, &reply, &text,
                                &tlen, &end, &err);
        if (rc == AUR_OK && text) {
            int64_t id = json_object_get_int64(ids[i]);
            if (reply || i >= N_INT || i % 2 || !(heard >> id & 1))
                abort();
            free(text);
        } else if (rc == AUR_OK) {
            if (!answers(reply, ids[i]))
                abort();
        } else if (rc == AUR_E_CLOSED) {
            if (!closed)
                abort();
        } else if (rc == AUR_E_PROTOCOL) {
            /* A refused response that named it ended it, at once. */
            if (!end.ended || !end.delivered || reply)
                abort();
        } else if (rc != AUR_E_TIMEOUT || reply) {
            abort();
        }
        json_object_put(reply);
        json_object_put(ids[i]);
    }
    if (!undrained) {
        if (!closed)
            the_conn.sink.on_closed(the_conn.sink.ctx, NULL);
        closed = true;
        drain();
    }
    if (closed && aur__rpc_notify(r, "notifications/x", NULL,
                                  aur__now_ms() + 1000, &err) != AUR_E_CLOSED)
        abort();
    aur__rpc_close(r, aur__now_ms() + 1000);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif
