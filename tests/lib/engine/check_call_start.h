/*
 * check_call_start.h - what check_call_start.c and check_call_batch.c
 * share: a fresh config directory per test (dir), the C fixture server
 * (fixture) logging to logpath, and what each call's done saw, by slot.
 * One test at a time (Check forks each).
 */
#ifndef AUR_TEST_CHECK_CALL_START_H
#define AUR_TEST_CHECK_CALL_START_H

#include <aurora/aur_host.h>
#include <check.h>
#include <pthread.h>
#include <stdint.h>

#define PKG "org.test.cstart"
#define TOOL "aur.mcp.org.test.cstart.t0000"
#define PKG2 "org.test.cstart2"
#define TOOL2 "aur.mcp.org.test.cstart2.t0000"
#define NSLOT 256

extern char *dir, *fixture, *logpath;

/* What the callbacks saw, by slot (mu). */
struct call_seen {
    pthread_mutex_t mu;
    int status[NSLOT];
    int times[NSLOT];      /* how often each slot's done ran */
    char *content[NSLOT];  /* a copy, from its first run */
    int on_caller[NSLOT];  /* ran on the thread that started it */
    int64_t at[NSLOT];     /* h_now_ms() when it ran */
    int null_content;      /* runs with out->content NULL */
    int n;                 /* runs in all */
};
extern struct call_seen o;

struct slot {
    int i;
    pthread_t caller;
};
extern struct slot slots[NSLOT];

/* Callbacks run in all. */
int runs(void);
/* Wait (at most ms, stretched) until n callbacks ran; asserts exactly n. */
void wait_runs(int n, int64_t ms);
/* Slot i's call of tool (args: JSON text or NULL) from this thread. */
int start(struct aur_mcp *h, const char *tool, const char *args,
          int64_t timeout_ms, int i);
/* The fixture (modern era, opts) as App pkg in file, logging to log. */
void add_app(const char *file, const char *pkg, const char *log,
             double timeout_s, const char *app_extra,
             const char *const *opts);
/* A started host on dir. */
struct aur_mcp *host(void);
/* Wait (bounded) until path has at least n lines starting with prefix. */
int wait_lines(const char *path, const char *prefix, int n, int64_t ms);
/* {"text":"kNNN"} for slot i. */
void args_of(int i, char *buf, size_t size);
/* Slots [0, n) each ran once, succeeded, with their own text. */
void all_succeeded_once(int n);

/* check_call_batch.c's tests, added to tc. */
void call_batch_tests(TCase *tc);

#endif
