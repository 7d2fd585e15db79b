/*
 * check_transport_stdio_fds.c - the spawner thread's descriptor table of
 * its own (issue #22, plugins/transport-stdio/stdio_fdpass.c): a
 * supervisor starts with a small table however many descriptors the
 * host holds; no copy of a host descriptor stays open on the spawner's
 * side; where close_range or unshare are refused the spawner falls back
 * to the host's table; and running out of descriptors at each step of a
 * start is a clean start error with nothing left open.  Same binary and
 * test host as check_transport_stdio.c.
 */
#define _GNU_SOURCE
#include "fixtures/stdio_host.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

Suite *stdio_fds_suite(void);

/* ThreadSanitizer builds keep the spawner in the host's table
 * (stdio_fdpass.c). */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif

/* ------------------------------------------------------------------ */
/* Descriptors: the spawner thread's own table (issue #22)            */
/* ------------------------------------------------------------------ */

/* Only 0, 1 and 2 open in pid. */
static void assert_only_std_fds(long pid)
{
    char path[64];
    struct dirent *de;
    int n = 0;
    DIR *d;

    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    d = opendir(path);
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        ck_assert_msg(atoi(de->d_name) <= 2, "App has fd %s", de->d_name);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, 3);
}

/* The descriptors of the thread named name (ours), or -1 if none. */
static int thread_fds(const char *name, int *high)
{
    char path[300], comm[64];
    struct dirent *de, *fe;
    int n = -1;
    DIR *d = opendir("/proc/self/task"), *fd;

    ck_assert_ptr_nonnull(d);
    while (n < 0 && (de = readdir(d)) != NULL) {
        FILE *f;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strcmp(comm, name) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/fd", de->d_name);
        fd = opendir(path);
        ck_assert_ptr_nonnull(fd);
        n = 0;
        *high = -1;
        while ((fe = readdir(fd)) != NULL)
            if (fe->d_name[0] != '.') {
                n++;
                if (atoi(fe->d_name) > *high)
                    *high = atoi(fe->d_name);
            }
        closedir(fd);
    }
    closedir(d);
    return n;
}

/* Under valgrind (its own descriptors sit above the soft limit, which it
 * will not let us raise) or TSan (no table of the spawner's own) the
 * descriptor tests have nothing to measure: true, with a note. */
static bool skip_descriptors(const char *test)
{
    const char *pre = getenv("LD_PRELOAD");
    const char *why = NULL;

#ifdef TEST_TSAN
    why = "ThreadSanitizer build: the spawner shares the host's table";
#endif
    if (pre && strstr(pre, "vgpreload"))
        why = "under valgrind";
    if (why)
        fprintf(stderr, "%s: SKIPPED: %s\n", test, why);
    return why != NULL;
}

/* Descriptors open in this process. */
static int count_fds(void)
{
    struct dirent *de;
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n - 1; /* d's own */
}

/* No child of ours, not even a zombie. */
static void assert_no_child(const char *what)
{
    pid_t w = waitpid(-1, NULL, WNOHANG);

    ck_assert_msg(w < 0 && errno == ECHILD, "%s: a child is left (%d)", what,
                  (int)w);
}

/* EOF on r (the other end closed) within 500 ms. */
static void assert_eof(int r)
{
    struct pollfd pf = {.fd = r, .events = POLLIN};
    ssize_t n = -1;
    char b;
    int pr;

    ck_assert_int_eq(fcntl(r, F_SETFL, O_NONBLOCK), 0);
    pr = poll(&pf, 1, 500);
    if (pr == 1)
        n = read(r, &b, 1);
    ck_assert_msg(pr == 1 && n == 0,
                  "no EOF on the host's pipe within 500 ms (poll %d, read "
                  "%zd): a copy of its write end is still open", pr, n);
}

#define EXTRA_FDS 3000

/* A host with thousands of descriptors (1000 Apps hold 10 each) starts
 * an App: the supervisor gets a small descriptor table, not a copy of
 * the host's (posix_spawn copies the spawning thread's table, and the
 * exec then walks all of it); more host descriptors later change
 * nothing for the next App. */
START_TEST(test_small_table_many_host_fds)
{
    static int extra[EXTRA_FDS + 1000];
    struct rlimit rl;
    struct aur_conn *c1, *c2;
    struct hello h1, h2;
    long sup1, sup2, size1, size2;
    int n = 0, high = -1, sp_fds;

    if (skip_descriptors("test_small_table_many_host_fds"))
        return;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < EXTRA_FDS + 1000 + 64) {
        fprintf(stderr, "test_small_table_many_host_fds: SKIPPED: the hard "
                        "RLIMIT_NOFILE (%llu) is below %d\n",
                (unsigned long long)rl.rlim_max, EXTRA_FDS + 1000 + 64);
        return;
    }
    rl.rlim_cur = rl.rlim_max;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    /* Before init, so the plugin's own descriptors (its cgroup directory,
     * the spawner's socket) get numbers above all of these. */
    for (; n < EXTRA_FDS; n++) {
        extra[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(extra[n], 0);
    }
    up();
    ep_child("echo", NULL);
    c1 = open_ok();
    h1 = wait_hello();
    sup1 = supervisor_of(h1.pid);
    ck_assert_int_gt(sup1, 1);
    ck_assert_int_eq(stat_field(sup1, 4), (long)getpid());
    size1 = proc_status(sup1, "FDSize:");
    ck_assert_int_gt(size1, 0);
    ck_assert_msg(size1 <= 256, "supervisor FDSize %ld: a copy of the host's "
                  "table of %d descriptors", size1, EXTRA_FDS);
    assert_only_std_fds(h1.pid);
    /* More host descriptors after the spawner thread started. */
    for (; n < EXTRA_FDS + 1000; n++) {
        extra[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(extra[n], 0);
    }
    c2 = open_ok();
    h2 = wait_hello();
    sup2 = supervisor_of(h2.pid);
    ck_assert_int_gt(sup2, 1);
    size2 = proc_status(sup2, "FDSize:");
    ck_assert_int_gt(size2, 0);
    ck_assert_msg(size2 <= 256, "second supervisor FDSize %ld", size2);
    assert_only_std_fds(h2.pid);
    /* The spawner thread itself holds only its few: 0..2, its socket and
     * the cgroup directory, at low numbers. */
    sp_fds = thread_fds("aur-spawner", &high);
    ck_assert_msg(sp_fds >= 0, "no thread named aur-spawner");
    ck_assert_msg(sp_fds <= 5 && high < 10,
                  "the spawner thread holds %d descriptors, up to %d", sp_fds,
                  high);
    OPS->close(c2, t_now() + 3000);
    OPS->close(c1, t_now() + 3000);
    while (n > 0)
        close(extra[--n]);
}
END_TEST

/* A pipe the host held when the spawner thread started is not kept open
 * by the spawner's copy of the table: its reader sees EOF as soon as
 * the host closes the write end. */
START_TEST(test_spawner_keeps_no_host_pipe)
{
    struct aur_conn *c;
    int p[2];

    if (skip_descriptors("test_spawner_keeps_no_host_pipe"))
        return;
    ck_assert_int_eq(pipe(p), 0);
    up();
    ep_child("echo", NULL);
    c = open_ok(); /* the first: the spawner thread starts now */
    (void)wait_hello();
    ck_assert_int_eq(close(p[1]), 0);
    assert_eof(p[0]);
    OPS->close(c, t_now() + 3000);
    close(p[0]);
}
END_TEST

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* A seccomp filter on this process: close_range fails with ENOSYS (as
 * before Linux 5.9) and, if also_unshare, unshare with EPERM (as in a
 * container's default profile).  false: no seccomp here. */
static bool refuse_syscalls(bool also_unshare)
{
#if defined(TEST_AUDIT_ARCH) && defined(__NR_close_range)
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, also_unshare ? SECCOMP_RET_ERRNO | EPERM
                                               : SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};

    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
    (void)also_unshare;
    return false;
#endif
}

/* Loop 0: close_range refused, so the spawner unshares and closes its
 * copy one descriptor at a time: the same small table, the same EOF.
 * Loop 1: unshare refused too: the spawner keeps the host's table, as
 * before, and Apps start all the same. */
START_TEST(test_table_fallbacks)
{
    static int extra[600];
    struct aur_conn *c;
    struct hello h;
    long sup, size;
    int p[2], n;

    if (skip_descriptors("test_table_fallbacks"))
        return;
    ck_assert_int_eq(pipe(p), 0);
    for (n = 0; n < 600; n++) { /* a copied table would be 1024 */
        extra[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(extra[n], 0);
    }
    if (!refuse_syscalls(_i == 1)) {
        fprintf(stderr, "test_table_fallbacks: SKIPPED: no seccomp filter "
                        "(%s)\n", strerror(errno));
        return;
    }
    ck_assert_int_eq((int)syscall(__NR_close_range, 1000u, 1000u, 0u), -1);
    ck_assert_int_eq(errno, ENOSYS);
    up();
    ep_child("echo", NULL);
    c = open_ok();
    h = wait_hello();
    assert_only_std_fds(h.pid);
    sup = supervisor_of(h.pid);
    ck_assert_int_gt(sup, 1);
    size = proc_status(sup, "FDSize:");
    if (_i == 0) {
        ck_assert_msg(size > 0 && size <= 256, "supervisor FDSize %ld", size);
        ck_assert_int_eq(close(p[1]), 0);
        assert_eof(p[0]);
    } else {
        ck_assert_msg(size >= 512, "supervisor FDSize %ld: a copy of the "
                      "host's table was expected", size);
        close(p[1]);
    }
    OPS->close(c, t_now() + 3000);
    close(p[0]);
    while (n > 0)
        close(extra[--n]);
}
END_TEST

/* The host runs out of descriptors at every step of a start in turn (k
 * free below the soft limit, 0 to 12): each start either succeeds or
 * fails as a start error naming its step, with no descriptor of ours
 * left open and no process left.  Loop 0: the host holds few, so the
 * limit is low enough for the spawner's own table to run out too (its
 * numbers are below 16); one start fails there.  Loop 1: 32 more, so
 * the spawner has room and starts fail as the supervisor's descriptors
 * come back to the host. */
START_TEST(test_out_of_fds_at_each_step)
{
    static const char *const spawner_steps[] = {
        "receive the App's pipes on the spawner thread",
        "create the supervisor's status pipe",
        "create the supervisor's lifeline pipe", "make the App's cgroup",
        "spawn the supervisor"};
    static int pad[32];
    char seen[4096] = "";
    struct rlimit rl, low;
    struct aur_conn *c;
    bool at_reply = false, in_spawner = false;
    int before, npad = _i == 0 ? 0 : 32;

    if (skip_descriptors("test_out_of_fds_at_each_step"))
        return;
    up();
    ep_child("echo", NULL);
    c = open_ok(); /* the spawner thread and its socket exist now */
    (void)wait_hello();
    OPS->close(c, t_now() + 3000);
    assert_no_child("the first App");
    for (int i = 0; i < npad; i++)
        ck_assert_int_ge(pad[i] = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    before = count_fds();
    for (int k = 0; k <= 12; k++) {
        struct aur_error err;
        uint32_t caps;
        int free_n = 0, fd, rc;
        c = NULL;
        for (fd = 0; free_n < k || fd < 3; fd++)
            if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
                free_n++;
        low = rl;
        low.rlim_cur = (rlim_t)fd;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
        rc = OPS->open(ST, &EP, &SINK, t_now() + 5000, &c, &caps, &err);
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
        if (rc == AUR_OK) {
            (void)wait_hello();
            OPS->close(c, t_now() + 3000);
            snprintf(err.msg, sizeof err.msg, "started");
        } else {
            ck_assert_msg(rc == AUR_E_IO || rc == AUR_E_SPAWN,
                          "k=%d: %d %s", k, rc, err.msg);
            ck_assert_msg(strstr(err.msg, "out of file descriptors"),
                          "k=%d: %s", k, err.msg);
            at_reply |= strstr(err.msg, "receive the supervisor's "
                                        "descriptors") != NULL;
            for (size_t i = 0; i < sizeof spawner_steps / sizeof *spawner_steps;
                 i++)
                in_spawner |= strstr(err.msg, spawner_steps[i]) != NULL;
        }
        if (strlen(seen) + strlen(err.msg) + 16 < sizeof seen)
            snprintf(seen + strlen(seen), sizeof seen - strlen(seen),
                     "\n  k=%d: %s", k, err.msg);
        ck_assert_msg(count_fds() == before, "k=%d: %d descriptors, %d "
                      "before (%s)", k, count_fds(), before, err.msg);
        assert_no_child(err.msg);
    }
    fprintf(stderr, "out of descriptors at each step (%d more open):%s\n",
            npad, seen);
    if (_i == 0)
        ck_assert_msg(in_spawner, "no start failed in the spawner's "
                      "table:%s", seen);
    else
        ck_assert_msg(at_reply, "no start failed at the reply:%s", seen);
    for (int i = 0; i < npad; i++)
        close(pad[i]);
}
END_TEST

Suite *stdio_fds_suite(void)
{
    Suite *s = suite_create("transport_stdio_fds");
    TCase *t = stdio_tcase(s, "descriptors");

    tcase_add_test(t, test_small_table_many_host_fds);
    tcase_add_test(t, test_spawner_keeps_no_host_pipe);
    tcase_add_loop_test(t, test_table_fallbacks, 0, 2);
    tcase_add_loop_test(t, test_out_of_fds_at_each_step, 0, 2);
    return s;
}
