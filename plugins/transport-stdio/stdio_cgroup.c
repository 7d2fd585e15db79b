/*
 * stdio_cgroup.c - the host's side of an App's containment: the App's
 * cgroup (made before the supervisor is forked, removed after it is
 * reaped, leftovers of dead hosts swept) and the signals that stop the
 * supervisor (stdio_contain.c), which does the killing.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "nosigpipe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Host side: the App's cgroup                                        */
/* ------------------------------------------------------------------ */

#define CG_PREFIX "aurora-mcp-"
/* release: how long it sleeps between tries when nothing wakes it. */
#define RELEASE_ROUND_MS 20

/* Our cgroup v2 path ("0::<path>" of /proc/self/cgroup). */
static bool own_cgroup(char *out, size_t size)
{
    char line[4096];
    bool ok = false;
    FILE *f = fopen("/proc/self/cgroup", "re");

    if (!f)
        return false;
    while (!ok && fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\n");
        line[n] = '\0';
        if (strncmp(line, "0::/", 4) == 0 && n - 3 < size &&
            !strstr(line, " (deleted)")) {
            memcpy(out, line + 3, n - 2);
            ok = true;
        }
    }
    fclose(f);
    return ok;
}

int stdio_cgroup_base(const char **why)
{
    char cg[4096], line[8192], path[8192];
    int fd = -1;
    FILE *f;

    *why = "the host is in no cgroup v2 (cgroup v1 only?)";
    if (!own_cgroup(cg, sizeof cg))
        return -1;
    f = fopen("/proc/self/mountinfo", "re");
    if (!f) {
        *why = "cannot read /proc/self/mountinfo";
        return -1;
    }
    *why = "no cgroup2 file system is mounted";
    while (fd < 0 && fgets(line, sizeof line, f)) {
        /* id parent maj:min root mountpoint opts [tags] - fstype src */
        char *field[5], *save = NULL, *sep = strstr(line, " - ");
        size_t rl;
        int k = 0;
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0 ||
            strchr(line, '\\')) /* escaped names: not worth decoding */
            continue;
        for (char *t = strtok_r(line, " ", &save); t && k < 5;
             t = strtok_r(NULL, " ", &save))
            field[k++] = t;
        if (k < 5)
            continue;
        rl = strcmp(field[3], "/") == 0 ? 0 : strlen(field[3]);
        if (strncmp(cg, field[3], rl) != 0 || (cg[rl] && cg[rl] != '/'))
            continue; /* our cgroup is not below this mount's root */
        if ((size_t)snprintf(path, sizeof path, "%s%s", field[4], cg + rl) >=
            sizeof path)
            continue;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            *why = "cannot open the host's cgroup directory";
    }
    fclose(f);
    return fd;
}

int stdio_cgroup_make(int base, unsigned seq, struct stdio_shim_args *a)
{
    int d, e = 0;

    snprintf(a->cg_name, sizeof a->cg_name, CG_PREFIX "%ld-%u",
             (long)getpid(), seq);
    if (mkdirat(base, a->cg_name, 0755) != 0)
        return errno;
    d = openat(base, a->cg_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        e = errno;
    if (e == 0 && (a->cg_procs = openat(d, "cgroup.procs",
                                        O_WRONLY | O_CLOEXEC)) < 0)
        e = errno;
    /* cgroup.kill: Linux 5.14.  Without it there is no atomic kill. */
    if (e == 0 && (a->cg_kill = openat(d, "cgroup.kill",
                                       O_WRONLY | O_CLOEXEC)) < 0)
        e = errno;
    if (e == 0 && (a->cg_events = openat(d, "cgroup.events",
                                         O_RDONLY | O_CLOEXEC)) < 0)
        e = errno;
    if (e == 0)
        a->cg_dir = base; /* borrowed: one for all Apps */
    if (d >= 0)
        close(d);
    if (e != 0) {
        stdio_close_fd(&a->cg_procs);
        stdio_close_fd(&a->cg_kill);
        stdio_close_fd(&a->cg_events);
        a->cg_dir = -1;
        unlinkat(base, a->cg_name, AT_REMOVEDIR);
        a->cg_name[0] = '\0';
    }
    return e;
}

void stdio_cgroup_sweep(int base)
{
    int fd = fcntl(base, F_DUPFD_CLOEXEC, 3);
    time_t old = time(NULL) - 60;
    struct dirent *de;
    DIR *d;

    if (fd < 0)
        return;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        const char *p = de->d_name + sizeof CG_PREFIX - 1;
        struct stat sb;
        char *end;
        long pid;
        if (strncmp(de->d_name, CG_PREFIX, sizeof CG_PREFIX - 1) != 0)
            continue;
        pid = strtol(p, &end, 10);
        if (end == p || *end != '-' || pid <= 0 || pid == (long)getpid())
            continue;
        /* Its host is gone, and it is not one being made right now (by
         * a host in a pid namespace we cannot see).  Only an empty
         * cgroup can be removed. */
        if ((kill((pid_t)pid, 0) == 0 || errno != ESRCH) ||
            fstatat(base, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            sb.st_mtime > old)
            continue;
        stdio_cgroup_remove(base, de->d_name);
    }
    closedir(d);
}

/* ------------------------------------------------------------------ */
/* Host side: escalation and release                                  */
/* ------------------------------------------------------------------ */

void stdio_contain_clear(struct stdio_contain *ct)
{
    ct->ctl_w = ct->cg_dir = ct->cg_kill = -1;
    ct->cg_name[0] = '\0';
}

/* The supervisor's pid stays reserved until the host reaps it, so these
 * never reach a stranger. */
void stdio_contain_term(pid_t shim) { kill(shim, SIGTERM); }

bool stdio_contain_stop(const struct stdio_contain *ct, uint32_t term_ms,
                        uint32_t kill_ms)
{
    char msg[STDIO_STOP_LEN];
    struct aur__nosigpipe ns;
    ssize_t n;

    if (ct->ctl_w < 0)
        return false;
    msg[0] = STDIO_STOP_MSG;
    memcpy(msg + 1, &term_ms, sizeof term_ms);
    memcpy(msg + 1 + sizeof term_ms, &kill_ms, sizeof kill_ms);
    /* Less than PIPE_BUF into a pipe nobody else writes after the frame:
     * whole or not at all, and never blocking for long. */
    aur__nosigpipe_begin(&ns);
    while ((n = write(ct->ctl_w, msg, sizeof msg)) < 0 && errno == EINTR)
        ;
    aur__nosigpipe_end(&ns, n < 0 && errno == EPIPE);
    return n == (ssize_t)sizeof msg;
}

void stdio_contain_kill(pid_t shim)
{
    kill(shim, SIGCONT); /* the App may have stopped it */
    kill(shim, SIGUSR1);
}

void stdio_contain_backstop(const struct stdio_contain *ct, pid_t shim)
{
    if (ct->cg_kill >= 0)
        (void)!write(ct->cg_kill, "1", 1);
    kill(-shim, SIGKILL);
}

int stdio_contain_release(struct stdio_contain *ct, int64_t until)
{
    int e = 0;

    stdio_close_fd(&ct->ctl_w);
    /* The supervisor removed it unless it was killed first, or its
     * members took longer to die than it waited. */
    if (ct->cg_dir >= 0 &&
        (e = stdio_cgroup_remove(ct->cg_dir, ct->cg_name)) == EBUSY) {
        char path[sizeof ct->cg_name + 16];
        int ev;
        snprintf(path, sizeof path, "%s/cgroup.events", ct->cg_name);
        ev = openat(ct->cg_dir, path, O_RDONLY | O_CLOEXEC);
        while (e == EBUSY && stdio_mono_ms() < until) {
            struct pollfd p = {.fd = ev, .events = POLLPRI};
            char buf[256];
            if (ct->cg_kill >= 0)
                (void)!write(ct->cg_kill, "1", 1);
            /* Woken when "populated" changes (ev < 0: a plain sleep);
             * the read re-arms it. */
            if (poll(&p, 1, RELEASE_ROUND_MS) > 0)
                (void)!pread(ev, buf, sizeof buf, 0);
            e = stdio_cgroup_remove(ct->cg_dir, ct->cg_name);
        }
        if (ev >= 0)
            close(ev);
    }
    stdio_close_fd(&ct->cg_kill);
    ct->cg_dir = -1; /* the spawner's, borrowed */
    if (e == 0)
        ct->cg_name[0] = '\0';
    return e;
}
