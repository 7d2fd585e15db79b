/*
 * path_rule.c - paths in an App file stay in the config directory
 * (path_rule.h).  A component that exists is resolved, so a symbolic link
 * cannot lead out; one that does not exist yet is taken as written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* realpath(p, NULL) */
#endif
#include "path_rule.h"

#include <aurora/aur_plugin.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *aur__path_join(const char *dir, const char *rel)
{
    size_t a = strlen(dir), b = strlen(rel);
    char *p = malloc(a + b + 2);

    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, rel, b + 1);
    }
    return p;
}

const char *aur__rel_path_problem(char *path)
{
    char *p;
    const char *seg;

    for (p = path; *p; p++)
        if (*p == '\\')
            *p = '/';
    if (*path == '\0')
        return "must not be blank";
    if (*path == '/')
        return "must be a relative path";
    if (((path[0] >= 'A' && path[0] <= 'Z') ||
         (path[0] >= 'a' && path[0] <= 'z')) &&
        path[1] == ':')
        return "must not start with a drive letter";
    for (seg = path; seg; seg = strchr(seg, '/'), seg = seg ? seg + 1 : NULL)
        if (seg[0] == '.' && seg[1] == '.' && (seg[2] == '/' || !seg[2]))
            return "must not contain a '..' segment";
    return NULL;
}

static bool inside(const char *root, const char *p)
{
    size_t n = strlen(root);

    if (strcmp(root, "/") == 0)
        return true;
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/*
 * Resolve root/rel component by component: every existing component goes
 * through realpath (so symlinks are followed), the first missing one and
 * what follows are appended as written ('.' and empty segments dropped).
 * A dangling symlink cannot be proved to stay inside: *why says so.
 * Returns AUR_OK with *out, AUR_E_NOMEM, or AUR_E_CONFIG with *why.
 */
int aur__resolve_under(const char *root, const char *rel, char **out,
                       const char **why)
{
    char *cur = strdup(root), *copy = strdup(rel), *save = NULL, *seg;
    bool missing = false;
    int rc = AUR_OK;

    if (!cur || !copy) {
        rc = AUR_E_NOMEM;
        goto out;
    }
    for (seg = strtok_r(copy, "/", &save); seg;
         seg = strtok_r(NULL, "/", &save)) {
        char *next, *real;
        struct stat st;
        if (strcmp(seg, ".") == 0)
            continue;
        next = aur__path_join(cur, seg);
        if (!next) {
            rc = AUR_E_NOMEM;
            goto out;
        }
        if (missing || lstat(next, &st) != 0) {
            missing = true;
            free(cur);
            cur = next;
            continue;
        }
        real = realpath(next, NULL);
        free(next);
        if (!real) {
            /* lstat saw it, so it is a link that leads nowhere (or we
             * may not look): it cannot be shown to stay inside. */
            if (errno == ENOMEM) {
                rc = AUR_E_NOMEM;
            } else {
                rc = AUR_E_CONFIG;
                *why = "cannot be resolved (dangling or looping symbolic "
                       "link?)";
            }
            goto out;
        }
        free(cur);
        cur = real;
        if (!inside(root, cur)) {
            rc = AUR_E_CONFIG;
            *why = "resolves outside the config directory (symbolic link)";
            goto out;
        }
    }
    *out = cur;
    cur = NULL;
out:
    free(cur);
    free(copy);
    return rc;
}
