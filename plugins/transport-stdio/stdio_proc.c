/*
 * stdio_proc.c - the supervisor's system-level helpers: reading /proc,
 * prctl, the clock (stdio_contain.c, stdio_descend.c, stdio_supervisor.c:
 * system calls and loops over the caller's buffers only); the clock and
 * the kill of a supervisor that never forked are the host side's too
 * (stdio_cgroup.c, stdio_exec.c, stdio_fdpass.c).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

size_t stdio_fmt_dec(char *buf, unsigned long v)
{
    char t[24];
    size_t n = 0, i;

    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (i = 0; i < n; i++)
        buf[i] = t[n - 1 - i];
    return n;
}

bool stdio_parse_num(const char **p, int base, unsigned long *out)
{
    const char *s = *p;
    unsigned long v = 0;

    for (;; s++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else
            break;
        v = v * (unsigned long)base + (unsigned long)d;
    }
    if (s == *p)
        return false;
    *p = s;
    *out = v;
    return true;
}

/* /proc/<pid>/stat of pid (0: self): the fields after "(comm) ", as a
 * NUL-terminated string in buf.  NULL if the process is gone. */
const char *stdio_read_stat(long pid, char *buf, size_t size)
{
    char path[40] = "/proc/";
    size_t n = 6;
    ssize_t got;
    char *rp;
    int fd;

    if (pid > 0)
        n += stdio_fmt_dec(path + n, (unsigned long)pid);
    else {
        memcpy(path + n, "self", 4);
        n += 4;
    }
    memcpy(path + n, "/stat", 6);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    do
        got = read(fd, buf, size - 1);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got <= 0)
        return NULL;
    buf[got] = '\0';
    rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' ? rp + 2 : NULL;
}

int64_t stdio_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int stdio_child_state(pid_t pid)
{
    siginfo_t si = {0};

    /* WNOWAIT: looked at, left to be reaped */
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return -1;
    return si.si_pid == 0 ? 1 : 0;
}

void stdio_kill_reap(pid_t pid)
{
    /* Only while it is still ours to reap, so its pid is still its own:
     * a child that was reaped elsewhere (an embedder that ignores SIGCHLD,
     * or reaps every child) left a pid another process may have now. */
    if (stdio_child_state(pid) < 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* prctl as the bare system call: a sanitizer's prctl interceptor keeps a
 * thread registry under a lock; the supervisor never needs it. */
int stdio_shim_prctl(int option, unsigned long arg)
{
    return (int)syscall(SYS_prctl, option, arg, 0UL, 0UL, 0UL);
}
