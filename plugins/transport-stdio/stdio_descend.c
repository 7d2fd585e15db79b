/*
 * stdio_descend.c - the supervisor's descendants, found through /proc
 * and signalled without ever hitting a recycled pid (stdio_contain.c).
 *
 * The supervisor is every descendant's subreaper, so its descendants
 * are a tree below it.  The kernel lists each thread's children in
 * /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN, on in Debian's
 * and most distributions' kernels), so a walk reads only the tree: a
 * few files per descendant.  Hundreds of supervisors killing at the
 * same moment each used to read all of /proc, whose size is every
 * process on the machine; that made their common close quadratic
 * (check_contain test_close_many_stubborn).  Where the files do not
 * exist, the walk reads every /proc/<pid>/stat and follows parent links
 * down from us, as before.
 *
 * Neither walk is an atomic snapshot: a child born or reparented while
 * a file is read can be missed.  The callers loop until the supervisor
 * has no child left, which, as subreaper, means no descendant at all;
 * a missed process is found by a later round.  No process is signalled
 * on a stale reading: one that is not our child is signalled through a
 * pidfd, after its parent was checked again.
 *
 * Async-signal-safe system calls and loops over the caller's memory
 * only (the supervisor's rule).  Single-threaded: one per supervisor.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Processes one walk can hold (the table is mapped on first use). */
#define TABLE_CAP (1u << 17)

struct pp {
    int pid, ppid, pgrp;
    bool mine, zombie;
};

/* One walk's table.  The full walk: every process, then the pids found
 * to be ours.  The tree walk: the queue of descendants in e. */
struct stdio_descend_table {
    struct pp e[TABLE_CAP];
    int mine[TABLE_CAP];
};

struct linux_dirent64_ {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* State, parent and process group of pid: false if gone. */
static bool proc_parent(long pid, char *state, long *ppid, long *pgrp)
{
    char buf[512];
    const char *p = stdio_read_stat(pid, buf, sizeof buf);
    unsigned long v, g;

    if (!p || !p[0] || p[1] != ' ')
        return false;
    *state = p[0];
    p += 2;
    if (!stdio_parse_num(&p, 10, &v) || *p++ != ' ' ||
        !stdio_parse_num(&p, 10, &g))
        return false;
    *ppid = (long)v;
    *pgrp = (long)g;
    return true;
}

/* Signal pid, a descendant whose parent was ppid when /proc was read. */
static void signal_one(const struct stdio_descend *d, long pid, long ppid,
                       int sig)
{
    char state;
    long now, pgrp;
    int fd;

    if (ppid == d->self) {
        /* Our child: its pid stays reserved until we reap it. */
        kill((pid_t)pid, sig);
        return;
    }
    fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0u);
    if (fd < 0) {
        if (errno == ENOSYS) /* before Linux 5.3 (or under valgrind) */
            kill((pid_t)pid, sig);
        return;
    }
    /* The pidfd pins the process it names; if that is still below the
     * parent we saw (or reparented to us), it is the one we found. */
    if (proc_parent(pid, &state, &now, &pgrp) &&
        (now == ppid || now == d->self))
        syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0u);
    close(fd);
}

/* ------------------------------------------------------------------ */
/* The tree walk: children files, from us down                        */
/* ------------------------------------------------------------------ */

/* Append the pids in one children file to the queue, each with parent
 * ppid.  false if the file cannot be opened. */
static bool read_children(const char *path, long ppid,
                          struct stdio_descend_table *t, size_t *n)
{
    char buf[4096];
    unsigned long pid = 0;
    bool digits = false;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    /* Space-separated pids; one may straddle two reads. */
    while ((got = read(fd, buf, sizeof buf)) > 0 ||
           (got < 0 && errno == EINTR)) {
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (unsigned long)(buf[i] - '0');
                digits = true;
                continue;
            }
            if (digits && *n < TABLE_CAP)
                t->e[(*n)++] = (struct pp){(int)pid, (int)ppid, 0, 0, 0};
            pid = 0;
            digits = false;
        }
    }
    if (digits && *n < TABLE_CAP)
        t->e[(*n)++] = (struct pp){(int)pid, (int)ppid, 0, 0, 0};
    close(fd);
    return true;
}

/* Every thread's children of pid, appended.  false if pid's task
 * directory or its own children file is missing (gone, or a kernel
 * without the files: the caller tells which). */
static bool children_of(long pid, struct stdio_descend_table *t, size_t *n)
{
    char path[64] = "/proc/", dbuf[4096];
    size_t base = 6, len;
    long got;
    bool any = false;
    int dfd;

    base += stdio_fmt_dec(path + base, (unsigned long)pid);
    memcpy(path + base, "/task", 6);
    base += 5;
    dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return false;
    while ((got = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf)) > 0) {
        for (long off = 0; off < got;) {
            struct linux_dirent64_ *de = (void *)(dbuf + off);
            off += de->d_reclen;
            if (de->d_name[0] < '1' || de->d_name[0] > '9')
                continue;
            len = strlen(de->d_name);
            if (base + 1 + len + sizeof "/children" > sizeof path)
                continue;
            path[base] = '/';
            memcpy(path + base + 1, de->d_name, len);
            memcpy(path + base + 1 + len, "/children", sizeof "/children");
            if (read_children(path, pid, t, n))
                any = true;
        }
    }
    close(dfd);
    return any;
}

/* Signal every live descendant outside group skip; how many live ones
 * there were, or -1 if this kernel has no children files. */
static int walk_tree(struct stdio_descend *d, int sig, long skip)
{
    struct stdio_descend_table *t = d->table;
    size_t n = 0;
    int found = 0;

    if (!children_of(d->self, t, &n))
        return -1; /* our own task directory exists: the files do not */
    for (size_t i = 0; i < n; i++) {
        long pid = t->e[i].pid, ppid, pgrp;
        char state;

        /* Listed under e.ppid a moment ago: still there, or reparented
         * to us when its parent died.  Anything else moved or is gone;
         * a later round finds where it went. */
        if (!proc_parent(pid, &state, &ppid, &pgrp) ||
            (ppid != t->e[i].ppid && ppid != d->self) || state == 'Z' ||
            state == 'X')
            continue;
        found++;
        /* Its children first: killed, it would hand them to us and its
         * own list would be empty before we read it. */
        children_of(pid, t, &n);
        if (pgrp != skip)
            signal_one(d, pid, ppid, sig);
    }
    return found;
}

/* ------------------------------------------------------------------ */
/* The full walk: every process's stat                                */
/* ------------------------------------------------------------------ */

static int walk_all(struct stdio_descend *d, int sig, long skip)
{
    struct stdio_descend_table *t = d->table;
    char dbuf[8192];
    size_t n = 0, nm = 0;
    int found = 0, dfd;
    long got;

    dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    while ((got = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf)) > 0) {
        for (long off = 0; off < got;) {
            struct linux_dirent64_ *de = (void *)(dbuf + off);
            const char *q = de->d_name;
            unsigned long pid;
            long ppid, pgrp;
            char state;
            bool zombie;

            off += de->d_reclen;
            if (*q < '1' || *q > '9' || !stdio_parse_num(&q, 10, &pid) || *q ||
                (long)pid == d->self ||
                !proc_parent((long)pid, &state, &ppid, &pgrp))
                continue;
            zombie = state == 'Z' || state == 'X';
            if (ppid == d->self && !zombie) {
                found++;
                if (pgrp != skip)
                    signal_one(d, (long)pid, ppid, sig);
            }
            if (t && n < TABLE_CAP) {
                t->e[n++] = (struct pp){(int)pid, (int)ppid, (int)pgrp,
                                        ppid == d->self, zombie};
                if (ppid == d->self)
                    t->mine[nm++] = (int)pid;
            }
        }
    }
    close(dfd);
    /* Grandchildren and below: follow ppid links down from our
     * children, one level per pass. */
    for (size_t from = 0; t && from < nm;) {
        size_t to = nm;
        for (size_t i = 0; i < n; i++) {
            struct pp *e = &t->e[i];
            if (e->mine)
                continue;
            for (size_t j = from; j < to; j++) {
                if (t->mine[j] != e->ppid)
                    continue;
                e->mine = true;
                t->mine[nm++] = e->pid;
                if (!e->zombie) {
                    found++;
                    if (e->pgrp != skip)
                        signal_one(d, e->pid, e->ppid, sig);
                }
                break;
            }
        }
        from = to;
    }
    return found;
}

int stdio_descend_signal(struct stdio_descend *d, int sig, long skip)
{
    if (!d->table && !d->no_table) {
        void *m = mmap(NULL, sizeof *d->table, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            d->no_table = true;
        else
            d->table = m;
    }
    if (d->table && !d->no_children_files) {
        int found = walk_tree(d, sig, skip);
        if (found >= 0)
            return found;
        d->no_children_files = true;
    }
    return walk_all(d, sig, skip);
}
