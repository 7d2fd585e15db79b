/*
 * killpoints.h - check_killpoints' parts (see check_killpoints.c): the
 * cells and their verdicts there, one trial per transport in
 * killpoints_trial.c.  The test's main thread only.
 */
#ifndef AUR_TEST_KILLPOINTS_H
#define AUR_TEST_KILLPOINTS_H

#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/harness.h"

#define PKG "org.test.killpoints"
#define TOOL "aur.mcp.org.test.killpoints.t0000"
#define SMALL_TEXT 64u
#define BIG_TEXT (256u * 1024u)
/* Under ASan/UBSan an HTTPS trial takes about 4 times as long (the CA
 * bundle parsed per connection dominates): the sanitizer pass of
 * scripts/test.sh runs half the trials, still every cell at least once. */
#if defined(__SANITIZE_ADDRESS__)
#define KP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KP_SANITIZED 1
#endif
#endif
#ifdef KP_SANITIZED
#define DEFAULT_TRIALS 500
#else
#define DEFAULT_TRIALS 1000
#endif
/* A stdio trial costs about a fifth of an HTTPS one (no TLS handshakes,
 * no CA bundle parsed per connection): stdio cells run 5 times as often. */
#define STDIO_WEIGHT 5
#define MAX_CELLS 256

enum tr { TR_STDIO, TR_HTTPS };
enum expect { X_FAILED, X_UNKNOWN, X_SUCCEEDED, X_NOT_SUCCEEDED };
extern const char *const expect_words[];

struct cell {
    enum tr tr;
    const char *conn;   /* "pipe" | "fresh" | "reused" */
    const char *point;  /* the test's name for it */
    const char *spoint; /* the server's --kill-at / --point */
    const char *how;
    bool big;
    enum expect expect;
    char name[96];
};


struct record {
    bool armed, killed, gone_done;
    long read_total;   /* target bytes the application read */
    long pending;      /* target bytes unread in the pipe/socket at death */
    int effects;
    int fresh;         /* HTTPS: the target's connection was new; -1 = ? */
    char method[64];   /* the target's JSON-RPC method, "" if not read */
    char hmethod[64];  /* HTTPS: its Mcp-Method header, "" if not read */
    long reply_wrote, reply_of;
    long outq;         /* HTTPS: reply bytes the client had not acked */
    int served_after;  /* HTTPS: requests served after arming */
    int late_conns;    /* AUR_KILLPOINT_LATE: connections after the death */
    int late_reqs;     /* ... that carried a whole request (a re-send) */
};

struct verdict {
    char rules[64];   /* violated checks, "," separated; "" = all kept */
    char why[1024];   /* the first violation, in words */
};

extern char *shared_dir;      /* the test CA, made once */
extern char *results_path;    /* one line per trial */
extern const char *trial_dir; /* the running trial's config directory */
/* Milliseconds a trial spent: host start, warm-up, target call, stop. */
extern int64_t phase_ms[4];

/* check_killpoints.c: the record a server left, the verdict, its line. */
void read_record(const char *path, struct record *r);
void judge(const struct cell *c, enum aur_call_status st, const char *content,
           const struct record *r, struct verdict *v);
void log_result(const struct cell *c, int rep, int attempt,
                enum aur_call_status st, const char *content,
                const struct record *r, const struct verdict *v, int64_t ms);

/* killpoints_trial.c: one attempt of a cell, its verdict in *v. */
void stdio_trial(const struct cell *c, int rep, int attempt,
                 struct verdict *v);
void https_trial(const struct cell *c, int rep, int attempt,
                 struct verdict *v);
void remove_dir(const char *dir);

#endif
