/*
 * check_rpc_fake.h - the in-process transport and handler recorder the
 * check_rpc suites (check_rpc.c, check_rpc_end.c, check_rpc_close.c,
 * check_rpc_text.c) drive
 * the JSON-RPC layer (lib/rpc/rpc*.c) with.
 *
 * The fake transport keeps the sink open() was given, so a test plays the
 * transport's thread itself: it calls fk.sink.on_message / on_text /
 * on_request_end / on_closed from the test thread (or from a helper
 * thread) exactly when it wants, which makes every interleaving a test
 * needs deterministic.  send() records each message as compact text and
 * returns what the test scripted.  The recorder (ev) keeps what the
 * dispatch thread told the owner, under a lock, with waits bounded by a
 * deadline so a missing event fails the test instead of hanging it.
 *
 * One global fake per test process: Check forks every test.
 */
#ifndef AUR_CHECK_RPC_FAKE_H
#define AUR_CHECK_RPC_FAKE_H

#include "aur_setup.h"

#include <check.h>
#include <pthread.h>

#include <json-c/json.h>

#include "clock.h"
#include "rpc.h"

#define FK_MAX_SENT 256

struct aur_conn {
    pthread_mutex_t mu;
    struct aur_sink sink;
    char *sent[FK_MAX_SENT]; /* every message send/send_text took */
    size_t nsent;
    size_t send_calls, send_text_calls;
    int send_rc;        /* what the next sends return */
    int send_fail_left; /* how many sends fail with send_rc (-1: all) */
    /* Called inside send/send_text after recording, before returning:
     * a reply that beats send() back to its caller. */
    void (*on_send)(struct aur_conn *c, struct json_object *msg);
    struct json_object *cancelled; /* ids the cancel hook got */
    int reopens, closes;
    int reopen_rc;
    int open_rc;
    int listen_rc, listens; /* the listen hook's answer, its calls */
    int proto_modern;       /* what set_protocol was told (-1: never) */
    char proto_version[32];
    bool open;
    /* A thread playing the transport's reader: close() joins it, as a
     * real transport's close joins its threads before returning. */
    pthread_t reader;
    bool has_reader;
};

extern struct aur_conn fk;
/* open/send/close only (ABI 1.0 minimum). */
extern const struct aur_transport_ops fk_ops_min;
/* Also cancel, reopen, send_text, set_protocol and listen. */
extern const struct aur_transport_ops fk_ops_full;

/* What the dispatch thread told the owner. */
struct fk_events {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct json_object *notes;      /* [{"method","params","stamp"}] */
    struct json_object *responses;  /* detached responses (copies) */
    struct json_object *ended;      /* [{"id","code","delivered","msg"}] */
    int nnotes, nresponses, nended; /* their lengths, for fk_wait_for */
    int nsync;       /* notifications "sync" handled (a dispatch barrier) */
    int closed;      /* handlers.closed calls */
    bool closed_why; /* the last one had a reason */
    struct aur_error closed_err;
    int requests;    /* handlers.request calls */
    bool off_thread; /* every handler ran on another thread than ours */
    pthread_t test_thread;
    /* ordered: 0 = no ordered handler; else returned for each method,
     * except "drop/..." methods, which get AUR__RPC_DROP. */
    unsigned ordered_stamp;
    int ordered_calls;
    bool ordered_on_caller; /* ordered ran on the thread that fed */
    char order[64];         /* 'n' per notification, 'c' per close */
    /* reply_scan: set before fk_open to hand the layer a scanner that
     * takes a result's string member "t" as the text; scans counts its
     * calls. */
    bool scanner;
    int scans;
    int batch_refused; /* handlers.batch_refused calls */
    bool gate_closed; /* notification handler blocks while set */
    int in_handler;   /* notifications inside the handler now */
};

extern struct fk_events ev;

/* Reset fk and ev (call first in every test). */
void fk_reset(void);
/* aur__rpc_open over ops with max_pending 16, max_queue 64 (lim may
 * override: NULL = those) and the recorder's handlers; asserted AUR_OK. */
struct aur__rpc *fk_open(const struct aur_transport_ops *ops,
                         const struct aur__rpc_limits *lim);
/* Parse a message from a printf format and hand it to on_message. */
void fk_push(const char *fmt, ...) AUR_PRINTF(1, 2);
/* Hand text (borrowed) to on_text; returns its rc. */
int fk_push_text(const char *text, struct aur_error *err);
/* The i-th message sent (new object, transfer) and its "id" as int64. */
struct json_object *fk_sent(size_t i);
int64_t fk_sent_id(size_t i);
size_t fk_nsent(void);
/* A request that waits (asserted AUR_OK); its integer id in *id. */
struct aur__pending *fk_request(struct aur__rpc *r, const char *method,
                                int64_t *id);
/* Wait until *counter (read under ev.mu) reaches n or ms pass. */
bool fk_wait_for(const int *counter, int n, int64_t ms);
/* *counter read under ev.mu. */
int fk_count(const int *counter);
/* p is still waiting: a wait that expires at once keeps it. */
bool fk_still_waiting(struct aur__rpc *r, struct aur__pending *p);
uint64_t fk_dropped(struct aur__rpc *r);
/* Wait for p up to ms; the rc (a reply, if any, is dropped). */
int fk_wait_rc(struct aur__rpc *r, struct aur__pending *p, int64_t ms,
               struct aur__rpc_end *end, struct aur_error *err);
aur_deadline fk_in(int64_t ms);

/* The TCases of each file, gathered by check_rpc.c's main. */
void rpc_add_correlation(Suite *s);
void rpc_add_end(Suite *s);
void rpc_add_close(Suite *s);
void rpc_add_text(Suite *s);

#endif
