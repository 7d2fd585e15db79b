/*
 * stdio_supervisor.c - main() of "aur-contain", the per-App supervisor
 * program (stdio_contain.c says what it does).
 *
 * It used to be a fork of the host that never exec'd.  Every such fork
 * copied the host's page tables and made every page the host wrote
 * afterwards a copy-on-write fault, so each App's start cost more than
 * the one before (docs/benchmarks.md), and the fork had to give the
 * host's memory back and live by async-signal-safe calls alone.  Now the
 * host starts it with posix_spawn, which shares the host's memory only
 * until this program is exec'd.  Descriptor numbers and the process
 * title come on the command line; the App's command line, environment
 * and directory come over the lifeline as one frame (stdio_int.h), so
 * nothing secret is ever in our own command line or environment, and
 * our environment is empty (no LD_PRELOAD of the App's reaches us).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int num(const char *s, long *out)
{
    char *end;

    errno = 0;
    *out = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' ? 0 : EINVAL;
}

/* Exactly n bytes from fd.  0 or an errno (EPIPE at an early end). */
static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;

    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? EPIPE : errno;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The next NUL-ended field of the frame [*p, end), or NULL. */
static const char *field(const char **p, const char *end)
{
    const char *s = *p, *z = memchr(s, '\0', (size_t)(end - s));

    if (!z)
        return NULL;
    *p = z + 1;
    return s;
}

/* A count field, then that many fields into a NULL-ended vector. */
static char **vector(const char **p, const char *end)
{
    const char *c = field(p, end);
    long n;
    char **v;

    if (!c || num(c, &n) != 0 || n < 0 || n > (long)(end - *p))
        return NULL;
    if (!(v = calloc((size_t)n + 1, sizeof *v)))
        return NULL;
    for (long i = 0; i < n; i++)
        if (!(v[i] = (char *)field(p, end))) {
            free(v);
            return NULL;
        }
    return v;
}

/* The frame from the lifeline into a (pointers into *buf).  0 or an
 * errno. */
static int read_frame(struct stdio_shim_args *a, char **buf)
{
    uint32_t len;
    const char *p, *end, *req;
    int e;

    if ((e = read_all(a->fd_life, &len, sizeof len)) != 0)
        return e;
    if (len == 0 || len > STDIO_FRAME_MAX)
        return E2BIG;
    if (!(*buf = malloc(len)))
        return ENOMEM;
    if ((e = read_all(a->fd_life, *buf, len)) != 0)
        return e;
    p = *buf;
    end = *buf + len;
    if (!(a->path = field(&p, end)) || !(a->cwd = field(&p, end)) ||
        !(req = field(&p, end)) || !(a->argv = vector(&p, end)) ||
        !(a->envp = vector(&p, end)))
        return EINVAL;
    if (!a->cwd[0])
        a->cwd = NULL;
    a->cg_required = strcmp(req, "1") == 0;
    return 0;
}

/* The command line becomes "aur-contain" "<title>" (ps,
 * /proc/<pid>/cmdline), the thread name "aur-contain": the descriptor
 * numbers after it say nothing to a reader. */
static void set_title(int argc, char **argv, const char *title)
{
    char *lo = argv[0], *hi = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
    size_t room = (size_t)(hi - lo), n = 0;
    static const char head[] = "aur-contain";

    stdio_shim_prctl(PR_SET_NAME, (unsigned long)"aur-contain");
    for (size_t i = 0; i < sizeof head && n < room; i++)
        lo[n++] = head[i]; /* with its NUL */
    for (size_t i = 0; title[i] && n < room; i++)
        lo[n++] = title[i];
    memset(lo + n, 0, room - n);
}

int main(int argc, char **argv)
{
    struct stdio_shim_args a;
    long v[10];
    char *buf = NULL;
    int e;

    memset(&a, 0, sizeof a);
    if (argc != 13 || strlen(argv[12]) >= sizeof a.cg_name)
        return 127; /* not started by transport-stdio */
    for (int i = 0; i < 10; i++)
        if (num(argv[i + 2], &v[i]) != 0 || v[i] < -1 || v[i] > INT32_MAX)
            return 127;
    a.host = (pid_t)v[0];
    a.fd_in = (int)v[1];
    a.fd_out = (int)v[2];
    a.fd_err = (int)v[3];
    a.fd_status = (int)v[4];
    a.fd_life = (int)v[5];
    a.cg_procs = (int)v[6];
    a.cg_kill = (int)v[7];
    a.cg_events = (int)v[8];
    a.cg_dir = (int)v[9];
    if (a.fd_status < 0 || a.fd_life < 0)
        return 127;
    snprintf(a.title, sizeof a.title, "%s", argv[1]);
    memcpy(a.cg_name, argv[12], strlen(argv[12]) + 1);
    /* Everything that needs no frame first: a start prepared before
     * its open waits for the frame here, ready to fork at once. */
    stdio_shim_setup(&a);
    if ((e = read_frame(&a, &buf)) != 0) {
        stdio_shim_abandon(&a);
        while (write(a.fd_status, &e, sizeof e) < 0 && errno == EINTR)
            ;
        return 127;
    }
    set_title(argc, argv, a.title);
    stdio_shim_main(&a);
}
