/*
 * stdio_config.c - the [stdio] section of an App file, as this transport
 * owns it (ABI 1.4): its keys, the check of its values when the host is
 * created, the paths it resolves against the config directory, and the
 * checks `aurora-mcp doctor` runs without starting the App.
 *
 * Rules (docs/transports.md): command is a bare name looked up on PATH
 * (execvp's rule) or a path, read against the config directory when
 * relative; working_dir is relative to the config directory and stays in
 * it, symbolic links included (the host's cfg_path); each env names a
 * variable the App may inherit: the grammar, never twice, and never one
 * of the denylist (lib/aurx/env_rule.c), which can make a loader or an
 * interpreter run foreign code.  A value is never logged or put in an
 * error: names only.
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "env_rule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const stdio_words[] = {"stdio", NULL};

const struct aur_cfg_key stdio_keys[] = {
    {"command", 1, 0},
    {"arg", 0, 1},
    {"working_dir", 1, 0},
    {"env", 0, 1},
    {NULL, 0, 0},
};

int stdio_paths(const struct aur_host *h, const struct aur_cfg *ep,
                char **command, char **cwd, struct aur_error *err)
{
    const char *dir = h->cfg_str(ep, "config_dir", NULL);
    const char *cmd = h->cfg_str(ep, "command", "");

    *command = *cwd = NULL;
    /* A name with a '/' is a path, read against the config directory
     * wherever the host runs; a bare name goes through PATH. */
    if (dir && strchr(cmd, '/') && cmd[0] != '/') {
        while (cmd[0] == '.' && cmd[1] == '/')
            for (cmd += 2; *cmd == '/';)
                cmd++;
        if (asprintf(command, "%s/%s", dir, cmd) < 0)
            *command = NULL;
    } else {
        *command = strdup(cmd);
    }
    if (!*command)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    if (!h->cfg_count(ep, "working_dir"))
        return AUR_OK;
    /* The directory the App runs in: no link may lead it out. */
    *cwd = h->cfg_path(ep, "working_dir", SIZE_MAX, AUR_PATH_CONFINED, err);
    return *cwd ? AUR_OK : err->code;
}

static int check_env(const struct aur_host *h, const struct aur_cfg *ep,
                     struct aur_error *err)
{
    size_t n = h->cfg_count(ep, "env");

    for (size_t i = 0; i < n; i++) {
        const char *v = h->cfg_str_at(ep, "env", i);
        const struct aur__env_deny *deny;
        if (!aur__valid_env_name(v))
            return h->cfg_fail(ep, "env", i, err,
                               "must be an environment variable name "
                               "[A-Za-z_][A-Za-z0-9_]*");
        if ((deny = aur__env_deny_row(v)))
            return h->cfg_fail(ep, "env", i, err,
                               "%s can make the App's loader or "
                               "interpreter run foreign code (%s: %s); it "
                               "is never passed to an App",
                               v, deny->family, deny->why);
        for (size_t j = 0; j < i; j++)
            if (strcmp(h->cfg_str_at(ep, "env", j), v) == 0)
                return h->cfg_fail(ep, "env", i, err,
                                   "%s listed twice (first on line %d)", v,
                                   h->cfg_line(ep, "env", j));
    }
    return AUR_OK;
}

int stdio_check(void *state, const struct aur_cfg *ep, int active,
                struct aur_error *err)
{
    const struct aur_host *h = ((struct stdio_state *)state)->host;
    char *command, *cwd;
    struct stat st;
    size_t n = h->cfg_count(ep, "arg");
    int rc;

    if (!*h->cfg_str(ep, "command", ""))
        return h->cfg_fail(ep, "command", SIZE_MAX, err, "must not be blank");
    for (size_t i = 0; i < n; i++)
        if (!*h->cfg_str_at(ep, "arg", i))
            return h->cfg_fail(ep, "arg", i, err, "must not be blank");
    if ((rc = check_env(h, ep, err)) != AUR_OK)
        return rc;
    rc = stdio_paths(h, ep, &command, &cwd, err);
    if (rc != AUR_OK)
        ; /* err says it, at its line */
    else if (active && cwd && stat(cwd, &st) != 0)
        rc = h->cfg_fail(ep, "working_dir", SIZE_MAX, err,
                         "directory %s does not exist",
                         h->cfg_str(ep, "working_dir", ""));
    else if (active && cwd && !S_ISDIR(st.st_mode))
        rc = h->cfg_fail(ep, "working_dir", SIZE_MAX, err,
                         "%s is not a directory",
                         h->cfg_str(ep, "working_dir", ""));
    free(command);
    free(cwd);
    return rc;
}

/* The command as execvp would find it: a path, or the first executable
 * file of that name on PATH.  NULL, or why not (in why). */
static const char *command_problem(const char *cmd, char *why, size_t size)
{
    const char *path = getenv("PATH");
    struct stat st;

    if (strchr(cmd, '/')) {
        if (stat(cmd, &st) != 0)
            snprintf(why, size, "%s: %s", cmd, strerror(errno));
        else if (!S_ISREG(st.st_mode) || access(cmd, X_OK) != 0)
            snprintf(why, size, "%s is not an executable file", cmd);
        else
            return NULL;
        return why;
    }
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char full[4096];
        snprintf(full, sizeof full, "%.*s/%s", (int)(n ? n : 1),
                 n ? p : ".", cmd);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
            access(full, X_OK) == 0)
            return NULL;
        p += n + (end ? 1 : 0);
        if (!end)
            break;
    }
    snprintf(why, size, "%s is not found on PATH", cmd);
    return why;
}

void stdio_preflight(void *state, const struct aur_cfg *ep,
                     void (*report)(void *ctx, const char *check,
                                    const char *problem),
                     void *ctx)
{
    const struct aur_host *h = ((struct stdio_state *)state)->host;
    char *command, *cwd, why[512];
    struct aur_error err;
    size_t n = h->cfg_count(ep, "env");

    if (stdio_paths(h, ep, &command, &cwd, &err) == AUR_OK)
        report(ctx, "command", command_problem(command, why, sizeof why));
    else
        report(ctx, "command", err.msg);
    free(command);
    free(cwd);
    for (size_t i = 0; i < n; i++) {
        const char *v = h->cfg_str_at(ep, "env", i);
        char what[160];
        snprintf(what, sizeof what, "env %s", v);
        report(ctx, what, getenv(v) ? NULL : "not set in this environment");
    }
}
