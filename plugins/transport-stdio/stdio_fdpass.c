/*
 * stdio_fdpass.c - the spawner thread, its descriptor table of its own,
 * and the descriptors passed between it and the host's table.
 *
 * posix_spawn clones without CLONE_FILES, so the kernel copies the
 * spawning thread's whole descriptor table into the supervisor, and the
 * exec then walks that copy to close every close-on-exec descriptor.
 * With a thousand Apps the host holds some ten thousand descriptors, and
 * each spawn cost more than the one before.  So the spawner thread takes
 * a table of its own (stdio_fd_own_table) that holds only what it needs,
 * and the descriptors of a start move between the two tables as
 * SCM_RIGHTS messages over a socket pair (stdio_fd_send, stdio_fd_recv):
 * one request with the App's pipe ends, one reply with what the opener
 * keeps (stdio_spawner_exchange on the opening thread, serve_one on the
 * spawner thread; stdio_exec.c describes the whole start).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "aur_perturb.h"
#include "thread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1) /* <linux/close_range.h>, 5.9 */
#endif

#if defined(__SANITIZE_THREAD__)
#define FDPASS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FDPASS_TSAN 1
#endif
#endif

/* ------------------------------------------------------------------ */
/* Descriptors over the socket                                        */
/* ------------------------------------------------------------------ */

/* Until the socket is ready for events, or until (stdio_mono_ms; -1:
 * no bound).  0, ETIMEDOUT or an errno of poll. */
static int wait_ready(int s, short events, int64_t until)
{
    struct pollfd pf = {.fd = s, .events = events};
    int n;

    for (;;) {
        int64_t left = until < 0 ? -1 : until - stdio_mono_ms();
        if (until >= 0 && left < 0)
            left = 0;
        if (left > 60000)
            left = 60000; /* poll takes an int; we loop */
        n = poll(&pf, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return errno;
        if (n == 0 && until >= 0 && stdio_mono_ms() >= until)
            return ETIMEDOUT;
    }
}

int stdio_fd_send(int s, const void *msg, size_t len, const int *fds,
                  size_t n, int64_t until)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * STDIO_FDPASS_MAX)];
    } u;
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t w;
    int e;

    if (n > STDIO_FDPASS_MAX)
        return EINVAL;
    memset(&u, 0, sizeof u);
    if (n > 0) {
        struct cmsghdr *c;
        mh.msg_control = u.b;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    }
    for (;;) {
        w = sendmsg(s, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w == (ssize_t)len)
            return 0;
        if (w >= 0)
            return EPROTO; /* a packet goes whole or not at all */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno; /* EPIPE: the other end is gone */
        if ((e = wait_ready(s, POLLOUT, until)) != 0)
            return e;
    }
}

int stdio_fd_recv(int s, void *msg, size_t len, int *fds, size_t n,
                  int64_t until)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * STDIO_FDPASS_MAX)];
    } u;
    struct iovec iov = {.iov_base = msg, .iov_len = len};
    struct msghdr mh;
    struct cmsghdr *c;
    size_t got = 0;
    ssize_t r;
    int e = 0;

    for (size_t i = 0; i < n; i++)
        fds[i] = -1;
    for (;;) {
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = u.b;
        mh.msg_controllen = sizeof u.b;
        r = recvmsg(s, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r >= 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno;
        if ((e = wait_ready(s, POLLIN, until)) != 0)
            return e;
    }
    /* Take every descriptor that came, so none is left open whatever
     * else is wrong with the message. */
    for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        size_t k;
        int *p = (int *)CMSG_DATA(c);
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, p + i, sizeof fd);
            if (got < n)
                fds[got++] = fd;
            else
                close(fd);
        }
    }
    if (r == 0)
        e = EPIPE; /* end of file: the other end shut down or closed */
    else if ((size_t)r != len || (mh.msg_flags & MSG_TRUNC))
        e = EPROTO;
    else if (mh.msg_flags & MSG_CTRUNC)
        /* The kernel could not install them all in our table (we never
         * send more than the receiver takes): out of descriptors. */
        e = EMFILE;
    if (e != 0) {
        for (size_t i = 0; i < n; i++)
            if (fds[i] >= 0) {
                close(fds[i]);
                fds[i] = -1;
            }
        return e;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The spawner thread's side                                          */
/* ------------------------------------------------------------------ */

/* The spawner's reply waits this long for room on the socket (only
 * replies nobody read can fill it). */
#define REPLY_WAIT_MS 5000

/* Opener to spawner; with it, the App's three pipe ends. */
struct spawn_req {
    uint64_t seq;
    char title[64]; /* the supervisor's process title (package) */
};

/* Spawner to opener; with it, when rc is 0: the status pipe's read end,
 * the lifeline's write end and, with a cgroup, its cgroup.kill. */
struct spawn_rep {
    uint64_t seq;      /* the request's */
    int rc;            /* 0 or the errno of step */
    unsigned nfds;     /* descriptors sent along */
    pid_t pid;         /* the supervisor, when rc is 0 */
    bool cg;           /* ... in cgroup cg_name under the cgroup directory */
    const char *step;  /* static text, on failure */
    char cg_name[64];
};

/* One request on the spawner's socket s: the App's three pipe ends come
 * in, the supervisor is spawned, what the opener needs goes back, and
 * the spawner's own copies are closed.  false at end of file (destroy),
 * or once destroy began after an error. */
static bool serve_one(struct stdio_spawner *sp, int s)
{
    struct stdio_exec_job j;
    struct spawn_req q;
    struct spawn_rep r;
    int in[3], out[3];
    unsigned n = 0;
    bool live;
    int e;

    memset(&j, 0, sizeof j);
    e = stdio_fd_recv(s, &q, sizeof q, in, 3, -1);
    if (e == EPIPE)
        return false;
    if (e != 0 && e != EMFILE) {
        /* No request came whole, so there is none to answer (its opener
         * times out); never spin on an error that stays. */
        struct timespec ts = {0, 10 * 1000000L};
        pthread_mutex_lock(&sp->mu);
        live = !sp->stop;
        pthread_mutex_unlock(&sp->mu);
        nanosleep(&ts, NULL);
        return live;
    }
    pthread_mutex_lock(&sp->mu);
    live = sp->live == q.seq;
    pthread_mutex_unlock(&sp->mu);
    if (!live) { /* its opener gave up: start nothing */
        for (int i = 0; i < 3; i++)
            stdio_close_fd(&in[i]);
        return true;
    }
    memset(&r, 0, sizeof r);
    r.seq = q.seq;
    r.step = "receive the App's pipes on the spawner thread";
    if (e == EMFILE) {
        r.rc = EMFILE; /* they did not fit in our table */
    } else if (in[2] < 0) {
        r.rc = EPROTO;
        for (int i = 0; i < 3; i++)
            stdio_close_fd(&in[i]);
    } else {
        q.title[sizeof q.title - 1] = '\0';
        j.title = q.title;
        j.fd_in = in[0];
        j.fd_out = in[1];
        j.fd_err = in[2];
        r.rc = stdio_job_start(sp, &j);
        r.step = j.step;
        for (int i = 0; i < 3; i++) /* the supervisor has its own now */
            stdio_close_fd(&in[i]);
    }
    if (r.rc == 0) {
        r.pid = j.pid;
        out[n++] = j.st_r;
        out[n++] = j.life_w;
        if (j.a.cg_dir >= 0) {
            r.cg = true;
            memcpy(r.cg_name, j.a.cg_name, sizeof r.cg_name);
            out[n++] = j.a.cg_kill;
        }
    }
    r.nfds = n;
    AUR_PERTURB("stdio.spawner.reply");
    e = stdio_fd_send(s, &r, sizeof r, out, n,
                      stdio_mono_ms() + REPLY_WAIT_MS);
    if (r.rc == 0 && e != 0) {
        /* Nobody will hear of this supervisor.  It never got its frame,
         * so it never forked the App. */
        stdio_kill_reap(j.pid);
        stdio_job_close(&j); /* and its cgroup goes */
    } else if (r.rc == 0) {
        stdio_job_drop(&j);
    }
    return true;
}

/* The spawner thread: its own table first, then one request after the
 * other until destroy shuts the socket. */
static void *spawner_main(void *arg)
{
    struct stdio_spawner *sp = arg;
    int keep[2] = {sp->sock_sp, sp->cg_base};
    bool own;

    (void)pthread_setname_np(pthread_self(), "aur-spawner");
    own = stdio_fd_own_table(keep, sp->cg_base >= 0 ? 2 : 1);
    pthread_mutex_lock(&sp->mu);
    sp->cg_own = keep[1];
    sp->own_table = own;
    sp->ready = true;
    pthread_cond_broadcast(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
    while (serve_one(sp, keep[0]))
        ;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The opening thread's side                                          */
/* ------------------------------------------------------------------ */

/* A reply nobody will use: its opener gave up, or its descriptors did
 * not all arrive.  Its supervisor never got a frame, so it never forked
 * an App: it is killed and reaped, its cgroup removed, what came closed. */
static void discard(struct stdio_spawner *sp, struct spawn_rep *r, int *got)
{
    struct stdio_contain ct;

    stdio_contain_clear(&ct);
    if (r->rc == 0 && r->cg && sp->cg_base >= 0) {
        ct.cg_dir = sp->cg_base;
        ct.cg_kill = got[2];
        got[2] = -1;
        memcpy(ct.cg_name, r->cg_name, sizeof ct.cg_name);
        ct.cg_name[sizeof ct.cg_name - 1] = '\0';
    }
    for (int i = 0; i < 3; i++)
        stdio_close_fd(&got[i]);
    if (r->rc == 0 && r->pid > 0)
        stdio_kill_reap(r->pid);
    if (ct.cg_dir >= 0)
        stdio_contain_release(&ct, stdio_mono_ms() + STDIO_DEATH_MS);
}

/* Wait on sp->cv (mu held) until until (stdio_mono_ms): false once it
 * passed. */
static bool timed_wait(struct stdio_spawner *sp, int64_t until)
{
    int64_t left = until - stdio_mono_ms();
    struct timespec ts;

    if (left <= 0)
        return false;
    aur__mono_deadline(&ts, left > 60000 ? 60000 : left);
    pthread_cond_timedwait(&sp->cv, &sp->mu, &ts);
    return true;
}

/* The thread starts on the first spawn, with every signal blocked so
 * no host handler runs in a child before its dispositions are reset;
 * its socket is made first, so that its table has a copy.  mu held. */
static int ensure_thread(struct stdio_spawner *sp, const char **step)
{
    int sv[2], rc;

    if (sp->running)
        return 0;
    *step = "create the spawner thread's socket";
    if (sp->sock < 0) {
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
            return errno;
        sp->sock = sv[0];
        sp->sock_sp = sv[1];
    }
    *step = "start the spawner thread";
    rc = aur__thread_start(&sp->thread, spawner_main, sp);
    if (rc == 0)
        sp->running = true;
    return rc;
}

/* Take the socket: the thread running and set up, no other opener
 * between its request and its reply.  0 (*seq set) or an errno.  mu
 * held. */
static int take_socket(struct stdio_spawner *sp, struct stdio_exec_job *j,
                       int64_t until, uint64_t *seq)
{
    int e = ensure_thread(sp, &j->step);

    if (e != 0)
        return e;
    j->step = "start the spawner thread";
    while (!sp->ready)
        if (!timed_wait(sp, until))
            return ETIMEDOUT;
    if (sp->own_table)
        stdio_close_fd(&sp->sock_sp); /* its own copy is the one it uses */
    j->step = "wait for the spawner thread";
    while (sp->busy)
        if (!timed_wait(sp, until))
            return ETIMEDOUT;
    sp->busy = true;
    *seq = sp->live = ++sp->seq;
    return 0;
}

int stdio_spawner_exchange(struct stdio_spawner *sp,
                           struct stdio_exec_job *j, int64_t until)
{
    const int fds[3] = {j->fd_in, j->fd_out, j->fd_err};
    struct spawn_req q;
    struct spawn_rep r;
    uint64_t seq = 0;
    int got[3], e;

    pthread_mutex_lock(&sp->mu);
    e = take_socket(sp, j, until, &seq);
    pthread_mutex_unlock(&sp->mu);
    if (e != 0)
        return e;
    memset(&q, 0, sizeof q);
    q.seq = seq;
    snprintf(q.title, sizeof q.title, "%s", j->title ? j->title : "");
    j->step = "pass the App's pipes to the spawner thread";
    e = stdio_fd_send(sp->sock, &q, sizeof q, fds, 3, until);
    AUR_PERTURB("stdio.spawner.request");
    while (e == 0) {
        j->step = "receive the supervisor's descriptors from the spawner "
                  "thread";
        e = stdio_fd_recv(sp->sock, &r, sizeof r, got, 3, until);
        if ((e == 0 || e == EMFILE) && r.seq != seq) {
            discard(sp, &r, got); /* a start given up on before */
            e = 0;
            continue;
        }
        if (e == 0 && r.rc != 0) {
            e = r.rc;
            j->step = r.step ? r.step : "spawn the supervisor";
        } else if (e == 0 && (r.nfds != (r.cg ? 3u : 2u) ||
                              got[r.nfds - 1] < 0 ||
                              (r.cg && sp->cg_base < 0))) {
            e = EPROTO;
            discard(sp, &r, got);
        } else if (e == EMFILE) {
            discard(sp, &r, got); /* not all fit in our table */
        } else if (e == 0) {
            j->pid = r.pid;
            j->st_r = got[0];
            j->life_w = got[1];
            if (r.cg) {
                j->a.cg_kill = got[2];
                j->a.cg_dir = sp->cg_base; /* borrowed */
                memcpy(j->a.cg_name, r.cg_name, sizeof j->a.cg_name);
                j->a.cg_name[sizeof j->a.cg_name - 1] = '\0';
            }
        }
        break;
    }
    pthread_mutex_lock(&sp->mu);
    sp->busy = false;
    sp->live = 0; /* a reply still to come is discarded by its reader */
    pthread_cond_broadcast(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
    return e;
}

void stdio_spawner_halt(struct stdio_spawner *sp)
{
    pthread_mutex_lock(&sp->mu);
    sp->stop = true;
    pthread_mutex_unlock(&sp->mu);
    if (sp->running) {
        struct spawn_rep r;
        int got[3];
        int e;
        /* End of file for the thread, after any request still queued
         * (whose opener is gone: it starts nothing for those). */
        shutdown(sp->sock, SHUT_WR);
        pthread_join(sp->thread, NULL);
        sp->running = false;
        /* Replies nobody read. */
        while ((e = stdio_fd_recv(sp->sock, &r, sizeof r, got, 3, 0)) == 0 ||
               e == EMFILE)
            discard(sp, &r, got);
    }
    stdio_close_fd(&sp->sock);
    stdio_close_fd(&sp->sock_sp);
}

/* ------------------------------------------------------------------ */
/* The spawner thread's own table                                     */
/* ------------------------------------------------------------------ */

static bool is_kept(int fd, const int *keep, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (keep[i] == fd)
            return true;
    return false;
}

/* Close lo..hi in the calling thread's table: close_range, or a loop
 * where it is refused (before Linux 5.9, or a seccomp filter). */
static void close_span(long lo, long hi)
{
    if (lo > hi)
        return;
    if (syscall(SYS_close_range, (unsigned)lo, (unsigned)hi, 0u) == 0)
        return;
    for (long fd = lo; fd <= hi; fd++)
        close((int)fd);
}

/* The size of the calling thread's descriptor table ("FDSize" of
 * /proc/thread-self/status): no descriptor is at or above it.  Without
 * /proc, the hard RLIMIT_NOFILE up to the kernel's default fs.nr_open
 * (descriptors above a limit lowered since are missed then). */
static long table_size(void)
{
    char buf[4096], *p;
    long size = -1;
    struct rlimit rl;
    ssize_t n = -1;
    int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
    }
    if (n > 0) {
        buf[n] = '\0';
        if ((p = strstr(buf, "\nFDSize:")) != NULL)
            size = strtol(p + 8, NULL, 10);
    }
    if (size > 0)
        return size;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
        rl.rlim_max < (1L << 20))
        return (long)rl.rlim_max;
    return 1L << 20;
}

bool stdio_fd_own_table(int *keep, size_t n)
{
    int hi = 2;

#ifdef FDPASS_TSAN
    /* ThreadSanitizer tracks descriptors by number, process-wide: in a
     * table of our own the same numbers are other files, and it would
     * report our closes as races with the host's reads.  TSan builds
     * keep the shared table (the protocol is the same). */
    (void)keep;
    (void)n;
    return false;
#endif
    for (size_t i = 0; i < n; i++)
        if (keep[i] > hi)
            hi = keep[i];
    /* One call: unshare, copying only 0..hi, where close_range exists
     * and is allowed; else unshare and close above hi one by one. */
    if (syscall(SYS_close_range, (unsigned)hi + 1, ~0u,
                CLOSE_RANGE_UNSHARE) != 0) {
        if (unshare(CLONE_FILES) != 0)
            return false; /* still the host's table: nothing changed */
        close_span(hi + 1, table_size() - 1);
    }
    /* From here on the table is ours: close what the host had below hi
     * (other Apps' pipe ends among them: a copy of a write end would
     * keep its reader from ever seeing end of file). */
    for (int fd = 0, lo = 0; fd <= hi + 1; fd++)
        if (fd == hi + 1 || is_kept(fd, keep, n)) {
            close_span(lo, fd - 1);
            lo = fd + 1;
        }
    /* What we keep goes to the lowest numbers from 3 up: the supervisor's
     * copy of this table is only as large as its highest descriptor. */
    for (size_t i = 0; i < n; i++) {
        int low = fcntl(keep[i], F_DUPFD_CLOEXEC, 3);
        if (low < 0)
            continue; /* keep it where it is */
        if (low < keep[i] || keep[i] <= 2) {
            close(keep[i]);
            keep[i] = low;
        } else {
            close(low);
        }
    }
    /* 0, 1 and 2: /dev/null, not the host's standard streams.  A copy of
     * those would be held for the plugin's life (a host that closes or
     * redirects its stdout to signal end of file would no longer
     * manage), and received descriptors would land on them.  The
     * supervisor starts with these three and replaces them before the
     * App is forked.  Nothing this thread writes to stderr is seen, which
     * is nothing (it never logs).  Without /dev/null they stay closed,
     * which the supervisor handles as well. */
    {
        int nul = open("/dev/null", O_RDWR);
        if (nul == 0) {
            (void)dup2(0, 1);
            (void)dup2(0, 2);
        } else if (nul > 0) {
            close(nul);
        }
    }
    return true;
}
