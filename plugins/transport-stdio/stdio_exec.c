/*
 * stdio_exec.c - the spawner thread: every App is started from here.
 *
 * Each App runs under a supervisor of its own (stdio_contain.c), the
 * program "aur-contain" beside this plugin, which forks and execs the
 * App.  It is started with posix_spawn, which shares the host's memory
 * until the exec instead of copying its page tables (a fork of a large
 * multi-threaded host made every start slower than the one before).
 * The supervisor asks for a parent-death signal, and the kernel sends
 * that signal when the *thread* that started it exits, not the process;
 * Apps are opened from short-lived startup threads, so every spawn
 * happens on one spawner thread that lives as long as the plugin.
 *
 * The PATH lookup, the environment and the App's cgroup are prepared
 * here, in the parent, and handed over as the supervisor's descriptors
 * and one frame on its lifeline (stdio_int.h).  Only the spawn itself is
 * the spawner thread's (start_job); the frame and the wait for the App's
 * exec are the opening thread's (finish_job), so Apps started together
 * wait for their execs side by side.  A failure before the
 * App's exec (of the supervisor's setup or the App's) comes back as an
 * errno over a close-on-exec pipe, so a failed start never looks like a
 * started App.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "fdlimit.h"
#include "grow.h"
#include "nosigpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child that neither execs nor fails by the App's deadline (a chdir
 * into a hung mount) is killed and reported; at least this long, so a
 * deadline already spent still gives the exec a moment, and never longer
 * than EXEC_WAIT_MAX_MS (poll takes an int).  The deadline, not a fixed
 * wait: on a loaded machine an exec may take longer than any fixed
 * number a quiet one suggests, and the App's timeout_seconds is the one
 * bound the user set. */
#define EXEC_WAIT_MIN_MS 100
#define EXEC_WAIT_MAX_MS (24 * 3600 * 1000)

struct stdio_spawner {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool running;
    bool stop;                  /* (mu) fini asked the thread to end */
    struct stdio_exec_job *job; /* (mu) the one job being served */
    /* Set at create, then the spawner thread's. */
    enum stdio_contain_mode mode;
    int cg_base;      /* our own cgroup directory, -1: none; the Apps'
                         cgroups borrow it until destroy */
    bool cg_off;      /* making cgroups there was refused: no more */
    unsigned cg_seq;  /* names of the Apps' cgroups */
    char *supervisor; /* the supervisor program's path (NULL: unknown) */
    bool supervisor_ok; /* ... and it is there, executable */
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
/* The spawner thread                                                 */
/* ------------------------------------------------------------------ */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* A new cgroup for an App.  Another spawner in this process (a second
 * plugin instance) or a stale one of a host that had our pid may hold a
 * name: take the next. */
static int cgroup_unique(struct stdio_spawner *sp, struct stdio_shim_args *a)
{
    int e = EEXIST;

    for (int tries = 0; e == EEXIST && tries < 1000; tries++)
        e = stdio_cgroup_make(sp->cg_base, ++sp->cg_seq, a);
    return e;
}

/* The App's cgroup, if this spawner uses them.  0 or an errno (when
 * containment = cgroup, or when the host is out of descriptors: auto
 * starts the App without a cgroup only when it may not have one, never
 * because the descriptor limit was reached, which would fail the very
 * next pipe anyway). */
static int make_cgroup(struct stdio_spawner *sp, struct stdio_shim_args *a)
{
    int e;

    if (sp->cg_base < 0 || sp->cg_off)
        return 0;
    e = cgroup_unique(sp, a);
    if (e == 0 || sp->mode == STDIO_CONTAIN_CGROUP || aur__fd_exhausted(e))
        return e;
    if (e == EACCES || e == EPERM || e == EROFS) {
        /* Not ours to write after all: stop trying.  (Kept open: Apps
         * started before borrow it, stdio_cgroup_make.) */
        sp->cg_off = true;
    }
    return 0;
}

/* The frame the supervisor reads from its lifeline (stdio_int.h). */
static int frame(const struct stdio_exec_job *j,
                 const struct stdio_shim_args *a, struct aur__buf *b)
{
    char n[24];
    size_t argc = 0, envc = 0;
    uint32_t len = 0;
    int e = 0;

    while (j->argv[argc])
        argc++;
    while (j->envp[envc])
        envc++;
#define PUT(s) (e = e ? e : aur__buf_put(b, (s), strlen(s) + 1, STDIO_FRAME_MAX))
    e = aur__buf_put(b, &len, sizeof len, STDIO_FRAME_MAX);
    PUT(j->path);
    PUT(j->cwd ? j->cwd : "");
    PUT(a->cg_name);
    PUT(a->cg_required ? "1" : "0");
    snprintf(n, sizeof n, "%zu", argc);
    PUT(n);
    for (size_t i = 0; i < argc; i++)
        PUT(j->argv[i]);
    snprintf(n, sizeof n, "%zu", envc);
    PUT(n);
    for (size_t i = 0; i < envc; i++)
        PUT(j->envp[i]);
#undef PUT
    if (e == 0) {
        len = (uint32_t)(b->n - sizeof len);
        memcpy(b->p, &len, sizeof len);
    }
    return e == EFBIG ? E2BIG : e;
}

/* Start the supervisor with posix_spawn: only its own descriptors lose
 * close-on-exec, in the child (a dup2 onto itself); every signal starts
 * blocked and at its default.  0 or an errno. */
static int spawn_supervisor(struct stdio_spawner *sp,
                            const struct stdio_shim_args *a, const char *title,
                            pid_t *pid)
{
    const int fds[] = {a->fd_in,     a->fd_out,   a->fd_err,
                       a->fd_status, a->fd_life,  a->cg_procs,
                       a->cg_kill,   a->cg_events, a->cg_dir};
    char num[11][16], t[sizeof a->title];
    char *argv[13], *envp[] = {NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t all;
    int e;

    snprintf(t, sizeof t, "%s", title ? title : "");
    argv[0] = (char *)STDIO_SUPERVISOR;
    argv[1] = t;
    snprintf(num[0], sizeof num[0], "%ld", (long)a->host);
    argv[2] = num[0];
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        snprintf(num[i + 1], sizeof num[i + 1], "%d", fds[i]);
        argv[i + 3] = num[i + 1];
    }
    argv[12] = NULL;
    if ((e = posix_spawn_file_actions_init(&fa)) != 0)
        return e;
    if ((e = posix_spawnattr_init(&at)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return e;
    }
    for (size_t i = 0; i < sizeof fds / sizeof fds[0] && e == 0; i++)
        if (fds[i] >= 0)
            e = posix_spawn_file_actions_adddup2(&fa, fds[i], fds[i]);
    sigfillset(&all);
    if (e == 0)
        e = posix_spawnattr_setsigmask(&at, &all);
    if (e == 0)
        e = posix_spawnattr_setsigdefault(&at, &all);
    if (e == 0)
        e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
                                              POSIX_SPAWN_SETSIGDEF);
    if (e == 0)
        e = posix_spawn(pid, sp->supervisor, &fa, &at, argv, envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return e;
}

/* What is left to close of a start that went wrong, or that is done. */
static void job_close(struct stdio_exec_job *j)
{
    close_fd(&j->st_r);
    close_fd(&j->life_w);
    close_fd(&j->a.cg_procs);
    close_fd(&j->a.cg_events);
    if (j->a.cg_dir >= 0) {
        struct stdio_contain ct;
        stdio_contain_clear(&ct);
        ct.cg_dir = j->a.cg_dir;
        ct.cg_kill = j->a.cg_kill;
        memcpy(ct.cg_name, j->a.cg_name, sizeof ct.cg_name);
        stdio_contain_release(&ct);
        j->a.cg_dir = j->a.cg_kill = -1;
    }
    close_fd(&j->a.cg_kill);
}

/* The spawner thread's part: the App's cgroup and the supervisor's
 * spawn, nothing that waits on the App.  0 (j->pid, j->st_r, j->life_w
 * and j->a's cgroup set) or an errno, with nothing left open. */
static int start_job(struct stdio_spawner *sp, struct stdio_exec_job *j)
{
    int st[2] = {-1, -1}, life[2] = {-1, -1}, e = 0;

    j->a = (struct stdio_shim_args){
        .fd_in = j->fd_in,
        .fd_out = j->fd_out,
        .fd_err = j->fd_err,
        .cg_procs = -1,
        .cg_kill = -1,
        .cg_events = -1,
        .cg_dir = -1,
        .cg_required = sp->mode == STDIO_CONTAIN_CGROUP,
        .host = getpid(),
    };
    j->st_r = j->life_w = -1;
    j->step = "find the supervisor program";
    if (!sp->supervisor_ok)
        return ELIBACC;
    j->step = "create the supervisor's status pipe";
    if (pipe2(st, O_CLOEXEC) != 0) {
        e = errno;
        goto out;
    }
    j->step = "create the supervisor's lifeline pipe";
    if (pipe2(life, O_CLOEXEC) != 0) {
        e = errno;
        goto out;
    }
    j->a.fd_status = st[1];
    j->a.fd_life = life[0];
    j->step = "make the App's cgroup";
    e = make_cgroup(sp, &j->a);
    if (e == 0) {
        j->step = "spawn the supervisor";
        e = spawn_supervisor(sp, &j->a, j->title, &j->pid);
    }
out:
    close_fd(&st[1]);
    close_fd(&life[0]);
    j->st_r = st[0];
    j->life_w = life[1];
    if (e != 0)
        job_close(j);
    else
        j->step = NULL;
    return e;
}

/* The caller's part, on its own thread so that Apps wait for their execs
 * side by side: hand the supervisor its frame, then wait until the App
 * execs or fails.  0 (j->ct set) or an errno, the supervisor killed and
 * reaped. */
static int finish_job(struct stdio_exec_job *j)
{
    struct aur__buf fr = {0};
    struct pollfd pf;
    int e;
    ssize_t n;

    /* Once it has its frame it no longer needs its cgroup.procs. */
    e = frame(j, &j->a, &fr);
    for (size_t off = 0; e == 0 && off < fr.n;) {
        struct aur__nosigpipe ns;
        ssize_t w;
        aur__nosigpipe_begin(&ns);
        w = write(j->life_w, fr.p + off, fr.n - off);
        aur__nosigpipe_end(&ns, w < 0 && errno == EPIPE);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* it died: the status pipe says how */
        off += (size_t)w;
    }
    free(fr.p);
    close_fd(&j->a.cg_procs);
    close_fd(&j->a.cg_events);
    pf.fd = j->st_r;
    pf.events = POLLIN;
    int64_t wait = j->wait_ms < EXEC_WAIT_MIN_MS   ? EXEC_WAIT_MIN_MS
                   : j->wait_ms > EXEC_WAIT_MAX_MS ? EXEC_WAIT_MAX_MS
                                                   : j->wait_ms;
    if (e == 0) {
        do
            n = poll(&pf, 1, (int)wait);
        while (n < 0 && errno == EINTR);
        if (n == 0) {
            e = ETIMEDOUT;
            j->step = "wait for the App's exec";
        } else {
            /* Its own setup (the App's pipes onto 0..2, the signal
             * state, the cgroup, the working directory) or the exec. */
            j->step = "set up the App in the supervisor, or exec it";
            /* EOF (n == 0) is a successful exec: the supervisor closed
             * its end after forking the App, and exec closed the App's. */
            do
                n = read(j->st_r, &e, sizeof e);
            while (n < 0 && errno == EINTR);
            if (n != (ssize_t)sizeof e)
                e = n == 0 ? 0 : EIO;
        }
    } else {
        j->step = "build the supervisor's frame";
    }
    if (e != 0) {
        /* The App never ran, or hangs before exec: the supervisor's
         * death takes it (parent-death signal), and its cgroup goes. */
        if (j->a.cg_kill >= 0)
            (void)!write(j->a.cg_kill, "1", 1);
        kill(j->pid, SIGKILL);
        while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        j->pid = 0;
        job_close(j);
        return e;
    }
    j->ct.ctl_w = j->life_w;
    j->life_w = -1;
    j->ct.cg_dir = j->a.cg_dir;
    j->ct.cg_kill = j->a.cg_kill;
    j->a.cg_dir = j->a.cg_kill = -1;
    memcpy(j->ct.cg_name, j->a.cg_name, sizeof j->ct.cg_name);
    job_close(j);
    j->step = NULL;
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
        j->rc = start_job(sp, j);
        pthread_mutex_lock(&sp->mu);
        j->done = true;
        sp->job = NULL;
        pthread_cond_broadcast(&sp->cv);
    }
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

/* "aur-contain" in the directory this plugin was loaded from, or NULL
 * (then every start fails with ELIBACC, naming the path it looked at). */
static char *supervisor_path(void)
{
    Dl_info self;
    const char *slash;
    char *p;

    if (!dladdr((void *)supervisor_path, &self) || !self.dli_fname ||
        !(slash = strrchr(self.dli_fname, '/')))
        return NULL;
    if (asprintf(&p, "%.*s/%s", (int)(slash - self.dli_fname),
                 self.dli_fname, STDIO_SUPERVISOR) < 0)
        return NULL;
    return p;
}

const char *stdio_spawner_supervisor(const struct stdio_spawner *sp)
{
    return sp->supervisor ? sp->supervisor : "(" STDIO_SUPERVISOR
                                             " beside transport-stdio.so)";
}

int stdio_spawner_create(struct stdio_spawner **out,
                         const struct aur_host *host,
                         const struct aur_cfg *cfg, struct aur_error *err)
{
    const char *v = cfg && host->cfg_str
                        ? host->cfg_str(cfg, "containment", "auto")
                        : "auto";
    struct stdio_spawner *sp;
    enum stdio_contain_mode mode;
    const char *why = NULL;

    if (!v || strcmp(v, "auto") == 0)
        mode = STDIO_CONTAIN_AUTO;
    else if (strcmp(v, "cgroup") == 0)
        mode = STDIO_CONTAIN_CGROUP;
    else if (strcmp(v, "process") == 0)
        mode = STDIO_CONTAIN_PROCESS;
    else
        return aur_fail(err, AUR_E_CONFIG, 0,
                        "[transport-stdio] containment must be auto, "
                        "cgroup or process");
    sp = calloc(1, sizeof *sp);
    if (!sp)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    sp->mode = mode;
    sp->cg_base = -1;
    sp->supervisor = supervisor_path();
    sp->supervisor_ok = sp->supervisor && access(sp->supervisor, X_OK) == 0;
    if (mode != STDIO_CONTAIN_PROCESS)
        sp->cg_base = stdio_cgroup_base(&why);
    if (mode == STDIO_CONTAIN_CGROUP && sp->cg_base >= 0) {
        /* Asked for: prove now that an App's cgroup can be made. */
        struct stdio_shim_args a = {.cg_procs = -1, .cg_kill = -1,
                                    .cg_events = -1, .cg_dir = -1};
        int e = cgroup_unique(sp, &a);
        if (e == 0) {
            struct stdio_contain ct;
            close(a.cg_procs);
            close(a.cg_events);
            stdio_contain_clear(&ct);
            ct.cg_dir = a.cg_dir;
            ct.cg_kill = a.cg_kill;
            memcpy(ct.cg_name, a.cg_name, sizeof ct.cg_name);
            stdio_contain_release(&ct);
        } else {
            close_fd(&sp->cg_base);
            why = e == ENOENT ? "the kernel has no cgroup.kill (Linux 5.14)"
                              : "the host may not create a cgroup in its "
                                "own (not delegated?)";
        }
    }
    if (mode == STDIO_CONTAIN_CGROUP && sp->cg_base < 0) {
        free(sp->supervisor);
        free(sp);
        return aur_fail(err, AUR_E_CONFIG, 0,
                        "[transport-stdio] containment = cgroup, but %s",
                        why ? why : "no cgroup v2 is available");
    }
    if (sp->cg_base >= 0)
        stdio_cgroup_sweep(sp->cg_base);
    pthread_mutex_init(&sp->mu, NULL);
    pthread_cond_init(&sp->cv, NULL);
    *out = sp;
    return AUR_OK;
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
    close_fd(&sp->cg_base);
    free(sp->supervisor);
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
    int rc;

    j->step = "find the command";
    rc = resolve(command, &j->path);
    if (rc != 0)
        return rc;
    j->done = false;
    j->pid = 0;
    stdio_contain_clear(&j->ct);
    pthread_mutex_lock(&sp->mu);
    rc = ensure_thread(sp);
    if (rc != 0)
        j->step = "start the spawner thread";
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
    if (rc == 0)
        rc = finish_job(j);
    free(j->path);
    j->path = NULL;
    return rc;
}
