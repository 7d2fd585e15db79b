/*
 * stdio_spawn.c - the child process: environment, spawn, termination.
 *
 * The child runs in its own process group with only its three pipes open
 * and the environment of docs/containment.md (safe base plus the
 * App's whitelist, nothing else).  stdio_exec.c does the fork and exec;
 * the App runs under a supervisor of its own (stdio_contain.c) that makes
 * it, and everything it starts, die with the connection and the host.
 * ch->pid is that supervisor: the escalation below goes through it.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "fdlimit.h"
#include "thread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the supervisor gets past each kill step before the host steps
 * in (SIGUSR1, then the backstop); what SIGKILL then leaves to the kernel
 * gets STDIO_DEATH_MS. */
#define KILL_WAIT_MS 1000
/* SIGTERM always gets at least this long, even past the deadline. */
#define TERM_MIN_MS 200
/* After the group is gone, how long the last stdout/stderr bytes may take
 * to drain before the I/O thread is stopped regardless (an escaped
 * grandchild may hold the pipes forever). */
#define DRAIN_MS 250
#define GROUP_POLL_MS 10

extern char **environ;

static const char *const safe_base[] = {"HOME",  "LOGNAME", "PATH",
                                        "SHELL", "TERM",    "USER"};

/* ------------------------------------------------------------------ */
/* Environment                                                        */
/* ------------------------------------------------------------------ */

static bool whitelisted(const struct aur_conn *c, const char *name)
{
    for (size_t i = 0; i < c->n_env; i++)
        if (strcmp(c->env_names[i], name) == 0)
            return true;
    return false;
}

static char *env_entry(const char *name, const char *value)
{
    size_t n = strlen(name), m = strlen(value);
    char *s = malloc(n + m + 2);

    if (s) {
        memcpy(s, name, n);
        s[n] = '=';
        memcpy(s + n + 1, value, m + 1);
    }
    return s;
}

static void env_free(char **envp)
{
    for (size_t i = 0; envp && envp[i]; i++)
        free(envp[i]);
    free(envp);
}

/* NULL-terminated "NAME=value" array read from the host environment now;
 * a whitelisted name wins over (here: replaces) the base entry. */
static char **env_build(const struct aur_conn *c)
{
    size_t nb = sizeof safe_base / sizeof safe_base[0], n = 0;
    char **envp = calloc(nb + c->n_env + 1, sizeof *envp);

    if (!envp)
        return NULL;
    for (size_t i = 0; i < nb; i++) {
        const char *v = getenv(safe_base[i]);
        /* "()" marks an exported shell function (Shellshock hygiene). */
        if (!v || strncmp(v, "()", 2) == 0 || whitelisted(c, safe_base[i]))
            continue;
        if (!(envp[n++] = env_entry(safe_base[i], v)))
            goto fail;
    }
    for (size_t i = 0; i < c->n_env; i++) {
        const char *v = getenv(c->env_names[i]);
        if (!v) {
            /* Said, not silent: a forgotten export otherwise shows up
             * only as a server that fails in its own words.  The name
             * only; a value never reaches the log. */
            c->st->host->log(c->st->self, AUR_LOG_WARN,
                             "%s: env %s is whitelisted but not set in the "
                             "host's environment; the server starts "
                             "without it",
                             c->package, c->env_names[i]);
            continue;
        }
        if (!(envp[n++] = env_entry(c->env_names[i], v)))
            goto fail;
    }
    return envp;
fail:
    env_free(envp);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Spawn                                                              */
/* ------------------------------------------------------------------ */

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return errno;
    return 0;
}

/* gone_by (stdio_mono_ms): when the App's processes, SIGKILLed, must be
 * gone from its cgroup. */
static void child_free(struct stdio_child *ch, int64_t gone_by)
{
    int e = stdio_contain_release(&ch->ct, gone_by);

    if (e != 0)
        ch->conn->st->host->log(
            ch->conn->st->self, AUR_LOG_WARN, "%s: cgroup %s not removed: %s",
            ch->conn->package, ch->ct.cg_name,
            e == EBUSY   ? "a process in it was not gone after SIGKILL "
                           "(uninterruptible sleep?)"
            : e == ELOOP ? "the App nested cgroups below it too deep"
                         : strerror(e));
    stdio_close_fd(&ch->in_fd);
    stdio_close_fd(&ch->out_fd);
    stdio_close_fd(&ch->err_fd);
    stdio_close_fd(&ch->pidfd);
    stdio_close_fd(&ch->stop_r);
    stdio_close_fd(&ch->stop_w);
    pthread_cond_destroy(&ch->cv);
    pthread_mutex_destroy(&ch->mu);
    free(ch->line);
    free(ch->eline);
    /* The I/O thread's end freed them, unless a send came after it. */
    free(ch->ids);
    free(ch->unsent);
    for (size_t i = 0; i < ch->n_redact; i++)
        free(ch->redact[i]);
    free(ch->redact);
    free(ch);
}

/*
 * The whitelisted values are what a server is most likely to print and
 * least allowed in a log: keep a copy to blank them out of its stderr
 * (stdio_io.c).  Short ones ("1", "on") would blank out everything else.
 * ch->redact is freed by child_free, whatever this returns.
 */
static int collect_redact(struct stdio_child *ch, char **envp)
{
    const struct aur_conn *c = ch->conn;

    if (!(ch->redact = calloc(c->n_env + 1, sizeof *ch->redact)))
        return ENOMEM;
    for (size_t i = 0; envp[i]; i++)
        for (size_t k = 0; k < c->n_env; k++) {
            size_t n = strlen(c->env_names[k]);
            const char *v = envp[i] + n + 1;
            if (strncmp(envp[i], c->env_names[k], n) != 0 ||
                envp[i][n] != '=' || strlen(v) < 4)
                continue;
            if (!(ch->redact[ch->n_redact] = strdup(v)))
                return ENOMEM;
            ch->n_redact++;
            break;
        }
    return 0;
}

/* pre: a prepared start for these pipes (moved in), or NULL. */
static int spawn(struct stdio_child *ch, int in[2], int out[2], int errp[2],
                 int64_t wait_ms, const struct stdio_exec_job *pre,
                 const char **step)
{
    const struct aur_conn *c = ch->conn;
    struct stdio_exec_job j = {
        .wait_ms = wait_ms,
        .argv = c->argv,
        .cwd = c->cwd,
        .title = c->package,
        .fd_in = in[0],
        .fd_out = out[1],
        .fd_err = errp[1],
    };
    char **envp = env_build(c);
    int rc;

    if (!envp || collect_redact(ch, envp) != 0) {
        if (pre) {
            j = *pre;
            stdio_spawner_undo(&j);
        }
        env_free(envp);
        return ENOMEM;
    }
    j.envp = envp;
    rc = stdio_spawner_run(c->st->spawner, c->command, &j, pre);
    *step = j.step;
    if (rc == 0) {
        ch->pid = j.pid;
        ch->ct = j.ct;
    }
    env_free(envp);
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Undo a started child when the thread cannot be started: the
 * supervisor kills the App and all it started, and exits. */
static void kill_now(struct stdio_child *ch)
{
    const struct aur_host *h = ch->conn->st->host;
    int64_t until = h->now_ms() + KILL_WAIT_MS;

    stdio_contain_kill(ch->pid);
    while (waitpid(ch->pid, NULL, WNOHANG) == 0 && h->now_ms() < until)
        sleep_ms(GROUP_POLL_MS);
    stdio_contain_backstop(&ch->ct, ch->pid);
    while (waitpid(ch->pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int stdio_child_start(struct aur_conn *c, struct stdio_child **out,
                      aur_deadline dl, struct aur_error *err)
{
    struct stdio_child *ch = calloc(1, sizeof *ch);
    int in[2] = {-1, -1}, op[2] = {-1, -1}, ep[2] = {-1, -1};
    int stop[2] = {-1, -1};
    char eb[128], fb[96];
    const char *what = "pipes", *step = NULL;
    struct stdio_warm w;
    bool warm = false;
    int rc = 0, code;

    if (!ch)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "%s: out of memory",
                        c->package);
    ch->conn = c;
    stdio_contain_clear(&ch->ct);
    ch->in_fd = ch->out_fd = ch->err_fd = ch->pidfd = -1;
    ch->stop_r = ch->stop_w = -1;
    pthread_mutex_init(&ch->mu, NULL);
    if (aur__mono_cond_init(&ch->cv) != 0) {
        pthread_mutex_destroy(&ch->mu);
        free(ch);
        return aur_fail(err, AUR_E_NOMEM, 0, "%s: cannot create a cond",
                        c->package);
    }
    /* A start prepared for this endpoint has its pipes and supervisor
     * already (stdio_warm.c); a reopen never finds one. */
    warm = stdio_warm_take(c->st, c->endpoint, &w);
    if (warm) {
        in[1] = w.in_w;
        op[0] = w.out_r;
        ep[0] = w.err_r;
    }
    ch->eline = malloc(c->st->stderr_line);
    if (!ch->eline)
        rc = ENOMEM;
    if (rc == 0 && !warm && (rc = stdio_pipe_high(in)) != 0)
        what = "the stdin pipe";
    if (rc == 0 && !warm && (rc = stdio_pipe_high(op)) != 0)
        what = "the stdout pipe";
    if (rc == 0 && !warm && (rc = stdio_pipe_high(ep)) != 0)
        what = "the stderr pipe";
    if (rc == 0 && (rc = stdio_pipe_high(stop)) != 0)
        what = "the I/O thread's stop pipe";
    ch->in_fd = in[1];
    ch->out_fd = op[0];
    ch->err_fd = ep[0];
    ch->stop_r = stop[0];
    ch->stop_w = stop[1];
    if (rc == 0)
        rc = set_nonblock(ch->in_fd);
    if (rc == 0)
        rc = set_nonblock(ch->out_fd);
    if (rc == 0)
        rc = set_nonblock(ch->err_fd);
    if (rc != 0 && aur__fd_exhausted(rc)) {
        code = aur_fail(err, AUR_E_IO, rc, "%s: %s: cannot create %s",
                        c->package, aur__fd_text(rc, fb, sizeof fb), what);
        goto fail;
    }
    if (rc != 0) {
        code = aur_fail(err, rc == ENOMEM ? AUR_E_NOMEM : AUR_E_IO, rc,
                        "%s: cannot create %s: %s", c->package, what,
                        strerror_r(rc, eb, sizeof eb));
        goto fail;
    }
    rc = spawn(ch, in, op, ep, aur_remaining_ms(c->st->host, dl),
               warm ? &w.job : NULL, &step);
    warm = false; /* spawn owns it now */
    stdio_close_fd(&in[0]);
    stdio_close_fd(&op[1]);
    stdio_close_fd(&ep[1]);
    if (rc != 0) {
        /* Name the command only: arguments and env may carry secrets. */
        if (rc == ELIBACC)
            code = aur_fail(err, AUR_E_SPAWN, rc,
                            "%s: cannot start '%s': the supervisor program "
                            "%s is missing or not executable (reinstall "
                            "transport-stdio)", c->package, c->command,
                            stdio_spawner_supervisor(c->st->spawner));
        else if (aur__fd_exhausted(rc))
            code = aur_fail(err, AUR_E_SPAWN, rc,
                            "%s: %s: cannot start '%s' (%s)", c->package,
                            aur__fd_text(rc, fb, sizeof fb), c->command,
                            step ? step : "spawn");
        else if (step && strcmp(step, STDIO_STEP_LOST_FRAME) == 0)
            code = aur_fail(err, AUR_E_SPAWN, rc,
                            "%s: cannot start '%s': its supervisor exited "
                            "before it took the App's command (killed?); "
                            "the App never ran", c->package, c->command);
        else
            code = aur_fail(err, AUR_E_SPAWN, rc,
                            "%s: cannot start '%s': %s", c->package,
                            c->command, strerror_r(rc, eb, sizeof eb));
        goto fail;
    }
    c->st->host->log(c->st->self, AUR_LOG_DEBUG,
                     "%s: supervisor %d, App cgroup %s", c->package,
                     (int)ch->pid,
                     ch->ct.cg_name[0] ? ch->ct.cg_name : "(none)");
    ch->pidfd = (int)syscall(SYS_pidfd_open, ch->pid, 0);
    if (ch->pidfd < 0)
        ch->pidfd = -1; /* old kernel: the thread polls waitid */
    rc = aur__thread_start(&ch->thread, stdio_io_main, ch);
    if (rc != 0) {
        kill_now(ch);
        code = aur_fail(err, AUR_E_NOMEM, rc,
                        "%s: cannot start the I/O thread", c->package);
        goto fail;
    }
    *out = ch;
    return AUR_OK;
fail:
    if (warm) /* its pipes' ends are ch's: child_free closes them */
        stdio_spawner_undo(&w.job);
    stdio_close_fd(&in[0]);
    stdio_close_fd(&op[1]);
    stdio_close_fd(&ep[1]);
    child_free(ch, stdio_mono_ms() + STDIO_DEATH_MS);
    return code;
}

/* ------------------------------------------------------------------ */
/* Termination                                                        */
/* ------------------------------------------------------------------ */

/* Wait (bounded by until_ms) for the flag the I/O thread sets. */
static bool wait_for(struct stdio_child *ch, const bool *flag,
                     const bool *flag2, int64_t until_ms)
{
    const struct aur_host *h = ch->conn->st->host;
    bool ok;

    pthread_mutex_lock(&ch->mu);
    while (!(*flag && (!flag2 || *flag2)) &&
           stdio_cond_wait(h, &ch->cv, &ch->mu, until_ms))
        ;
    ok = *flag && (!flag2 || *flag2);
    pthread_mutex_unlock(&ch->mu);
    return ok;
}

/* State and process group of /proc/<pid>/stat, after the comm field. */
static bool proc_stat(const char *pid, char *state, long *pgrp)
{
    char path[64], buf[512];
    ssize_t n;
    char *p;
    int fd;

    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && sscanf(p + 1, " %c %*d %ld", state, pgrp) == 2;
}

/* Does the group still have a member that is not a zombie?  Zombies are
 * dead already; a reaper that never reaps (some container inits) must not
 * make every close wait. */
static bool group_alive(pid_t pgid)
{
    bool alive = false;
    struct dirent *de;
    DIR *d;

    if (kill(-pgid, 0) != 0)
        return errno != ESRCH;
    d = opendir("/proc");
    if (!d)
        return true;
    while (!alive && (de = readdir(d)) != NULL) {
        char state;
        long pgrp;
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        if (proc_stat(de->d_name, &state, &pgrp) && pgrp == (long)pgid &&
            state != 'Z' && state != 'X')
            alive = true;
    }
    closedir(d);
    return alive;
}

void stdio_child_begin_stop(struct stdio_child *ch, aur_deadline dl)
{
    const struct stdio_state *st = ch->conn->st;
    int64_t now = st->host->now_ms(), left = dl - now, term, rest;
    int in;

    pthread_mutex_lock(&ch->mu);
    if (ch->stopping) {
        pthread_mutex_unlock(&ch->mu);
        return;
    }
    ch->stopping = true;
    /* term_grace_ms for EOF, then for SIGTERM, within dl; SIGTERM always
     * gets at least TERM_MIN_MS. */
    term = st->term_grace_ms < left ? st->term_grace_ms : left;
    if (term < 0)
        term = 0;
    rest = left - term < st->term_grace_ms ? left - term : st->term_grace_ms;
    if (rest < TERM_MIN_MS)
        rest = TERM_MIN_MS;
    ch->term_at = now + term;
    ch->kill_at = now + term + rest;
    in = ch->in_fd;
    ch->in_fd = -1;
    pthread_mutex_unlock(&ch->mu);
    if (in >= 0)
        close(in); /* the App's cue to exit (spec SHOULD) */
    bool told = stdio_contain_stop(&ch->ct, (uint32_t)term,
                                   (uint32_t)(term + rest));
    pthread_mutex_lock(&ch->mu);
    ch->told = told;
    pthread_mutex_unlock(&ch->mu);
}

/* close stdin, wait, SIGTERM everything, wait, SIGKILL everything.
 * "Everything" is the App's process group and every process it started,
 * reached through its supervisor (stdio_contain.c); ch->exited is the
 * supervisor's exit, which follows the App's and its leftovers' end.
 * The supervisor runs the steps itself once told (it may have been told
 * long before, by stop); the host only waits, and steps in when it could
 * not be told or does not end in time. */
static void escalate(struct stdio_child *ch, aur_deadline dl)
{
    const struct aur_host *h = ch->conn->st->host;
    int64_t term_at, kill_at;
    bool told, gone;

    stdio_child_begin_stop(ch, dl);
    pthread_mutex_lock(&ch->mu);
    term_at = ch->term_at;
    kill_at = ch->kill_at;
    told = ch->told;
    pthread_mutex_unlock(&ch->mu);
    if (told) {
        gone = wait_for(ch, &ch->exited, NULL, kill_at + KILL_WAIT_MS);
    } else {
        gone = wait_for(ch, &ch->exited, NULL, term_at);
        if (!gone) {
            stdio_contain_term(ch->pid);
            gone = wait_for(ch, &ch->exited, NULL, kill_at);
        }
    }
    if (!gone) {
        /* The supervisor kills the lot, reaps it and exits (SIGCONT
         * first: the App may have stopped it). */
        stdio_contain_kill(ch->pid);
        wait_for(ch, &ch->exited, NULL, h->now_ms() + KILL_WAIT_MS);
    }
    /* Always: cgroup.kill, and SIGKILL to the supervisor's group in case
     * it is stuck (the App then dies of its parent-death signal).  The
     * supervisor, alive or a zombie, still reserves its group id. */
    stdio_contain_backstop(&ch->ct, ch->pid);
}

void stdio_child_stop(struct stdio_child *ch, aur_deadline dl)
{
    const struct stdio_state *st = ch->conn->st;
    const struct aur_host *h = st->host;
    int64_t until, gone_by;
    bool exited;

    pthread_mutex_lock(&ch->mu);
    ch->retired = true;
    until = h->now_ms() + KILL_WAIT_MS;
    /* Sink calls are non-blocking by contract; the bound is a backstop. */
    while (ch->busy > 0 && stdio_cond_wait(h, &ch->cv, &ch->mu, until))
        ;
    pthread_mutex_unlock(&ch->mu);

    escalate(ch, dl);
    /* One bound for what SIGKILL leaves to the kernel: the supervisor's
     * exit, then the last of its group and of the App's cgroup.  The
     * same moment on both clocks (the host's for its waits, ours for
     * the rest). */
    gone_by = stdio_mono_ms() + STDIO_DEATH_MS;
    exited = wait_for(ch, &ch->exited, NULL, h->now_ms() + STDIO_DEATH_MS);
    if (exited) {
        while (waitpid(ch->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    } else {
        /* Uninterruptible sleep, or someone else reaped it: we cannot
         * block on it. */
        waitpid(ch->pid, NULL, WNOHANG);
        h->log(st->self, AUR_LOG_WARN,
               "%s: App process %d not gone %d s after SIGKILL",
               ch->conn->package, (int)ch->pid, STDIO_DEATH_MS / 1000);
    }
    for (int ms = GROUP_POLL_MS;
         group_alive(ch->pid) && stdio_mono_ms() < gone_by;
         ms = ms * 2 > 100 ? 100 : ms * 2) {
        /* Live members keep the group id reserved, so this cannot hit a
         * stranger. */
        kill(-ch->pid, SIGKILL);
        sleep_ms(ms);
    }
    if (group_alive(ch->pid))
        h->log(st->self, AUR_LOG_WARN,
               "%s: process group %d not gone %d s after SIGKILL",
               ch->conn->package, (int)ch->pid, STDIO_DEATH_MS / 1000);

    wait_for(ch, &ch->out_done, &ch->err_done, h->now_ms() + DRAIN_MS);
    while (write(ch->stop_w, "x", 1) < 0 && errno == EINTR)
        ;
    pthread_join(ch->thread, NULL);
    child_free(ch, gone_by);
}
