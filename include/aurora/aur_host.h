/*
 * aur_host.h - the embedding API of libaurora-mcp.
 *
 * A runtime creates a host from a configuration directory, may add builtin
 * tools and its own world writer, starts it (every enabled App is connected,
 * negotiated and discovered, then the registry is frozen), reads the frozen
 * registry, calls tools from any thread, reads status and shuts down.
 *
 * Threads: aur_mcp_create, aur_mcp_add_builtin, aur_mcp_set_world_writer,
 * aur_mcp_start, aur_mcp_shutdown and aur_mcp_destroy belong to one
 * "owner" thread and must not run concurrently with anything else on the
 * same host.  Between a successful start and shutdown, aur_mcp_call,
 * aur_mcp_status, aur_mcp_tool_count and aur_mcp_tool_at may be called
 * from any number of threads at once.  The status (aur_mcp_status and its
 * forms) may also be read while aur_mcp_start runs, to watch a long start,
 * and so may aur_mcp_cancel be called.
 *
 * JSON crosses this header as text with an explicit length, both ways
 * (arguments, schemas, results, status), so a binding needs no JSON
 * library of ours: text the library returns is malloc'd, NUL-terminated
 * as well, and released with aur_free.  aur_host_jsonc.h has the same
 * calls on json-c trees for C programs that use json-c themselves.
 *
 * Errors: functions return an enum aur_rc and fill a caller-owned
 * struct aur_error (see aur_plugin.h); err may be NULL.
 *
 * Out of memory, one policy for the whole library: nothing aborts or
 * exits when an allocation fails.  The function returns AUR_E_NOMEM and
 * leaves nothing half-made (a failed create leaves *out NULL; a failed
 * start is shut down and destroyed like any other).  A tool call that
 * runs out still ends truthfully: failed only when its request cannot
 * have reached the server, otherwise unknown, also when the server's
 * answer cannot be held (the call ran); its content is then a fixed text
 * and aur_mcp_call returns AUR_E_NOMEM.  A message from a server that
 * cannot be held is lost, and what it said cannot be known, so that App's
 * connection is given up (unavailable, restart_required) and its calls
 * in flight end unknown.  A lifecycle journal record that cannot be built
 * is logged as not written, like a journal error.
 */
#ifndef AURORA_AUR_HOST_H
#define AURORA_AUR_HOST_H

#include <aurora/aur_plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is the library's API: exported even when the
 * library is built with hidden visibility (its internals are). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define AUR_VERSION_STRING "1.0.0"

/* The library's version string (AUR_VERSION_STRING of the build that made
 * it): what a program loaded at run time, not what it was compiled
 * against.  Static; any thread. */
const char *aur_version(void);

#ifndef AUR_RC_TEXT_INLINE
/* enum aur_rc's stable word ("timeout") and description ("deadline
 * expired"); see aur_plugin.h.  Static text; any thread. */
const char *aur_rc_word(int rc);
const char *aur_strerror(int rc);
#endif

/* Release what the library returned as "free with aur_free" (NULL
 * allowed).  Any thread. */
void aur_free(void *p);

struct aur_mcp; /* opaque host */

enum aur_call_status {
    AUR_CALL_SUCCEEDED = 0,
    AUR_CALL_FAILED = 1,
    AUR_CALL_UNKNOWN = 2,
};

/* "succeeded" | "failed" | "unknown". */
const char *aur_call_status_word(enum aur_call_status s);

/*
 * The result of one call, owned by the caller: release it with
 * aur_tool_output_clear.  content is never NULL or empty.
 * observe[0..n_observe) and publish[0..n_publish) are the scopes resolved
 * for this call (docs/protocol.md, Names and scopes); both NULL when
 * resolution failed.
 * They are read-only and valid until aur_tool_output_clear, and never
 * longer than the host: when nothing resolves them per call they are the
 * frozen registry's own strings, so a call copies none of them.
 */
struct aur_tool_output {
    /* Set by the caller to sizeof(struct aur_tool_output) before passing
     * it (a zero-filled struct counts as this layout): a later library
     * fills only the fields a caller's size holds.  Kept by the call. */
    uint32_t struct_size;
    enum aur_call_status status;
    char *content;
    const char *const *observe;
    const char *const *publish;
    size_t n_observe, n_publish;
    void *owned; /* the host's: what aur_tool_output_clear frees */
    /* The bytes of content, which may hold U+0000 (a tool's text is kept
     * whole); content is NUL-terminated as well.  A builtin may leave it
     * 0: the host then measures content with strlen. */
    size_t content_len;
};

void aur_tool_output_clear(struct aur_tool_output *out);


/*
 * A builtin tool implemented by the embedding runtime.  args_json
 * (args_len bytes, NUL-terminated as well) is the call's arguments as
 * canonical JSON text, borrowed for the callback.  The callback answers
 * through aur_builtin_reply_set; one that never does makes the call
 * unknown (it ran, and said nothing).  The tool's scopes are its
 * declared ones (none).  May run on any thread, concurrently.
 */
struct aur_builtin_reply; /* opaque; valid during the callback only */
typedef void aur_builtin_fn(void *ud, const char *args_json, size_t args_len,
                            struct aur_builtin_reply *reply);

/* The call's outcome and its text (len bytes, copied; may hold U+0000).
 * A second set replaces the first.  AUR_E_INVAL for a status outside
 * enum aur_call_status, AUR_E_NOMEM (the call then ends unknown). */
int aur_builtin_reply_set(struct aur_builtin_reply *reply,
                          enum aur_call_status status, const char *text,
                          size_t len);

/* A world writer the runtime brings instead of the SQLite journal.  Same
 * idempotency contract as aur_host.world_write.  Any thread. */
struct aur_world_writer {
    uint32_t struct_size;
    void *ud;
    int (*append)(void *ud, const struct aur_commit *commit,
                  struct aur_error *err);
};

/* Where a start failed: X(ENUM, value, "word"). */
#define AUR_PHASE_MAP(X)                                                     \
    X(AUR_PHASE_NONE, 0, "")                                                 \
    X(AUR_PHASE_CONFIG, 1, "config")                                         \
    X(AUR_PHASE_CONNECT, 2, "connect")                                       \
    X(AUR_PHASE_LISTEN, 3, "catalog/listen")                                 \
    X(AUR_PHASE_TOOLS_LIST, 4, "tools/list")                                 \
    X(AUR_PHASE_FREEZE, 5, "catalog/freeze")                                 \
    X(AUR_PHASE_AGENTS, 6, "agents")                                         \
    X(AUR_PHASE_ACTIVATE, 7, "activate")

enum aur_phase {
#define AUR__PHASE_ENUM(e, v, w) e = (v),
    AUR_PHASE_MAP(AUR__PHASE_ENUM)
#undef AUR__PHASE_ENUM
};

/* The word of a phase ("" for none or an unknown one).  Static; any
 * thread. */
const char *aur_phase_word(int phase);

/* Why start failed: the CLI prints code, app, phase and message.  The
 * caller sets struct_size as for struct aur_tool_output. */
struct aur_startup_error {
    uint32_t struct_size;
    int32_t rc;         /* enum aur_rc: AUR_E_CONFIG, AUR_E_STARTUP,
                           AUR_E_JOURNAL or AUR_E_INTERRUPTED; code is its
                           word */
    int32_t phase_id;   /* enum aur_phase; phase is its word */
    char code[48];      /* "startup_failed", "config_invalid", ... */
    char app[160];      /* package, or "" when no App is concerned */
    char phase[32];     /* config | connect | catalog/listen | tools/list |
                           catalog/freeze | agents | activate */
    char message[512];  /* one line, no secrets */
};

/* One frozen tool.  All borrowed from the host, valid until destroy, and
 * read-only.  input_schema and scopes are json-c trees for
 * aur_host_jsonc.h users (json-c reference counts are not thread-safe:
 * take a deep copy, never json_object_get); aur_mcp_tool_json gives the
 * same as text.  An App's tool keeps its schema as text: the tree is made
 * by the first aur_mcp_tool_at for that tool (NULL only if memory ran
 * out then; the next call tries again).  Fields are only ever added at
 * the end. */
struct aur_tool_info {
    const char *id;
    const char *app; /* package; "" for builtins */
    const char *raw_name;
    const char *description;
    struct json_object *input_schema;
    struct json_object *scopes; /* declared templates */
    size_t description_len;     /* description may hold U+0000 */
};

/*
 * Why an App's env = name would be refused: not a variable name
 * ([A-Za-z_][A-Za-z0-9_]*), or a name that makes a child's loader, shell,
 * interpreter or a library run foreign code (the denylist's reason); NULL
 * when it may be whitelisted.  Static text; pure; any thread.
 */
const char *aur_env_refused(const char *name);

/*
 * "Did you mean": the one of names[0..n) closest to word by edit distance
 * (insert, delete, substitute, swap of neighbours), if it is close enough
 * to be a typo (1 edit for words up to 4 bytes, 2 up to 12, else 3) and
 * no other name is as close; else NULL.  Returns one of names (borrowed).
 * Words and names over 256 bytes are never matched.  Pure; any thread.
 */
const char *aur_suggest(const char *word, const char *const *names, size_t n);

/*
 * Load and validate config_dir (host.ini, apps.d, agents.ini) and the
 * plugins it names; start nothing.  plugin_dir overrides host.ini's
 * plugin_dir when non-NULL.  On failure *serr (optional) tells the file,
 * line and key in message, with phase "config"; *out is NULL.
 */
int aur_mcp_create(const char *config_dir, const char *plugin_dir,
                   struct aur_mcp **out, struct aur_startup_error *serr,
                   struct aur_error *err);

/* skip != 0: leave the App with this package out of this run (the CLI's
 * --app and --disable): it is not started, its state is "disabled" and
 * "active" false, and an exact agents.ini reference to one of its tools
 * only warns.  skip == 0: take it back (a no-op for an App never left
 * out).  Before aur_mcp_start.  AUR_E_CONFIG when no App has that package
 * (the message names the closest one); AUR_E_STATE once started. */
int aur_mcp_skip_app(struct aur_mcp *h, const char *package, int skip,
                     struct aur_error *err);


/*
 * What can be checked of the App with this package without starting it
 * (doctor): *json (free with aur_free, *len bytes) is an array of
 * {"check": "command" | "env NAME" | "auth_env NAME" | "server reachable
 * (TCP)", "ok": bool, "problem": text or null}.  Never a variable's
 * value, an argument, or a URL's path or query.  AUR_E_NOTFOUND when no
 * App has that package.  Any time, any thread; the TCP check waits up
 * to 3 s per address.
 */
int aur_mcp_app_checks(struct aur_mcp *h, const char *package, char **json,
                       size_t *len, struct aur_error *err);

/* More (delta > 0) or less (delta < 0) log output than host.ini's
 * log_level says, one level per step, within error..debug: the CLI's -v
 * and -q.  Any time, any thread; this host's log only. */
void aur_mcp_log_verbosity(struct aur_mcp *h, int delta);


/*
 * A log line of one host: "<time> <LEVEL> <tag>: <message>", len bytes,
 * no newline, control characters already escaped; level is an enum
 * aur_log_level.  Never an environment value, a token, tool arguments or
 * results, or event data.
 */
typedef void aur_log_fn(void *ud, int level, const char *line, size_t len);

/*
 * This host's log lines go to fn instead of stderr (host.ini's log_file
 * still gets them all); fn NULL: back to stderr.  Lines of
 * aur_mcp_create itself went to stderr already.  fn runs on the thread
 * that logs, one line at a time for this host; it must be quick and must
 * not call into this host.  Any time, any thread.  Another host's log is
 * never affected.
 */
void aur_mcp_set_log(struct aur_mcp *h, aur_log_fn *fn, void *ud);

/* Add a builtin tool before start.  id must match aur(.[a-z][a-z0-9_-]*){2,}
 * outside aur.mcp. (the MCP tools' namespace; else AUR_E_INVAL); description
 * (NULL or "" = the id) must be UTF-8 (else AUR_E_INVAL).  schema_json
 * (schema_len bytes; NULL = {"type":"object"}) must be a JSON object; it
 * is copied. */
int aur_mcp_add_builtin(struct aur_mcp *h, const char *id,
                        const char *description, const char *schema_json,
                        size_t schema_len, aur_builtin_fn *fn, void *ud,
                        struct aur_error *err);

/* Use w instead of the journal named in host.ini.  Before start; w copied. */
int aur_mcp_set_world_writer(struct aur_mcp *h,
                             const struct aur_world_writer *w,
                             struct aur_error *err);

/*
 * Start every enabled App concurrently, each under its own deadline, then
 * freeze the registry, check agents.ini and activate.  Any failure closes
 * everything that was opened (reverse config order) and fills *serr.
 * Returns AUR_OK or a negative code.
 */
int aur_mcp_start(struct aur_mcp *h, struct aur_startup_error *serr,
                  struct aur_error *err);

/* The frozen registry, sorted by id. */
size_t aur_mcp_tool_count(const struct aur_mcp *h);
const struct aur_tool_info *aur_mcp_tool_at(const struct aur_mcp *h,
                                            size_t i);

/*
 * Tool i of the frozen registry as one JSON object: {"id", "app",
 * "raw_name", "description", "input_schema", "observe", "publish"}
 * (observe and publish: the declared scope templates).  Borrowed text
 * (*len bytes, NUL-terminated), valid until aur_mcp_destroy; made on the
 * first request and kept.  NULL when i is out of range or memory is
 * short.  Any thread once started.
 */
const char *aur_mcp_tool_json(struct aur_mcp *h, size_t i, size_t *len);

/*
 * Call a tool and block until its outcome is known or timeout_ms passes
 * (negative, or more than the App's timeout_seconds = timeout_seconds).
 * args_json (args_len bytes; NULL = {}) must be one JSON object; it is
 * parsed strictly (exact big integers, duplicate keys: last wins).
 * Always fills *out, whatever happens; the return value is AUR_OK unless
 * the arguments themselves are unusable (AUR_E_INVAL, out failed: the
 * call was not sent) or memory ran out (AUR_E_NOMEM, out failed or
 * unknown as the policy above says).  Never retried.
 */
int aur_mcp_call(struct aur_mcp *h, const char *tool_id,
                 const char *args_json, size_t args_len, int64_t timeout_ms,
                 struct aur_tool_output *out);

/*
 * The outcome of an asynchronous call.  out is borrowed for the callback
 * (the library clears it afterwards: copy what you keep).  Runs on one of
 * the host's call threads, so it should be quick (hand the outcome to
 * your event loop) and must not shut the host down.
 */
typedef void aur_call_done_fn(void *ud, const struct aur_tool_output *out);

/*
 * aur_mcp_call without waiting: the call is queued and done(ud, out) runs
 * exactly once with its outcome, at the latest before aur_mcp_shutdown
 * returns.  The host runs at most 16 calls at once on threads of its own
 * and queues up to 4096 more; a call still queued at shutdown ends
 * failed (it was never sent).  AUR_OK: accepted.  Anything else: not
 * accepted, nothing sent, done never runs: AUR_E_INVAL (no tool id or
 * callback, arguments that are not one JSON object), AUR_E_STATE (not
 * started, or shutting down), AUR_E_LIMIT (the queue is full),
 * AUR_E_NOMEM.  Any thread once started.
 */
int aur_mcp_call_async(struct aur_mcp *h, const char *tool_id,
                       const char *args_json, size_t args_len,
                       int64_t timeout_ms, aur_call_done_fn *done, void *ud,
                       struct aur_error *err);

/*
 * aur_mcp_call_async without a thread per call: the request is sent on
 * the calling thread, and done(ud, out) runs exactly once, when the
 * outcome is known, on the thread that learns it:
 *   - the App's I/O thread that read the answer (or this thread, when a
 *     transport reads a quick answer while it sends, or the outcome is
 *     known before anything is sent: an unknown tool, an App that is not
 *     connected, a send that failed);
 *   - the host's call clock thread, for a call whose deadline passed
 *     (unknown: it was sent), or that the App's close or loss ended.
 * So done must be quick and must not block: it runs where that App's
 * next answers are read, and until it returns they wait.  It must not
 * call any aur_mcp_* function (hand the outcome to your own loop).  out
 * is borrowed for the callback.  Outcomes are those of aur_mcp_call,
 * decided by the same code.
 * A call the host cannot run this way runs as aur_mcp_call_async runs it
 * (a call thread, the same rules for done): a builtin tool, a call to an
 * App one of whose extensions classifies results, any call while calls
 * are recorded in the journal, and one that finds the App's
 * max_in_flight calls already out.
 * The send itself may wait, at most until the call's deadline, when the
 * App does not read its requests (a full pipe): call it from a thread
 * that may wait that long, not from a loop that serves other work.
 * Returns as aur_mcp_call_async does (AUR_OK: done runs, exactly once,
 * at the latest before aur_mcp_shutdown returns; anything else: nothing
 * sent, done never runs).  Any thread once started.
 */
int aur_mcp_call_start(struct aur_mcp *h, const char *tool_id,
                       const char *args_json, size_t args_len,
                       int64_t timeout_ms, aur_call_done_fn *done, void *ud,
                       struct aur_error *err);

/*
 * A burst of calls written together.  Between aur_mcp_batch_begin and
 * aur_mcp_batch_end, the requests of the calls this thread starts with
 * aur_mcp_call_start(_jsonc) on h may be held by their transport and
 * written at the end, all of an App's in one write where its transport
 * can (transport-stdio can), so its server is woken once for the burst
 * rather than once a call.  Each call's contract is unchanged: done runs
 * exactly once; a request that never left ends failed, one that left in
 * part unknown; the deadline runs from the call's start.  Only the
 * calls aur_mcp_call_start sends on this thread are held (not those it
 * runs as aur_mcp_call_async does), of at most 16 Apps; a call that
 * waits on this thread (aur_mcp_call) first writes what is held for its
 * App, before it waits for a max_in_flight slot, and takes that App out
 * of the batch; the other Apps get what they have room for.  Keep a
 * batch short: nothing held leaves before the end.  The end first
 * writes to each App what it has room for, then the rest, which may wait
 * as a send may (at most until that App's earliest deadline) for an App
 * that does not read; such an App holds up no other's requests, at the
 * end or while a send on this thread waits for it.  An answer naming a
 * request still held (the server cannot have read it) is dropped, never
 * taken for that call's.  aur_mcp_shutdown on another thread waits for the
 * end, however long; on this thread it writes the batch first; a thread
 * that ends with its batch open writes it as it ends.  Begins
 * nest; the outermost end writes.  A batch belongs to one host and one
 * thread: begin and end on the same thread, calls to another host are
 * not held.  NULL h: no-op.  Any thread once started.
 */
void aur_mcp_batch_begin(struct aur_mcp *h);
void aur_mcp_batch_end(struct aur_mcp *h);

/* The status document as JSON text (the discover output without "tools"
 * when with_tools == 0) into *json (free with aur_free; *len bytes).
 * Any thread, also while aur_mcp_start runs on another: each App is read
 * whole under its lock (its state, version, extensions and, once frozen,
 * its tools), and "tools" stays empty until the registry is frozen. */
int aur_mcp_status(struct aur_mcp *h, int with_tools, char **json,
                   size_t *len, struct aur_error *err);

/* The same text written to fd (borrowed; a pipe, a file, a socket) as it
 * is made, so that the document of a thousand Apps is never held whole.
 * AUR_E_IO with the errno in err->detail when a write fails (what was
 * written stays written); a write that would raise SIGPIPE does not.
 * Any thread. */
int aur_mcp_status_write(struct aur_mcp *h, int with_tools, int fd,
                         struct aur_error *err);



/* Any App's restart_required. */
int aur_mcp_restart_required(struct aur_mcp *h);

/*
 * Cancel from any thread (a signal-handling thread, a watchdog): a running
 * aur_mcp_start fails promptly with code "interrupted"; calls in flight
 * return unknown and later calls fail without being sent.  The owner
 * still calls aur_mcp_shutdown / aur_mcp_destroy.  Idempotent.
 */
void aur_mcp_cancel(struct aur_mcp *h);

/* Close every App in reverse config order.  Idempotent; calls that are in
 * flight return unknown. */
void aur_mcp_shutdown(struct aur_mcp *h);

/* Shut down if needed and free h (NULL allowed). */
void aur_mcp_destroy(struct aur_mcp *h);

/* Load one plugin file, validate it as the host would, and describe it
 * (name, version, kind, ABI, hooks) as a JSON object into *json (free
 * with aur_free; *len bytes).  Nothing is initialised. */
int aur_plugin_info(const char *path, char **json, size_t *len,
                    struct aur_error *err);

/* Print journal commits as JSON lines to a callback (the `journal` CLI).
 * scope NULL = all.  line is borrowed. */
int aur_journal_dump(const char *config_dir, int64_t after,
                     const char *scope,
                     void (*emit)(void *ud, const char *line), void *ud,
                     struct aur_error *err);

/* aur_journal_dump, then each commit as it is committed, by this or any
 * other host sharing the journal (`journal --follow`), until emit returns
 * non-zero.  After each wait of at most idle_ms (> 0) with nothing new,
 * emit is called with line NULL, so the caller can stop while idle.  A
 * PostgreSQL journal that is away is waited for; a file journal is
 * created if missing.  Blocks the calling thread; line borrowed. */
int aur_journal_follow(const char *config_dir, int64_t after,
                       const char *scope, int idle_ms,
                       int (*emit)(void *ud, const char *line), void *ud,
                       struct aur_error *err);



#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* AURORA_AUR_HOST_H */
