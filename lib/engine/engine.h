/*
 * engine.h - the host's private state, shared by the engine's files.
 *
 * Lifetime: struct aur_mcp owns the config, the plugins, the Apps and the
 * frozen registry.  Threads: fields marked (mu) are guarded by the App's
 * mutex; everything else is written by the owner thread before start
 * returns and only read afterwards.
 */
#ifndef AUR_ENGINE_H
#define AUR_ENGINE_H

#include "aur_setup.h"

#include <aurora/aur_host_jsonc.h>
#include <pthread.h>

#include "config.h"
#include "jsonx.h"
#include "loader.h"
#include "rpc.h"

struct json_object;
struct aur__journal;
struct aur__log;

/* Per plugin instance: tags its logs and world writes. */
struct aur_self {
    struct aur_mcp *mcp;
    char tag[80];
};

enum aur__app_state {
    AUR__S_DISABLED = 0,
    AUR__S_STARTING,
    AUR__S_READY,
    AUR__S_UNAVAILABLE,
    AUR__S_CLOSED,
    AUR__S_NOT_STARTED, /* enabled, not begun: before start, or never */
};

/* One extension's view of one App. */
struct aur__ext_session {
    struct aur__plugin *p;
    void *session;
    bool active; /* accept_server said AUR_OK */
};

/* A scopes object as call outputs hand it out (scope_view.c).  One
 * block: free() releases it. */
struct aur__scope_view {
    const char **observe, **publish; /* never NULL, even when empty */
    size_t n_observe, n_publish;
    struct json_object *of; /* the object it was made from (borrowed) */
    struct aur__scope_view *next; /* mcp->views */
};

struct aur__tool {
    char *id;
    char *raw_name;
    char *description;
    size_t description_len; /* may hold U+0000 */
    bool task_required; /* execution.taskSupport "required": not callable */
    struct json_object *schema;
    char *schema_text; /* its canonical text, or NULL (builtins) */
    size_t schema_len;
    struct json_object *scopes; /* {"observe":[..],"publish":[..]} templates */
    const struct aur__scope_view *view; /* of scopes; set at freeze */
    struct aur__app *app;       /* NULL for a builtin */
    aur_builtin_jsonc_fn *fn; /* a builtin on trees, or */
    aur_builtin_fn *tfn;      /* a builtin on text */
    void *ud;
    struct aur_tool_info info; /* the public view */
    struct aur__text *json;    /* aur_mcp_tool_json's, made on demand */
};

#define AUR__MAX_EXT 16

struct aur__app {
    struct aur_mcp *mcp;
    const struct aur__app_cfg *cfg;
    size_t index;
    char tag[192]; /* "app <package>" for logs */
    struct aur__plugin *transport;
    struct aur__rpc *rpc;
    struct aur__ext_session ext[AUR__MAX_EXT];
    size_t next;
    struct aur_app_info info; /* for extensions; strings owned here */
    struct aur_self self;     /* tags the App's logs and world writes */

    /* negotiation (owner/startup thread, read-only after ready) */
    bool modern;
    char version[16];
    struct json_object *server_caps;
    struct json_object *client_caps; /* extensions we declare */
    char *envelope_text; /* modern: the request _meta, serialised once */
    char listen_id[32];
    bool listening;

    /* tools in discovery order (startup thread, frozen after ready) */
    struct aur__tool **tools;
    size_t ntools, tools_cap;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum aur__app_state state; /* (mu) */
    char *last_error;          /* (mu) */
    bool restart_required;     /* (mu) */
    int64_t change_seq;        /* (mu) every change/disconnect signal */
    int64_t changes;           /* (mu) tools list-changed signals */
    int64_t commit_change_seq; /* (mu) seq of the one catalog.changed */
    bool disconnected;         /* (mu) */
    /* (mu) why, kept without allocating: AUR_E_CLOSED, or AUR_E_NOMEM
     * when the connection was given up for want of memory. */
    int disconnect_rc;
    char disconnect_detail[AUR_ERR_MSG_SIZE];
    bool listen_acked;         /* (mu) */
    bool listen_tools_honoured; /* (mu) the ack's toolsListChanged: true */
    int listen_error;          /* (mu) JSON-RPC code of a listen error */
    char *listen_end;          /* (mu) why the listen request ended */
    int64_t listed_changes;    /* (mu) changes when the clean pass began */
    /* (mu) set with frozen: a change or a disconnect from here on is a
     * runtime signal (restart_required), no more a reason to page
     * again; events wait for the host's own activation (mcp->active) */
    bool activated;
    bool closing;              /* (mu) late signals are ignored */
    int inflight;              /* (mu) calls using rpc right now */
    int batched;               /* (mu) batches holding requests on rpc */
    int64_t calls_sent;        /* (mu) of them past the max_in_flight gate */
    bool opened;
    bool listed;  /* (mcp->mu) a clean pass is in, waiting for the freeze */
    bool frozen;  /* (mcp->mu) its catalog is part of the frozen registry */
    bool queued;  /* (mcp->mu) in mcp->relist, waiting for a start worker */

    /* startup, on the start worker running its pass (one at a time; read
     * by others after the workers are joined) */
    bool began;
    bool skipped; /* aur_mcp_skip_app: left out of this run, as if disabled */
    aur_deadline start_dl; /* the one deadline of its startup */
    int relists;           /* passes paged again, against max_relist */
    int start_rc;
    int fail_order; /* 1 = the first App to fail */
    char phase[32];
    char error[512];
    char t_starting[40], t_done[40]; /* UTC, for lifecycle commits */
};

struct aur_mcp {
    struct aur__config *cfg;
    struct aur__log *log; /* this host's (log.h) */
    struct aur__async *async; /* async.c's pool, made on first use */
    bool async_closed;        /* shutdown began: no pool is made (mu) */
    struct aur__clock *clock; /* call_start.c's, made on first use */
    struct aur_host host; /* the vtable handed to plugins */
    struct aur__plugin_set plugins;
    struct aur_self *selves; /* one per plugin */
    struct aur__plugin **exts; /* extension plugins, in plugins= order */
    size_t nexts;
    /* What the config loader knows of each transport plugin, and the
     * plugin each def came from (same index), in plugins= order. */
    struct aur__transport_def *tdefs;
    struct aur__plugin **tplugins;
    size_t ntdefs;

    struct aur__app *apps; /* config order */
    size_t napps;

    struct aur__tool **builtins;
    size_t nbuiltins;
    struct aur__tool **registry; /* sorted by id, frozen at start */
    /* (atomic) stored last, once registry is whole: a status read during
     * the start sees 0 until then (status.c) */
    size_t nregistry;
    struct aur__scope_view *views; /* of the registry's tools */

    struct aur__journal *journal; /* (atomic) set whole during start */
    struct aur_world_writer writer;
    bool have_writer;
    /* The journal's connection as last logged (hostsvc.c: jwatch_mu). */
    pthread_mutex_t jwatch_mu;
    const char *jwatch_state; /* static strings of aur__jstate.state */
    uint64_t jwatch_reconnects;
    char startup_id[33];

    bool started;
    bool active;
    bool shut;
    pthread_mutex_t mu; /* guards the fields below */
    pthread_cond_t cv;  /* the freeze, the gate, cancel */
    pthread_cond_t wcv; /* start workers waiting for an App */
    bool cancel;        /* first startup failure cancels the rest */
    bool interrupted;   /* aur_mcp_cancel was called */
    size_t next_start;  /* apps[] index of the next first pass */
    struct aur__app **relist; /* listed Apps that saw a change, FIFO */
    size_t nrelist, relist_head;
    uint64_t calls_recorded; /* (atomic) record_calls commits, for their ids */
    int failures;
    size_t listed;      /* Apps whose clean pass waits for the freeze */
    bool freeze_done;   /* the registry froze: no App lists again */
    int gate;           /* activation: 0 closed, 1 open, -1 startup failed */
};

/* hostsvc.c: fill mcp->host. */
void aur__host_vtable_init(struct aur_mcp *mcp);
/* host.c: open the journal cfg names, its password from the environment. */
int aur__open_journal(const struct aur__config *cfg, struct aur__journal **out,
                      struct aur_error *err);
/* world write through the configured writer (journal or custom). */
int aur__world_append(struct aur_mcp *mcp, const struct aur_commit *c,
                      struct aur_error *err);
/* v[0..n) in one transaction of the journal: results as
 * aur__journal_append_batch gives them.  mcp NULL or no journal (a
 * runtime writer, which has no batches): AUR_E_STATE for all. */
int aur__world_append_batch(struct aur_mcp *mcp,
                            const struct aur_commit *const *v, size_t n,
                            int *results, struct aur_error *err);

/* negotiate.c: connect + negotiate one App (phase connect). */
int aur__app_connect(struct aur__app *app, aur_deadline dl,
                     struct aur_error *err);
/* The _meta envelope for a modern request (new object, transfer). */
struct json_object *aur__app_envelope(struct aur__app *app);
/* Send a request and wait for its result.  *result (transfer) is the
 * "result" member; a JSON-RPC error becomes AUR_E_RPC with its code in
 * err->detail and the error object in *result.  end (may be NULL): what
 * the transport knows of how it travelled (rpc.h).  Modern requests get
 * the envelope added to params. */
int aur__app_call(struct aur__app *app, const char *method,
                  struct json_object *params, const char *sid,
                  aur_deadline dl, struct json_object **result,
                  struct aur__rpc_end *end, struct aur_error *err);
/* The two halves of aur__app_call, for a caller that works while the
 * server answers (discovery asks for the next page before it binds this
 * one).  send: params (transfer) as above; *p (transfer) goes to
 * aur__app_result, which releases it, or to aur__rpc_abandon. */
int aur__app_send(struct aur__app *app, const char *method,
                  struct json_object *params, const char *sid,
                  aur_deadline dl, struct aur__pending **p,
                  struct aur_error *err);
int aur__app_result(struct aur__app *app, struct aur__pending *p,
                    const char *method, aur_deadline dl,
                    struct json_object **result, struct aur__rpc_end *end,
                    struct aur_error *err);

/* discovery.c: phases catalog/listen and tools/list for one App.
 * list_tools pages until a pass sees no change (at most max_relist
 * passes in all, *relists counts them across calls) and sets
 * app->listed_changes to the change count the clean pass began with. */
int aur__app_listen(struct aur__app *app, aur_deadline dl,
                    struct aur_error *err);
int aur__app_list_tools(struct aur__app *app, aur_deadline dl, int *relists,
                        struct aur_error *err);
void aur__tool_free(struct aur__tool *t);

/* events.c: the rpc handlers of an App. */
extern const struct aur__rpc_handlers aur__app_handlers_template;
/* rc: AUR_E_CLOSED, or AUR_E_NOMEM (see disconnect_rc). */
void aur__app_mark_disconnected(struct aur__app *app, int rc,
                                const char *detail);

/* startup.c */
/* mcp->tdefs and tplugins from the loaded transport plugins
 * (transports.c); AUR_E_PLUGIN when two claim one word or section. */
int aur__transport_defs(struct aur_mcp *mcp, struct aur_error *err);
/* a's open prepared now (ABI 1.7), if its transport can and descriptors
 * are to spare; the host asks for its first App that will start
 * (transports.c). */
void aur__transport_prepare(struct aur__app *a);
/* What prepare began for a and no open took, undone (ABI 1.8); owner
 * thread, no open of a running. */
void aur__transport_unprepare(struct aur__app *a);

int aur__start_all(struct aur_mcp *mcp, struct aur_startup_error *serr,
                   struct aur_error *err);
/* grace_ms bounds how long each child may take to leave after stdin
 * closes, before it is terminated. */
#define AUR__CLOSE_GRACE_MS 5000
#define AUR__FAIL_GRACE_MS 1000
void aur__close_all(struct aur_mcp *mcp, int64_t grace_ms);
/* Dispatch threads: wait until activation's effects may happen (the
 * frozen commits are written); false = startup failed, drop them. */
bool aur__activation_wait(struct aur_mcp *mcp);
/* startup.c, from events.c: a change or disconnect that reached app
 * before it was activated (never with app->mu held): a listed App not yet
 * frozen pages again.  true: the App froze since (the freeze went past
 * it), so the change counts as one after the freeze. */
bool aur__startup_recheck(struct aur__app *app);

/* lifecycle.c: the startup transaction's world commits (when: NULL =
 * now; data borrowed). */
void aur__lifecycle_commit(struct aur__app *app, const char *kind,
                           const char *suffix, const char *summary,
                           struct json_object *data);
void aur__lifecycle_commit_at(struct aur__app *app, const char *kind,
                              const char *suffix, const char *summary,
                              struct json_object *data, const char *when);
/* mcp.app.failed of a, why (borrowed) in phase. */
void aur__commit_failed(struct aur__app *a, const char *phase, int rc,
                        const char *why, const char *when);
/* starting/ready/failed of every App that began, in config order, in
 * one batch. */
void aur__write_startup_commits(struct aur_mcp *mcp);
/* mcp.catalog.frozen of every ready App, in config order, in one batch. */
void aur__write_frozen_commits(struct aur_mcp *mcp);

/* scope_view.c: the lists of s ({"observe":[..],"publish":[..]}, a
 * missing member is empty).  copy: the strings are copied into the block,
 * else they point into s, which must then outlive the view unchanged.
 * NULL: out of memory (errno ENOMEM), or a member that is not an array of
 * strings (EINVAL). */
struct aur__scope_view *aur__scope_view_new(struct json_object *s, bool copy);

/* registry.c */
int aur__registry_freeze(struct aur_mcp *mcp, struct aur_error *err);
struct aur__tool *aur__registry_find(const struct aur_mcp *mcp,
                                     const char *id);
/* The registered id closest to id ("did you mean", aur_suggest), or NULL;
 * borrowed from the registry. */
const char *aur__registry_suggest(const struct aur_mcp *mcp, const char *id);
int aur__agents_check(struct aur_mcp *mcp, struct aur_error *err);

/* budget.c: the per-tool budgets of app's config, checked on tj (one
 * Tool of a tools/list page, borrowed) when it is bound; AUR_E_LIMIT
 * names the tool id and the key.  On AUR_OK *schema_text (transfer; NULL
 * when tj has no inputSchema) is its inputSchema's canonical text, made
 * to measure it and kept for the catalog's output (status.c).  Startup
 * thread. */
int aur__tool_budget_check(const struct aur__app *app, const char *id,
                           struct json_object *tj, char **schema_text,
                           size_t *schema_len, struct aur_error *err);
/* budget.c: a mapped call result over max_result_bytes becomes unknown
 * (a failed one stays failed) and its content a text naming the budget.
 * out is writable; any thread. */
void aur__call_result_budget(const struct aur__app *app,
                             struct aur_tool_output *out);

/* status.c */
const char *aur__state_word(enum aur__app_state s);
/* The status document / tool t as canonical text: *out (transfer,
 * NUL-terminated) and *len on AUR_OK; AUR_E_NOMEM.  Any thread once the
 * registry is frozen. */
int aur__status_text(struct aur_mcp *h, int with_tools, char **out,
                     size_t *len, struct aur_error *err);
int aur__tool_text(const struct aur__tool *t, char **out, size_t *len,
                   struct aur_error *err);

/* Text made once and read by any thread: len bytes, then a NUL. */
struct aur__text {
    size_t len;
    char s[];
};

/* startup.c: *serr (NULL allowed) for a start that failed with rc in
 * phase (its word), about app (NULL: none). */
void aur__serr_fill(struct aur_startup_error *serr, int rc, const char *app,
                    const char *phase, const char *msg);

/* async.c: the pool's limits; stop: queued calls end failed (unsent), no
 * more are taken; join (after the Apps closed): every callback has run,
 * the pool is gone.  Both owner thread, in shutdown. */
#define AUR__ASYNC_WORKERS 16
#define AUR__ASYNC_QUEUE 4096
void aur__async_stop(struct aur_mcp *h);
void aur__async_join(struct aur_mcp *h);
/* What every call without a waiter needs before anything is parsed: a
 * host that runs, a tool id and a callback.  AUR_OK, or why not. */
int aur__async_accept(struct aur_mcp *h, const char *tool_id,
                      aur_call_done_fn *done, struct aur_error *err);
/* A call for the pool (args: transfer, NULL = {}), aur_mcp_call_async's
 * rules and return codes.  Any thread. */
int aur__async_submit(struct aur_mcp *h, const char *tool_id,
                      struct json_object *args, int64_t timeout_ms,
                      aur_call_done_fn *done, void *ud, struct aur_error *err);

/* call_start.c: aur_mcp_call_start (args borrowed, NULL = {}, already
 * checked to be an object); join: after the Apps closed, the clock
 * thread ends (every call it kept has ended by then).  Owner thread. */
int aur__call_start(struct aur_mcp *h, const char *tool_id,
                    struct json_object *args, int64_t timeout_ms,
                    aur_call_done_fn *done, void *ud, struct aur_error *err);
void aur__clock_join(struct aur_mcp *h);

/* builtin.c: run builtin tool t (t->app NULL) with args (borrowed, NULL =
 * {}) into out.  Any thread. */
void aur__builtin_run(struct aur__tool *t, struct json_object *args,
                      struct aur_tool_output *out);

/* call.c */
/* A call's arguments as text (NULL = {}) into *args (transfer; NULL for
 * {}): AUR_OK, AUR_E_INVAL when they are not one JSON object, or
 * AUR_E_NOMEM (nothing may be sent then). */
int aur__call_args(const char *args_json, size_t args_len,
                   struct json_object **args, struct aur_error *err);
void aur__tool_call(struct aur_mcp *mcp, struct aur__tool *t,
                    struct json_object *args, int64_t timeout_ms,
                    struct aur_tool_output *out);

/*
 * One call to an App, in steps that the blocking call (call.c) and the
 * one without a waiter (call_start.c) share, so both decide outcomes with
 * the same code.  Any thread; out writable, the caller's.
 */
struct aur__call {
    struct aur__tool *t;
    struct aur__app *app;
    struct aur__rpc *rpc; /* counted in app->inflight until leave */
    aur_deadline dl;
    int64_t t0;
    bool gated; /* counted in app->calls_sent until leave */
};
/* tool_id in the frozen registry, or NULL (out, may be NULL, says why:
 * an unknown id, with a near one, or a host that is not running). */
struct aur__tool *aur__call_lookup(struct aur_mcp *h, const char *tool_id,
                                   struct aur_tool_output *out);
/* Before a call goes to its App: a builtin runs here, scopes resolve into
 * out, a task-only tool is refused.  false: it ended here (out says how). */
bool aur__call_prepare(struct aur__tool *t, struct json_object *args,
                       struct aur_tool_output *out);
/* Whether a call to app may end on the thread that reads its answer: no
 * extension classifies results and calls are not recorded. */
bool aur__call_fast_ok(const struct aur__app *app);
/* A place for the call: 1 = go (send, then leave); 0 = it ended here
 * (out filled, left); -1 = only with !wait: max_in_flight calls are out,
 * nothing is counted, out untouched. */
int aur__call_enter(struct aur__tool *t, struct json_object *args,
                    int64_t timeout_ms, bool wait, struct aur__call *c,
                    struct aur_tool_output *out);
/* Send the request (pre: an aur__rpc_pending_new handle, or NULL for a
 * new one into *p).  Not AUR_OK: out says how it ended (failed only when
 * nothing can have left). */
int aur__call_send(struct aur__call *c, struct json_object *args,
                   struct aur__pending *pre, struct aur__pending **p,
                   struct aur_tool_output *out);
/* The outcome of a sent call into out, waiting until c->dl for it (a
 * handle that has ended does not wait); p is released. */
void aur__call_outcome(struct aur__call *c, struct aur__pending *p,
                       struct aur_tool_output *out);
/* The call is over: recorded (args borrowed, may be NULL), uncounted. */
void aur__call_leave(struct aur__call *c, struct json_object *args,
                     const struct aur_tool_output *out);
/* batch.c: c's App joins this thread's open batch, if any and if its
 * transport can hold requests (c counts in the App's inflight until its
 * outcome, so the App cannot close under this). */
void aur__batch_join(struct aur_mcp *h, const struct aur__call *c);
/* batch.c: what this thread's batch holds for h's Apps is written
 * now (the batch stays open, empty): a close would wait for it. */
void aur__batch_drop(struct aur_mcp *h);
/* batch.c: this thread is about to wait for app (a blocking call:
 * for a max_in_flight slot, then for its answer).  What its batch holds
 * for app is written first (those requests may hold the very slots it
 * waits for), and app leaves the batch; every other App of the batch
 * writes what it has room for now.  No lock held. */
void aur__batch_before_wait(struct aur__app *app);

/* call_result.c.  out is writable and owned by the caller; any thread. */
/* Every field of out zero but the caller's struct_size. */
void aur__out_reset(struct aur_tool_output *out);
/* out's status s and content the formatted text ("ok" / "no detail" when
 * it comes out blank).  Without memory for it: aur__out_nomem(out, s). */
void aur__out_set(struct aur_tool_output *out, enum aur_call_status s,
                  const char *fmt, ...) AUR_PRINTF(3, 4);
/* out's status s and content text (transfer: len bytes, NUL-terminated;
 * NULL = memory ran out making it: aur__out_nomem(out, s)). */
void aur__out_take(struct aur_tool_output *out, enum aur_call_status s,
                   char *text, size_t len);
/* The call ran out of memory: failed (s failed: nothing was sent) or
 * unknown (anything else), with a static text aur__out_is_nomem knows. */
void aur__out_nomem(struct aur_tool_output *out, enum aur_call_status s);
bool aur__out_is_nomem(const struct aur_tool_output *out);
/* A tools/call result object (borrowed) into out, the tool's extensions
 * classifying it first. */
void aur__call_map_result(struct aur__tool *t, struct json_object *res,
                          struct aur_tool_output *out);
/* A plain success the reply scanner read (text: transfer, len bytes, its
 * texts joined) into out, as map_result would make it. */
void aur__call_map_text(char *text, size_t len, struct aur_tool_output *out);
/* A JSON-RPC error reply (borrowed) into out: failed for the errors that
 * say the call was refused unrun (-32601, -32602), else unknown. */
void aur__call_map_rpc_error(struct json_object *reply, int http_status,
                             struct aur_tool_output *out);


/* Small helpers (util.c). */
/* The formatted text (malloc'd), or NULL when memory ran out. */
char *aur__strdup_printf(const char *fmt, ...) AUR_PRINTF(1, 2);
void aur__set_str(char **slot, const char *v);
bool aur__is_blank(const char *s);
/* s[0..n) (U+0000 allowed) holds only whitespace. */
bool aur__is_blank_n(const char *s, size_t n);

#endif
