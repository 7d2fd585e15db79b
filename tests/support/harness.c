#define _GNU_SOURCE 1
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void mkdirs(const char *path)
{
    char *p = strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    }
    mkdir(p, 0755);
    free(p);
}

void h_write(const char *dir, const char *rel, const char *text)
{
    char *path, *slash;
    FILE *f;
    ck_assert(asprintf(&path, "%s/%s", dir, rel) > 0);
    slash = strrchr(path, '/');
    *slash = '\0';
    mkdirs(path);
    *slash = '/';
    f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    free(path);
}

char *h_bin(const char *rel)
{
    char *p;
    ck_assert(asprintf(&p, "%s/%s", AUR_TEST_BIN_DIR, rel) > 0);
    return p;
}

char *h_src(const char *rel)
{
    char *p;
    ck_assert(asprintf(&p, "%s/%s", AUR_TEST_SRC_DIR, rel) > 0);
    return p;
}

char *h_mkconfig(const char *extra_host, const char *mcp)
{
    char tmpl[] = "/tmp/aur-test-XXXXXX", *dir, *text;
    ck_assert(mkdtemp(tmpl) != NULL);
    dir = strdup(tmpl);
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = warn\n"
                       "%s\n"
                       "[mcp]\n"
                       "%s\n",
                       AUR_TEST_BIN_DIR, extra_host ? extra_host : "",
                       mcp ? mcp : "enabled = true") > 0);
    h_write(dir, "host.ini", text);
    free(text);
    return dir;
}

void h_add_app(const char *dir, const char *file, const char *package,
               double timeout_s, const char *app_extra, const char *command,
               const char *const *args)
{
    size_t len = 0;
    char *text = NULL, *rel;
    FILE *f = open_memstream(&text, &len);
    fprintf(f,
            "[app]\npackage = %s\nenabled = true\ntransport = stdio\n"
            "timeout_seconds = %g\n%s\n[stdio]\ncommand = %s\n",
            package, timeout_s, app_extra ? app_extra : "", command);
    for (size_t i = 0; args && args[i]; i++)
        fprintf(f, "arg = %s\n", args[i]);
    fprintf(f, "working_dir = .\n");
    fclose(f);
    ck_assert(asprintf(&rel, "apps.d/%s", file) > 0);
    h_write(dir, rel, text);
    free(rel);
    free(text);
}

char *h_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;
    if (!f)
        return NULL;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(m);
    fclose(f);
    return buf;
}

int h_first_line(const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int i = 0, found = -1;
    if (!f)
        return -1;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            found = i;
            break;
        }
        i++;
    }
    free(line);
    fclose(f);
    return found;
}

int h_count_lines(const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    if (!f)
        return 0;
    while (getline(&line, &cap, f) > 0)
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
    free(line);
    fclose(f);
    return n;
}

int h_procs_with(const char *marker)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char path[300], buf[8192], stat[512];
        FILE *f;
        size_t got;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        got = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[got] = '\0';
        char *rp = strrchr(stat, ')');
        if (rp && rp[1] == ' ' && rp[2] == 'Z')
            continue; /* a zombie is reaped by its parent, not leaked */
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < got; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[got] = '\0';
        if (strstr(buf, marker) && getpid() != atoi(e->d_name))
            n++;
    }
    closedir(d);
    return n;
}

void h_rmtree(const char *dir)
{
    char *cmd;
    if (strncmp(dir, "/tmp/aur-test-", 14) != 0)
        return;
    if (asprintf(&cmd, "rm -rf '%s'", dir) > 0) {
        if (system(cmd) != 0) {
            /* best effort */
        }
        free(cmd);
    }
}
