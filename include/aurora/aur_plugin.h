/*
 * aur_plugin.h - the whole plugin ABI of aurora-mcp.
 *
 * A plugin is a shared object that exports exactly one symbol,
 * aur_plugin_entry(), returning a constant descriptor.  Plugins never link
 * against the core: host services arrive as a `const struct aur_host *`
 * vtable at init.  This header needs only the C standard headers and
 * forward-declares json-c's object type; plugins link json-c dynamically.
 *
 * ABI changelog (one line per minor, append-only):
 *   1.0  2026-12-02  first release.
 *   1.1  2026-12-02  aur_host.world_write_batch.
 *   1.2  2026-12-02  aur_sink.on_text.
 *   1.3  2026-12-03  AUR_E_NOT_SENT, aur_sink.on_request_end,
 *                    aur_transport_ops.listen.
 *   1.4  2026-12-03  aur_transport_ops.words/section/keys/check/preflight,
 *                    aur_host.cfg_fail/cfg_line/cfg_path, AUR_TCAP_STREAM,
 *                    aur_plugin_desc.settings.
 *   1.5  2026-12-04  aur_transport_ops.stop.
 *   1.6  2026-12-06  aur_transport_ops.cork (AUR_CORK_TRY, and OFF from
 *                    a thread that did not cork: 12-07, before release).
 *   1.7  2026-12-07  aur_transport_ops.prepare.
 *   1.8  2026-12-07  aur_transport_ops.unprepare.
 *
 * Versioning: abi_version is the semantic contract (minor = appended member,
 * code or capability bit; major = anything else).  struct_size is layout
 * safety: the host copies min(struct_size, sizeof) bytes into zeroed
 * storage, so a hook an older plugin never knew reads as NULL.
 *
 * Ownership words used below:
 *   borrowed   valid for the duration of the call; keep with json_object_get
 *   (transfer) the callee owns the reference afterwards
 *   writable   borrowed, and the callee may edit it in place
 *
 * A plugin states the oldest host it works with in its descriptor's
 * abi_version (AUR_DESC_HEADER_MIN): a host older than that refuses it,
 * any newer host of the same major loads it.  A plugin that uses a
 * later host service tests host->abi_version (or AUR_HAS) first.
 */
#ifndef AURORA_AUR_PLUGIN_H
#define AURORA_AUR_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* vsnprintf, for aur_fail */

#ifdef __cplusplus
extern "C" {
#endif

struct json_object;

#define AUR_ABI_MAJOR 1
#define AUR_ABI_MINOR 8
#define AUR_ABI_MKVER(M, m) (((uint32_t)(M) << 16) | (uint32_t)(m))
#define AUR_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define AUR_ABI_MINOR_OF(v) ((uint32_t)(v)&0xffffu)
#define AUR_ABI_VERSION AUR_ABI_MKVER(AUR_ABI_MAJOR, AUR_ABI_MINOR)
#define AUR_PLUGIN_MAGIC 0x41555231u /* "AUR1" */

#if defined(__GNUC__)
#define AUR_EXPORT __attribute__((visibility("default")))
#define AUR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define AUR_EXPORT
#define AUR_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------ */
/* Error codes: one append-only list, never renumbered.               */
/* ------------------------------------------------------------------ */

/*
 * X(ENUM, value, "snake_case_word", "description").  The word is the stable
 * machine-readable code shown in JSON output and documented in the README.
 */
#define AUR_RC_MAP(X)                                                        \
    X(AUR_OK, 0, "ok", "success")                                            \
    X(AUR_DECLINE, 1, "declined", "a hook declined (a decision, not an error)") \
    X(AUR_E_INVAL, -1, "invalid_argument", "invalid argument")               \
    X(AUR_E_NOMEM, -2, "out_of_memory", "out of memory")                     \
    X(AUR_E_IO, -3, "io_error", "input/output error")                        \
    X(AUR_E_TIMEOUT, -4, "timeout", "deadline expired")                      \
    X(AUR_E_CLOSED, -5, "connection_closed", "connection closed")            \
    X(AUR_E_PROTOCOL, -6, "protocol_error", "protocol violation")            \
    X(AUR_E_CONFIG, -7, "config_invalid", "invalid configuration")           \
    X(AUR_E_PLUGIN, -8, "plugin_invalid", "plugin rejected")                 \
    X(AUR_E_SPAWN, -9, "spawn_failed", "could not start the App process")    \
    X(AUR_E_LIMIT, -10, "limit_exceeded", "a budget was exceeded")           \
    X(AUR_E_NEGOTIATION, -11, "negotiation_failed", "protocol negotiation failed") \
    X(AUR_E_RPC, -12, "rpc_error", "the server answered with a JSON-RPC error") \
    X(AUR_E_CATALOG, -13, "catalog_invalid", "invalid tool catalog")         \
    X(AUR_E_CHANGED, -14, "catalog_changed", "the catalog changed during startup") \
    X(AUR_E_JOURNAL, -15, "journal_error", "world journal failure")          \
    X(AUR_E_CONFLICT, -16, "commit_conflict", "commit id reused with different content") \
    X(AUR_E_NOTFOUND, -17, "not_found", "no such item")                      \
    X(AUR_E_STATE, -18, "bad_state", "operation not allowed in this state")  \
    X(AUR_E_AGENTS, -19, "agents_invalid", "an agent references an unknown tool") \
    X(AUR_E_SCOPE, -20, "scope_invalid", "scope resolution failed")          \
    X(AUR_E_CANCELLED, -21, "cancelled", "cancelled by shutdown")            \
    X(AUR_E_UNAVAILABLE, -22, "app_unavailable", "the App is not connected") \
    X(AUR_E_EVENT, -23, "event_invalid", "invalid business event")         \
    X(AUR_E_NOT_SENT, -24, "not_sent",                                       \
      "not sent: no byte of the message left the host")                      \
    X(AUR_E_STARTUP, -25, "startup_failed",                                  \
      "an App or the catalog could not be started")                          \
    X(AUR_E_INTERRUPTED, -26, "interrupted", "startup was interrupted")

enum aur_rc {
#define AUR__RC_ENUM(e, v, w, d) e = (v),
    AUR_RC_MAP(AUR__RC_ENUM)
#undef AUR__RC_ENUM
};

/* rc's stable snake_case word (desc == 0; "unknown_error" for a code not
 * in the list) or its description (desc != 0).  Thread-safe. */
static inline const char *aur__rc_text(int rc, int desc)
{
    switch (rc) {
#define AUR__RC_TEXT(e, v, w, d)                                             \
    case (v):                                                                \
        return desc ? d : w;
        AUR_RC_MAP(AUR__RC_TEXT)
#undef AUR__RC_TEXT
    }
    return desc ? "unknown error" : "unknown_error";
}

/*
 * aur_rc_word(rc): the stable word; aur_strerror(rc): the description.
 * A plugin gets them inline, since it links nothing of the core.  A
 * program that includes aur_host.h (before this header) gets the
 * library's exported functions of the same names instead, which is what
 * a binding calls by symbol.
 */
#ifndef AURORA_AUR_HOST_H
#define AUR_RC_TEXT_INLINE 1
static inline const char *aur_rc_word(int rc) { return aur__rc_text(rc, 0); }
static inline const char *aur_strerror(int rc) { return aur__rc_text(rc, 1); }
#endif

#define AUR_ERR_MSG_SIZE 256

/*
 * Caller-owned error report (usually on the stack).  Every function that can
 * fail takes it last; on failure err->code == the returned rc.  msg is one
 * NUL-terminated line and never contains secrets.  Layout frozen per major.
 */
struct aur_error {
    int32_t code;         /* enum aur_rc */
    int32_t detail;       /* errno, HTTP status or JSON-RPC code; 0 = none */
    uint32_t reserved[2]; /* zero */
    char msg[AUR_ERR_MSG_SIZE];
};

/* Clear *err (NULL allowed). */
static inline void aur_error_clear(struct aur_error *err)
{
    if (err) {
        err->code = 0;
        err->detail = 0;
        err->reserved[0] = err->reserved[1] = 0;
        err->msg[0] = '\0';
    }
}

/*
 * Fill *err (NULL allowed) and return code.  Plugins get this from the
 * header so they need nothing from the core.
 */
static inline int aur_fail(struct aur_error *err, int code, int detail,
                           const char *fmt, ...) AUR_PRINTF(4, 5);
static inline int aur_fail(struct aur_error *err, int code, int detail,
                           const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->detail = detail;
        err->reserved[0] = err->reserved[1] = 0;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ------------------------------------------------------------------ */
/* Time                                                               */
/* ------------------------------------------------------------------ */

/* Absolute milliseconds on host->now_ms's monotonic clock. */
typedef int64_t aur_deadline;
#define AUR_NO_DEADLINE INT64_MAX

/* ------------------------------------------------------------------ */
/* Host services                                                      */
/* ------------------------------------------------------------------ */

enum aur_log_level {
    AUR_LOG_ERROR = 0,
    AUR_LOG_WARN = 1,
    AUR_LOG_INFO = 2,
    AUR_LOG_DEBUG = 3,
};

struct aur_self; /* opaque: one per plugin instance, tags logs and writes */
struct aur_cfg;  /* opaque: one frozen ini section (repeated keys kept) */

/* One key a section allows (ABI 1.4: a transport's App section,
 * aur_transport_ops.keys; a plugin's host.ini section,
 * aur_plugin_desc.settings). */
struct aur_cfg_key {
    const char *key;
    int required; /* must be present */
    int repeat;   /* may appear more than once (values kept in order) */
};

/*
 * A world commit as a plugin proposes it.  All strings borrowed.
 * scopes: n_scopes non-blank strings (a set; duplicates collapse).
 * occurred_at: RFC 3339 UTC "YYYY-MM-DDTHH:MM:SS[.fff]Z", or NULL = now.
 * data: a JSON object, or NULL = {}.
 */
struct aur_commit {
    uint32_t struct_size;
    const char *commit_id;
    const char *kind;
    const char *source;
    const char *summary;
    const char *occurred_at;
    const char *const *scopes;
    size_t n_scopes;
    struct json_object *data;
};

/*
 * The host vtable.  Every function is thread-safe and may be called from
 * any thread, including transport threads.  Strings returned by cfg_* are
 * frozen and live until the plugin's fini.
 */
struct aur_host {
    uint32_t struct_size;
    uint32_t abi_version; /* the host's: test before using a later service */

    /* Log one line.  Never pass secrets, tool arguments/results or event
     * data: the log is not redacted for you. */
    void (*log)(struct aur_self *self, int level, const char *fmt, ...)
        AUR_PRINTF(3, 4);
    /* Monotonic milliseconds. */
    int64_t (*now_ms)(void);

    /* Value of key in cfg (the last one if repeated), or dflt. */
    const char *(*cfg_str)(const struct aur_cfg *cfg, const char *key,
                           const char *dflt);
    /* Number of values of a repeatable key, and the i-th (0-based). */
    size_t (*cfg_count)(const struct aur_cfg *cfg, const char *key);
    const char *(*cfg_str_at)(const struct aur_cfg *cfg, const char *key,
                              size_t i);
    /* Parse an integer / boolean value; dflt when absent. */
    int (*cfg_int)(const struct aur_cfg *cfg, const char *key, int64_t dflt,
                   int64_t *out, struct aur_error *err);
    int (*cfg_bool)(const struct aur_cfg *cfg, const char *key, int dflt,
                    int *out, struct aur_error *err);

    /* Append one commit to the world journal, idempotently by commit_id
     * (same content: AUR_OK, nothing written; different content:
     * AUR_E_CONFLICT, nothing written).  commit borrowed. */
    int (*world_write)(struct aur_self *self, const struct aur_commit *commit,
                       struct aur_error *err);

    /* Parse exactly one JSON value from buf[0..len) with the host's strict
     * RFC 8259 parser (nesting bounded by the host's budget).  Integers of
     * any size are kept exact: see json_integer_text.  *out (transfer) is
     * set only on AUR_OK.  Transports use this for every inbound message so
     * every App gets the same strictness and budgets. */
    int (*json_parse)(const char *buf, size_t len, struct json_object **out,
                      struct aur_error *err);
    /* If v is a JSON integer (of any size), write its decimal text to
     * buf and return AUR_OK; AUR_E_LIMIT if buf is too small; AUR_E_INVAL
     * if v is not an integer.  Floats such as 1.0 or 1e3 are not. */
    int (*json_integer_text)(struct json_object *v, char *buf, size_t size);

    /* --- ABI 1.1 --- */

    /* Append v[0..n) to the world journal in one transaction, with
     * world_write's idempotency rule per commit.  results[i] (writable, n
     * entries): AUR_OK = written now; AUR_DECLINE = already present with
     * the same content, nothing written; AUR_E_CONFLICT or AUR_E_INVAL =
     * refused, nothing of that commit written (the others go on).
     * Returns AUR_OK once the batch is committed; any other return
     * (AUR_E_JOURNAL, AUR_E_NOMEM, ...) = nothing of the batch written,
     * every results[i] set to it.  NULL (AUR_HAS false) on a host whose
     * world writer is an embedder's aur_world_writer: that writer cannot
     * tell "already present" from "written", so a plugin counts with
     * world_write there.  v and the commits borrowed.  Lets a plugin
     * commit a burst in one transaction instead of one per commit. */
    int (*world_write_batch)(struct aur_self *self,
                             const struct aur_commit *const *v, size_t n,
                             int *results, struct aur_error *err);

    /* --- ABI 1.4 --- */

    /* Fill err with AUR_E_CONFIG and "<file>:<line>: <key>: <what>"
     * pointing at the i-th value (0-based) of key in cfg; i = SIZE_MAX
     * means the last one; a key that is absent (or NULL) points at the
     * section.  Returns AUR_E_CONFIG.  For a transport's check hook, so
     * its errors name the place the way the host's own do. */
    int (*cfg_fail)(const struct aur_cfg *cfg, const char *key, size_t i,
                    struct aur_error *err, const char *fmt, ...)
        AUR_PRINTF(5, 6);
    /* The line of the i-th value of key (SIZE_MAX: the last), 0 when
     * there is none. */
    int (*cfg_line)(const struct aur_cfg *cfg, const char *key, size_t i);
    /*
     * The i-th value of key (SIZE_MAX: the last) as a path, by the one
     * rule for paths in an App file: relative to the config directory
     * (the section's "config_dir"), never absolute, no drive letter, no
     * ".." segment.  flags AUR_PATH_CONFINED: every part that exists is
     * resolved with its symbolic links and the result must stay inside
     * the config directory too (a directory the App runs in); without
     * it, links are followed wherever they lead (a linked CA bundle).
     * A section without "config_dir" (an embedder's) takes absolute
     * paths as they are.  Returns the path (transfer: release with
     * free), or NULL with err: AUR_E_CONFIG naming file, line and key as
     * cfg_fail does, AUR_E_NOMEM, or AUR_E_INVAL when key has no i-th
     * value.  Says nothing of whether the path exists.
     */
    char *(*cfg_path)(const struct aur_cfg *cfg, const char *key, size_t i,
                      unsigned flags, struct aur_error *err);
};

#define AUR_PATH_CONFINED 1u /* cfg_path: links may not lead out */

static inline aur_deadline aur_deadline_in(const struct aur_host *h,
                                           int64_t ms)
{
    return ms < 0 ? AUR_NO_DEADLINE : h->now_ms() + ms;
}

static inline int64_t aur_remaining_ms(const struct aur_host *h,
                                       aur_deadline dl)
{
    int64_t now;
    if (dl == AUR_NO_DEADLINE)
        return INT64_MAX;
    now = h->now_ms();
    return dl > now ? dl - now : 0;
}

/* ------------------------------------------------------------------ */
/* The descriptor                                                     */
/* ------------------------------------------------------------------ */

enum aur_kind { AUR_KIND_TRANSPORT = 1, AUR_KIND_EXTENSION = 2 };

struct aur_plugin_desc {
    /* Frozen prefix: same offsets in every ABI major, forever. */
    uint32_t magic, abi_version, struct_size, kind;
    const char *name;    /* unique, [a-z0-9-]+, e.g. "transport-stdio" */
    const char *version; /* the plugin's own release, informational */
    const char *summary;
    /*
     * Called once per plugin, after validation.  cfg: the plugin's own
     * host.ini section ([transport-stdio], ...), possibly empty.  On failure
     * the plugin undoes its own work; fini is not called.
     */
    int (*init)(const struct aur_host *host, struct aur_self *self,
                const struct aur_cfg *cfg, void **state,
                struct aur_error *err);
    void (*fini)(void *state);
    const void *ops; /* struct aur_transport_ops or aur_extension_ops */

    /* --- ABI 1.4 --- */

    /* The keys the plugin's own host.ini section ([transport-stdio] ...)
     * allows, ended by a NULL key; the host refuses an unknown, repeated
     * or missing one, naming host.ini, line and key, before init.  NULL =
     * any key (init alone decides). */
    const struct aur_cfg_key *settings;
};

/* Smallest struct_size accepted for ABI 1.x descriptors. */
#define AUR_PLUGIN_DESC_MIN_SIZE                                             \
    (offsetof(struct aur_plugin_desc, ops) + sizeof(const void *))

#define AUR_DESC_HEADER(k) AUR_DESC_HEADER_MIN(k, AUR_ABI_MINOR)
/* The same, stating the oldest host minor the plugin works with. */
#define AUR_DESC_HEADER_MIN(k, minor)                                        \
    .magic = AUR_PLUGIN_MAGIC,                                               \
    .abi_version = AUR_ABI_MKVER(AUR_ABI_MAJOR, (minor)),                    \
    .struct_size = sizeof(struct aur_plugin_desc), .kind = (k)

/* The one exported symbol.  host_abi is the host's AUR_ABI_VERSION. */
typedef const struct aur_plugin_desc *aur_entry_fn(uint32_t host_abi);
#define AUR_ENTRY_SYMBOL "aur_plugin_entry"
/* Every plugin defines exactly this one exported function. */
AUR_EXPORT aur_entry_fn aur_plugin_entry;

/* True if the optional member m exists in a struct of struct_size and is
 * non-NULL. */
#define AUR_HAS(p, m)                                                        \
    ((p) != NULL &&                                                          \
     offsetof(__typeof__(*(p)), m) + sizeof((p)->m) <= (p)->struct_size &&   \
     (p)->m != NULL)

/* ------------------------------------------------------------------ */
/* Transports                                                         */
/* ------------------------------------------------------------------ */

enum { /* capability bits, append-only */
       AUR_TCAP_SERVER_PUSH = 1u << 0,
       AUR_TCAP_SESSION = 1u << 1,
       AUR_TCAP_RESUMABLE = 1u << 2,
       AUR_TCAP_CHILD_PROCESS = 1u << 3,
       /* 1.4: one ordered duplex stream for the connection's whole life
        * (a pipe, a socket).  A server on it may leave a request
        * unanswered, so silence can be its answer (a legacy server
        * ignoring server/discover); and only such a transport carries
        * world events, which need a server-to-host channel that is
        * always there.  Request/response transports (HTTP) leave it
        * unset: there silence is an outage. */
       AUR_TCAP_STREAM = 1u << 4,
};


/*
 * How a request ended without a JSON-RPC response of its own, as only the
 * transport can know it (ABI 1.3, aur_sink.on_request_end).  Everything
 * here is a fact the transport observed itself, never something read out
 * of a message's data: a server cannot set any of it.
 */
struct aur_request_end {
    uint32_t struct_size;
    int32_t code;        /* why, an aur_rc: AUR_E_IO (network, reset),
                            AUR_E_TIMEOUT, AUR_E_PROTOCOL (an unusable
                            answer), AUR_E_LIMIT (over a size budget),
                            AUR_E_RPC (see error) */
    int32_t delivered;   /* 0 only when no byte of the request can have
                            reached the server (it failed before the
                            request was handed to any connection); any
                            doubt is 1 */
    int32_t http_status; /* the last HTTP status seen; 0 = none, not HTTP */
    const char *msg;     /* one line for people, no secrets (borrowed) */
    /* The JSON-RPC error object the server sent with a non-2xx HTTP
     * status (code AUR_E_RPC), else NULL (borrowed): the server's words,
     * reported as such. */
    struct json_object *error;
};

/*
 * The single receive path.  Host-owned; valid from open() until close()
 * returns.  Transports call it from their own threads.
 */
struct aur_sink {
    uint32_t struct_size;
    void *ctx;
    /* Any thread, non-blocking.  One JSON-RPC message per call. (transfer) */
    void (*on_message)(void *ctx, struct json_object *msg);
    /* At most once, never after close() returns.  why == NULL: clean EOF. */
    void (*on_closed)(void *ctx, const struct aur_error *why);

    /* --- ABI 1.2 (NULL from an older host: parse and use on_message) --- */

    /*
     * One framed message as text (borrowed for the call), instead of
     * json_parse + on_message: the host parses it with the same strictness
     * and budgets, and may take the reply to a call without building a
     * tree.  AUR_OK = taken; otherwise (not one JSON object) nothing was
     * taken and err says why: log and drop it, as for a failed json_parse.
     * When the message is a response with a non-negative integer id,
     * on_response (may be NULL) hears that id, on this thread, before
     * anyone waiting for it is woken.  Any thread, non-blocking.
     */
    int (*on_text)(void *ctx, const char *buf, size_t len,
                   void (*on_response)(void *arg, int64_t id), void *arg,
                   struct aur_error *err);

    /* --- ABI 1.3 --- */

    /*
     * The request sent with this id (borrowed; the id as it went out)
     * ended without a JSON-RPC response on the way it was sent: an HTTP
     * status without a JSON-RPC body, a stream that broke, a refused
     * connection, our own deadline.  end borrowed for the call.  At most
     * once per request, never for a request whose response was delivered.
     * A transport never invents a JSON-RPC message to say this, and the
     * host never reads such facts out of a message.  Any thread,
     * non-blocking.
     */
    void (*on_request_end)(void *ctx, struct json_object *id,
                           const struct aur_request_end *end);
};

struct aur_conn; /* opaque; each transport defines its own */

/*
 * What the core tells a transport once the protocol is known.  modern = 1
 * for revision 2026-07-28 and later (no session).  session_id: legacy HTTP
 * only.  All borrowed.
 */
struct aur_protocol_info {
    uint32_t struct_size;
    int modern;
    const char *version;
};

/*
 * Transport operations.  open/send/close are mandatory.
 *
 * Threads: open, send, set_protocol, cancel and close may be called from any
 * thread; send may be called concurrently from several threads (the
 * transport serialises writes).  close is never concurrent with another call
 * on the same connection.
 */
/* aur_transport_ops.cork's on (ABI 1.6). */
enum aur_cork { AUR_CORK_OFF = 0, AUR_CORK_ON = 1, AUR_CORK_TRY = 2 };

struct aur_transport_ops {
    uint32_t struct_size;
    uint32_t caps; /* what it can ever offer */
    /*
     * endpoint: the App's section of this transport (see section below)
     * plus the keys the host adds: "package", "timeout_ms" and
     * "config_dir" (the absolute config directory, against which a
     * relative path in the section is read).  A failed open makes no sink
     * calls, leaves *out untouched and needs no close.
     */
    int (*open)(void *state, const struct aur_cfg *endpoint,
                const struct aur_sink *sink, aur_deadline dl,
                struct aur_conn **out, uint32_t *out_caps,
                struct aur_error *err);
    /*
     * Serialise msg (borrowed) before returning.  AUR_OK means accepted,
     * never that a reply arrived: replies come through the sink.
     * Failure says what left: AUR_E_NOT_SENT promises that no byte of msg
     * can have reached the server (the host reports such a call
     * `failed`, safe to retry); ANY other failure means some bytes may
     * have left (a partial write), and the host reports the call
     * `unknown`.  When in doubt, do not say AUR_E_NOT_SENT.
     */
    int (*send)(struct aur_conn *c, struct json_object *msg, aur_deadline dl,
                struct aur_error *err);
    /* Synchronous: afterwards no sink calls, threads joined, c freed. */
    void (*close)(struct aur_conn *c, aur_deadline dl);
    /* Optional: the negotiated protocol (HTTP uses it for headers). */
    int (*set_protocol)(struct aur_conn *c,
                        const struct aur_protocol_info *info,
                        struct aur_error *err);
    /* Optional: abandon the request with this id (borrowed).  Without it
     * the core sends notifications/cancelled. */
    void (*cancel)(struct aur_conn *c, struct json_object *id);
    /* Optional: restart the connection from scratch (a new child for
     * stdio), used once by the era probe fallback.  Same contract as a
     * close followed by an open with the original endpoint and sink.
     * Without it the fallback keeps a connection the probe found only
     * silent (a late answer to the probe is dropped), and an App whose
     * connection ended at the probe fails. */
    int (*reopen)(struct aur_conn *c, aur_deadline dl,
                  struct aur_error *err);
    /* Optional: send a message the core already serialised (one compact
     * JSON object, len bytes, no newline; borrowed).  Same contract as
     * send, AUR_E_NOT_SENT included.  It always begins exactly
     * {"jsonrpc":"2.0","id":<decimal integer>,"method":" so a transport
     * may read the id from those bytes.  Lets the hot call path skip
     * building a json-c tree only to print it again. */
    int (*send_text)(struct aur_conn *c, const char *json, size_t len,
                     aur_deadline dl, struct aur_error *err);

    /* --- ABI 1.3 --- */

    /*
     * Optional: make sure the channel on which the server pushes messages
     * that answer no request (notifications/tools/list_changed above all)
     * is established, bounded by dl.  Called once, after set_protocol and
     * before the first tools/list, so no change during the listing can be
     * missed.  AUR_OK = established (or always there, as on stdio);
     * AUR_DECLINE = the server offers none (it can then only push inside
     * the response streams of our own requests); negative = failed (the
     * App's startup fails in phase catalog/listen).  Without the hook the
     * host assumes the channel is there once open returns.
     */
    int (*listen)(struct aur_conn *c, aur_deadline dl, struct aur_error *err);

    /* --- ABI 1.4: how an App file chooses and configures it --- */

    /*
     * words: what `transport =` in an App's [app] may say for this
     * transport besides the plugin's own name, NULL-terminated (NULL =
     * none).  words[0], when there is one, is the word the App's status
     * and extensions see (aur_app_info.transport); else the plugin name.
     * Two loaded transports claiming one word is a configuration error.
     */
    const char *const *words;
    /* The App file's section this transport reads (NULL = the plugin
     * name).  Every other section but [app] is refused there. */
    const char *section;
    /* The keys that section allows, ended by a NULL key (NULL = any key:
     * check alone decides).  The host refuses an unknown, repeated or
     * missing key, naming file, line and key, before check is called;
     * "package", "timeout_ms" and "config_dir" are the host's and may
     * not be written there. */
    const struct aur_cfg_key *keys;
    /*
     * Optional: check the values of one App's section (borrowed, with the
     * host's keys) when the host is created, before any App starts, so a
     * mistake is reported for every App at once and names its place:
     * report with host->cfg_fail.  active = 0 for an App that will not
     * start (disabled): check the text, not this machine (a directory
     * that does not exist, a variable that is not set).  Returns AUR_OK,
     * AUR_E_CONFIG or AUR_E_NOMEM.  Runs on the thread creating the host.
     */
    int (*check)(void *state, const struct aur_cfg *endpoint, int active,
                 struct aur_error *err);
    /*
     * Optional: what can be checked of an App without starting it
     * (`aurora-mcp doctor`): report(ctx, check, problem) once per check,
     * problem NULL when it passed (both borrowed for the call).  Never
     * report a variable's value.  Each check is bounded (a few seconds
     * at most).  Any thread.
     */
    void (*preflight)(void *state, const struct aur_cfg *endpoint,
                      void (*report)(void *ctx, const char *check,
                                     const char *problem),
                      void *ctx);

    /* --- ABI 1.5 --- */

    /*
     * Optional: begin closing c without waiting for it, so that a host
     * closing many connections lets them wind down side by side: tell the
     * server to leave now (stdin closed, the session ended) and start
     * whatever escalation close would run, on its own clock, to be over
     * by dl.  From here sends fail with AUR_E_NOT_SENT.  close still
     * follows, with the same dl, and finishes the job.  Returns at once;
     * at most once per connection; any thread, never concurrent with
     * close or reopen.  Without it close does everything.
     */
    void (*stop)(struct aur_conn *c, aur_deadline dl);

    /* --- ABI 1.6 --- */

    /*
     * Optional: on = AUR_CORK_ON, the calling thread is about to send c
     * several requests; on = AUR_CORK_OFF (same thread), it has sent them
     * all.  In between, send_text from this thread may keep a request
     * instead of writing it (AUR_OK: accepted), and writes what it kept,
     * in order, in as few writes as it can, when this thread says OFF, or
     * before anything else is written to c.  A kept request that is then
     * not written whole ends through the sink's on_request_end, with
     * delivered = 0 only when none of its bytes left (a transport that
     * cannot report so must not keep it).  So a server woken by a write
     * finds the whole burst there, instead of being woken once a request.
     * Never concurrent with close or reopen; OFF may wait, as a send may,
     * for a server that does not read, never past the earliest deadline
     * of what it keeps.  AUR_CORK_TRY (same thread, still corked): write
     * what is kept now if that needs no wait, else keep it for OFF; the
     * host uncorks several connections so, before it says OFF to each, so
     * that one server that does not read holds up no other's requests (a
     * transport may treat TRY as doing nothing).  Corking is the
     * thread's: TRY or OFF from a thread that did not cork c does nothing
     * (the host says OFF on any thread before it waits there for an
     * answer or a slot, and TRY then ON to the batch's other
     * connections).  A frame that answers a kept request none of whose
     * bytes were handed to write() yet must not reach the sink: the host
     * would end that call by it, and the request is still written.  A
     * send that waits for c should give this thread's other corked
     * connections what needs no wait.  Without the hook every request is
     * written as it is sent.
     */
    void (*cork)(struct aur_conn *c, int on);

    /* --- ABI 1.7 --- */

    /*
     * Optional: begin the slow part of a coming open of endpoint (the
     * same pointer open will get, with the host's keys) while the host
     * does other work, e.g. start the process that will contain the
     * App.  Nothing of the App may run before open: prepare starts no
     * server and sends nothing to one.  The host calls it on the thread
     * that starts it, for the first App that will start, before it opens
     * its journal and only while the process has descriptors to spare;
     * so it returns as soon as what it began needs no more of this
     * thread (a few milliseconds at most).  What it began is the
     * transport's: the next open of endpoint uses it; what no open uses
     * is undone by unprepare, or when the plugin's fini runs at the
     * latest, and whatever failed in it is left for open to do and
     * report.  Never concurrent with another call for the same endpoint.
     */
    void (*prepare)(void *state, const struct aur_cfg *endpoint);

    /* --- ABI 1.8 --- */

    /*
     * Optional: undo what prepare began for endpoint if no open took it
     * (nothing otherwise), at once.  The host calls it on the thread
     * that starts it when a start fails, since the App it prepared for
     * may never have been opened (the journal failed, another App failed
     * first): a program that keeps its handle after a failed start keeps
     * no process of it.  Never concurrent with an open of endpoint.
     */
    void (*unprepare)(void *state, const struct aur_cfg *endpoint);
};

/* ------------------------------------------------------------------ */
/* Extensions                                                         */
/* ------------------------------------------------------------------ */

/* The ToolOutput status a hook proposes.  unknown > failed > succeeded:
 * the most uncertain proposal wins, so no hook can downgrade. */
enum aur_outcome {
    AUR_OUTCOME_UNSET = 0, /* no opinion: the core's mapping stands */
    AUR_OUTCOME_SUCCEEDED = 1,
    AUR_OUTCOME_FAILED = 2, /* confirmed: no effect, or rolled back */
    AUR_OUTCOME_UNKNOWN = 3, /* the effect cannot be confirmed */
};

/* What an extension learns about the App it serves.  All borrowed, valid
 * until end_session (or the end of the call for declare_caps). */
struct aur_app_info {
    uint32_t struct_size;
    const char *package;
    const char *transport;  /* the transport's word ("stdio", ...) */
    const char *event_mode; /* "disabled" | "world_events" | ... */
    const char *version;    /* negotiated; NULL in declare_caps */
    int modern;             /* 1 for 2026-07-28 */
    struct aur_self *self;  /* for host->log and host->world_write */
};

/* A tool as the core knows it.  All borrowed. */
struct aur_tool_ref {
    uint32_t struct_size;
    const char *id;       /* aur.mcp.<package>.<raw> */
    const char *raw_name; /* the name on the wire */
};

/*
 * Extension operations.  Every hook is optional (NULL = no opinion).
 * Return AUR_OK, AUR_DECLINE (a decision) or a negative aur_rc.
 *
 * Threads: declare_caps, accept_server, validate_tool and end_session run
 * on the App's startup/teardown thread; on_notify runs on the App's
 * dispatch: serialised per App, in arrival order, on one of the core's
 * shared dispatch workers (or the closing thread, for what is left at
 * close), so it must not rely on thread-local state across calls.  resolve_scope and classify run on
 * the calling thread and may run concurrently for one session: session
 * state must be read-only after validate_tool.
 */
struct aur_extension_ops {
    uint32_t struct_size;
    const char *cap_key;         /* the capability key it negotiates */
    const char *const *methods;  /* notifications handled, NULL-terminated */
    /* Write settings under cap_key into caps (writable: the "extensions"
     * object), or decline for this App. */
    int (*declare_caps)(void *st, const struct aur_app_info *app,
                        struct json_object *caps, struct aur_error *err);
    /* server_caps: the server's whole capabilities object (borrowed).
     * AUR_OK = active (state in *session); AUR_DECLINE = inactive for this
     * App; negative = the App's startup fails in phase connect. */
    int (*accept_server)(void *st, const struct aur_app_info *app,
                         struct json_object *server_caps, void **session,
                         struct aur_error *err);
    /* Per discovered tool (borrowed).  scopes (writable) holds
     * {"observe":[...],"publish":[...]} templates, pre-filled with the App
     * default; edit them.  Negative = startup fails in phase tools/list. */
    int (*validate_tool)(void *st, void *session,
                         const struct aur_tool_ref *tool,
                         struct json_object *tool_json,
                         struct json_object *scopes, struct aur_error *err);
    /* Before each call.  arguments borrowed; NULL for a call without
     * arguments, read as {} (the server is sent {}).  scopes (writable)
     * holds the resolved {"observe":[...],"publish":[...]}, pre-filled
     * with the templates.  AUR_DECLINE or negative = the call fails, not
     * sent. */
    int (*resolve_scope)(void *st, void *session,
                         const struct aur_tool_ref *tool,
                         struct json_object *arguments,
                         struct json_object *scopes, struct aur_error *err);
    /* On a complete CallToolResult (borrowed).  Propose an outcome; when
     * *out is set, err->msg may carry the content text to report. */
    int (*classify)(void *st, void *session, const struct aur_tool_ref *tool,
                    struct json_object *result, enum aur_outcome *out,
                    struct aur_error *err);
    /* A notification whose method is listed in methods (params borrowed).
     * active = 1 once the host is activated (startup complete). */
    int (*on_notify)(void *st, void *session, const char *method,
                     struct json_object *params, int active,
                     struct aur_error *err);
    void (*end_session)(void *st, void *session);
    /* Counters for the App's status (any thread, concurrently with the
     * other hooks but never with or after end_session; the host holds the
     * App's lock meanwhile, so it must not call into the host, not even
     * log): add members to out (writable, an empty object).  Never put
     * secrets, arguments, results or event data there. */
    int (*status)(void *st, void *session, struct json_object *out,
                  struct aur_error *err);
};

#ifdef __cplusplus
}
#endif
#endif /* AURORA_AUR_PLUGIN_H */
