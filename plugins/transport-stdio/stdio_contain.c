/*
 * stdio_contain.c - nothing an App starts outlives the App's connection,
 * and nothing outlives the host, even when the host dies of SIGKILL.
 *
 * PR_SET_PDEATHSIG reaches only the process that asked for it, so an App
 * that daemonises (double fork, setsid) or runs under a wrapper (sh -c,
 * npx, uv) used to leave processes behind.  The host is a library, so it
 * may not become a child subreaper or touch signal dispositions itself.
 * Instead the spawner thread starts one small supervisor per App (the
 * "shim", this file), which then forks and execs the App:
 *
 *   host (spawner thread)
 *    └─ shim   own process group; PR_SET_CHILD_SUBREAPER; parent-death
 *       │      signal SIGHUP (handled); a lifeline pipe from the host
 *       └─ App own process group; PR_SET_PDEATHSIG(SIGKILL) tied to the
 *              shim; in its own cgroup when one can be made
 *
 * Every process the App starts is the shim's descendant: an orphan is
 * reparented to the shim (the nearest subreaper), never to init, unless
 * it first escapes the shim's subtree, which only a process that kills
 * or stops the shim can arrange (see docs/containment.md).  The shim
 * kills all of them, reaps them, removes the App's cgroup and exits
 * with the App's own status (same exit code, or the same signal), so the
 * host's I/O thread reports the App exactly as before.  It does so when:
 *   - the App (its direct child) ends: whatever it left behind is
 *     killed at once;
 *   - SIGUSR1 (the host's kill step), SIGHUP (its parent-death signal:
 *     the host's spawner thread, i.e. the host, is gone), SIGINT,
 *     SIGQUIT, SIGUSR2, or EOF on the lifeline (every copy of the
 *     host's end is closed, i.e. the host is gone).
 * SIGTERM is relayed: to the App's group and every descendant.
 * Killing means, until nothing is found and no child is left (bounded
 * by SHIM_KILL_MS): cgroup.kill when the App has a cgroup (atomic, also
 * against fork bombs), SIGKILL to the App's group, and SIGKILL to every
 * descendant found through /proc (stdio_descend.c: the shim's tree,
 * read down from it; a process that is not the shim's child is
 * signalled through a pidfd and only after its parent was checked
 * again, so a recycled pid is never hit).  A process with SIGKILL
 * pending cannot fork, so this converges.
 *
 * The shim is its own small program (stdio_supervisor.c reads its
 * arguments), started by the spawner thread with posix_spawn, so it
 * holds nothing of the host: no memory, no descriptors but its own.  It
 * renames itself ("aur-contain <package>" in ps) and is not dumpable, so
 * the App (same uid) cannot ptrace it.  It keeps to system calls and
 * plain loops after its arguments are read: it has no use for more.
 * Under valgrind the shim turns off its own leak check and error
 * reports (they would replace the App's exit status).
 *
 * The cgroup (stdio_cgroup.c, host side): "aurora-mcp-<hostpid>-<seq>"
 * under the host's own cgroup v2 directory, when the host may create one
 * there (root, or a delegated subtree such as a systemd unit with
 * Delegate=yes).  No controller is enabled, so it only groups; the App
 * is born in it (fork_app).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sched.h> /* struct clone_args, CLONE_INTO_CGROUP */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SHIM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||   \
    __has_feature(memory_sanitizer)
#define SHIM_SANITIZED 1
#endif
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define SHIM_VALGRIND 1
#endif
#endif

/* Killing everything (and waiting for the cgroup to empty) stops after
 * this long even if a process in uninterruptible sleep will not die; it
 * dies when it wakes, with SIGKILL pending. */
#define SHIM_KILL_MS 3000
/* Between kill rounds: wait for SIGCHLD at most this long. */
#define SHIM_ROUND_MS 5

/* The shim's file descriptors, placed before the App is forked.  0..2
 * and FD_STATUS are the App's; the App also uses FD_CGPROCS once. */
enum {
    FD_STATUS = 3,   /* errno of a failed start, to the host (CLOEXEC) */
    FD_LIFE = 4,     /* read end of the host's lifeline: EOF = host gone */
    FD_SIG = 5,      /* signalfd */
    FD_CGPROCS = 6,  /* the App's cgroup.procs (the App writes "0") */
    FD_CGKILL = 7,   /* its cgroup.kill */
    FD_CGEVENTS = 8, /* its cgroup.events */
    FD_CGDIR = 9,    /* the directory holding it (for rmdir) */
    FD_NSLOTS = 10,
    FD_HIGH = 32 /* temporary copies go at or above this */
};

/* ------------------------------------------------------------------ */
/* Small async-signal-safe helpers                                    */
/* ------------------------------------------------------------------ */

static void close_from(int lo)
{
    /* close_range exists since Linux 5.9; the loop is the fallback. */
    if (syscall(SYS_close_range, (unsigned)lo, ~0u, 0u) == 0)
        return;
    struct rlimit rl;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
                       rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                   ? (long)rl.rlim_cur
                   : 65536;
    for (long fd = lo; fd < max; fd++)
        close((int)fd);
}

static void put_errno(int fd, int e)
{
    while (write(fd, &e, sizeof e) < 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------------ */
/* The shim's state                                                   */
/* ------------------------------------------------------------------ */

struct shim {
    pid_t self, app;
    bool app_alive;
    int app_status;   /* wait status, once reaped */
    bool cgroup;      /* FD_CG* are open */
    bool life;        /* FD_LIFE is open */
    char cg_name[64];
    struct stdio_descend d; /* its descendants (d.self: our pid) */
};

static void reap(struct shim *s)
{
    pid_t r;
    int st;

    while ((r = waitpid(-1, &st, WNOHANG)) > 0)
        if (r == s->app) {
            s->app_status = st;
            s->app_alive = false;
        }
}

static bool has_children(void)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* SIGTERM to the App's group and every descendant outside it, each
 * once: some servers take a second SIGTERM as "stop now". */
static void relay(struct shim *s, int sig)
{
    long skip = 0;

    if (s->app_alive) { /* unreaped: its group id is still reserved */
        kill(-s->app, sig);
        skip = s->app;
    }
    stdio_descend_signal(&s->d, sig, skip);
}

enum { W_TERM = 1, W_KILL = 2 };

static int drain_signals(void)
{
    struct signalfd_siginfo si[8];
    int what = 0;
    ssize_t n;

    while ((n = read(FD_SIG, si, sizeof si)) > 0) {
        for (size_t i = 0; i < (size_t)n / sizeof si[0]; i++) {
            if (si[i].ssi_signo == SIGCHLD)
                continue;
            what |= si[i].ssi_signo == SIGTERM ? W_TERM : W_KILL;
        }
    }
    return what;
}

/*
 * The host's stop (stdio_contain_stop): after its message on the
 * lifeline, SIGTERM is relayed at term_at and everything is killed at
 * kill_at, on this process's clock, so the host can stop many Apps at
 * once and wait for them side by side.
 */
struct stop {
    char msg[STDIO_STOP_LEN];
    size_t got;
    int64_t term_at, kill_at; /* stdio_mono_ms; -1: not set, or done */
};

/* Read the lifeline: W_KILL at EOF (every copy of the host's end closed,
 * the host is gone); a whole stop message sets the clock (only the
 * first counts). */
static int read_life(struct stop *st)
{
    ssize_t n = read(FD_LIFE, st->msg + st->got, sizeof st->msg - st->got);

    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        return W_KILL;
    if (n > 0 && (st->got += (size_t)n) == sizeof st->msg) {
        uint32_t term, kill;
        memcpy(&term, st->msg + 1, sizeof term);
        memcpy(&kill, st->msg + 1 + sizeof term, sizeof kill);
        if (st->msg[0] == STDIO_STOP_MSG && st->kill_at < 0 && kill >= term) {
            int64_t now = stdio_mono_ms();
            st->term_at = now + term;
            st->kill_at = now + kill;
        }
        st->got = 0;
    }
    return 0;
}

/* What the stop's clock says is due now. */
static int stop_due(struct stop *st)
{
    int64_t now = stdio_mono_ms();
    int what = 0;

    if (st->term_at >= 0 && now >= st->term_at) {
        st->term_at = -1;
        what |= W_TERM;
    }
    if (st->kill_at >= 0 && now >= st->kill_at)
        what |= W_KILL;
    return what;
}

/* poll's timeout: until the next step of the stop, or none. */
static int stop_timeout(const struct stop *st)
{
    int64_t next = st->term_at >= 0 ? st->term_at : st->kill_at;
    int64_t left = next - stdio_mono_ms();

    if (next < 0)
        return -1;
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

static bool cg_populated(void)
{
    char buf[256];
    ssize_t n = pread(FD_CGEVENTS, buf, sizeof buf - 1, 0);
    const char *p;

    if (n <= 0)
        return false;
    buf[n] = '\0';
    p = strstr(buf, "populated ");
    return p && p[10] == '1';
}

/* cgroup.kill, again each round (a member may still be joining), until
 * the cgroup has no live member (cgroup.events says) or until. */
static void cg_kill_wait(int64_t until)
{
    while (cg_populated() && stdio_mono_ms() < until) {
        struct pollfd p = {.fd = FD_CGEVENTS, .events = POLLPRI};
        (void)!write(FD_CGKILL, "1", 1);
        poll(&p, 1, SHIM_ROUND_MS);
    }
}

/* Without a cgroup, after the App's group was sent SIGKILL: wait up to a
 * round for it to die and be reaped.  When it was all there was (the
 * common case), kill_all then ends without reading /proc at all. */
static void app_death_wait(struct shim *s, int64_t until)
{
    int64_t end = stdio_mono_ms() + SHIM_ROUND_MS;

    if (end > until)
        end = until;
    reap(s);
    while (s->app_alive) {
        int64_t left = end - stdio_mono_ms();
        struct pollfd p = {.fd = FD_SIG, .events = POLLIN};

        if (left <= 0)
            break;
        poll(&p, 1, (int)left);
        drain_signals(); /* a stop's SIGTERM: we are killing already */
        reap(s);
    }
}

static void kill_all(struct shim *s)
{
    int64_t until = stdio_mono_ms() + SHIM_KILL_MS;

    /* The common end: the App exited and left nothing.  Every process it
     * started is our child or a child's descendant (we are their
     * subreaper), so no child means nothing to find, and an empty cgroup
     * says the same of whatever joined it: nothing to read in /proc. */
    reap(s);
    if (!s->app_alive && !has_children() && !(s->cgroup && cg_populated()))
        goto done;
    for (;;) {
        int found = 0;
        if (s->app_alive)
            kill(-s->app, SIGKILL);
        /* cgroup.kill reached every member at once; a descendant outside
         * the cgroup is left only if one of ours, reparented to us, is.
         * Without a cgroup the same holds: every descendant is our child
         * or below one (we are their subreaper), and an exiting parent
         * hands its children to us before it can be reaped.  So the walk
         * is only for a round that still finds a child, and a round
         * without a cgroup first gives the App its moment to die:
         * walking while it is still dying found only it. */
        if (s->cgroup)
            cg_kill_wait(until);
        else if (s->app_alive)
            app_death_wait(s, until);
        reap(s);
        if (has_children())
            found = stdio_descend_signal(&s->d, SIGKILL, 0);
        reap(s);
        if (found == 0 && !has_children())
            break;
        if (stdio_mono_ms() >= until)
            break;
        struct pollfd p = {.fd = FD_SIG, .events = POLLIN};
        poll(&p, 1, SHIM_ROUND_MS);
        drain_signals();
        reap(s);
    }
    if (!s->cgroup)
        return;
    /* Members that are not our descendants (moved in from outside) are
     * killed by cgroup.kill alone; give them the rest of the time. */
    cg_kill_wait(until);
done:
    if (s->cgroup)
        stdio_cgroup_remove(FD_CGDIR, s->cg_name);
}

/* ------------------------------------------------------------------ */
/* Valgrind: the shim's leaks and errors are the host's                */
/* ------------------------------------------------------------------ */

static void vg_quiet(void)
{
#ifdef SHIM_VALGRIND
    if (RUNNING_ON_VALGRIND) {
        VALGRIND_CLO_CHANGE("--leak-check=no");
        VALGRIND_DISABLE_ERROR_REPORTING;
    }
#endif
}

static void vg_loud(void)
{
#ifdef SHIM_VALGRIND
    if (RUNNING_ON_VALGRIND)
        VALGRIND_ENABLE_ERROR_REPORTING; /* else it warns at exit */
#endif
}

/* Exit as the App did: its exit code, or death by its signal. */
static _Noreturn void finish(const struct shim *s)
{
    int st = s->app_status, sig;
    struct sigaction dfl;
    sigset_t one;

    vg_loud();
    if (!s->app_alive && WIFEXITED(st))
        _exit(WEXITSTATUS(st));
    sig = !s->app_alive && WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    /* Not dumpable: a mirrored SIGSEGV or SIGABRT writes no core. */
    kill(getpid(), sig);
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig);
}

/* ------------------------------------------------------------------ */
/* The App, between the shim's fork and exec                          */
/* ------------------------------------------------------------------ */

static _Noreturn void app_main(const struct stdio_shim_args *a, pid_t shim,
                               bool in_cgroup)
{
    sigset_t none;

    /* Tied to the shim, which is single-threaded: it dies with it. */
    if (stdio_shim_prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        goto fail;
    if (getppid() != shim)
        _exit(127);
    if (setpgid(0, 0) != 0)
        goto fail;
    /* Into the App's cgroup before it can fork anything, unless it was
     * born there (fork_app). */
    if (!in_cgroup && a->cg_procs >= 0 && write(FD_CGPROCS, "0", 1) != 1 &&
        a->cg_required)
        goto fail;
    close_from(FD_LIFE); /* keeps 0..2 and FD_STATUS, closed by exec */
    if (a->cwd && chdir(a->cwd) != 0)
        goto fail;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(a->path, a->argv, a->envp);
fail:
    put_errno(FD_STATUS, errno);
    _exit(127);
}

/*
 * The App's process, born in its cgroup when the kernel can do that
 * (clone3 with CLONE_INTO_CGROUP, Linux 5.7): *in_cgroup then says so.
 * Moving a running process in by writing cgroup.procs takes the
 * kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
 * grace period: 15 ms of every App's start on this machine, more than
 * all the rest of connecting (docs/benchmarks.md).  A child born in the
 * cgroup never migrates.  Without clone3 (ENOSYS, or a kernel that
 * refuses the flag) the App joins by writing, as before.  The raw
 * clone3 child runs on the shim's stack like a fork's, and makes only
 * system calls until it execs (app_main).  Sanitizer runtimes keep
 * per-process state in their fork interceptor: there, a plain fork
 * (which also keeps the writing path under test).
 */
static pid_t fork_app(const struct shim *s, bool *in_cgroup)
{
    *in_cgroup = false;
#if !defined(SHIM_SANITIZED) && defined(SYS_clone3) &&                      \
    defined(CLONE_INTO_CGROUP)
    if (s->cgroup) {
        int dir = openat(FD_CGDIR, s->cg_name,
                         O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            struct clone_args ca;
            long pid;
            memset(&ca, 0, sizeof ca);
            ca.flags = CLONE_INTO_CGROUP;
            ca.exit_signal = SIGCHLD;
            ca.cgroup = (uint64_t)dir;
            pid = syscall(SYS_clone3, &ca, sizeof ca);
            if (pid == 0) {
                *in_cgroup = true;
                return 0;
            }
            close(dir);
            if (pid > 0) {
                *in_cgroup = true;
                return (pid_t)pid;
            }
        }
    }
#else
    (void)s;
#endif
    return fork();
}

/* ------------------------------------------------------------------ */
/* The shim                                                           */
/* ------------------------------------------------------------------ */

/* Move the shim's descriptors to their slots and close every other one.
 * *err_fd follows the status pipe.  0 or an errno. */
static int place_fds(const int *src, int *err_fd)
{
    int hi[FD_NSLOTS];

    for (int i = 0; i < FD_NSLOTS; i++) {
        hi[i] = -1;
        if (src[i] >= 0 &&
            (hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, FD_HIGH)) < 0)
            /* EINVAL: FD_HIGH is at or past RLIMIT_NOFILE, which is
             * running out of descriptors as much as EMFILE is. */
            return errno == EINVAL ? EMFILE : errno;
    }
    *err_fd = hi[FD_STATUS];
    for (int i = 0; i < FD_NSLOTS; i++) {
        if (hi[i] < 0)
            close(i);
        else if (dup3(hi[i], i, i <= STDERR_FILENO ? 0 : O_CLOEXEC) < 0)
            return errno;
    }
    *err_fd = FD_STATUS;
    close_from(FD_NSLOTS);
    return 0;
}

/* The App's cgroup, in dir (the descriptor a->cg_dir has until the
 * slots are placed, FD_CGDIR after), removed by a supervisor whose host
 * is gone before it forked the App: empty, and no one else will. */
static void drop_cgroup(const struct stdio_shim_args *a, int dir)
{
    if (a->cg_dir >= 0 && a->cg_name[0])
        (void)stdio_cgroup_remove(dir, a->cg_name);
}

void stdio_shim_setup(struct stdio_shim_args *a)
{
    sigset_t all, sigs;
    int err_fd = a->fd_status, sfd, e;

    vg_quiet();
    /* Every disposition back to its default (inherited by the App),
     * everything blocked here.  posix_spawn leaves glibc's two internal
     * signals (32 and 33) ignored, and glibc's sigaction refuses to touch
     * them: the kernel's own call does, as any other runtime's App
     * expects them at their default. */
    for (int sig = 1; sig < NSIG; sig++) {
        struct {
            void *handler;
            unsigned long flags;
            void *restorer;
            unsigned long mask;
        } k = {SIG_DFL, 0, NULL, 0};
        if (sig != SIGKILL && sig != SIGSTOP)
            syscall(SYS_rt_sigaction, sig, &k, NULL, sizeof k.mask);
    }
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (stdio_shim_prctl(PR_SET_PDEATHSIG, SIGHUP) != 0)
        goto fail;
    /* The host may have died before prctl took effect. */
    if (getppid() != a->host) {
        drop_cgroup(a, a->cg_dir);
        _exit(127);
    }
    if (setpgid(0, 0) != 0 ||
        stdio_shim_prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        goto fail;
    (void)stdio_shim_prctl(PR_SET_DUMPABLE, 0);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGQUIT);
    sigaddset(&sigs, SIGUSR1);
    sigaddset(&sigs, SIGUSR2);
    sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        goto fail;
    {
        const int src[FD_NSLOTS] = {a->fd_in,   a->fd_out,   a->fd_err,
                                    a->fd_status, a->fd_life, sfd,
                                    a->cg_procs, a->cg_kill,  a->cg_events,
                                    a->cg_dir};
        e = place_fds(src, &err_fd);
        if (e != 0) {
            errno = e;
            goto fail;
        }
    }
    a->fd_status = FD_STATUS;
    a->fd_life = FD_LIFE;
    return;
fail:
    put_errno(err_fd, errno);
    _exit(127);
}

void stdio_shim_abandon(const struct stdio_shim_args *a)
{
    drop_cgroup(a, FD_CGDIR);
}

_Noreturn void stdio_shim_main(const struct stdio_shim_args *a)
{
    struct shim s;
    int err_fd = FD_STATUS;
    bool in_cgroup;

    memset(&s, 0, sizeof s);
    struct stop st = {.term_at = -1, .kill_at = -1};
    s.self = getpid();
    s.d.self = s.self;
    s.cgroup = a->cg_kill >= 0 && a->cg_events >= 0 && a->cg_dir >= 0;
    s.life = a->fd_life >= 0;
    memcpy(s.cg_name, a->cg_name, sizeof s.cg_name);
    s.cg_name[sizeof s.cg_name - 1] = '\0';
    s.app = fork_app(&s, &in_cgroup);
    if (s.app < 0)
        goto fail;
    if (s.app == 0)
        app_main(a, s.self, in_cgroup);
    s.app_alive = true;
    /* Both sides set the group, so a signal to it can never miss. */
    setpgid(s.app, s.app);
    for (int fd = 0; fd <= FD_STATUS; fd++)
        close(fd);
    close(FD_CGPROCS);

    for (;;) {
        struct pollfd p[2] = {{.fd = FD_SIG, .events = POLLIN},
                              {.fd = FD_LIFE, .events = POLLIN}};
        int what = 0;

        if (poll(p, s.life ? 2 : 1, stop_timeout(&st)) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            what = drain_signals();
        if (s.life && p[1].revents)
            what |= read_life(&st);
        what |= stop_due(&st);
        reap(&s);
        if ((what & W_KILL) || !s.app_alive)
            break;
        if (what & W_TERM)
            relay(&s, SIGTERM);
    }
    kill_all(&s);
    finish(&s);
fail:
    put_errno(err_fd, errno);
    _exit(127);
}
