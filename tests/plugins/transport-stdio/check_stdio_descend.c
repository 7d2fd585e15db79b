/*
 * check_stdio_descend.c - the supervisor's descendant walk
 * (plugins/transport-stdio/stdio_descend.c), compiled in: both walks,
 * the children files' and the full /proc one (forced by the struct's
 * own flag, as on a kernel without CONFIG_PROC_CHILDREN), over one real
 * process tree of every shape the supervisor meets.
 *
 * The test process is a child subreaper, as the supervisor is, and
 * builds below itself:
 *
 *   A ─ B ─ C (setsid: out of A's group) ─ a chain of CHAIN below C
 *   D (exits at once) ... E (reparented to us: an orphan)
 *   F ─ thread ─ G (on the list of F's second thread, not its main one)
 *
 * Every walk must count each live one (A, B, C, the chain, E, F, G),
 * skip the group it is told to skip, and leave nothing alive once the
 * caller's loop (signal, reap, until no child) ends.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "support/check_main.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { CHAIN = 10, LIVE = 3 + CHAIN + 3 };

static int report_fd; /* write end: each live process writes its pid */

static _Noreturn void stay(void)
{
    pid_t me = getpid();

    if (write(report_fd, &me, sizeof me) != (ssize_t)sizeof me)
        _exit(1);
    for (;;)
        pause();
}

static void chain(int left)
{
    if (left > 0 && fork() == 0) {
        chain(left - 1);
        stay();
    }
}

static bool has_children(void)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void reap(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* F's second thread forks G and stays: G is on this thread's list. */
static void *thread_forks(void *arg)
{
    (void)arg;
    if (fork() == 0)
        stay(); /* G */
    for (;;)
        pause();
}

/* After the test case, in the runner: nothing of a tree may outlive it, a
 * failed one included (Check's test process ends at once then).  The
 * runner is a subreaper too, so a dead test's orphans come to it. */
static void kill_tree(void)
{
    struct stdio_descend d = {.self = getpid(), .no_children_files = true};

    for (int round = 0; round < 1000 && has_children(); round++) {
        stdio_descend_signal(&d, SIGKILL, 0);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
        reap();
    }
}

struct tree {
    pid_t a, pids[LIVE];
};

static void build(struct tree *t)
{
    int p[2];
    pid_t pid;

    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ck_assert_int_eq(pipe(p), 0);
    report_fd = p[1];
    t->a = fork();
    ck_assert_int_ge(t->a, 0);
    if (t->a == 0) { /* A */
        setpgid(0, 0);
        if (fork() == 0) {     /* B, in A's group */
            if (fork() == 0) { /* C */
                setsid();
                chain(CHAIN);
                stay();
            }
            stay();
        }
        stay();
    }
    setpgid(t->a, t->a);
    pid = fork(); /* D */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (fork() == 0)
            stay(); /* E */
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    pid = fork(); /* F */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pthread_t th;
        if (pthread_create(&th, NULL, thread_forks, NULL) != 0)
            _exit(1);
        stay();
    }
    close(p[1]);
    for (int i = 0; i < LIVE; i++)
        ck_assert_int_eq(read(p[0], &t->pids[i], sizeof t->pids[i]),
                         (ssize_t)sizeof t->pids[i]);
    close(p[0]);
}

static bool alive(pid_t pid)
{
    char buf[512];
    const char *p = stdio_read_stat(pid, buf, sizeof buf);

    return p && p[0] != 'Z' && p[0] != 'X';
}

/* _i: 0 the children files, 1 the full walk. */
START_TEST(walk_finds_skips_and_ends_the_tree)
{
    struct stdio_descend d = {.self = getpid(), .no_children_files = _i};
    struct tree t;
    int rounds = 0;

    build(&t);
    /* Signal 0 reaches nothing: a count only. */
    ck_assert_int_eq(stdio_descend_signal(&d, 0, 0), LIVE);
    ck_assert(d.no_children_files == (_i == 1)); /* this kernel has them */

    /* SIGKILL to all but A's group (A and B). */
    bool in_a[LIVE];
    int n_a = 0;
    for (int i = 0; i < LIVE; i++)
        n_a += in_a[i] = getpgid(t.pids[i]) == t.a;
    ck_assert_int_eq(n_a, 2);
    ck_assert_int_eq(stdio_descend_signal(&d, SIGKILL, t.a), LIVE);
    for (int i = 0; i < LIVE; i++) {
        for (int ms = 0; ms < 5000 && !in_a[i] && alive(t.pids[i]); ms++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        ck_assert_msg(alive(t.pids[i]) == in_a[i], "pid %d: %s", (int)t.pids[i],
                      in_a[i] ? "in the skipped group, killed"
                              : "outside it, still alive");
    }

    /* The supervisor's loop: until no child is left. */
    while (has_children() && rounds++ < 1000) {
        stdio_descend_signal(&d, SIGKILL, 0);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
        reap();
    }
    ck_assert_msg(!has_children(), "children left after %d rounds", rounds);
    for (int i = 0; i < LIVE; i++)
        ck_assert_msg(!alive(t.pids[i]), "pid %d outlived the walk",
                      (int)t.pids[i]);
    ck_assert_int_eq(stdio_descend_signal(&d, 0, 0), 0);
}
END_TEST

static Suite *descend_suite(void)
{
    Suite *s = suite_create("stdio_descend");
    TCase *t = tcase_create("walk");

    tcase_set_timeout(t, 60);
    tcase_add_unchecked_fixture(t, NULL, kill_tree);
    tcase_add_loop_test(t, walk_finds_skips_and_ends_the_tree, 0, 2);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return aur_check_main(descend_suite(), NULL);
}
