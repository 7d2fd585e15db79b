/*
 * stdio_exec.c - fork and exec an App so that it dies with the host.
 *
 * The child asks for PR_SET_PDEATHSIG(SIGKILL), so a host killed with
 * SIGKILL (which runs no cleanup at all) still takes its Apps with it.
 * The kernel sends that signal when the *thread* that forked the child
 * exits, not the process, and Apps are started from short-lived startup
 * threads: so every fork happens on one spawner thread that lives as long
 * as the plugin.  posix_spawn cannot run prctl in the child, hence fork.
 *
 * Between fork and exec the child of a multi-threaded parent may only make
 * async-signal-safe calls: the PATH lookup and the environment are done
 * in the parent, and the child only makes system calls.  A failure before
 * exec comes back as an errno over a close-on-exec pipe, so a failed start
 * never looks like a started App.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child that neither execs nor fails within this long (a chdir into a
 * hung mount) is killed and reported. */
#define EXEC_WAIT_MS 10000

struct stdio_spawner {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool running;
    bool stop;                  /* (mu) fini asked the thread to end */
    struct stdio_exec_job *job; /* (mu) the one job being served */
};

/* ------------------------------------------------------------------ */
/* PATH lookup (parent side)                                          */
/* ------------------------------------------------------------------ */

static int try_path(const char *path)
{
    struct stat sb;

    if (stat(path, &sb) != 0)
        return errno;
    if (!S_ISREG(sb.st_mode))
        return EACCES;
    return access(path, X_OK) == 0 ? 0 : errno;
}

/* Resolve command the way execvp does, against the host's PATH (the
 * child's own PATH is only what it runs with).  *out is malloc'ed. */
static int resolve(const char *command, char **out)
{
    const char *path = getenv("PATH"), *p, *end;
    size_t clen = strlen(command);
    int rc = ENOENT, r;

    if (clen == 0)
        return ENOENT;
    if (strchr(command, '/')) {
        r = try_path(command);
        if (r == 0 && !(*out = strdup(command)))
            return ENOMEM;
        return r;
    }
    if (!path || !*path)
        path = "/bin:/usr/bin";
    for (p = path; p; p = *end ? end + 1 : NULL) {
        size_t dlen;
        char *cand;
        end = strchr(p, ':');
        if (!end)
            end = p + strlen(p);
        dlen = (size_t)(end - p);
        cand = malloc(dlen + clen + 3);
        if (!cand)
            return ENOMEM;
        /* An empty PATH entry means the current directory. */
        memcpy(cand, dlen ? p : ".", dlen ? dlen : 1);
        dlen = dlen ? dlen : 1;
        cand[dlen] = '/';
        memcpy(cand + dlen + 1, command, clen + 1);
        r = try_path(cand);
        if (r == 0) {
            *out = cand;
            return 0;
        }
        free(cand);
        if (r == EACCES)
            rc = EACCES; /* execvp reports EACCES over a later ENOENT */
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* The child, between fork and exec: system calls only                */
/* ------------------------------------------------------------------ */

static void close_others(int keep)
{
    /* close_range exists since Linux 5.9; the loop is the fallback. */
    if ((keep == 3 ||
         syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0) &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return;
    struct rlimit rl;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
                       rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                   ? (long)rl.rlim_cur
                   : 65536;
    for (long fd = 3; fd < max; fd++)
        if (fd != keep)
            close((int)fd);
}

static _Noreturn void child(const struct stdio_exec_job *j, pid_t parent,
                            int status_fd)
{
    struct sigaction dfl;
    sigset_t none;
    int e;

    /* The host ignores SIGPIPE and may have handlers: an App starts with
     * every disposition at its default and nothing blocked. */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        goto fail;
    /* The host may have died before prctl took effect. */
    if (getppid() != parent)
        _exit(127);
    if (setpgid(0, 0) != 0)
        goto fail;
    if (dup2(j->fd_in, STDIN_FILENO) < 0 ||
        dup2(j->fd_out, STDOUT_FILENO) < 0 ||
        dup2(j->fd_err, STDERR_FILENO) < 0)
        goto fail;
    if (j->cwd && chdir(j->cwd) != 0)
        goto fail;
    close_others(status_fd);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(j->path, j->argv, j->envp);
fail:
    e = errno;
    while (write(status_fd, &e, sizeof e) < 0 && errno == EINTR)
        ;
    _exit(127);
}

/* ------------------------------------------------------------------ */
/* The spawner thread                                                 */
/* ------------------------------------------------------------------ */

/* fork + wait for exec or the child's errno.  0 or an errno. */
static int run_job(struct stdio_exec_job *j)
{
    int sp[2], e = 0;
    pid_t pid, parent = getpid();
    struct pollfd pf;
    ssize_t n;

    if (pipe2(sp, O_CLOEXEC) != 0)
        return errno;
    pid = fork();
    if (pid < 0) {
        e = errno;
        close(sp[0]);
        close(sp[1]);
        return e;
    }
    if (pid == 0)
        child(j, parent, sp[1]);
    close(sp[1]);
    pf.fd = sp[0];
    pf.events = POLLIN;
    do
        n = poll(&pf, 1, EXEC_WAIT_MS);
    while (n < 0 && errno == EINTR);
    if (n == 0) {
        e = ETIMEDOUT;
    } else {
        /* EOF (n == 0) is a successful exec: the pipe closed on exec. */
        do
            n = read(sp[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof e)
            e = n == 0 ? 0 : EIO;
    }
    close(sp[0]);
    if (e != 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return e;
    }
    j->pid = pid;
    return 0;
}

static void *spawner_main(void *arg)
{
    struct stdio_spawner *sp = arg;

    pthread_mutex_lock(&sp->mu);
    for (;;) {
        /* Idle until a job or fini: an event wait, ended by fini. */
        while (!sp->job && !sp->stop)
            pthread_cond_wait(&sp->cv, &sp->mu);
        if (!sp->job)
            break;
        struct stdio_exec_job *j = sp->job;
        pthread_mutex_unlock(&sp->mu);
        j->rc = run_job(j);
        pthread_mutex_lock(&sp->mu);
        j->done = true;
        sp->job = NULL;
        pthread_cond_broadcast(&sp->cv);
    }
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

int stdio_spawner_create(struct stdio_spawner **out)
{
    struct stdio_spawner *sp = calloc(1, sizeof *sp);

    if (!sp)
        return ENOMEM;
    pthread_mutex_init(&sp->mu, NULL);
    pthread_cond_init(&sp->cv, NULL);
    *out = sp;
    return 0;
}

void stdio_spawner_destroy(struct stdio_spawner *sp)
{
    if (!sp)
        return;
    pthread_mutex_lock(&sp->mu);
    sp->stop = true;
    pthread_cond_broadcast(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
    if (sp->running)
        pthread_join(sp->thread, NULL);
    pthread_cond_destroy(&sp->cv);
    pthread_mutex_destroy(&sp->mu);
    free(sp);
}

/* The thread starts on the first spawn, with every signal blocked so
 * no host handler runs in a child before its dispositions are reset. */
static int ensure_thread(struct stdio_spawner *sp)
{
    sigset_t all, old;
    int rc;

    if (sp->running)
        return 0;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&sp->thread, NULL, spawner_main, sp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        sp->running = true;
    return rc;
}

int stdio_spawner_run(struct stdio_spawner *sp, const char *command,
                      struct stdio_exec_job *j)
{
    int rc = resolve(command, &j->path);

    if (rc != 0)
        return rc;
    j->done = false;
    pthread_mutex_lock(&sp->mu);
    rc = ensure_thread(sp);
    if (rc == 0) {
        /* Both waits end: a job takes at most EXEC_WAIT_MS plus a fork. */
        while (sp->job)
            pthread_cond_wait(&sp->cv, &sp->mu);
        sp->job = j;
        pthread_cond_broadcast(&sp->cv);
        while (!j->done)
            pthread_cond_wait(&sp->cv, &sp->mu);
        rc = j->rc;
    }
    pthread_mutex_unlock(&sp->mu);
    free(j->path);
    j->path = NULL;
    return rc;
}
