/*
 * check_killpoints.c - kill points: the real host (libaurora-mcp) calls a
 * tool on a server that dies at one point around that tools/call, and the
 * outcome must keep the promise of aur_host.h:
 *
 *   failed    = provably no effect: not one byte of the request reached the
 *               server;
 *   unknown   = whenever any byte may have reached it and no whole reply
 *               came back;
 *   succeeded = the whole reply came back.
 *
 * Each trial is independent: its own config directory, its own host, its
 * own server process.  The server keeps a record (one line per step, each
 * written before the next step, so even raise(SIGKILL) right after leaves
 * it whole) of how many bytes of the target request its application read
 * ("read total=N"), how many sat unread in its pipe or socket when it died
 * ("pending"), the effect, and how much of the reply it wrote.  The checks
 * of a trial, in the order they are reported:
 *
 *   x   the trial itself went as designed (startup, the warm-up call, the
 *       kill point reached by the target tools/call, on the intended kind
 *       of connection)
 *   dup the request was executed or served twice (a silent re-send)
 *   a   failed  =>  the server's application read 0 bytes of the request
 *   a+  failed  =>  no byte of it was even waiting in the server's pipe or
 *       socket buffers when it died (the host cannot tell these from read
 *       ones: a pipe or socket loses them with the process)
 *   b   bytes reached the server and no whole reply came back  =>  unknown
 *   c   the server was gone before the call, and the host could know
 *       (stdio: it saw the App exit; HTTPS: nothing listens any more, or
 *       the TLS handshake never completed)  =>  failed
 *   d   the whole reply came back before the death  =>  succeeded, with
 *       the reply's content
 *
 * Transports, connection kinds and points:
 *   stdio (aur-fixture-server --kill-at, tests/fixtures/fixture_killpoint.c)
 *     gone-seen    the App dies after startup and a warm-up call; the host
 *                  has marked it unavailable before the call        (c)
 *     gone-race    the same, calling at once (a, a+, b only)
 *     before-read  target bytes in the stdin pipe, none read        (b)
 *     part-read    20 bytes (small) or 1000 bytes (big) read         (b)
 *     line-read, effect, half-reply                                  (b)
 *     full-reply                                                     (d)
 *   HTTPS (tests/http/killpoint_https.c), FRESH (Connection: close, the
 *   target is the first request of a new connection) and REUSED (keep-
 *   alive: the target follows a successful call on the same connection):
 *     gone         FRESH: nothing listens any more                   (c)
 *                  REUSED: the same, but a kept-alive connection the
 *                  client may still write to: a, a+ only
 *     tcp-accept   FRESH: TCP accepted, no TLS handshake             (c)
 *     handshake    FRESH: TLS done, nothing read (a, a+, b only)
 *     before-read, headers, body, effect, part-reply                 (b)
 *     full-reply   (the server waits until the client's kernel acked
 *                  every reply byte before it dies)                  (d)
 *   Deaths: stdio exit(3) | close stdin+stdout and linger | SIGKILL;
 *   HTTPS close (close_notify+FIN) | reset (RST) | exit | SIGKILL.  After
 *   any HTTPS death the listening socket is closed first, so a silent
 *   re-send by libcurl on a new connection is refused.
 *   Sizes: small (64-byte text) and big (256 KiB text: more than a pipe
 *   buffer, so the host's write to a dying stdio App is partial).
 *
 * Cells are (transport, connection, point, death, size): 48 stdio, 84
 * HTTPS (the big request only at handshake, before-read and headers).  A
 * run is AUR_KILLPOINT_TRIALS trials (default 1000; 500 in a sanitizer
 * build) over a round-robin schedule in which every stdio cell comes 5
 * times per HTTPS cell (a stdio trial costs about a fifth), so the
 * default run is about 770 stdio and 230 HTTPS trials, every cell at
 * least 3 times; each trial is one iteration of a Check loop test, in its
 * own forked process.  A REUSED
 * attempt whose target came on a new connection after all (the client
 * handed it to a new worker) proves nothing and is run again, up to 4
 * attempts; only the last one counts.
 *
 * Knobs: AUR_KILLPOINT_ONLY=substring keeps the cells whose name
 * ("https/reused/body/exit/small") contains it; AUR_KILLPOINT_RESULTS=FILE
 * keeps one tab-separated line per trial (outcome, violations, the record's
 * counts, phase times, content); AUR_KILLPOINT_KEEP=1 keeps every trial's
 * directory (server record, its stderr) and names it in that line;
 * AUR_KILLPOINT_LATE=1 (diagnostics) lets an HTTPS server that died by
 * close/reset keep listening and record what comes afterwards: a request
 * re-sent by the HTTP library counts as dup (the gone and tcp-accept cells
 * mean nothing then).  At the end a table of outcomes and violations per
 * point goes to stdout.  Wall time scales with AUR_TEST_TIME_SCALE only in
 * its bounds (waits, the App's timeout), never in what is asserted.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>
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
static const char *const expect_words[] = {"failed", "unknown", "succeeded",
                                           "failed|unknown"};

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

static struct cell cells[MAX_CELLS];
static int ncells, ntrials = DEFAULT_TRIALS;
/* One round of the schedule: every HTTPS cell once, every stdio cell
 * STDIO_WEIGHT times, interleaved; trial i runs sched[i % nsched]. */
static struct {
    int cell, pass;
} sched[MAX_CELLS * STDIO_WEIGHT];
static int nsched;
static char *shared_dir;   /* the test CA, made once */
static char *results_path; /* one line per trial */
static const char *trial_dir; /* the running trial's config directory */
/* Milliseconds a trial spent: host start, warm-up, target call, stop. */
static int64_t phase_ms[4];

/* ---- cells ------------------------------------------------------------ */

struct pt {
    const char *point, *spoint;
    enum expect expect;
    bool big; /* also with the 256 KiB request */
};

static const struct pt stdio_points[] = {
    {"gone-seen", "gone", X_FAILED, true},
    {"gone-race", "gone", X_NOT_SUCCEEDED, true},
    {"before-read", "before-read", X_UNKNOWN, true},
    {"part-read", "part-read", X_UNKNOWN, true},
    {"line-read", "line-read", X_UNKNOWN, true},
    {"effect", "effect", X_UNKNOWN, true},
    {"half-reply", "half-reply", X_UNKNOWN, true},
    {"full-reply", "full-reply", X_SUCCEEDED, true},
};
static const char *const stdio_hows[] = {"exit", "close", "sigkill"};

/* HTTPS: the big request only where it can change what the client sees
 * (the server stops reading while the body may still be on its way). */
static const struct pt fresh_points[] = {
    {"gone", "gone", X_FAILED, false},
    {"tcp-accept", "tcp-accept", X_FAILED, false},
    {"handshake", "handshake", X_NOT_SUCCEEDED, true},
    {"before-read", "before-read", X_UNKNOWN, true},
    {"headers", "headers", X_UNKNOWN, true},
    {"body", "body", X_UNKNOWN, false},
    {"effect", "effect", X_UNKNOWN, false},
    {"part-reply", "part-reply", X_UNKNOWN, false},
    {"full-reply", "full-reply", X_SUCCEEDED, false},
};
/* REUSED gone is not (c): libcurl 7.88 may take the kept-alive
 * connection that the server closed (close_notify then FIN) for alive and
 * write the request to it before it learns otherwise; bytes went toward
 * the server, the host could not know, and unknown is the truthful
 * answer.  Only a connection that is refused from the start (FRESH gone)
 * proves nothing left. */
static const struct pt reused_points[] = {
    {"gone", "gone", X_NOT_SUCCEEDED, false},
    {"before-read", "before-read", X_UNKNOWN, true},
    {"headers", "headers", X_UNKNOWN, true},
    {"body", "body", X_UNKNOWN, false},
    {"effect", "effect", X_UNKNOWN, false},
    {"part-reply", "part-reply", X_UNKNOWN, false},
    {"full-reply", "full-reply", X_SUCCEEDED, false},
};
static const char *const https_hows[] = {"close", "reset", "exit", "sigkill"};

static void add_cells(enum tr tr, const char *conn, const struct pt *pts,
                      size_t npts, const char *const *hows, size_t nhows,
                      const char *only)
{
    for (size_t p = 0; p < npts; p++)
        for (size_t h = 0; h < nhows; h++)
            for (int big = 0; big < (pts[p].big ? 2 : 1); big++) {
                struct cell *c = &cells[ncells];
                if (ncells >= MAX_CELLS)
                    abort();
                c->tr = tr;
                c->conn = conn;
                c->point = pts[p].point;
                c->spoint = pts[p].spoint;
                c->expect = pts[p].expect;
                c->how = hows[h];
                c->big = big;
                snprintf(c->name, sizeof c->name, "%s/%s/%s/%s/%s",
                         tr == TR_STDIO ? "stdio" : "https", conn, c->point,
                         c->how, big ? "big" : "small");
                if (!only || strstr(c->name, only))
                    ncells++;
            }
}

#define N(a) (sizeof(a) / sizeof *(a))

static void build_cells(void)
{
    const char *only = getenv("AUR_KILLPOINT_ONLY");
    const char *t = getenv("AUR_KILLPOINT_TRIALS");

    if (only && !*only)
        only = NULL;
    if (t && atoi(t) > 0)
        ntrials = atoi(t);
    add_cells(TR_STDIO, "pipe", stdio_points, N(stdio_points), stdio_hows,
              N(stdio_hows), only);
    add_cells(TR_HTTPS, "fresh", fresh_points, N(fresh_points), https_hows,
              N(https_hows), only);
    add_cells(TR_HTTPS, "reused", reused_points, N(reused_points),
              https_hows, N(https_hows), only);
    for (int pass = 0; pass < STDIO_WEIGHT; pass++)
        for (int i = 0; i < ncells; i++)
            if (pass == 0 || cells[i].tr == TR_STDIO) {
                sched[nsched].cell = i;
                sched[nsched++].pass = pass;
            }
}

static int weight(const struct cell *c)
{
    return c->tr == TR_STDIO ? STDIO_WEIGHT : 1;
}

/* ---- the server's record ------------------------------------------------ */

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

static void read_record(const char *path, struct record *r)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;

    memset(r, 0, sizeof *r);
    r->fresh = -1;
    if (!f)
        return;
    while (getline(&line, &cap, f) > 0) {
        long a, b;
        int i;
        char w[64];
        if (strncmp(line, "armed", 5) == 0) {
            r->armed = true;
            /* stdio: target bytes already read with the last startup
             * line count as read */
            if (sscanf(line, "armed buffered=%ld", &a) == 1 &&
                a > r->read_total)
                r->read_total = a;
        } else if (sscanf(line, "read total=%ld", &a) == 1 ||
                 sscanf(line, "eof total=%ld", &a) == 1) {
            if (a > r->read_total)
                r->read_total = a;
        } else if (sscanf(line, "pending raw=%ld ssl=%ld", &a, &b) == 2)
            r->pending = a + b;
        else if (sscanf(line, "pending n=%ld", &a) == 1)
            r->pending = a;
        else if (strncmp(line, "effect ", 7) == 0)
            r->effects++;
        else if (sscanf(line, "target conn=%*d fresh=%d", &i) == 1)
            r->fresh = i;
        else if (sscanf(line, "method %63s", w) == 1)
            snprintf(r->method, sizeof r->method, "%s", w);
        else if (sscanf(line, "headers method=%63s", w) == 1)
            snprintf(r->hmethod, sizeof r->hmethod, "%s", w);
        else if (sscanf(line, "reply wrote=%ld of=%ld", &a, &b) == 2) {
            r->reply_wrote = a;
            r->reply_of = b;
        } else if (sscanf(line, "outq n=%ld", &a) == 1)
            r->outq = a;
        else if (strncmp(line, "kill point=", 11) == 0)
            r->killed = true;
        else if (strncmp(line, "gone-done", 9) == 0)
            r->gone_done = true;
        else if (strncmp(line, "req ", 4) == 0 && r->armed)
            r->served_after++;
        else if (strncmp(line, "late conn ", 10) == 0)
            r->late_conns++;
        else if (strncmp(line, "late req ", 9) == 0)
            r->late_reqs++;
    }
    free(line);
    fclose(f);
}

/* ---- verdicts ----------------------------------------------------------- */

struct verdict {
    char rules[64];   /* violated checks, "," separated; "" = all kept */
    char why[1024];   /* the first violation, in words */
};

static void violate(struct verdict *v, const char *rule, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));

static void violate(struct verdict *v, const char *rule, const char *fmt,
                    ...)
{
    size_t l = strlen(v->rules);
    snprintf(v->rules + l, sizeof v->rules - l, "%s%s", l ? "," : "", rule);
    if (!v->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->why, sizeof v->why, fmt, ap);
        va_end(ap);
    }
}

static void judge(const struct cell *c, enum aur_call_status st,
                  const char *content, const struct record *r,
                  struct verdict *v)
{
    const char *w = aur_call_status_word(st);
    bool gone = strncmp(c->spoint, "gone", 4) == 0;
    bool full = r->reply_of > 0 && r->reply_wrote == r->reply_of;
    bool arrived = r->read_total > 0 || r->pending > 0;
    char want[64];

    memset(v, 0, sizeof *v);
    /* x: the trial went as designed */
    if (!r->armed)
        violate(v, "x", "the server was never armed (startup or warm-up "
                "call went otherwise)");
    else if (!r->killed)
        violate(v, "x", "the kill point was never reached (outcome %s: %s)",
                w, content);
    if (r->method[0] && strcmp(r->method, "tools/call") != 0)
        violate(v, "x", "the target request was %s, not tools/call",
                r->method);
    if (r->hmethod[0] && strcmp(r->hmethod, "tools/call") != 0)
        violate(v, "x", "the target request's Mcp-Method was %s",
                r->hmethod);
    if (r->outq > 0)
        violate(v, "x", "%ld reply bytes never reached the client's kernel",
                r->outq);
    if (c->tr == TR_HTTPS && !gone && r->killed &&
        r->fresh != (strcmp(c->conn, "fresh") == 0))
        violate(v, "mode", "the target came on a %s connection, not %s",
                r->fresh == 1 ? "fresh" : r->fresh == 0 ? "reused" : "?",
                c->conn);
    /* dup: executed or served twice */
    if (r->effects > 1 || r->served_after > 0 || r->late_reqs > 0)
        violate(v, "dup", "the request was executed %d times, %d requests "
                "served after the kill point, %d re-sent after the death",
                r->effects, r->served_after, r->late_reqs);
    /* a, a+ */
    if (st == AUR_CALL_FAILED && r->read_total > 0)
        violate(v, "a", "failed, but the server read %ld bytes of the "
                "request (%s)", r->read_total, content);
    if (st == AUR_CALL_FAILED && r->pending > 0)
        violate(v, "a+", "failed, but %ld bytes of the request were in the "
                "server's %s when it died (%s)", r->pending,
                c->tr == TR_STDIO ? "stdin pipe" : "socket", content);
    /* b */
    if (arrived && !full && st != AUR_CALL_UNKNOWN)
        violate(v, "b", "%s, but the server got %ld+%ld bytes of the "
                "request and wrote %ld of %ld reply bytes (%s)", w,
                r->read_total, r->pending, r->reply_wrote, r->reply_of,
                content);
    else if (c->expect == X_UNKNOWN && st != AUR_CALL_UNKNOWN)
        violate(v, "b", "%s at %s (%s)", w, c->point, content);
    /* c */
    if (c->expect == X_FAILED && st != AUR_CALL_FAILED)
        violate(v, "c", "%s, but the server was gone before the call (%s)",
                w, content);
    /* d */
    snprintf(want, sizeof want, "kp-ok %u", c->big ? BIG_TEXT : SMALL_TEXT);
    if (c->expect == X_SUCCEEDED &&
        (st != AUR_CALL_SUCCEEDED || strcmp(content, want) != 0))
        violate(v, "d", "%s (%s) after the whole reply (%ld bytes) came",
                w, content, r->reply_wrote);
    if (c->expect == X_NOT_SUCCEEDED && st == AUR_CALL_SUCCEEDED)
        violate(v, "d", "succeeded without a reply (%s)", content);
}

static void log_result(const struct cell *c, int rep, int attempt,
                       enum aur_call_status st, const char *content,
                       const struct record *r, const struct verdict *v,
                       int64_t ms)
{
    char line[2048], clean[256];
    int fd, n;
    size_t k = 0;

    for (const char *p = content; *p && k < sizeof clean - 1; p++)
        clean[k++] = (*p == '\n' || *p == '\t') ? ' ' : *p;
    clean[k] = '\0';
    n = snprintf(line, sizeof line,
                 "%s\trep=%d\texpect=%s\tgot=%s\tviolated=%s\tattempt=%d\t"
                 "read=%ld\t"
                 "pending=%ld\teffects=%d\treply=%ld/%ld\tfresh=%d\t"
                 "late=%d/%d\tms=%lld\t"
                 "phases=%lld/%lld/%lld/%lld\tdir=%s\tcontent=%s\n",
                 c->name, rep, expect_words[c->expect],
                 aur_call_status_word(st), v->rules[0] ? v->rules : "-",
                 attempt, r->read_total, r->pending, r->effects, r->reply_wrote,
                 r->reply_of, r->fresh, r->late_conns, r->late_reqs,
                 (long long)ms,
                 (long long)phase_ms[0], (long long)phase_ms[1],
                 (long long)phase_ms[2], (long long)phase_ms[3],
                 trial_dir ? trial_dir : "-", clean);
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    fd = open(results_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
              0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) != n) {
            /* the table misses this line; the assertion still runs */
        }
        close(fd);
    }
}

/* ---- the host ------------------------------------------------------------ */

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0) {
        /* best effort, like h_rmtree */
    }
    return 0;
}

/* A trial's directory, listed in the shared directory first: a trial
 * that fails an assertion exits at once (Check's fork mode runs no
 * teardown), and main removes what is listed at the end. */
static char *trial_mkdir(void)
{
    char *dir = h_mkconfig(NULL, NULL), *list, line[512];
    int fd, n;

    ck_assert(asprintf(&list, "%s/dirs.list", shared_dir) > 0);
    fd = open(list, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    n = snprintf(line, sizeof line, "%s\n", dir);
    if (fd >= 0 && n > 0 && (size_t)n < sizeof line &&
        write(fd, line, (size_t)n) != n) {
        /* best effort: only the final sweep misses it */
    }
    if (fd >= 0)
        close(fd);
    free(list);
    return dir;
}

/* h_rmtree without its shell: a trial's directory, gone in-process
 * (kept with AUR_KILLPOINT_KEEP=1: its path is in the results line). */
static void remove_dir(const char *dir)
{
    const char *keep = getenv("AUR_KILLPOINT_KEEP");
    if (keep && strcmp(keep, "1") == 0)
        return;
    if (strncmp(dir, "/tmp/aur-test-", 14) == 0)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Lifecycle commits go nowhere: the journal (SQLite, fsync per commit) is
 * not under test here and would be most of a stdio trial's time. */
static int drop_commit(void *ud, const struct aur_commit *commit,
                       struct aur_error *err)
{
    (void)ud;
    (void)commit;
    (void)err;
    return AUR_OK;
}

static struct aur_mcp *host_start(const struct cell *c, const char *dir)
{
    struct aur_world_writer w = {sizeof w, NULL, drop_commit};
    struct aur_startup_error serr;
    struct aur_error err;
    struct aur_mcp *h = NULL;

    memset(&serr, 0, sizeof serr);
    ck_assert_msg(aur_mcp_create(dir, NULL, &h, &serr, &err) == AUR_OK,
                  "%s: x: create: %s", c->name, err.msg);
    ck_assert_msg(aur_mcp_set_world_writer(h, &w, &err) == AUR_OK,
                  "%s: x: world writer: %s", c->name, err.msg);
    ck_assert_msg(aur_mcp_start(h, &serr, &err) == AUR_OK,
                  "%s: x: start: %s %s", c->name, serr.code, serr.message);
    return h;
}

/* Until the server recorded its death (bounded): the host must not stop
 * it (SIGTERM, SIGKILL at shutdown) between its reply and its record. */
static void wait_killed(const char *recpath)
{
    int64_t end = h_now_ms() + h_slack(5000);
    for (;;) {
        struct record r;
        read_record(recpath, &r);
        if (r.killed || h_now_ms() >= end)
            return; /* a miss is judged: "the kill point was never
                       reached" */
        usleep(2000);
    }
}

/* ---- calls -------------------------------------------------------------- */

static int timeout_s(void)
{
    return (int)(h_slack(10000) / 1000);
}

static enum aur_call_status call(struct aur_mcp *h, size_t text_len,
                                 char **content)
{
    struct json_object *args = json_object_new_object();
    struct aur_tool_output out;
    enum aur_call_status s;
    char *text = malloc(text_len + 1);

    ck_assert_ptr_nonnull(text);
    memset(text, 'x', text_len);
    text[text_len] = '\0';
    json_object_object_add(args, "text", json_object_new_string(text));
    free(text);
    ck_assert_int_eq(aur_mcp_call(h, TOOL, args, -1, &out), AUR_OK);
    json_object_put(args);
    *content = strdup(out.content ? out.content : "");
    s = out.status;
    aur_tool_output_clear(&out);
    return s;
}

static void warm_up(struct aur_mcp *h, const struct cell *c)
{
    char *content;
    enum aur_call_status s = call(h, 4, &content);
    ck_assert_msg(s == AUR_CALL_SUCCEEDED && strcmp(content, "kp-ok 4") == 0,
                  "%s: x: the warm-up call was %s (%s)", c->name,
                  aur_call_status_word(s), content);
    free(content);
}

/* The verdict of one attempt, and its results line. */
static void finish_trial(const struct cell *c, int rep, int attempt,
                         const char *recpath, enum aur_call_status st,
                         const char *content, int64_t t0, struct verdict *v)
{
    struct record r;

    read_record(recpath, &r);
    judge(c, st, content, &r, v);
    log_result(c, rep, attempt, st, content, &r, v, h_now_ms() - t0);
}

/* ---- stdio -------------------------------------------------------------- */

/* host.ini of every trial: transport-stdio, and transport-http for the
 * HTTPS ones (loading libcurl and OpenSSL costs a stdio trial half its
 * time); log_level error (thousands
 * of expected "disconnected" warnings otherwise); term_grace_ms 0: every
 * stdio App of a trial is dead, or lingers until SIGTERM by design, once
 * its record says so (wait_killed), so shutdown need not wait 2 s. */
static void write_host_ini(const char *dir, bool https)
{
    char *text;
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio%s\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = error\n"
                       "[mcp]\nenabled = true\n"
                       "[transport-stdio]\nterm_grace_ms = 0\n",
                       https ? " transport-http" : "", AUR_TEST_BIN_DIR) > 0);
    h_write(dir, "host.ini", text);
    free(text);
}

static void stdio_trial(const struct cell *c, int rep, int attempt,
                        struct verdict *v)
{
    char *dir = trial_mkdir();
    char *fixture = h_bin("bin/aur-fixture-server"), *recpath, *content;
    const char *args[16];
    struct aur_mcp *h = NULL;
    enum aur_call_status st;
    int64_t t0 = h_now_ms(), t;
    size_t n = 0;

    trial_dir = dir;
    write_host_ini(dir, false);
    ck_assert(asprintf(&recpath, "%s/kill.rec", dir) > 0);
    args[n++] = "--kill-at";
    args[n++] = c->spoint;
    args[n++] = "--kill-how";
    args[n++] = c->how;
    args[n++] = "--kill-record";
    args[n++] = recpath;
    args[n++] = "--kill-warm";
    args[n++] = "1";
    args[n++] = "--kill-part-bytes";
    args[n++] = c->big ? "1000" : "20";
    args[n] = NULL;
    h_add_app(dir, "a.ini", PKG, timeout_s(), NULL, fixture, args);
    h = host_start(c, dir);
    phase_ms[0] = (t = h_now_ms()) - t0;
    warm_up(h, c);
    if (strcmp(c->point, "gone-seen") == 0)
        ck_assert_msg(h_wait_restart_required(h, (int)h_slack(15000)),
                      "%s: x: the host never noticed the App died",
                      c->name);
    phase_ms[1] = h_now_ms() - t;
    t = h_now_ms();
    st = call(h, c->big ? BIG_TEXT : SMALL_TEXT, &content);
    phase_ms[2] = h_now_ms() - t;
    t = h_now_ms();
    wait_killed(recpath);
    aur_mcp_destroy(h); /* reaps the App */
    phase_ms[3] = h_now_ms() - t;
    finish_trial(c, rep, attempt, recpath, st, content, t0, v);
    free(content);
    free(recpath);
    free(fixture);
    remove_dir(dir);
    free(dir);
}

/* ---- HTTPS -------------------------------------------------------------- */

struct server {
    pid_t pid;
    int in; /* its stdin: closing it makes it exit */
    int port;
};

static struct server server_start(const struct cell *c, const char *dir,
                                  const char *recpath)
{
    struct server s = {-1, -1, 0};
    char *cert, *key, *errpath, buf[128];
    const char *argv[24];
    size_t n = 0, got = 0;
    int in[2], out[2];
    int64_t end;

    ck_assert(asprintf(&cert, "%s/srv.pem", shared_dir) > 0);
    ck_assert(asprintf(&key, "%s/srv.key", shared_dir) > 0);
    ck_assert(asprintf(&errpath, "%s/server.err", dir) > 0);
    argv[n++] = AUR_KP_HTTPS;
    argv[n++] = "--cert";
    argv[n++] = cert;
    argv[n++] = "--key";
    argv[n++] = key;
    argv[n++] = "--record";
    argv[n++] = recpath;
    argv[n++] = "--point";
    argv[n++] = c->spoint;
    argv[n++] = "--how";
    argv[n++] = c->how;
    argv[n++] = "--conn";
    argv[n++] = c->conn;
    argv[n++] = "--warm";
    argv[n++] = "1";
    if (getenv("AUR_KILLPOINT_LATE") &&
        strcmp(getenv("AUR_KILLPOINT_LATE"), "1") == 0) {
        argv[n++] = "--late-conns";
        argv[n++] = "1";
    }
    argv[n] = NULL;
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    s.pid = fork();
    ck_assert_int_ge(s.pid, 0);
    if (s.pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (fd >= 0)
            dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    setpgid(s.pid, s.pid);
    close(in[0]);
    close(out[1]);
    s.in = in[1];
    end = h_now_ms() + h_slack(15000);
    buf[0] = '\0';
    while (got < sizeof buf - 1 && !memchr(buf, '\n', got)) {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        int64_t left = end - h_now_ms();
        ssize_t r;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        r = read(out[0], buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
    }
    close(out[0]);
    if (sscanf(buf, "PORT %d", &s.port) != 1 || s.port <= 0) {
        char *e = h_slurp(errpath);
        ck_abort_msg("%s: x: no PORT line from killpoint_https: '%s' %s",
                     c->name, buf, e ? e : "");
    }
    free(cert);
    free(key);
    free(errpath);
    return s;
}

/* Waits (bounded) for the server to exit; true if it did. */
static bool server_wait(struct server *s, int64_t ms)
{
    int64_t end = h_now_ms() + ms;
    int st;
    if (s->pid <= 0)
        return true;
    for (;;) {
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid || (r < 0 && errno == ECHILD)) {
            s->pid = -1;
            return true;
        }
        if (h_now_ms() >= end)
            return false;
        usleep(5000);
    }
}

static void server_stop(struct server *s)
{
    if (s->in >= 0)
        close(s->in);
    s->in = -1;
    if (s->pid > 0 && !server_wait(s, h_slack(5000))) {
        kill(-s->pid, SIGKILL);
        server_wait(s, 5000);
    }
    if (s->pid > 0)
        kill(-s->pid, SIGKILL);
}

static void write_https_config(const char *dir, int port)
{
    char *text, *ca, *capath;

    write_host_ini(dir, true);
    ck_assert(asprintf(&capath, "%s/ca.pem", shared_dir) > 0);
    ca = h_slurp(capath);
    ck_assert_msg(ca != NULL, "no test CA at %s", capath);
    h_write(dir, "ca.pem", ca);
    free(ca);
    free(capath);
    ck_assert(asprintf(&text,
                       "[app]\npackage = " PKG "\nenabled = true\n"
                       "transport = streamable_http\ntimeout_seconds = %d\n"
                       "[http]\nurl = https://127.0.0.1:%d/mcp\n"
                       "ca_file = ca.pem\n",
                       timeout_s(), port) > 0);
    h_write(dir, "apps.d/a.ini", text);
    free(text);
}

/* gone: until nothing of the server accepts or holds a connection. */
static void wait_server_gone(const struct cell *c, struct server *s,
                             const char *recpath)
{
    int64_t end = h_now_ms() + h_slack(15000);
    if (strcmp(c->how, "exit") == 0 || strcmp(c->how, "sigkill") == 0) {
        ck_assert_msg(server_wait(s, h_slack(15000)),
                      "%s: x: the server did not die", c->name);
        return;
    }
    for (;;) {
        struct record r;
        read_record(recpath, &r);
        if (r.gone_done)
            return;
        ck_assert_msg(h_now_ms() < end, "%s: x: the server never went away",
                      c->name);
        usleep(5000);
    }
}

static void https_trial(const struct cell *c, int rep, int attempt,
                        struct verdict *v)
{
    char *dir = trial_mkdir(), *recpath, *content;
    struct aur_mcp *h = NULL;
    enum aur_call_status st;
    struct server s;
    int64_t t0 = h_now_ms(), t;

    trial_dir = dir;
    ck_assert(asprintf(&recpath, "%s/kill.rec", dir) > 0);
    s = server_start(c, dir, recpath);
    write_https_config(dir, s.port);
    h = host_start(c, dir);
    phase_ms[0] = (t = h_now_ms()) - t0;
    warm_up(h, c);
    if (strcmp(c->point, "gone") == 0)
        wait_server_gone(c, &s, recpath);
    else if (strcmp(c->conn, "reused") == 0)
        /* Let the worker that ran the warm-up go idle, so the target is
         * not handed to a new worker (a new curl handle, a new
         * connection).  A miss is re-run, never judged as reused. */
        usleep(30000);
    phase_ms[1] = h_now_ms() - t;
    t = h_now_ms();
    st = call(h, c->big ? BIG_TEXT : SMALL_TEXT, &content);
    phase_ms[2] = h_now_ms() - t;
    t = h_now_ms();
    wait_killed(recpath);
    aur_mcp_destroy(h);
    server_stop(&s);
    phase_ms[3] = h_now_ms() - t;
    finish_trial(c, rep, attempt, recpath, st, content, t0, v);
    free(content);
    free(recpath);
    remove_dir(dir);
    free(dir);
}

/* ---- the suite ------------------------------------------------------------ */

#define MAX_ATTEMPTS 4

START_TEST(kill_point_trial)
{
    const struct cell *c = &cells[sched[_i % nsched].cell];
    int rep = _i / nsched * weight(c) + sched[_i % nsched].pass;
    struct verdict v;

    /* An attempt whose only flaw is the kind of connection the target
     * came on (REUSED cells, rarely) proves nothing either way: it is run
     * again.  Any other verdict stands. */
    for (int attempt = 1;; attempt++) {
        if (c->tr == TR_STDIO)
            stdio_trial(c, rep, attempt, &v);
        else
            https_trial(c, rep, attempt, &v);
        if (strcmp(v.rules, "mode") != 0 || attempt == MAX_ATTEMPTS)
            break;
    }
    ck_assert_msg(!v.rules[0], "%s (trial %d): %s: %s", c->name, rep,
                  v.rules, v.why);
}
END_TEST

static Suite *killpoints_suite(void)
{
    Suite *s = suite_create("killpoints");
    TCase *tc = tcase_create("trials");

    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, kill_point_trial, 0, ntrials);
    suite_add_tcase(s, tc);
    return s;
}

static bool need_https(void)
{
    for (int i = 0; i < ncells; i++)
        if (cells[i].tr == TR_HTTPS)
            return true;
    return false;
}

static void make_shared(void)
{
    char tmpl[] = "/tmp/aur-test-kp-XXXXXX", *cmd;

    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        exit(2);
    }
    shared_dir = strdup(tmpl);
    if (getenv("AUR_KILLPOINT_RESULTS") && *getenv("AUR_KILLPOINT_RESULTS"))
        results_path = strdup(getenv("AUR_KILLPOINT_RESULTS"));
    else if (asprintf(&results_path, "%s/results.tsv", shared_dir) < 0)
        exit(2);
    if (need_https()) {
        if (asprintf(&cmd, "sh '%s/tests/support/mkcerts.sh' '%s'",
                     AUR_TEST_SRC_DIR, shared_dir) < 0 ||
            system(cmd) != 0) {
            fprintf(stderr, "check_killpoints: cannot make the test CA\n");
            exit(2);
        }
        free(cmd);
    }
}

/* ---- the table ------------------------------------------------------------ */

#define MAX_ROWS 64
#define MAX_RULES 8
static const char *const rule_names[MAX_RULES] = {"x", "dup", "a", "a+",
                                                  "b", "c", "d", NULL};

struct row {
    char key[64];
    const char *expect;
    int n, got[3], viol[MAX_RULES];
    char where[512]; /* failing "how/size" cells */
};

static bool has_rule(const char *list, const char *rule)
{
    size_t l = strlen(rule);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == l && strncmp(p, rule, l) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

static void print_table(int64_t ms)
{
    static struct row rows[MAX_ROWS];
    FILE *f = fopen(results_path, "r");
    char *line = NULL;
    size_t cap = 0;
    int nrows = 0, total = 0, bad = 0, reruns = 0;

    if (!f) {
        printf("killpoints: no results in %s\n", results_path);
        return;
    }
    memset(rows, 0, sizeof rows);
    while (getline(&line, &cap, f) > 0) {
        char name[96], tr[16], conn[16], pt[32], how[16], size[16];
        char expect[32], got[16], viol[64];
        int rep;
        struct row *r = NULL;
        int attempt;
        if (sscanf(line, "%95s rep=%d expect=%31s got=%15s violated=%63s "
                         "attempt=%d",
                   name, &rep, expect, got, viol, &attempt) != 6)
            continue;
        if (strcmp(viol, "mode") == 0 && attempt < MAX_ATTEMPTS) {
            reruns++; /* run again: not a trial */
            continue;
        }
        if (sscanf(name, "%15[^/]/%15[^/]/%31[^/]/%15[^/]/%15s", tr, conn,
                   pt, how, size) != 5)
            continue;
        char key[64];
        snprintf(key, sizeof key, "%s/%s/%s", tr, conn, pt);
        for (int i = 0; i < nrows; i++)
            if (strcmp(rows[i].key, key) == 0)
                r = &rows[i];
        if (!r) {
            if (nrows >= MAX_ROWS)
                continue;
            r = &rows[nrows++];
            snprintf(r->key, sizeof r->key, "%s", key);
            for (int i = 0; i < ncells; i++)
                if (strstr(cells[i].name, key) == cells[i].name)
                    r->expect = expect_words[cells[i].expect];
        }
        r->n++;
        total++;
        r->got[strcmp(got, "succeeded") == 0 ? 0
               : strcmp(got, "failed") == 0  ? 1
                                             : 2]++;
        if (strcmp(viol, "-") != 0) {
            bad++;
            for (int k = 0; rule_names[k]; k++)
                if (has_rule(viol, rule_names[k]) ||
                    (k == 0 && has_rule(viol, "mode")))
                    r->viol[k]++;
            char cellw[40];
            snprintf(cellw, sizeof cellw, "%s/%s", how, size);
            if (!strstr(r->where, cellw) &&
                strlen(r->where) + strlen(cellw) + 2 < sizeof r->where) {
                if (r->where[0])
                    strcat(r->where, " ");
                strcat(r->where, cellw);
            }
        }
    }
    free(line);
    fclose(f);
    printf("\nkillpoints: %d trials in %.1f s, %d with violations, %d "
           "re-run (target on the other kind of connection) (every trial: "
           "%s)\n", total, (double)ms / 1000.0, bad, reruns,
           getenv("AUR_KILLPOINT_RESULTS")
               ? results_path
               : "set AUR_KILLPOINT_RESULTS=FILE to keep them");
    printf("%-28s %-15s %5s %5s %5s %5s | %3s %3s %3s %3s %3s %3s %3s | %s\n",
           "point", "expect", "n", "succ", "fail", "unkn", "x", "dup", "a",
           "a+", "b", "c", "d", "violating how/size");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        printf("%-28s %-15s %5d %5d %5d %5d | %3d %3d %3d %3d %3d %3d %3d "
               "| %s\n",
               r->key, r->expect ? r->expect : "?", r->n, r->got[0],
               r->got[1], r->got[2], r->viol[0], r->viol[1], r->viol[2],
               r->viol[3], r->viol[4], r->viol[5], r->viol[6], r->where);
    }
    fflush(stdout);
}

/* Removes every trial directory still there (failed trials). */
static void sweep_dirs(void)
{
    char *list, *line = NULL;
    size_t cap = 0;
    FILE *f;

    if (asprintf(&list, "%s/dirs.list", shared_dir) < 0)
        return;
    f = fopen(list, "r");
    free(list);
    if (!f)
        return;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        remove_dir(line);
    }
    free(line);
    fclose(f);
}

int main(void)
{
    int rc;
    int64_t t0 = h_now_ms();

    build_cells();
    if (ncells == 0) {
        fprintf(stderr, "check_killpoints: AUR_KILLPOINT_ONLY matches no "
                        "cell\n");
        return 2;
    }
    if (ntrials < nsched)
        fprintf(stderr, "check_killpoints: %d trials do not cover the %d "
                        "cells (one round is %d trials)\n", ntrials, ncells,
                nsched);
    make_shared();
    rc = aur_check_main(killpoints_suite(), NULL);
    print_table(h_now_ms() - t0);
    sweep_dirs();
    h_rmtree(shared_dir); /* the results file too, unless it is elsewhere */
    free(shared_dir);
    free(results_path);
    return rc;
}
