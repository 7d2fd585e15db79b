/*
 * stdio_cgtree.c - removing an App's cgroup together with any cgroups
 * below it (the supervisor's, stdio_contain.c, and the host's,
 * stdio_cgroup.c).
 *
 * The App runs as our user, and our user owns the App's cgroup: the App
 * may mkdir below it and move itself there.  rmdir of the App's cgroup
 * alone then fails with EBUSY for as long as those exist, which is for
 * good, and no later host's sweep could remove it either.  cgroup.kill of
 * the App's cgroup reaches every process below it, so once it is empty
 * the cgroups below are empty too and can go, deepest first.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The kernel allows cgroups about as deep as path names let them be; the
 * recursion here is bounded instead.  An App that nests deeper leaves its
 * cgroup behind, reported. */
#define CGTREE_DEPTH 16

/* Remove the cgroups below dir/name (not name itself), deepest first. */
static int remove_below(int dir, const char *name, int depth)
{
    int fd, e = 0;
    struct dirent *de;
    DIR *d;

    if (depth >= CGTREE_DEPTH)
        return ELOOP;
    fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno;
    d = fdopendir(fd);
    if (!d) {
        e = errno;
        close(fd);
        return e;
    }
    /* A cgroup's interface files are regular files; its children are
     * its only directories (cgroupfs fills in d_type). */
    while ((de = readdir(d)) != NULL) {
        int r;
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
            strcmp(de->d_name, "..") == 0)
            continue;
        r = remove_below(dirfd(d), de->d_name, depth + 1);
        if (r == 0 && unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) != 0 &&
            errno != ENOENT)
            r = errno;
        if (r != 0 && e == 0)
            e = r;
    }
    closedir(d);
    return e;
}

int stdio_cgroup_remove(int dir, const char *name)
{
    int e;

    /* The common case: nothing below it. */
    if (unlinkat(dir, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return 0;
    if (errno != EBUSY && errno != ENOTEMPTY)
        return errno;
    e = remove_below(dir, name, 0);
    if (e == ENOENT)
        e = 0;
    if (e == 0 && unlinkat(dir, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        e = errno;
    return e;
}
