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
 * posix_spawn does not share the descriptor table either: the kernel
 * copies the spawning thread's table into the supervisor, and the exec
 * then walks the copy to close every close-on-exec descriptor.  With a
 * thousand Apps the host holds some ten thousand, and every start cost
 * more than the one before.  So the spawner thread has a table of its
 * own (stdio_fdpass.c): at its start it unshares the table and closes
 * everything in its copy but its end of a socket pair and the directory
 * of the Apps' cgroups, with /dev/null on 0, 1 and 2.  Nothing of the
 * host stays open there (a copy of another App's pipe would keep its
 * reader from seeing end of file), and each supervisor starts with a
 * table of a dozen descriptors however many the host holds.  Where the
 * kernel or a seccomp filter refuses both close_range(CLOSE_RANGE_UNSHARE)
 * and unshare(CLONE_FILES), and in ThreadSanitizer builds, the thread
 * shares the host's table as before (the same protocol, only slower at
 * scale); nothing is logged, as the spawner has no handle to log with.
 *
 * One start, one request and one reply on the socket (SOCK_SEQPACKET,
 * SCM_RIGHTS, received close-on-exec): the opening thread sends the
 * App's three pipe ends; the spawner makes the App's cgroup and the
 * supervisor's status and lifeline pipes, spawns it, and sends back what
 * the opener needs (the status pipe's read end, the lifeline's write
 * end, the cgroup's cgroup.kill), then closes its own copies.  One
 * opener at a time holds the socket (sp->busy) from its request to its
 * reply; each request carries a number the reply repeats, so a reply to
 * an opener that gave up (every wait is bounded by the App's deadline)
 * is recognised by whoever reads it next, or by destroy, and undone: its
 * supervisor never got a frame, so it never forked an App, and is
 * killed and reaped, its cgroup removed.
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

/* The caller's part, on its own thread so that Apps wait for their execs
 * side by side: hand the supervisor its frame, then wait until the App
 * execs or fails.  0 (j->ct set) or an errno, the supervisor killed and
 * reaped. */
static int finish_job(struct stdio_exec_job *j)
{
    struct aur__buf fr = {0};
    struct pollfd pf;
    bool lost = false;
    int e;
    ssize_t n;

    e = frame(j, &j->a, &fr);
    for (size_t off = 0; e == 0 && off < fr.n;) {
        struct aur__nosigpipe ns;
        ssize_t w;
        aur__nosigpipe_begin(&ns);
        w = write(j->life_w, fr.p + off, fr.n - off);
        aur__nosigpipe_end(&ns, w < 0 && errno == EPIPE);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            lost = true; /* it died: the status pipe says how */
            break;
        }
        off += (size_t)w;
    }
    free(fr.p);
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
            /* ... unless it never had its frame: then its EOF says only
             * that it is gone (killed before it could say more), and the
             * App never ran. */
            if (n == 0 && lost) {
                e = EPIPE;
                j->step = STDIO_STEP_LOST_FRAME;
            }
        }
    } else {
        j->step = "build the supervisor's frame";
    }
    if (e != 0) {
        /* The App never ran, or hangs before exec: the supervisor's
         * death takes it (parent-death signal), and its cgroup goes. */
        stdio_spawner_undo(j);
        return e;
    }
    j->ct.ctl_w = j->life_w;
    j->life_w = -1;
    j->ct.cg_dir = j->a.cg_dir;
    j->ct.cg_kill = j->a.cg_kill;
    j->a.cg_dir = j->a.cg_kill = -1;
    memcpy(j->ct.cg_name, j->a.cg_name, sizeof j->ct.cg_name);
    stdio_job_close(j);
    j->step = NULL;
    return 0;
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
        int e = stdio_job_cgroup(sp, sp->cg_base, &a);
        if (e == 0) {
            struct stdio_contain ct;
            close(a.cg_procs);
            close(a.cg_events);
            stdio_contain_clear(&ct);
            ct.cg_dir = a.cg_dir;
            ct.cg_kill = a.cg_kill;
            memcpy(ct.cg_name, a.cg_name, sizeof ct.cg_name);
            stdio_contain_release(&ct, stdio_mono_ms() + STDIO_DEATH_MS);
        } else {
            stdio_close_fd(&sp->cg_base);
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
    if (aur__mono_cond_init(&sp->cv) != 0) {
        stdio_close_fd(&sp->cg_base);
        free(sp->supervisor);
        free(sp);
        return aur_fail(err, AUR_E_NOMEM, 0, "cannot create a cond");
    }
    if (sp->cg_base >= 0)
        stdio_cgroup_sweep(sp->cg_base);
    sp->cg_own = sp->cg_base;
    sp->sock = sp->sock_sp = -1;
    pthread_mutex_init(&sp->mu, NULL);
    *out = sp;
    return AUR_OK;
}

void stdio_spawner_destroy(struct stdio_spawner *sp)
{
    if (!sp)
        return;
    stdio_spawner_halt(sp);
    pthread_cond_destroy(&sp->cv);
    pthread_mutex_destroy(&sp->mu);
    stdio_close_fd(&sp->cg_base);
    free(sp->supervisor);
    free(sp);
}

/* The child's pipe ends are dup2'ed onto 0..2, so none of ours may sit
 * there (possible if the host runs with a standard stream closed). */
int stdio_pipe_high(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    for (int i = 0; i < 2; i++) {
        if (fds[i] <= STDERR_FILENO) {
            int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
            if (hi < 0)
                return errno;
            close(fds[i]);
            fds[i] = hi;
        }
    }
    return 0;
}

int stdio_spawner_begin(struct stdio_spawner *sp, struct stdio_exec_job *j,
                        int64_t until)
{
    j->pid = 0;
    j->st_r = j->life_w = -1;
    j->a = (struct stdio_shim_args){
        .cg_procs = -1,
        .cg_kill = -1,
        .cg_events = -1,
        .cg_dir = -1,
        .cg_required = sp->mode == STDIO_CONTAIN_CGROUP,
    };
    stdio_contain_clear(&j->ct);
    return stdio_spawner_exchange(sp, j, until);
}

void stdio_spawner_undo(struct stdio_exec_job *j)
{
    /* An App it forked dies with it (parent-death signal); its cgroup
     * is killed first for what that App may have started. */
    if (j->a.cg_kill >= 0)
        (void)!write(j->a.cg_kill, "1", 1);
    if (j->pid > 0)
        stdio_kill_reap(j->pid);
    j->pid = 0;
    stdio_job_close(j); /* and its cgroup goes */
}

int stdio_spawner_run(struct stdio_spawner *sp, const char *command,
                      struct stdio_exec_job *j,
                      const struct stdio_exec_job *pre)
{
    int64_t wait = j->wait_ms < EXEC_WAIT_MIN_MS   ? EXEC_WAIT_MIN_MS
                   : j->wait_ms > EXEC_WAIT_MAX_MS ? EXEC_WAIT_MAX_MS
                                                   : j->wait_ms;
    int rc;

    if (pre) {
        j->pid = pre->pid;
        j->st_r = pre->st_r;
        j->life_w = pre->life_w;
        j->a = pre->a;
        stdio_contain_clear(&j->ct);
    }
    j->step = "find the command";
    rc = resolve(command, &j->path);
    if (rc != 0) {
        if (pre)
            stdio_spawner_undo(j);
        return rc;
    }
    if (!pre)
        rc = stdio_spawner_begin(sp, j, stdio_mono_ms() + wait);
    if (rc == 0)
        rc = finish_job(j);
    free(j->path);
    j->path = NULL;
    return rc;
}
