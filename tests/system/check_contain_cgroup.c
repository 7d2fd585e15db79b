/*
 * check_contain_cgroup.c - an App's cgroup goes when the App closes,
 * whatever the App did to it and however slowly its processes die
 * (docs/containment.md).  The host is the real CLI (bin/aurora-mcp
 * serve, containment = auto) in a process of its own; closing its stdin
 * shuts it down.
 *
 *   nested  the App makes two cgroups below its own and moves itself into
 *           the deeper one (aur-contain-app --nest-cgroup): rmdir of the
 *           App's cgroup alone fails.  After the close no cgroup of the
 *           host is left, nothing is logged, and no process survives.
 *   slow    the App is frozen (the cgroup v1 freezer: a frozen process
 *           sent SIGKILL stays, in uninterruptible sleep, until thawed,
 *           like one stuck in the kernel) and thawed 4.5 s after it was
 *           sent SIGKILL, past the supervisor's 3 s and the host's own
 *           steps.  The host is still closing then (it waits for the
 *           App's processes to be gone); afterwards nothing of it is left
 *           and nothing is logged.
 *   stuck   frozen until the host has given up (10 s): the host exits
 *           all the same, 0, and its log names the App and the cgroup it
 *           left and why; thawed, the App dies.
 *   sweep   a host that starts removes the cgroups that hosts which are
 *           gone left in its cgroup, nested ones too, and nothing else.
 *
 * Each case needs what it tests: an App in a cgroup of its own (a host
 * that may make cgroups) and, for slow and stuck, a writable v1 freezer.
 * Without them a case prints "skipped" and asserts nothing more.
 */
#define _GNU_SOURCE
#include "support/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FREEZER "/sys/fs/cgroup/freezer"
/* STDIO_DEATH_MS (stdio_int.h): how long close waits for the App's
 * processes to be gone after SIGKILL. */
#define DEATH_MS 10000

struct host {
    pid_t pid;
    int in_w, out_r;
    char *err;
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void reap_orphans(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static char *config(void)
{
    return h_mkconfig(NULL, "enabled = true\n\n[transport-stdio]\n"
                            "containment = auto\nterm_grace_ms = 300\n");
}

/* serve -c dir, its stderr into dir/host.err, until its ready line. */
static void start_host(struct host *hs, const char *dir)
{
    char *cli = h_bin("bin/aurora-mcp"), buf[4096];
    int64_t until = h_now_ms() + h_slack(30000);
    int in[2], out[2];
    size_t len = 0;

    ck_assert(asprintf(&hs->err, "%s/host.err", dir) > 0);
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    hs->pid = fork();
    ck_assert_int_ge(hs->pid, 0);
    if (hs->pid == 0) {
        int err = open(hs->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (err >= 0)
            dup2(err, 2);
        execl(cli, cli, "serve", "-c", dir, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    hs->in_w = in[1];
    hs->out_r = out[0];
    free(cli);
    for (;;) {
        struct pollfd pf = {hs->out_r, POLLIN, 0};
        int64_t left = until - h_now_ms();
        ssize_t n;
        ck_assert_msg(left > 0, "the host never got ready (see %s)", hs->err);
        if (poll(&pf, 1, (int)left) <= 0)
            continue;
        n = read(hs->out_r, buf + len, sizeof buf - 1 - len);
        ck_assert_msg(n > 0, "the host ended before ready (see %s)", hs->err);
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\"ready\":true"))
            return;
        ck_assert_uint_lt(len, sizeof buf - 1);
    }
}

/* Its exit status once it exited, or -1 while it runs. */
static int host_exited(struct host *hs)
{
    int st;
    pid_t w = waitpid(hs->pid, &st, WNOHANG);

    if (w == 0)
        return -1;
    ck_assert_int_eq(w, hs->pid);
    ck_assert_msg(WIFEXITED(st), "the host died of signal %d",
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return WEXITSTATUS(st);
}

static int wait_host(struct host *hs, int64_t ms)
{
    int64_t until = h_now_ms() + ms;
    int rc;

    while ((rc = host_exited(hs)) < 0) {
        ck_assert_msg(h_now_ms() < until, "the host did not exit in %lld ms",
                      (long long)ms);
        sleep_ms(20);
    }
    return rc;
}

static void host_free(struct host *hs)
{
    close(hs->in_w);
    close(hs->out_r);
    free(hs->err);
}

/* The cgroup v2 directory this test (and so its host) runs in, or false. */
static bool own_cgroup_dir(char *dir, size_t size)
{
    static const char *const mounts[] = {"/sys/fs/cgroup/unified",
                                         "/sys/fs/cgroup"};
    char line[1024];
    bool found = false;
    FILE *f = fopen("/proc/self/cgroup", "re");

    if (!f)
        return false;
    while (!found && fgets(line, sizeof line, f))
        found = strncmp(line, "0::/", 4) == 0;
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    for (size_t i = 0; found && i < sizeof mounts / sizeof *mounts; i++) {
        char probe[1200];
        snprintf(probe, sizeof probe, "%s%s/cgroup.procs", mounts[i],
                 strcmp(line + 3, "/") == 0 ? "" : line + 3);
        if (access(probe, R_OK) == 0) {
            snprintf(dir, size, "%.*s", (int)(strlen(probe) - 13), probe);
            return true;
        }
    }
    return false;
}

/* The cgroups a host of pid left in our cgroup ("aurora-mcp-<pid>-*");
 * the last one's path into last. */
#define PATH_SIZE 1300
static int host_cgroups(pid_t pid, char last[PATH_SIZE])
{
    char dir[1200], prefix[64];
    struct dirent *de;
    int n = 0;
    DIR *d;

    ck_assert(own_cgroup_dir(dir, sizeof dir));
    snprintf(prefix, sizeof prefix, "aurora-mcp-%d-", (int)pid);
    d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            n++;
            snprintf(last, PATH_SIZE, "%.1030s/%.255s", dir, de->d_name);
        }
    closedir(d);
    return n;
}

/* The pid of the one live process whose command line holds marker. */
static pid_t pid_with(const char *marker)
{
    struct dirent *de;
    pid_t found = -1;
    DIR *d = opendir("/proc");

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL) {
        char path[300], buf[4096];
        ssize_t n;
        int fd;
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        for (ssize_t i = 0; i < n; i++)
            buf[i] = buf[i] ? buf[i] : ' ';
        buf[n] = '\0';
        if (strstr(buf, marker) && !strstr(buf, "aur-contain ")) {
            ck_assert_msg(found < 0, "two processes with %s", marker);
            found = (pid_t)atol(de->d_name);
        }
    }
    closedir(d);
    ck_assert_msg(found > 0, "no process with %s", marker);
    return found;
}

/* A line of /proc/<pid>/<file> that ok accepts. */
static bool proc_line(pid_t pid, const char *file, bool (*ok)(const char *))
{
    char path[64], line[1024];
    bool yes = false;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    f = fopen(path, "re");
    if (!f)
        return false;
    while (!yes && fgets(line, sizeof line, f))
        yes = ok(line);
    fclose(f);
    return yes;
}

static bool app_cgroup_line(const char *line)
{
    return strncmp(line, "0::", 3) == 0 && strstr(line, "/aurora-mcp-");
}

/* SIGKILL pending (a frozen process cannot act on it). */
static bool kill_pending_line(const char *line)
{
    unsigned long long m;

    return (sscanf(line, "SigPnd: %llx", &m) == 1 ||
            sscanf(line, "ShdPnd: %llx", &m) == 1) &&
           (m & (1ULL << (SIGKILL - 1)));
}

static bool put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

    if (fd >= 0)
        close(fd);
    return ok;
}

/* Thaws cg when this test process ends, however it ends (a failed
 * assertion must not leave a process frozen for good): a child that
 * waits for the end of a pipe only we hold. */
static void thaw_at_exit(const char *cg)
{
    char path[300];
    int p[2];
    pid_t w;

    snprintf(path, sizeof path, "%s/freezer.state", cg);
    ck_assert_int_eq(pipe(p), 0);
    w = fork();
    ck_assert_int_ge(w, 0);
    if (w == 0) {
        char c;
        /* Nothing else of ours: the host's stdin pipe must see EOF. */
        for (int fd = 3; fd < 1024; fd++)
            if (fd != p[0])
                close(fd);
        while (read(p[0], &c, 1) < 0 && errno == EINTR)
            ;
        put(path, "THAWED");
        _exit(0);
    }
    close(p[0]); /* p[1] stays open until we exit */
}

/* A v1 freezer cgroup holding pid, frozen; false when there is none. */
static bool freeze(pid_t pid, char *cg, size_t size)
{
    char path[300], num[24];
    int64_t until = h_now_ms() + h_slack(10000);

    snprintf(cg, size, FREEZER "/aur-check-contain-%d", (int)getpid());
    if (mkdir(cg, 0755) != 0 && errno != EEXIST)
        return false;
    thaw_at_exit(cg);
    snprintf(path, sizeof path, "%s/cgroup.procs", cg);
    snprintf(num, sizeof num, "%d", (int)pid);
    if (!put(path, num)) {
        rmdir(cg);
        return false;
    }
    snprintf(path, sizeof path, "%s/freezer.state", cg);
    ck_assert(put(path, "FROZEN"));
    for (;;) {
        char *st = h_slurp(path);
        bool frozen = st && strncmp(st, "FROZEN", 6) == 0;
        free(st);
        if (frozen)
            return true;
        ck_assert_msg(h_now_ms() < until, "%s never froze", cg);
        sleep_ms(10);
    }
}

static void thaw(const char *cg)
{
    char path[300];

    snprintf(path, sizeof path, "%s/freezer.state", cg);
    ck_assert(put(path, "THAWED"));
}

/* ------------------------------------------------------------------ */

START_TEST(test_nested_cgroups_removed)
{
    char *dir = config(), *helper = h_bin("bin/aur-contain-app");
    char *fixture = h_bin("bin/aur-fixture-server"), *rec, *nest, *log;
    char *where, *errs, left[PATH_SIZE], deeper[1300];
    struct host hs;

    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ck_assert(asprintf(&rec, "%s/records", dir) > 0);
    ck_assert(asprintf(&nest, "%s/nest", dir) > 0);
    ck_assert(asprintf(&log, "%s/server.log", dir) > 0);
    {
        const char *args[] = {"--record", rec, "--nest-cgroup", nest, "--",
                              fixture, "--lifetime", "100", "--log", log,
                              NULL};
        h_add_app(dir, "a.ini", "org.contain.nested", 30, NULL, helper,
                  args);
    }
    start_host(&hs, dir);
    where = h_slurp(nest);
    ck_assert_ptr_nonnull(where);
    if (strcmp(where, "-") == 0) {
        fprintf(stderr, "check_contain_cgroup: nested: skipped (the App "
                        "has no cgroup of its own here)\n");
    } else {
        ck_assert_msg(where[0] == '/', "the App: %s", where);
        /* The hostile part happened: rmdir of its cgroup alone fails. */
        snprintf(deeper, sizeof deeper, "%.1200s/evil/deeper", where);
        ck_assert_int_eq(access(deeper, F_OK), 0);
    }
    close(hs.in_w); /* EOF: serve shuts down and closes the App */
    hs.in_w = -1;
    ck_assert_int_eq(wait_host(&hs, h_slack(30000)), 0);
    reap_orphans();
    errs = h_slurp(hs.err);
    ck_assert_ptr_nonnull(errs);
    if (where[0] == '/') {
        ck_assert_msg(access(where, F_OK) != 0 && errno == ENOENT,
                      "the App's cgroup %s is still there", where);
        ck_assert_int_eq(host_cgroups(hs.pid, left), 0);
        ck_assert_msg(errs[0] == '\0', "the host logged: %s", errs);
        fprintf(stderr, "check_contain_cgroup: nested: %s and the two "
                        "below it removed\n", where);
    }
    H_WAIT_UNTIL(h_procs_with(rec) == 0 && h_procs_with(log) == 0, 20000,
                 20);
    ck_assert_int_eq(h_procs_with(rec) + h_procs_with(log), 0);
    free(errs);
    free(where);
    hs.in_w = open("/dev/null", O_RDONLY | O_CLOEXEC);
    host_free(&hs);
    h_rmtree(dir);
    free(dir);
    free(helper);
    free(fixture);
    free(rec);
    free(nest);
    free(log);
}
END_TEST

/*
 * _i == 0 (slow): thawed 4.5 s after SIGKILL reached the App;
 * _i == 1 (stuck): thawed once the host has exited.
 */
START_TEST(test_frozen_app)
{
    const bool stuck = _i == 1;
    const char *what = stuck ? "stuck" : "slow";
    char *dir = config(), *fixture = h_bin("bin/aur-fixture-server");
    char *log, *errs, cg[200], left[PATH_SIZE];
    struct host hs;
    int64_t killed;
    pid_t app;

    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ck_assert(asprintf(&log, "%s/server.log", dir) > 0);
    h_add_logged_app(dir, "a.ini", "org.contain.frozen", 30, NULL, fixture,
                     NULL, log, NULL);
    start_host(&hs, dir);
    app = pid_with(log);
    if (!proc_line(app, "cgroup", app_cgroup_line) || !freeze(app, cg, sizeof cg)) {
        fprintf(stderr, "check_contain_cgroup: %s: skipped (%s)\n", what,
                proc_line(app, "cgroup", app_cgroup_line) ? "no writable v1 freezer at " FREEZER
                                   : "the App has no cgroup of its own");
        close(hs.in_w);
        hs.in_w = -1;
        ck_assert_int_eq(wait_host(&hs, h_slack(30000)), 0);
        goto out;
    }
    close(hs.in_w); /* EOF, SIGTERM, SIGKILL: the App sees none of them */
    hs.in_w = -1;
    {
        int64_t until = h_now_ms() + h_slack(20000);
        while (!proc_line(app, "status", kill_pending_line)) {
            ck_assert_msg(h_now_ms() < until, "the App was never killed");
            sleep_ms(10);
        }
        killed = h_now_ms();
    }
    /* Past the supervisor's wait (3 s) and the host's own steps (2 s at
     * most before it removes the cgroup): the host still waits. */
    sleep_ms(4500);
    ck_assert_msg(host_exited(&hs) < 0,
                  "[%s] the host gave up on the App 4.5 s after SIGKILL",
                  what);
    if (!stuck)
        thaw(cg);
    ck_assert_int_eq(wait_host(&hs, h_slack(DEATH_MS + 5000)), 0);
    fprintf(stderr, "check_contain_cgroup: %s: the host exited %lld ms "
                    "after the App's SIGKILL\n",
            what, (long long)(h_now_ms() - killed));
    errs = h_slurp(hs.err);
    ck_assert_ptr_nonnull(errs);
    if (stuck) {
        char want[128];
        snprintf(want, sizeof want, "org.contain.frozen: cgroup "
                                    "aurora-mcp-%d-", (int)hs.pid);
        ck_assert_msg(strstr(errs, want) &&
                          strstr(errs, " not removed: a process in it was "
                                       "not gone after SIGKILL"),
                      "[stuck] the host logged: %s", errs);
        ck_assert_int_eq(host_cgroups(hs.pid, left), 1);
        thaw(cg);
        H_WAIT_UNTIL(h_procs_with(log) == 0, 20000, 20);
        reap_orphans();
        H_WAIT_UNTIL(rmdir(left) == 0 || errno == ENOENT, 10000, 20);
        ck_assert_msg(access(left, F_OK) != 0, "%s stays", left);
    } else {
        ck_assert_msg(errs[0] == '\0', "[slow] the host logged: %s", errs);
        ck_assert_int_eq(host_cgroups(hs.pid, left), 0);
    }
    free(errs);
    H_WAIT_UNTIL(h_procs_with(log) == 0, 20000, 20);
    ck_assert_int_eq(h_procs_with(log), 0);
    reap_orphans();
    ck_assert_int_eq(rmdir(cg), 0);
out:
    hs.in_w = open("/dev/null", O_RDONLY | O_CLOEXEC);
    host_free(&hs);
    h_rmtree(dir);
    free(dir);
    free(fixture);
    free(log);
}
END_TEST

/*
 * The sweep: a host that starts removes what hosts that are gone left
 * in its cgroup (SIGKILLed with their Apps' cgroups still there), and
 * nothing else.  Left for it, as "aurora-mcp-<pid>-<n>": two of a dead
 * host, 2 minutes old, one of them with cgroups nested below it; one of
 * the same dead host made just now (it could be a host in another pid
 * namespace setting it up); one of a live process (this test), old.
 */
START_TEST(test_sweep_of_dead_hosts)
{
    static const char *const kids[] = {"/x", "/x/y"};
    char *dir = config(), *fixture = h_bin("bin/aur-fixture-server");
    char base[1200], gone[2][PATH_SIZE], stays[2][PATH_SIZE];
    char *log;
    struct timespec old[2];
    struct host hs;
    pid_t dead = fork();

    ck_assert_int_ge(dead, 0);
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    ck_assert(own_cgroup_dir(base, sizeof base));
    snprintf(gone[0], PATH_SIZE, "%s/aurora-mcp-%d-1", base, (int)dead);
    snprintf(gone[1], PATH_SIZE, "%s/aurora-mcp-%d-2", base, (int)dead);
    snprintf(stays[0], PATH_SIZE, "%s/aurora-mcp-%d-3", base, (int)dead);
    snprintf(stays[1], PATH_SIZE, "%s/aurora-mcp-%d-1", base, (int)getpid());
    if (mkdir(gone[0], 0755) != 0) {
        fprintf(stderr, "check_contain_cgroup: sweep: skipped (cannot make "
                        "a cgroup in %s: %s)\n", base, strerror(errno));
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        char sub[PATH_SIZE + 8];
        snprintf(sub, sizeof sub, "%.1290s%s", gone[0], kids[i]);
        ck_assert_int_eq(mkdir(sub, 0755), 0);
    }
    ck_assert_int_eq(mkdir(gone[1], 0755), 0);
    ck_assert_int_eq(mkdir(stays[0], 0755), 0);
    ck_assert_int_eq(mkdir(stays[1], 0755), 0);
    clock_gettime(CLOCK_REALTIME, &old[0]);
    old[0].tv_sec -= 120;
    old[1] = old[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, gone[0], old, 0), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, gone[1], old, 0), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, stays[1], old, 0), 0);

    ck_assert(asprintf(&log, "%s/server.log", dir) > 0);
    h_add_logged_app(dir, "a.ini", "org.contain.sweep", 30, NULL, fixture,
                     NULL, log, NULL);
    start_host(&hs, dir);
    close(hs.in_w);
    hs.in_w = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(wait_host(&hs, h_slack(30000)), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(access(gone[i], F_OK) != 0,
                      "%s (a dead host's, old) is still there", gone[i]);
        ck_assert_msg(access(stays[i], F_OK) == 0, "%s was removed",
                      stays[i]);
        ck_assert_int_eq(rmdir(stays[i]), 0);
    }
    fprintf(stderr, "check_contain_cgroup: sweep: a dead host's two old "
                    "cgroups removed (one with two below it), a young one "
                    "and a live process's left\n");
    host_free(&hs);
    free(log);
out:
    h_rmtree(dir);
    free(dir);
    free(fixture);
}
END_TEST

static Suite *contain_cgroup_suite(void)
{
    Suite *s = suite_create("contain_cgroup");
    TCase *t = tcase_create("cgroup");

    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_nested_cgroups_removed);
    tcase_add_loop_test(t, test_frozen_app, 0, 2);
    tcase_add_test(t, test_sweep_of_dead_hosts);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return aur_check_main(contain_cgroup_suite(), NULL); }
