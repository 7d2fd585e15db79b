/*
 * check_contain.c - nothing started for an App survives the host.
 *
 * The host is the real CLI (bin/aurora-mcp serve) in a process of its
 * own; its Apps are tests/contain/contain_app.c (aur-contain-app), which
 * starts a double-forked daemon, a setsid() child and an `sh -c` chain,
 * records each (pid and start time), then execs aur-fixture-server.
 * Every other App runs behind an `sh -c` wrapper that does not exec (like
 * npx or uv), so the MCP server is not even the host's grandchild.
 *
 * Scenarios, each with containment = auto (a cgroup per App where the
 * host may make one) and containment = process (the supervisor alone):
 * a normal close (a server that exits on stdin EOF, and one that ignores
 * SIGTERM and EOF; 150 of those close in one escalation), and SIGKILL of the host while it spawns, while the
 * Apps handshake, when it is ready, and while it closes.  After each, the
 * test polls (bounded) until every recorded process is gone and asserts
 * that none survived; each prints "recorded N survivors M".  A negative
 * control runs aur-contain-app without a host and must count survivors,
 * so the count cannot pass vacuously.
 *
 * The test process is a child subreaper, so a killed host's orphans come
 * to it and are reaped (a zombie is dead, not a survivor).
 */
#define _GNU_SOURCE
#include "support/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELPER "bin/aur-contain-app"
#define FIXTURE "bin/aur-fixture-server"
#define MAX_REC 256

/* Per App: app daemon setsid sh1 sh2 sleeper, plus wrapper if wrapped. */
#define PER_APP 6

static const char *const modes[] = {"auto", "process"};

struct rec {
    long pid;
    unsigned long long start;
    char label[16];
};

struct run {
    const char *mode;
    char *dir, *rec, *err;
    int napps, want; /* Apps, and records when all have started */
    pid_t host;
    int in_w, out_r;
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void become_subreaper(void)
{
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

static void reap_orphans(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* ------------------------------------------------------------------ */
/* Records and survivors                                              */
/* ------------------------------------------------------------------ */

static int read_records(const char *path, struct rec *out, int cap)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int n = 0;

    if (!f)
        return 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%ld %llu %15s", &out[n].pid, &out[n].start,
                   out[n].label) == 3)
            n++;
    }
    fclose(f);
    return n;
}

/* The recorded process still runs: same pid, same start, not a zombie. */
static bool alive(const struct rec *r)
{
    char path[64], buf[1024], *p, state;
    unsigned long long start = 0;
    int field = 3;
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%ld/stat", r->pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return false;
    state = p[2];
    for (p += 2; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (sscanf(p, "%llu", &start) != 1 || start != r->start)
        return false; /* a recycled pid */
    return state != 'Z' && state != 'X';
}

static int count_alive(const struct rec *r, int n, bool say)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        if (!alive(&r[i]))
            continue;
        k++;
        if (say)
            fprintf(stderr, "check_contain:   survivor %ld (%s)\n", r[i].pid,
                    r[i].label);
    }
    return k;
}

/* Poll (bounded) until every recorded process is gone; the survivors. */
static int survivors(const struct run *r, int *recorded)
{
    static struct rec recs[MAX_REC];
    int64_t until = h_now_ms() + h_slack(20000);
    int n = 0, left;

    for (;;) {
        reap_orphans();
        /* Read again: a process may record itself a moment late. */
        n = read_records(r->rec, recs, MAX_REC);
        left = count_alive(recs, n, false);
        if (left == 0 || h_now_ms() >= until)
            break;
        sleep_ms(20);
    }
    if (left)
        count_alive(recs, n, true);
    *recorded = n;
    return left;
}

static void kill_survivors(const char *rec)
{
    static struct rec recs[MAX_REC];
    int n = read_records(rec, recs, MAX_REC);

    for (int i = 0; i < n; i++)
        if (alive(&recs[i]))
            kill((pid_t)recs[i].pid, SIGKILL);
    sleep_ms(50);
    reap_orphans();
}

static void wait_records(const struct run *r, int want)
{
    static struct rec recs[MAX_REC];
    int64_t until = h_now_ms() + h_slack(30000);
    int n;

    while ((n = read_records(r->rec, recs, MAX_REC)) < want) {
        ck_assert_msg(h_now_ms() < until, "%d of %d records", n, want);
        sleep_ms(20);
    }
}

/* Which containment the Apps got: their cgroup, or "-". */
static void cgroup_of(const char *rec, char *out, size_t size)
{
    static struct rec recs[MAX_REC];
    int n = read_records(rec, recs, MAX_REC);
    char path[64], line[512];
    FILE *f;

    snprintf(out, size, "-");
    for (int i = 0; i < n; i++) {
        if (strcmp(recs[i].label, "app") != 0 || !alive(&recs[i]))
            continue;
        snprintf(path, sizeof path, "/proc/%ld/cgroup", recs[i].pid);
        f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "0::", 3) == 0 && strstr(line, "aurora-mcp-"))
                snprintf(out, size, "cgroup %.*s", (int)strcspn(line + 3,
                                                               "\n"),
                         line + 3);
        fclose(f);
        return;
    }
}

/* ------------------------------------------------------------------ */
/* The host                                                           */
/* ------------------------------------------------------------------ */

/* A config of napps Apps: even ones run aur-contain-app directly, odd
 * ones behind `sh -c` (not exec'd).  opts go to the fixture server. */
static void setup_run(struct run *r, const char *mode, int napps,
                      int grace_ms, double timeout_s,
                      const char *const *opts)
{
    char *mcp, *helper = h_bin(HELPER), *fixture = h_bin(FIXTURE);

    memset(r, 0, sizeof *r);
    r->mode = mode;
    r->napps = napps;
    r->host = -1;
    r->in_w = r->out_r = -1;
    ck_assert(asprintf(&mcp,
                       "enabled = true\n\n[transport-stdio]\n"
                       "containment = %s\nterm_grace_ms = %d\n",
                       mode, grace_ms) > 0);
    r->dir = h_mkconfig(NULL, mcp);
    free(mcp);
    ck_assert(asprintf(&r->rec, "%s/records", r->dir) > 0);
    ck_assert(asprintf(&r->err, "%s/host.err", r->dir) > 0);
    for (int i = 0; i < napps; i++) {
        const char *args[40];
        char file[32], pkg[64];
        size_t n = 0;
        bool wrapped = i % 2 == 1;

        if (wrapped) {
            args[n++] = "-c";
            args[n++] = "\"$0\" \"$@\"; exit $?";
            args[n++] = helper;
            args[n++] = "--wrapped";
        }
        args[n++] = "--record";
        args[n++] = r->rec;
        args[n++] = "--";
        args[n++] = fixture;
        args[n++] = "--lifetime";
        args[n++] = "100";
        for (size_t k = 0; opts && opts[k]; k++)
            args[n++] = opts[k];
        args[n] = NULL;
        snprintf(file, sizeof file, "a%02d.ini", i);
        snprintf(pkg, sizeof pkg, "org.contain.app%d", i);
        h_add_app(r->dir, file, pkg, timeout_s, NULL,
                  wrapped ? "/bin/sh" : helper, args);
        r->want += PER_APP + (wrapped ? 1 : 0);
    }
    free(helper);
    free(fixture);
}

static void start_host(struct run *r)
{
    char *cli = h_bin("bin/aurora-mcp");
    int in[2], out[2];

    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    r->host = fork();
    ck_assert_int_ge(r->host, 0);
    if (r->host == 0) {
        int err = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (err >= 0)
            dup2(err, 2);
        execl(cli, cli, "serve", "-c", r->dir, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    r->in_w = in[1];
    r->out_r = out[0];
    free(cli);
}

/* Until serve prints {"ready":true,...}. */
static void wait_ready(struct run *r)
{
    int64_t until = h_now_ms() + h_slack(30000);
    char buf[4096];
    size_t len = 0;

    for (;;) {
        struct pollfd pf = {r->out_r, POLLIN, 0};
        int64_t left = until - h_now_ms();
        ssize_t n;
        ck_assert_msg(left > 0, "[%s] the host never got ready", r->mode);
        if (poll(&pf, 1, (int)left) <= 0)
            continue;
        n = read(r->out_r, buf + len, sizeof buf - 1 - len);
        ck_assert_msg(n > 0, "[%s] the host ended before ready (see %s)",
                      r->mode, r->err);
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\"ready\":true"))
            return;
        ck_assert_uint_lt(len, sizeof buf - 1);
    }
}

static void kill_host(struct run *r)
{
    int st;

    ck_assert_int_eq(kill(r->host, SIGKILL), 0);
    while (waitpid(r->host, &st, 0) < 0 && errno == EINTR)
        ;
    r->host = -1;
}

/* The host's exit status after its stdin closed (bounded). */
static int wait_host(struct run *r)
{
    int64_t until = h_now_ms() + h_slack(30000);
    int st = 0;
    pid_t w;

    while ((w = waitpid(r->host, &st, WNOHANG)) == 0) {
        ck_assert_msg(h_now_ms() < until, "[%s] the host did not exit",
                      r->mode);
        sleep_ms(20);
    }
    ck_assert_int_eq(w, r->host);
    r->host = -1;
    ck_assert_msg(WIFEXITED(st), "[%s] host died of signal %d", r->mode,
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return WEXITSTATUS(st);
}

/* Count, report, clean up, and assert 0 survivors. */
static void finish(struct run *r, const char *scenario, int min_records)
{
    int recorded = 0, left = survivors(r, &recorded);

    fprintf(stderr, "check_contain: %-7s %-22s recorded %2d  survivors %d\n",
            r->mode, scenario, recorded, left);
    if (r->host > 0) {
        kill(r->host, SIGKILL);
        waitpid(r->host, NULL, 0);
    }
    kill_survivors(r->rec);
    if (r->in_w >= 0)
        close(r->in_w);
    if (r->out_r >= 0)
        close(r->out_r);
    ck_assert_msg(left == 0, "[%s] %s: %d of %d processes survived",
                  r->mode, scenario, left, recorded);
    ck_assert_msg(recorded >= min_records, "[%s] %s: only %d records",
                  r->mode, scenario, recorded);
    h_rmtree(r->dir);
    free(r->dir);
    free(r->rec);
    free(r->err);
}

/* ------------------------------------------------------------------ */
/* Scenarios                                                          */
/* ------------------------------------------------------------------ */

START_TEST(test_negative_control)
{
    char *helper = h_bin(HELPER), *rec, dir[] = "/tmp/aur-contain-XXXXXX";
    static struct rec recs[MAX_REC];
    int n, left;
    pid_t p;

    become_subreaper();
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert(asprintf(&rec, "%s/records", dir) > 0);
    p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        execl(helper, helper, "--record", rec, "--", "/bin/true",
              (char *)NULL);
        _exit(127);
    }
    /* Without a host nobody cleans up: the five it left must be seen. */
    {
        int64_t until = h_now_ms() + h_slack(20000);
        while ((n = read_records(rec, recs, MAX_REC)) < PER_APP) {
            ck_assert_msg(h_now_ms() < until, "%d records", n);
            sleep_ms(20);
        }
    }
    sleep_ms(200);
    reap_orphans();
    left = count_alive(recs, n, false);
    fprintf(stderr, "check_contain: no host (control)            recorded "
                    "%2d  survivors %d\n", n, left);
    kill_survivors(rec);
    ck_assert_int_eq(left, PER_APP - 1); /* all but the App itself */
    h_rmtree(dir);
    free(rec);
    free(helper);
}
END_TEST

START_TEST(test_close_clean)
{
    struct run r;

    become_subreaper();
    setup_run(&r, modes[_i], 2, 2000, 30, NULL);
    start_host(&r);
    wait_ready(&r);
    wait_records(&r, r.want);
    {
        char cg[256];
        cgroup_of(r.rec, cg, sizeof cg);
        fprintf(stderr, "check_contain: %-7s Apps in %s\n", r.mode, cg);
        if (strcmp(r.mode, "process") == 0)
            ck_assert_str_eq(cg, "-");
    }
    close(r.in_w); /* EOF: serve shuts down and closes the Apps */
    r.in_w = -1;
    ck_assert_int_eq(wait_host(&r), 0);
    finish(&r, "close", r.want);
}
END_TEST

START_TEST(test_close_stubborn)
{
    static const char *const opts[] = {"--ignore-term", NULL};
    struct run r;

    become_subreaper();
    setup_run(&r, modes[_i], 2, 300, 30, opts);
    start_host(&r);
    wait_ready(&r);
    wait_records(&r, r.want);
    close(r.in_w);
    r.in_w = -1;
    ck_assert_int_eq(wait_host(&r), 0);
    finish(&r, "close (ignores TERM)", r.want);
}
END_TEST

/*
 * Many stubborn Apps close in ONE escalation: each ignores stdin EOF and
 * SIGTERM, so each needs the EOF grace, the SIGTERM grace and the kill.
 * The host starts every App's escalation when the close begins, so 150
 * of them take one escalation, not one per share of a closing thread
 * (the host closes with a bounded number of threads; ending them one
 * share after another took three escalations here).
 *
 * Measured from the Apps' side, so that neither the machine's load nor
 * the host's own exit (LeakSanitizer's scan under ASan) counts: each App
 * logs the monotonic time of its stdin EOF and of its SIGTERM, the first
 * two steps of its escalation.  Both steps of all Apps come within one
 * grace of each other (a close in shares starts the next share's steps
 * two graces later); each App's SIGTERM comes a grace after the first
 * EOF at the earliest, and each lives a grace after its SIGTERM (both
 * within LATE_MS, the Apps' own lateness in logging); all are gone two
 * graces after the last EOF, and before a second escalation could have
 * ended.  (A CI run beside other suites once took 2.6 s for the kill
 * alone, each supervisor then reading all of /proc.)  Nothing is left
 * afterwards.
 */
struct span {
    int n;
    int64_t first_ms, last_ms;
};

/* The lines "<what> <ns>" of log, as a span of milliseconds. */
static struct span log_span(const char *log, const char *what)
{
    char *text = h_slurp(log), *at = text;
    size_t len = strlen(what);
    struct span sp = {0, INT64_MAX, INT64_MIN};

    ck_assert_ptr_nonnull(text);
    while ((at = strstr(at, what))) {
        if ((at == text || at[-1] == '\n') && at[len] == ' ') {
            int64_t ms = strtoll(at + len + 1, NULL, 10) / 1000000;
            sp.n++;
            sp.first_ms = ms < sp.first_ms ? ms : sp.first_ms;
            sp.last_ms = ms > sp.last_ms ? ms : sp.last_ms;
        }
        at += len;
    }
    free(text);
    return sp;
}

START_TEST(test_close_many_stubborn)
{
    /* LATE_MS: how late an App may log a step it got on time (it wakes
     * among 150 others), stretched on a slow run like any lateness: the
     * supervisor's kill is on its own clock, so a late SIGTERM relay
     * shortens the grace.  A supervisor that relayed SIGTERM late (each
     * reading all of /proc) cut the last App's grace to 808 ms here. */
    enum { N = 150, GRACE_MS = 1000, LATE_MS = 100 };
    const int64_t late = h_slack(LATE_MS);
    char *fixture = h_bin(FIXTURE), *mcp, *dir, *log;
    struct run r;

    become_subreaper();
    memset(&r, 0, sizeof r);
    r.mode = modes[_i];
    r.host = -1;
    ck_assert(asprintf(&mcp,
                       "enabled = true\n\n[transport-stdio]\n"
                       "containment = %s\nterm_grace_ms = %d\n",
                       r.mode, GRACE_MS) > 0);
    r.dir = dir = h_mkconfig(NULL, mcp);
    ck_assert(asprintf(&r.err, "%s/host.err", dir) > 0);
    ck_assert(asprintf(&log, "%s/server.log", dir) > 0);
    for (int i = 0; i < N; i++) {
        const char *args[] = {"--lifetime", "100", "--ignore-term",
                              "--log", log, NULL};
        char file[32], pkg[64];
        snprintf(file, sizeof file, "s%03d.ini", i);
        snprintf(pkg, sizeof pkg, "org.contain.stubborn%d", i);
        h_add_app(dir, file, pkg, 60, NULL, fixture, args);
    }
    start_host(&r);
    wait_ready(&r);
    ck_assert_int_eq(h_procs_with(log), N);

    int64_t t0 = h_now_ms(), gone;
    close(r.in_w); /* EOF: serve shuts down and closes the Apps */
    r.in_w = -1;
    H_WAIT_UNTIL(h_procs_with(log) == 0, 20000, 20);
    gone = h_now_ms();
    ck_assert_int_eq(wait_host(&r), 0);
    int64_t took = h_now_ms() - t0;
    int left = h_procs_with(log);
    struct span eof = log_span(log, "eof"), term = log_span(log, "term");
    fprintf(stderr, "check_contain: %-7s close of %d stubborn Apps: EOFs "
                    "within %lld ms, SIGTERMs within %lld ms from %lld ms "
                    "after the first EOF, gone %lld ms after the last "
                    "SIGTERM (grace %d ms), host exit %lld ms\n",
            r.mode, N, (long long)(eof.last_ms - eof.first_ms),
            (long long)(term.last_ms - term.first_ms),
            (long long)(term.first_ms - eof.first_ms),
            (long long)(gone - term.last_ms), GRACE_MS, (long long)took);
    ck_assert_msg(eof.n == N, "[%s] %d of %d Apps saw stdin EOF", r.mode,
                  eof.n, N);
    ck_assert_msg(term.n == N, "[%s] %d of %d Apps got SIGTERM", r.mode,
                  term.n, N);
    ck_assert_msg(eof.last_ms - eof.first_ms < GRACE_MS &&
                      term.last_ms - term.first_ms < GRACE_MS,
                  "[%s] EOFs %lld ms apart, SIGTERMs %lld ms apart: more "
                  "than one escalation", r.mode,
                  (long long)(eof.last_ms - eof.first_ms),
                  (long long)(term.last_ms - term.first_ms));
    ck_assert_msg(term.first_ms - eof.first_ms >= GRACE_MS - late,
                  "[%s] a SIGTERM %lld ms after the first EOF: an App lost "
                  "part of its EOF grace", r.mode,
                  (long long)(term.first_ms - eof.first_ms));
    ck_assert_msg(gone - term.last_ms >= GRACE_MS - late,
                  "[%s] gone %lld ms after the last SIGTERM: an App lost "
                  "part of its SIGTERM grace", r.mode,
                  (long long)(gone - term.last_ms));
    /* As a whole: the two graces after the last EOF, and all gone
     * before a second escalation (two graces more) could have ended. */
    ck_assert_msg(gone - eof.last_ms >= 2 * GRACE_MS - 50,
                  "[%s] gone %lld ms after the last EOF: an App lost part "
                  "of its grace", r.mode, (long long)(gone - eof.last_ms));
    ck_assert_msg(gone - eof.last_ms <
                      2 * GRACE_MS + h_slack(2 * GRACE_MS - 1),
                  "[%s] gone %lld ms after the last EOF: more than one "
                  "escalation", r.mode, (long long)(gone - eof.last_ms));
    ck_assert_msg(left == 0, "[%s] %d fixture processes survived", r.mode,
                  left);
    close(r.out_r);
    h_rmtree(dir);
    free(dir);
    free(r.err);
    free(log);
    free(mcp);
    free(fixture);
}
END_TEST

/* Six Apps start one after the other on the spawner thread: a kill at a
 * fixed delay, or once the first, a third or two thirds of the processes
 * have recorded themselves, lands while the host is still spawning. */
START_TEST(test_kill_during_spawn)
{
    static const long delays_ms[] = {0, 10, 40};
    static const int records[] = {1, 3, 6, 13, 26};
    size_t nd = sizeof delays_ms / sizeof *delays_ms;

    become_subreaper();
    for (size_t k = 0; k < nd + sizeof records / sizeof *records; k++) {
        char what[64];
        struct run r;
        setup_run(&r, modes[_i], 6, 2000, 30, NULL);
        start_host(&r);
        if (k < nd) {
            sleep_ms(delays_ms[k]);
            snprintf(what, sizeof what, "SIGKILL at spawn +%ldms",
                     delays_ms[k]);
        } else {
            wait_records(&r, records[k - nd]);
            snprintf(what, sizeof what, "SIGKILL at spawn @%d rec",
                     records[k - nd]);
        }
        kill_host(&r);
        finish(&r, what, k < nd ? 0 : records[k - nd]);
    }
}
END_TEST

START_TEST(test_kill_during_handshake)
{
    /* The servers sleep before reading stdin: the host waits in connect. */
    static const char *const opts[] = {"--start-delay-ms", "60000", NULL};
    struct run r;

    become_subreaper();
    setup_run(&r, modes[_i], 4, 2000, 60, opts);
    start_host(&r);
    wait_records(&r, r.want);
    ck_assert_int_eq(waitpid(r.host, NULL, WNOHANG), 0); /* still starting */
    kill_host(&r);
    finish(&r, "SIGKILL in handshake", r.want);
}
END_TEST

START_TEST(test_kill_when_ready)
{
    struct run r;

    become_subreaper();
    setup_run(&r, modes[_i], 4, 2000, 30, NULL);
    start_host(&r);
    wait_ready(&r);
    wait_records(&r, r.want);
    kill_host(&r);
    finish(&r, "SIGKILL when ready", r.want);
}
END_TEST

START_TEST(test_kill_during_close)
{
    /* The servers ignore EOF and SIGTERM and the grace is long: close
     * sits in its first wait when the host is killed. */
    static const char *const opts[] = {"--ignore-term", NULL};
    struct run r;

    become_subreaper();
    setup_run(&r, modes[_i], 4, 10000, 30, opts);
    start_host(&r);
    wait_ready(&r);
    wait_records(&r, r.want);
    close(r.in_w);
    r.in_w = -1;
    sleep_ms(300);
    ck_assert_int_eq(waitpid(r.host, NULL, WNOHANG), 0); /* still closing */
    kill_host(&r);
    finish(&r, "SIGKILL during close", r.want);
}
END_TEST

static Suite *contain_suite(void)
{
    Suite *s = suite_create("contain");
    TCase *t = tcase_create("survivors");
    int n = (int)(sizeof modes / sizeof *modes);

    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_negative_control);
    tcase_add_loop_test(t, test_close_clean, 0, n);
    tcase_add_loop_test(t, test_close_stubborn, 0, n);
    tcase_add_loop_test(t, test_close_many_stubborn, 0, n);
    tcase_add_loop_test(t, test_kill_during_spawn, 0, n);
    tcase_add_loop_test(t, test_kill_during_handshake, 0, n);
    tcase_add_loop_test(t, test_kill_when_ready, 0, n);
    tcase_add_loop_test(t, test_kill_during_close, 0, n);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return aur_check_main(contain_suite(), NULL); }
