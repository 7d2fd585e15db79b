/*
 * check_transport_stdio_prepare.c - a start prepared before its open (the
 * prepare hook, ABI 1.7; plugins/transport-stdio/stdio_warm.c): the
 * supervisor is started and waits, nothing of the App runs until the
 * open, the open of that endpoint uses it, and one that no open uses, or
 * whose open fails, leaves no process and no cgroup.  Same binary and
 * test host as check_transport_stdio.c.
 */
#define _GNU_SOURCE
#include "fixtures/stdio_host.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

Suite *stdio_prepare_suite(void);

/* How many processes have parent ppid (and, when comm is not NULL, that
 * comm); *last one of them. */
static int children(long ppid, const char *comm, long *last)
{
    struct dirent *de;
    int n = 0;
    DIR *d = opendir("/proc");

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL) {
        long pid = atol(de->d_name);
        char path[64], buf[64];
        FILE *f;

        if (pid <= 0 || stat_field(pid, 4) != ppid)
            continue;
        if (comm) {
            snprintf(path, sizeof path, "/proc/%ld/comm", pid);
            if (!(f = fopen(path, "r")))
                continue;
            buf[0] = '\0';
            if (!fgets(buf, sizeof buf, f))
                buf[0] = '\0';
            fclose(f);
            buf[strcspn(buf, "\n")] = '\0';
            if (strcmp(buf, comm) != 0)
                continue;
        }
        if (proc_gone(pid)) /* a zombie is dead already */
            continue;
        n++;
        if (last)
            *last = pid;
    }
    closedir(d);
    return n;
}

/* The one supervisor of ours that prepare started (asserted). */
static long prepared_supervisor(void)
{
    long sup = 0;

    ck_assert_int_eq(children(getpid(), "aur-contain", &sup), 1);
    return sup;
}

/* The cgroups of host pid (aurora-mcp-<pid>-*) still there, under any
 * cgroup2 mount, in the cgroup this test runs in. */
static int cgroups_of(long pid)
{
    char line[1024], prefix[64], self[600] = "";
    int n = 0;
    FILE *c, *f = fopen("/proc/self/mountinfo", "r");

    ck_assert_ptr_nonnull(f);
    snprintf(prefix, sizeof prefix, "aurora-mcp-%ld-", pid);
    if ((c = fopen("/proc/self/cgroup", "r"))) { /* ours, in cgroup v2 */
        char l[640];
        while (fgets(l, sizeof l, c))
            if (strncmp(l, "0::", 3) == 0)
                snprintf(self, sizeof self, "%.*s",
                         (int)strcspn(l + 3, "\n"), l + 3);
        fclose(c);
    }
    while (fgets(line, sizeof line, f)) {
        char mnt[512], path[1200];
        struct dirent *de;
        DIR *d;

        if (!strstr(line, " - cgroup2 ") ||
            sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
            continue;
        snprintf(path, sizeof path, "%s%s", mnt, self);
        if (!(d = opendir(path)))
            continue;
        while ((de = readdir(d)) != NULL)
            n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
        closedir(d);
    }
    fclose(f);
    return n;
}

static int our_cgroups(void)
{
    return cgroups_of((long)getpid());
}

/* A host up, EP an echoing child, its start prepared: the supervisor. */
static long prepare_echo(void)
{
    up();
    ep_child("echo", NULL);
    OPS->prepare(ST, &EP);
    return prepared_supervisor();
}

/* The supervisor waits for the open: it has no child, and the App's
 * hello never comes.  The open then uses it: the App is its child. */
START_TEST(test_prepared_start_waits_for_open)
{
    struct aur_conn *c;
    struct hello h;
    long sup;

    sup = prepare_echo();
    sleep_ms(300);
    ck_assert_int_eq(children(sup, NULL, NULL), 0);
    ck_assert_int_eq(R.messages, 0);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_eq(supervisor_of(h.pid), sup);
    ck_assert_int_eq(children(getpid(), "aur-contain", NULL), 1);
    OPS->close(c, t_now() + 3000);
    ck_assert(!proc_exists(sup)); /* reaped by the close */
    ck_assert(!proc_exists(h.pid));
    ck_assert_int_eq(our_cgroups(), 0);
}
END_TEST

/* A second prepare while one waits starts nothing more. */
START_TEST(test_prepare_twice_starts_one)
{
    long sup;

    sup = prepare_echo();
    OPS->prepare(ST, &EP);
    ck_assert_int_eq(prepared_supervisor(), sup);
    down();
    ck_assert(!proc_exists(sup));
}
END_TEST

/* What no open takes is undone at fini: the supervisor killed and
 * reaped, its cgroup removed; an open of another endpoint (another
 * pointer, the same text) starts its own and leaves it waiting. */
START_TEST(test_unused_prepare_undone_at_fini)
{
    struct aur_cfg other;
    struct aur_conn *c = NULL;
    struct aur_error err;
    struct hello h;
    uint32_t caps;
    long sup;

    up();
    ep_child("echo", NULL);
    other = EP;
    OPS->prepare(ST, &other);
    sup = prepared_supervisor();
    ck_assert_int_eq(OPS->open(ST, &EP, &SINK, t_now() + 3000, &c, &caps,
                               &err),
                     AUR_OK);
    h = wait_hello();
    ck_assert_int_ne(supervisor_of(h.pid), sup);
    ck_assert(proc_exists(sup));
    ck_assert_int_eq(children(sup, NULL, NULL), 0);
    OPS->close(c, t_now() + 3000);
    ck_assert(proc_exists(sup)); /* still waiting for its open */
    down();
    ck_assert(!proc_exists(sup));
    ck_assert_int_eq(children(getpid(), "aur-contain", NULL), 0);
    ck_assert_int_eq(our_cgroups(), 0);
}
END_TEST

/* An open that fails after its start was prepared (the command is not
 * there) fails as it would have, and takes the supervisor with it. */
START_TEST(test_failed_open_undoes_prepared_start)
{
    struct aur_error err;
    long sup;

    up();
    ep_child("echo", NULL);
    EP.v[0] = "/nonexistent/aur-no-such-binary";
    OPS->prepare(ST, &EP);
    sup = prepared_supervisor();
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/aur-no-such-binary"));
    ck_assert(!proc_exists(sup));
    ck_assert_int_eq(children(getpid(), "aur-contain", NULL), 0);
    ck_assert_int_eq(our_cgroups(), 0);
    ck_assert_int_eq(R.messages, 0);
}
END_TEST

/* An open that fails before it starts anything (its working directory
 * was removed after the host read its config) takes the prepared start
 * with it too, not only one whose command fails. */
START_TEST(test_open_failing_early_undoes_prepared_start)
{
    struct aur_error err;
    char dir[] = "/tmp/aur-prep-XXXXXX";
    long sup;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    up();
    ep_child("echo", NULL);
    EP.v[2] = dir;
    OPS->prepare(ST, &EP);
    sup = prepared_supervisor();
    ck_assert_int_eq(rmdir(dir), 0);
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);
    ck_assert_ptr_nonnull(strstr(err.msg, dir));
    ck_assert(!proc_exists(sup));
    ck_assert_int_eq(children(getpid(), "aur-contain", NULL), 0);
    ck_assert_int_eq(our_cgroups(), 0);
}
END_TEST

/* A supervisor that died while it waited (killed while the host opened
 * its journal) is not handed the App: the open starts the App under a
 * new one, the App runs, and nothing of the dead one is left.  Used
 * anyway, the open "succeeded" and the App was reported killed by
 * signal 9 though it never ran. */
START_TEST(test_prepared_supervisor_killed_before_open)
{
    struct aur_conn *c;
    struct hello h;
    long sup;

    sup = prepare_echo();
    ck_assert_int_eq(kill((pid_t)sup, SIGKILL), 0);
    int64_t until = t_now() + 3000;
    while (!proc_gone(sup) && t_now() < until)
        sleep_ms(5);
    ck_assert(proc_gone(sup));
    c = open_ok();
    h = wait_hello();
    ck_assert_int_ne(supervisor_of(h.pid), sup);
    ck_assert(!proc_exists(sup)); /* reaped by the open */
    ck_assert_int_eq(closed_count(), 0);
    OPS->close(c, t_now() + 3000);
    ck_assert(!proc_exists(h.pid));
    ck_assert_int_eq(children(getpid(), "aur-contain", NULL), 0);
    ck_assert_int_eq(our_cgroups(), 0);
}
END_TEST

/* A process that is not our child and has pid `want` (the kernel's next
 * pid set through ns_last_pid, which needs root), or -1: a helper of ours
 * forks it and exits, so it is init's.  It sleeps until killed. */
static pid_t stranger_at(pid_t want)
{
    pid_t helper, got = -1;
    int pp[2];

    ck_assert_int_eq(pipe(pp), 0);
    helper = fork();
    ck_assert_int_ge(helper, 0);
    if (helper == 0) {
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
        pid_t g = -1;
        char n[24];
        for (int tries = 0; fd >= 0 && tries < 50 && g != want; tries++) {
            int len = snprintf(n, sizeof n, "%ld", (long)want - 1);
            if (pwrite(fd, n, (size_t)len, 0) != len)
                break;
            g = fork();
            if (g == 0) {
                for (;;)
                    pause();
            }
            if (g > 0 && g != want)
                kill(g, SIGKILL);
        }
        if (g != want)
            g = -1;
        (void)!write(pp[1], &g, sizeof g);
        _exit(0);
    }
    close(pp[1]);
    if (read(pp[0], &got, sizeof got) != (ssize_t)sizeof got)
        got = -1;
    close(pp[0]);
    waitpid(helper, NULL, 0); /* ECHILD under SIG_IGN: already reaped */
    return got;
}

/* An embedder that ignores SIGCHLD has the kernel reap its children: a
 * prepared supervisor that died is gone at once, and its pid is free for
 * any process.  The undo at fini must not kill whoever has it now (it
 * sent SIGKILL to the pid).  Where the pid cannot be handed on (not
 * root), only the rest is checked: fini leaves nothing. */
START_TEST(test_undo_spares_a_reused_pid)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    pid_t other;
    long sup;

    ck_assert_int_eq(sigaction(SIGCHLD, &ign, &old), 0);
    sup = prepare_echo();
    ck_assert_int_eq(kill((pid_t)sup, SIGKILL), 0);
    int64_t until = t_now() + 3000;
    while (proc_exists(sup) && t_now() < until) /* no zombie: reaped */
        sleep_ms(5);
    ck_assert(!proc_exists(sup));
    other = stranger_at((pid_t)sup);
    down();
    if (other > 0) {
        /* a SIGKILL takes a moment to land: give it 300 ms */
        int64_t end = t_now() + 300;
        while (!proc_gone(other) && t_now() < end)
            sleep_ms(5);
        bool spared = !proc_gone(other);
        kill(other, SIGKILL);
        ck_assert_msg(spared, "fini killed pid %ld, no longer its supervisor's",
                      sup);
    } else {
        fprintf(stderr, "test_undo_spares_a_reused_pid: pid %ld could not "
                        "be handed on (ns_last_pid needs root)\n", sup);
    }
    ck_assert_int_eq(our_cgroups(), 0);
    ck_assert_int_eq(sigaction(SIGCHLD, &old, NULL), 0);
}
END_TEST

/* A host that dies while a start waits for its open leaves nothing: the
 * supervisor sees its lifeline end, removes the App's cgroup (no one else
 * will: it is the host's) and exits. */
START_TEST(test_prepared_start_dies_with_host)
{
    int pp[2];
    long sup = 0;
    pid_t host;

    ck_assert_int_eq(pipe(pp), 0);
    host = fork();
    ck_assert_int_ge(host, 0);
    if (host == 0) {
        close(pp[0]);
        up();
        ep_child("echo", NULL);
        OPS->prepare(ST, &EP);
        sup = prepared_supervisor();
        if (write(pp[1], &sup, sizeof sup) != (ssize_t)sizeof sup)
            _exit(2);
        pause();
        _exit(0);
    }
    close(pp[1]);
    ck_assert_int_eq(read(pp[0], &sup, sizeof sup), (ssize_t)sizeof sup);
    close(pp[0]);
    ck_assert_int_gt(sup, 1);
    ck_assert(proc_exists(sup));
    /* 1 where this machine gives Apps cgroups, else 0 */
    int had = cgroups_of(host);
    kill(host, SIGKILL);
    ck_assert_int_eq(waitpid(host, NULL, 0), host);
    /* It was the dead host's child: now its reaper's, which may leave
     * it a zombie for a while; it must not be alive. */
    int64_t until = t_now() + 3000;
    while (!proc_gone(sup) && t_now() < until)
        sleep_ms(10);
    ck_assert_msg(proc_gone(sup), "prepared supervisor %ld outlived its host",
                  sup);
    ck_assert_int_le(had, 1);
    ck_assert_msg(cgroups_of(host) == 0,
                  "the prepared App's cgroup outlived its host (%d of %d)",
                  cgroups_of(host), had);
}
END_TEST

Suite *stdio_prepare_suite(void)
{
    Suite *s = suite_create("transport_stdio_prepare");
    TCase *t = stdio_tcase(s, "prepare");

    tcase_add_test(t, test_prepared_start_waits_for_open);
    tcase_add_test(t, test_prepare_twice_starts_one);
    tcase_add_test(t, test_unused_prepare_undone_at_fini);
    tcase_add_test(t, test_failed_open_undoes_prepared_start);
    tcase_add_test(t, test_open_failing_early_undoes_prepared_start);
    tcase_add_test(t, test_prepared_supervisor_killed_before_open);
    tcase_add_test(t, test_prepared_start_dies_with_host);
    tcase_add_test(t, test_undo_spares_a_reused_pid);
    return s;
}
