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
 * handed it to a new worker) proves nothing and is run again, up to 6
 * attempts, each letting the client's workers settle longer; only the
 * last one counts.
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
#include "killpoints.h"

const char *const expect_words[] = {"failed", "unknown", "succeeded",
                                    "failed|unknown"};

static struct cell cells[MAX_CELLS];
static int ncells, ntrials = DEFAULT_TRIALS;
/* One round of the schedule: every HTTPS cell once, every stdio cell
 * STDIO_WEIGHT times, interleaved; trial i runs sched[i % nsched]. */
static struct {
    int cell, pass;
} sched[MAX_CELLS * STDIO_WEIGHT];
static int nsched;
char *shared_dir;
char *results_path;
const char *trial_dir;
int64_t phase_ms[4];

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

void read_record(const char *path, struct record *r)
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

void judge(const struct cell *c, enum aur_call_status st,
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

void log_result(const struct cell *c, int rep, int attempt,
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

/* ---- the suite ------------------------------------------------------------ */

#define MAX_ATTEMPTS 6

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
