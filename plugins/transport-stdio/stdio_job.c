/*
 * stdio_job.c - the spawner thread's part of a start (stdio_exec.c tells
 * the whole story, stdio_fdpass.c runs the thread): the App's cgroup, the
 * supervisor's status and lifeline pipes and its posix_spawn, all in the
 * spawner's own descriptor table, nothing that waits on the App.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "fdlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A new cgroup for an App under base (our cgroup directory in the
 * calling thread's table).  Another spawner in this process (a second
 * plugin instance) or a stale one of a host that had our pid may hold a
 * name: take the next. */
int stdio_job_cgroup(struct stdio_spawner *sp, int base,
                     struct stdio_shim_args *a)
{
    int e = EEXIST;

    for (int tries = 0; e == EEXIST && tries < 1000; tries++)
        e = stdio_cgroup_make(base, ++sp->cg_seq, a);
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

    if (sp->cg_own < 0 || sp->cg_off)
        return 0;
    e = stdio_job_cgroup(sp, sp->cg_own, a);
    if (e == 0 || sp->mode == STDIO_CONTAIN_CGROUP || aur__fd_exhausted(e))
        return e;
    if (e == EACCES || e == EPERM || e == EROFS) {
        /* Not ours to write after all: stop trying.  (Kept open: Apps
         * started before borrow it, stdio_cgroup_make.) */
        sp->cg_off = true;
    }
    return 0;
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
    char *argv[14], *envp[] = {NULL};
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
    argv[12] = (char *)(a->cg_dir >= 0 ? a->cg_name : "");
    argv[13] = NULL;
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

void stdio_job_close(struct stdio_exec_job *j)
{
    stdio_close_fd(&j->st_r);
    stdio_close_fd(&j->life_w);
    stdio_close_fd(&j->a.cg_procs);
    stdio_close_fd(&j->a.cg_events);
    if (j->a.cg_dir >= 0) {
        struct stdio_contain ct;
        stdio_contain_clear(&ct);
        ct.cg_dir = j->a.cg_dir;
        ct.cg_kill = j->a.cg_kill;
        memcpy(ct.cg_name, j->a.cg_name, sizeof ct.cg_name);
        stdio_contain_release(&ct, stdio_mono_ms() + STDIO_DEATH_MS);
        j->a.cg_dir = j->a.cg_kill = -1;
    }
    stdio_close_fd(&j->a.cg_kill);
}

void stdio_job_drop(struct stdio_exec_job *j)
{
    stdio_close_fd(&j->st_r);
    stdio_close_fd(&j->life_w);
    stdio_close_fd(&j->a.cg_procs);
    stdio_close_fd(&j->a.cg_events);
    stdio_close_fd(&j->a.cg_kill);
    j->a.cg_dir = -1; /* borrowed */
}

int stdio_job_start(struct stdio_spawner *sp, struct stdio_exec_job *j)
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
    stdio_close_fd(&st[1]);
    stdio_close_fd(&life[0]);
    j->st_r = st[0];
    j->life_w = life[1];
    if (e != 0)
        stdio_job_close(j);
    else
        j->step = NULL;
    return e;
}

/* ------------------------------------------------------------------ */
/* The opening thread                                                 */
/* ------------------------------------------------------------------ */
