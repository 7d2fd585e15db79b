/*
 * fdlimit.c - see fdlimit.h.
 */
#define _GNU_SOURCE 1
#include "fdlimit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

bool aur__fd_exhausted(int e)
{
    return e == EMFILE || e == ENFILE;
}

/* fs.file-max, or -1.  Read with no descriptor to spare may fail: then
 * the message goes without the number. */
static long long file_max(void)
{
    char b[32];
    long long v = -1;
    ssize_t n;
    int fd = open("/proc/sys/fs/file-max", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n > 0) {
        b[n] = '\0';
        if (sscanf(b, "%lld", &v) != 1)
            v = -1;
    }
    return v;
}

const char *aur__fd_text(int e, char *buf, size_t size)
{
    struct rlimit rl;
    long long max;

    if (!buf || size == 0)
        return "";
    if (e == EMFILE) {
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            snprintf(buf, size, AUR__FD_WORDS " (EMFILE, limit %llu)",
                     (unsigned long long)rl.rlim_cur);
        else
            snprintf(buf, size, AUR__FD_WORDS " (EMFILE)");
    } else if (e == ENFILE) {
        if ((max = file_max()) >= 0)
            snprintf(buf, size,
                     AUR__FD_WORDS " (ENFILE, system-wide limit %lld)", max);
        else
            snprintf(buf, size, AUR__FD_WORDS " (ENFILE, system-wide limit)");
    } else {
        char eb[128];
        snprintf(buf, size, "%s", strerror_r(e, eb, sizeof eb));
    }
    return buf;
}

bool aur__fd_room(size_t n)
{
    struct rlimit rl;
    struct dirent *de;
    size_t open_now = 0;
    DIR *d;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return false;
    if (rl.rlim_cur == RLIM_INFINITY)
        return true;
    if (rl.rlim_cur <= n || !(d = opendir("/proc/self/fd")))
        return false;
    /* Bounded by the table: the entries are the open descriptors, the
     * directory's own among them, and "." and "..". */
    while ((de = readdir(d)) != NULL)
        open_now += de->d_name[0] != '.';
    closedir(d);
    return open_now + n <= rl.rlim_cur;
}
