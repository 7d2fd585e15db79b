/*
 * http_int.h - private to transport-http (never installed).
 *
 * These files share these types:
 *   http_plugin.c  descriptor, init/fini, open/send/set_protocol/cancel
 *   http_pool.c    the worker pool and the stream threads
 *   http_assist.c  a request POST run by the caller of send
 *   http_close.c   stop and close: the end of a connection, the legacy
 *                  session's DELETE
 *   http_post.c    one job: its headers, the curl transfer, redirects
 *                  (struct http_run: a job that can change threads)
 *   http_trust.c   the certificate store of an App with ca_file
 *   http_response.c what comes back: the body, what reaches the sink
 *                  (incl. synthesised errors), the request's end
 *   http_headers.c one header line and the encoding of a value
 *   http_xheader.c x-mcp-header annotations: tools/list filtering and the
 *                  Mcp-Param-* headers of tools/call (modern era only)
 *   http_sse.c     the text/event-stream parser (pure, no I/O)
 *   http_url.c     URL and redirect-hop validation, origins
 *
 * http_sse.c and http_url.c depend on nothing but libc and libcurl's URL
 * API, so the unit tests compile them directly.
 *
 * Every file defines _GNU_SOURCE before its first include.
 */
#ifndef AUR_HTTP_INT_H
#define AUR_HTTP_INT_H

#include <aurora/aur_plugin.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "http_front.h"

#include "grow.h"

/* ---- http_sse.c ----------------------------------------------------- */

/* One dispatched event.  All pointers borrowed for the callback only;
 * data is NUL-terminated (data_len excludes the NUL). */
struct sse_event {
    const char *type; /* "message" when the stream named none */
    const char *data;
    size_t data_len;
    const char *last_id; /* "" when none */
};

/* Return non-zero to stop parsing (sse_feed then returns SSE_STOPPED). */
typedef int (*sse_cb)(void *ud, const struct sse_event *ev);

enum { SSE_OK = 0, SSE_STOPPED = 1, SSE_TOO_BIG = -1, SSE_NOMEM = -2 };

/* Parser state; one per stream, single-threaded.  Zero-initialise with
 * sse_init, free with sse_free. */
struct sse_parser {
    size_t max_event; /* bound on one line and on one event's data */
    char *line, *data;
    size_t line_len, line_cap, data_len, data_cap;
    char type[64];
    bool type_long; /* the event name did not fit: an unknown type */
    char last_id[256];
    long retry_ms;   /* -1 until a valid retry field */
    int bom_pos;     /* bytes of a leading BOM matched so far */
    bool bom_done;
    bool cr_pending; /* the last byte was CR: swallow one LF */
    int failed;      /* sticky SSE_TOO_BIG / SSE_NOMEM */
};

void sse_init(struct sse_parser *p, size_t max_event);
void sse_free(struct sse_parser *p);
/* Feed bytes; calls cb for each complete event.  SSE_OK, SSE_STOPPED, or
 * a sticky failure (the parser then ignores further input). */
int sse_feed(struct sse_parser *p, const char *buf, size_t len, sse_cb cb,
             void *ud);
/* End of stream: an unterminated event is discarded (never dispatched). */
void sse_finish(struct sse_parser *p);

/* ---- http_url.c ----------------------------------------------------- */

#define HTTP_ORIGIN_SIZE 300

/*
 * Check an absolute URL (https, a host, no userinfo, no fragment) and
 * write its canonical form (malloc'd, *out_url) and origin
 * "https://host:port" (port normalised, host lower-cased) into origin.
 * On failure returns AUR_E_INVAL and writes a reason (never the URL's
 * userinfo) into err.
 */
int http_url_check(const char *url, char **out_url,
                   char origin[HTTP_ORIGIN_SIZE], struct aur_error *err);

/* Resolve a Location value against base, then http_url_check it. */
int http_url_redirect(const char *base, const char *location, char **out_url,
                      char origin[HTTP_ORIGIN_SIZE], struct aur_error *err);

/* Header value encoding (docs/protocol.md): value as is, or
 * "=?base64?...?=".  Returns malloc'd text or NULL (out of memory). */
char *http_header_value(const char *v, size_t len);

/* The written form of a configured url (http_url.c): NULL when fine,
 * else why not (a fixed text that never quotes the url). */
const char *http_url_problem(const char *url);

/* The checks of an App's [http] section (http_config.c, ABI 1.4). */
int http_check(void *state, const struct aur_cfg *ep, int active,
               struct aur_error *err);
void http_preflight(void *state, const struct aur_cfg *ep,
                    void (*report)(void *ctx, const char *check,
                                   const char *problem),
                    void *ctx);

/* True if s is non-empty visible ASCII (0x21-0x7E) only. */
bool http_visible_ascii(const char *s);

/* ---- plugin and jobs ------------------------------------------------ */

enum http_kind {
    J_REQUEST, /* a POST carrying a request: expects its response */
    J_NOTIFY,  /* a POST of a notification or a response: expects 202 */
    J_LISTEN,  /* modern subscriptions/listen: long-lived SSE */
    J_GET,     /* legacy standalone GET stream */
    J_DELETE,  /* legacy session end, run by stop's thread or close */
};

/*
 * One HTTP exchange (including its redirect hops).  Created by send (or
 * set_protocol / cancel / close), owned by whoever runs it.
 * cancelled and multi are guarded by the connection's mu.
 */
struct http_job {
    struct http_job *next; /* queue or running list */
    struct aur_conn *c;    /* borrowed */
    enum http_kind kind;
    char *body; /* serialised message; NULL for GET/DELETE */
    size_t len;
    struct json_object *id; /* request id (own ref), J_REQUEST/J_LISTEN */
    char method[64];        /* "" if none or too long */
    int xh_page;             /* modern tools/list: 1 first page (no
                              * cursor), 2 a later page; 0 otherwise */
    struct curl_slist *hdrs; /* everything but Authorization */
    bool with_session;       /* hdrs carry Mcp-Session-Id */
    bool barrier;            /* nothing later starts before it ended */
    aur_deadline dl;         /* response deadline (J_LISTEN: connect) */
    bool cancelled;          /* (mu) */
    CURLM *multi;            /* (mu) while running: for wakeups */
    pthread_t thread;        /* stream jobs only */
    bool finished;           /* (mu) stream thread is about to return */
};

/* Per-thread curl state: one multi with one easy, kept across jobs so the
 * connection is reused. */
struct http_curl {
    CURLM *multi;
    CURL *easy;
};

/*
 * One App connection.  Locking: mu guards every field marked (mu); the
 * rest is read-only after open.
 */
struct aur_conn {
    struct http_state *st;  /* borrowed */
    struct aur_sink sink;   /* copy of the host's */
    char *package;          /* for log lines */
    char *url;              /* canonical configured URL */
    char origin[HTTP_ORIGIN_SIZE];
    char *auth_header;      /* "Authorization: Bearer ..." or NULL */
    void *trust;            /* X509_STORE: system bundle + ca_file, or
                             * NULL (no ca_file: curl's default bundle) */
    int64_t timeout_ms;

    pthread_mutex_t mu;
    pthread_cond_t cv;      /* CLOCK_MONOTONIC */
    bool closing;           /* (mu) */
    bool stopping;          /* (mu) stop was called: sends refused, no
                             * new stream, no new POST */
    bool reported;          /* (mu) on_closed was called */
    bool proto_set;         /* (mu) set_protocol was called */
    bool modern;            /* (mu) */
    char version[64];       /* (mu) negotiated or from the init result */
    char *session;          /* (mu) legacy Mcp-Session-Id */
    bool init_seen;         /* (mu) an initialize result was read */
    bool get_started;       /* (mu) */
    int get_state;          /* (mu) HTTP_GET_*: for the listen hook */
    int barriers;           /* (mu) barrier jobs queued or running */
    bool barrier_running;   /* (mu) */
    bool get_pending;       /* (mu) GET waits for the barriers */
    struct xh_table *xh;    /* (mu) x-mcp-header pairs of the last
                             * complete modern listing, or NULL */
    struct xh_table *xh_pending; /* (mu) the listing being paged */
    struct http_job *queue, *queue_tail; /* (mu) */
    size_t queued;          /* (mu) */
    struct http_job *running; /* (mu) */
    struct http_job *streams; /* (mu) listen/GET jobs with threads */
    int nstreams;           /* (mu) */
    pthread_t *workers;     /* st->max_workers slots */
    int nworkers, idle;     /* (mu) */
    int nrunning;           /* (mu) POSTs on c->running: at most
                             * max_workers, assisted ones included */
    /* The caller-run POST (http_assist.c): one at a time, on a curl
     * handle of its own that keeps its connection between calls. */
    bool assist_busy;       /* (mu) a caller or a worker has assist_hc */
    struct http_curl assist_hc;
    struct http_run *assist_run; /* heap; (mu) while assist_busy */
    bool adopt;             /* (mu) assist_run waits for a worker */
    /* The legacy session's DELETE that stop started on a thread of its
     * own (http_close.c).  Written by stop before that thread exists,
     * then read-only until close has joined it (stop and close are
     * never concurrent); del_session NULL = stop started none. */
    bool del_started;       /* del_thread runs it: close joins it */
    pthread_t del_thread;
    char *del_session;      /* the Mcp-Session-Id it ends (owned) */
    char del_version[64];
    aur_deadline del_dl;
};

/* The legacy standalone GET stream, as the listen hook sees it. */
enum { HTTP_GET_NONE = 0, HTTP_GET_UP = 1, HTTP_GET_ENDED = 2 };

/* ---- http_close.c --------------------------------------------------- */

/* Free everything open made (no thread left, mu not initialised or
 * already destroyed). */
void http_conn_free(struct aur_conn *c);
/* The transport's stop (ABI 1.5) and close. */
void http_stop(struct aur_conn *c, aur_deadline dl);
void http_close(struct aur_conn *c, aur_deadline dl);

/* ---- http_pool.c ---------------------------------------------------- */

/* All with c->mu held.  Wait on c->cv for at most ms (monotonic). */
void http_timed_wait(struct aur_conn *c, int64_t ms);
/* Queue a POST (takes j on AUR_OK), starting a worker if none is idle;
 * AUR_E_LIMIT past max_queued. */
int http_enqueue_locked(struct aur_conn *c, struct http_job *j,
                        struct aur_error *err);
/* Run j on a thread of its own (takes j on AUR_OK); AUR_E_LIMIT past
 * the stream limit. */
int http_start_stream_locked(struct aur_conn *c, struct http_job *j,
                             struct aur_error *err);
/* Open the legacy standalone GET stream (best effort, logged). */
void http_start_get_locked(struct aur_conn *c);
/* Start one more pool worker (c->nworkers below max_workers); false when
 * no thread could be made. */
bool http_start_worker_locked(struct aur_conn *c);
/* Caller holds c->mu: j (queued or assisted) ends; wakes a worker if
 * queued POSTs waited for its slot. */
void http_unrun_locked(struct aur_conn *c, struct http_job *j);
/* The caller-run POST r ended (its sink calls made; c->mu not held):
 * its handles and its slot are free again.  Frees r's job. */
void http_assist_end(struct aur_conn *c, struct http_run *r);
/* Mark the jobs of list with this id cancelled; whether there was one. */
bool http_abort_in(struct http_job *list, struct json_object *id);

/* ---- http_post.c ---------------------------------------------------- */

int http_curl_init(struct http_curl *hc);
void http_curl_free(struct http_curl *hc);

/* Build the job's header list and metadata from msg (borrowed) and the
 * connection's protocol state.  Caller holds c->mu. */
int http_job_headers(struct aur_conn *c, struct http_job *j,
                     struct json_object *msg, struct aur_error *err);

/* Run j to its end: transfer, redirects, sink delivery.  No sink call
 * once the job is cancelled or the connection is closing. */
void http_job_run(struct http_curl *hc, struct http_job *j);

void http_job_free(struct http_job *j);

/* ---- http_response.c ------------------------------------------------ */

enum http_body { B_UNSET, B_JSON, B_SSE, B_ERR, B_DISCARD };

/* One hop's transfer state. */
struct http_xfer {
    struct http_job *j;
    struct aur_conn *c;
    CURL *e;
    long status;
    enum http_body btype;
    char *buf;
    size_t len, cap, limit;
    struct sse_parser sse;
    bool got_response; /* the request's response reached the sink */
    bool established;  /* listen: a notification arrived on the stream */
    bool too_big;
    bool done; /* we ended the body on purpose */
    size_t body_off; /* request body bytes handed to curl */
    int attempts;    /* connections this hop was about to use */
    bool announced;  /* J_GET: its status went to get_state */
    bool head_done;  /* streams: the final response's head is all in */
    bool *sent;      /* the job's: a request may have left (every hop) */
    bool resend_refused; /* libcurl tried to write it again: refused */
    char *errbuf;    /* the run's: libcurl's words for the hop's failure */
    int fd_errno;    /* EMFILE/ENFILE: a connection's descriptor could
                        not be made (its socket, or a file TLS opens) */
};

#define HTTP_MAX_HOPS 5

/*
 * One job in progress: what running it keeps between two turns of the
 * curl loop, so that the thread that began it (the caller of send,
 * http_assist.c) can leave the rest to a worker.  Its address is curl's
 * callback data while a hop runs: it never moves.
 */
struct http_run {
    struct http_job *j;
    struct http_curl *hc;
    struct http_xfer x;
    char *seen[HTTP_MAX_HOPS + 2]; /* the hops' URLs (owned) */
    int nseen;
    char origin[HTTP_ORIGIN_SIZE]; /* the current hop's */
    char errbuf[CURL_ERROR_SIZE];
    bool sent;             /* any attempt of any hop may have written it */
    struct curl_slist *hdrs; /* the current hop's headers with the
                              * token (owned), or NULL: the job's */
    bool in_hop;           /* the easy handle is in the multi */
    bool timed_out;
    CURLcode cc;
};

/* Begin j on hc (both borrowed until http_run_free); false when the job
 * has already ended (out of memory, reported like any end). */
bool http_run_begin(struct http_run *r, struct http_curl *hc,
                    struct http_job *j);
/* Drive the job for at most ms (< 0: as long as it takes); true once it
 * has ended (its sink calls made).  Any thread, one at a time. */
bool http_run_step(struct http_run *r, int64_t ms);
void http_run_free(struct http_run *r);

/* The job was cancelled, or the connection is closing (takes c->mu). */
bool http_job_stopped(struct http_job *j);

/* on_closed at most once, and never once closing. */
void http_report_closed(struct aur_conn *c, int code, const char *why);

/* The request ends without a JSON-RPC response of its own (the message
 * is logged; on_request_end for a request or listen job). */
void http_end_request(struct http_xfer *x, int code,
                      struct json_object *error, const char *fmt, ...)
    AUR_PRINTF(4, 5);

/* The hop's status and body type, from its response headers. */
void http_xfer_classify(struct http_xfer *x);
/* CURLOPT_WRITEFUNCTION; ud is the struct http_xfer. */
size_t http_xfer_on_body(char *p, size_t sz, size_t n, void *ud);
/* Raise the legacy GET stream's state (aur_conn.get_state), wake waiters. */
void http_get_state(struct aur_conn *c, int state);
/* After a complete hop that was not a redirect: the body's verdict. */
void http_xfer_finish(struct http_xfer *x);
/* After the exchange: what its end means for the connection. */
void http_xfer_after(struct http_xfer *x);

/* ---- http_assist.c -------------------------------------------------- */

/* send's end, with c->mu held: run j (a POST, its headers built) on the
 * calling thread when it may.  True: j taken and c->mu released; false:
 * nothing done (c->mu still held), queue it. */
bool http_assist(struct aur_conn *c, struct http_job *j);

/* ---- http_trust.c --------------------------------------------------- */

/* The store of an App with ca_file: the system bundle (parsed once per
 * process) and the PEM text of ca_file; NULL when out of memory. */
void *http_trust_new(const char *pem, size_t len);
void http_trust_free(void *store);
/* CURLOPT_SSL_CTX_FUNCTION; the data is the store. */
CURLcode http_trust_ctx(CURL *e, void *ssl_ctx, void *store);

/* ---- http_headers.c ------------------------------------------------- */

#define HTTP_MAX_HEADER 8192
/* Append "name: v" (an empty v: curl's "name:", do not send curl's own
 * header of that name).  AUR_E_LIMIT when the line would be over
 * HTTP_MAX_HEADER bytes, AUR_E_NOMEM. */
int http_add_hdr(struct curl_slist **l, const char *name, const char *v);

/* Append "name: <value>" with the header value encoding: a
 * string as is or =?base64?...?=, an integer in decimal, a boolean as
 * true/false; null and non-primitive values add nothing.  AUR_E_LIMIT
 * when the line would be over HTTP_MAX_HEADER bytes. */
int http_add_encoded(struct curl_slist **l, const char *name,
                     struct json_object *v);

/* The string member k of o (borrowed), or NULL if absent or no string. */
const char *http_str_member(struct json_object *o, const char *k);

/* ---- http_xheader.c ------------------------------------------------ */

struct xh_tool;  /* one tool's (header name, property path) pairs */
struct xh_table; /* a listing's annotated tools, by name */

/* Check schema (borrowed) against the x-mcp-header rules (docs/
 * protocol.md).  AUR_OK with *out = the pairs (transfer; NULL when the tool has
 * no annotation), or AUR_E_INVAL with the reason (names properties and
 * annotations, never values) in err.  Pure: no locks, no logs. */
int http_xh_parse(const char *tool, struct json_object *schema,
                  struct xh_tool **out, struct aur_error *err);
void http_xh_tool_free(struct xh_tool *t);

/* The result (borrowed, edited in place) of a modern tools/list page,
 * before delivery: removes invalid tools (warn log: App, tool, reason)
 * and remembers the pairs of the rest.  first_page starts a new listing;
 * the page without nextCursor makes it current.  Takes c->mu. */
void http_xh_on_list(struct aur_conn *c, bool first_page,
                     struct json_object *result);

/* Caller holds c->mu: append the Mcp-Param-* headers of a modern
 * tools/call (params borrowed) to *l.  AUR_E_INVAL when an annotated
 * argument holds a value SEP-2243 cannot carry (the call must not be
 * sent), AUR_E_LIMIT / AUR_E_NOMEM as http_add_encoded. */
int http_xh_call_headers(struct aur_conn *c, struct json_object *params,
                         struct curl_slist **l, struct aur_error *err);

/* Free both tables (conn_free; no lock: no thread is left). */
void http_xh_conn_free(struct aur_conn *c);

/* The connection's host, for logs. */
#define HTTP_HOST(c) ((c)->st->host)
#define HTTP_LOG(c, lvl, ...)                                                \
    HTTP_HOST(c)->log((c)->st->self, (lvl), __VA_ARGS__)

#endif /* AUR_HTTP_INT_H */
