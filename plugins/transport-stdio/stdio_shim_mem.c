/*
 * stdio_shim_mem.c - the supervisor's name and memory (stdio_contain.c
 * forks it).  It renames itself so ps tells it from the host, and gives
 * back the host's memory it would otherwise pin (copy on write: every
 * page the host rewrites later would stay in it): every private
 * anonymous mapping goes except its own stack, each loaded object's .bss
 * (exact ranges the host read before the fork) and the top of the main
 * stack (the command line).  Like the rest of the supervisor it runs in
 * a fork of a multi-threaded process: system calls and loops over its
 * own stack only.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct vma {
    unsigned long lo, hi, inode;
    const char *perms, *name;
};

struct drop {
    unsigned long page;           /* the page size */
    unsigned long sp;             /* an address on our stack */
    unsigned long arg_lo, arg_hi; /* the command line */
    unsigned long prev_hi;        /* end of the last file mapping */
    const unsigned long (*bss)[2]; /* stdio_shim_args.bss (our stack) */
    size_t nbss;                  /* > STDIO_MAX_BSS: unknown */
    bool title_ok;                /* the command line is in rw memory */
    unsigned long r[128][2];      /* ranges to unmap */
    size_t nr;
};

static bool parse_vma(char *line, struct vma *v)
{
    const char *p = line;
    unsigned long off;

    if (!stdio_parse_num(&p, 16, &v->lo) || *p++ != '-' ||
        !stdio_parse_num(&p, 16, &v->hi) || *p++ != ' ')
        return false;
    v->perms = p;
    if (strlen(p) < 5 || p[4] != ' ')
        return false;
    p += 5;
    if (!stdio_parse_num(&p, 16, &off) || *p++ != ' ')
        return false;
    while (*p && *p != ' ') /* device */
        p++;
    if (*p++ != ' ' || !stdio_parse_num(&p, 10, &v->inode))
        return false;
    while (*p == ' ')
        p++;
    v->name = p;
    return true;
}

static void drop_one(struct drop *d, const struct vma *v)
{
    unsigned long keep = d->arg_lo & ~(d->page - 1); /* command line */
    bool rw_private = v->perms[0] == 'r' && v->perms[1] == 'w' &&
                      v->perms[3] == 'p';
    bool anon = v->inode == 0 &&
                (!v->name[0] || strcmp(v->name, "[heap]") == 0 ||
                 strcmp(v->name, "[stack]") == 0 ||
                 strncmp(v->name, "[anon:", 6) == 0);
    unsigned long lo = v->lo, hi = v->hi;
    bool after_file = v->lo == d->prev_hi; /* a .bss */

    d->prev_hi = v->inode != 0 ? v->hi : 0;
    if (rw_private && d->arg_lo >= v->lo && d->arg_hi <= v->hi &&
        d->arg_hi > d->arg_lo)
        d->title_ok = true;
    /* The top of the main thread's stack holds the command line and the
     * environment (/proc/<pid>/cmdline, environ): never unmapped, in
     * this pass or a later one, when it may no longer be "[stack]". */
    if (d->arg_hi > d->arg_lo && hi > keep && lo < d->arg_hi)
        hi = keep;
    if (!rw_private || !anon || hi <= lo || (d->sp >= lo && d->sp < hi) ||
        (after_file && d->nbss > STDIO_MAX_BSS))
        return;
    /* [lo, hi) less every .bss: a merged neighbour goes, the .bss stays. */
    while (lo < hi && d->nr < sizeof d->r / sizeof d->r[0]) {
        unsigned long end = hi;
        bool inside = false;
        for (size_t i = 0; i < d->nbss && i < STDIO_MAX_BSS; i++) {
            if (d->bss[i][0] <= lo && lo < d->bss[i][1]) {
                lo = d->bss[i][1];
                inside = true;
                break;
            }
            if (d->bss[i][0] > lo && d->bss[i][0] < end)
                end = d->bss[i][0];
        }
        if (inside)
            continue;
        d->r[d->nr][0] = lo;
        d->r[d->nr][1] = end;
        d->nr++;
        lo = end;
    }
}

/* Read /proc/self/maps, feeding drop_one every mapping. */
static bool maps_scan(struct drop *d)
{
    char buf[8192];
    size_t len = 0;
    bool skip = false;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    d->prev_hi = 0;
    d->nr = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        size_t start = 0;
        char *nl;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        while ((nl = memchr(buf + start, '\n', len - start)) != NULL) {
            struct vma v;
            *nl = '\0';
            if (!skip && parse_vma(buf + start, &v))
                drop_one(d, &v);
            skip = false;
            start = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
        if (len == sizeof buf - 1) { /* a line longer than buf: drop it */
            skip = true;
            len = 0;
        }
    }
    close(fd);
    return true;
}

/* The command-line range from /proc/self/stat (fields 48 and 49). */
static bool arg_range(unsigned long *lo, unsigned long *hi)
{
    char buf[1024];
    const char *p = stdio_read_stat(0, buf, sizeof buf);
    int field = 3; /* p starts at field 3, the state */
    unsigned long v;

    for (; p && *p; p++) {
        if (*p != ' ')
            continue;
        field++;
        if (field == 48 || field == 49) {
            const char *q = p + 1;
            if (!stdio_parse_num(&q, 10, &v))
                return false;
            if (field == 48)
                *lo = v;
            else {
                *hi = v;
                return true;
            }
        }
    }
    return false;
}

static void prepare(struct drop *d, unsigned long page)
{
    memset(d, 0, sizeof *d);
    d->page = page;
    if (!arg_range(&d->arg_lo, &d->arg_hi))
        d->arg_lo = d->arg_hi = 0;
}

/* prctl as the bare system call.  A sanitizer's prctl interceptor
 * records PR_SET_NAME in its thread registry under a lock that another
 * host thread may have held when we forked: the shim then waited forever
 * and the App's start timed out (seen under ASan, about one start in two
 * hundred while startup threads came and went).  */
int stdio_shim_prctl(int option, unsigned long arg)
{
    return (int)syscall(SYS_prctl, option, arg, 0UL, 0UL, 0UL);
}

/* argv becomes "aur-contain" "<package>" (ps, /proc/<pid>/cmdline), the
 * thread name "aur-contain". */
void stdio_shim_title(const char *title, unsigned long page)
{
    struct drop d;

    stdio_shim_prctl(PR_SET_NAME, (unsigned long)"aur-contain");
    prepare(&d, page);
    d.sp = 0;
    if (maps_scan(&d) && d.title_ok) {
        char *a = (char *)d.arg_lo;
        size_t room = d.arg_hi - d.arg_lo, n = 0;
        static const char head[] = "aur-contain";
        for (size_t i = 0; i < sizeof head && n < room; i++)
            a[n++] = head[i]; /* with its NUL */
        for (size_t i = 0; title[i] && n < room; i++)
            a[n++] = title[i];
        memset(a + n, 0, room - n);
        a[room - 1] = '\0';
    }
}

void stdio_shim_drop_memory(const struct stdio_shim_args *a)
{
    struct drop d;
    char here = 0;

    prepare(&d, a->page);
    d.sp = (unsigned long)&here;
    d.bss = a->bss; /* on the spawner's stack, which is ours: kept */
    d.nbss = a->nbss;
    /* A few passes: munmap while reading maps would skip lines. */
    for (int pass = 0; pass < 8 && maps_scan(&d) && d.nr > 0; pass++)
        for (size_t i = 0; i < d.nr; i++)
            munmap((void *)d.r[i][0], d.r[i][1] - d.r[i][0]);
}
