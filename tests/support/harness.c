/*
 * harness.c - config directories, host start and calls, file, process
 * and journal helpers for the real-host suites (see harness.h).
 */
#define _GNU_SOURCE 1
#include "harness.h"

#include <dirent.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
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

char *h_debug_host(const char *dir)
{
    char *hl, *ini;

    ck_assert(asprintf(&hl, "%s/host.log", dir) > 0);
    ck_assert(asprintf(&ini,
                       "[host]\nplugins = transport-stdio\n"
                       "plugin_dir = %s/plugins\njournal = data/world.sqlite3\n"
                       "log_file = %s\nlog_level = debug\n[mcp]\n"
                       "enabled = true\n",
                       AUR_TEST_BIN_DIR, hl) > 0);
    h_write(dir, "host.ini", ini);
    free(ini);
    return hl;
}

void h_fixture_env(char **dir, char **fixture, char **log)
{
    *dir = h_mkconfig(NULL, NULL);
    *fixture = h_bin("bin/aur-fixture-server");
    ck_assert(asprintf(log, "%s/server.log", *dir) > 0);
}

void h_fixture_env_free(char **dir, char **fixture, char **log)
{
    h_rmtree(*dir);
    free(*dir);
    free(*fixture);
    free(*log);
    *dir = *fixture = *log = NULL;
}

struct aur_mcp *h_fixture_host(const char *dir, const char *fixture,
                               const char *log, const char *package,
                               const char *ntools, bool create_only)
{
    const char *opts[] = {"--era", "modern", "--tools",
                          ntools ? ntools : "1", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;

    h_add_logged_app(dir, "a.ini", package, 5, NULL, fixture, NULL, log,
                     opts);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    if (!create_only)
        ck_assert_msg(aur_mcp_start(h, &serr, &err) == AUR_OK, "start: %s",
                      serr.message);
    return h;
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

void h_add_logged_app(const char *dir, const char *file, const char *package,
                      double timeout_s, const char *app_extra,
                      const char *command, const char *script,
                      const char *log, const char *const *opts)
{
    const char *args[40];
    size_t n = 0;

    if (script)
        args[n++] = script;
    args[n++] = "--log";
    args[n++] = log;
    for (size_t i = 0; opts && opts[i]; i++) {
        ck_assert_uint_lt(n, sizeof args / sizeof *args - 1);
        args[n++] = opts[i];
    }
    args[n] = NULL;
    h_add_app(dir, file, package, timeout_s, app_extra, command, args);
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
    return h_nth_line(path, prefix, 1);
}

int h_nth_line(const char *path, const char *prefix, int n)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int i = 0, found = -1;
    if (!f)
        return -1;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, prefix, strlen(prefix)) == 0 && --n == 0) {
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

int h_procs_with(const char *marker) { return h_signal_procs_with(marker, 0); }

int h_signal_procs_with(const char *marker, int sig)
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
        if (strstr(buf, marker) && getpid() != atoi(e->d_name) &&
            (sig == 0 || kill(atoi(e->d_name), sig) == 0))
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

void h_need_peers(const char *rel)
{
    char *path;
    ck_assert(asprintf(&path, "%s/tests/peers/node_modules/%s",
                       AUR_TEST_SRC_DIR, rel) > 0);
    ck_assert_msg(access(path, F_OK) == 0,
                  "run `npm ci` in tests/peers first (missing %s)", path);
    free(path);
}

int64_t h_now_ms(void)
{
    return slack_now_ms();
}

void h_read_line(int fd, char *buf, size_t size, int64_t ms)
{
    int64_t end = h_now_ms() + ms;
    size_t got = 0;

    buf[0] = '\0';
    while (got < size - 1 && !memchr(buf, '\n', got)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = end - h_now_ms();
        ssize_t r;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        r = read(fd, buf + got, size - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
    }
}

int h_spawn_port_peer(const char *const *argv, const char *errpath,
                      int64_t ms, pid_t *pid, int *in_w)
{
    char buf[128];
    int in[2], out[2], port = 0;

    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    *pid = fork();
    ck_assert_int_ge(*pid, 0);
    if (*pid == 0) {
        int fd = errpath ? open(errpath, O_WRONLY | O_CREAT | O_TRUNC,
                                0600)
                         : -1;
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (fd >= 0)
            dup2(fd, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    setpgid(*pid, *pid);
    close(in[0]);
    close(out[1]);
    *in_w = in[1];
    h_read_line(out[0], buf, sizeof buf, ms);
    close(out[0]);
    if (sscanf(buf, "PORT %d", &port) != 1 || port <= 0) {
        char *e = errpath ? h_slurp(errpath) : NULL;
        ck_abort_msg("no PORT line from %s: '%s' stderr: %s", argv[1], buf,
                     e ? e : "");
    }
    return port;
}

int64_t h_slack(int64_t ms)
{
    return slack_ms(ms);
}

int h_start(const char *dir, struct aur_mcp **h,
            struct aur_startup_error *serr)
{
    struct aur_error err;
    int rc;

    memset(serr, 0, sizeof *serr);
    *h = NULL;
    rc = aur_mcp_create(dir, NULL, h, serr, &err);
    ck_assert_msg(rc == AUR_OK, "create: %s", err.msg);
    return aur_mcp_start(*h, serr, &err);
}

enum aur_call_status h_call(struct aur_mcp *h, const char *tool,
                            const char *args, char **content)
{
    struct json_object *a = json_tokener_parse(args);
    struct aur_tool_output out = {.struct_size = sizeof out};
    enum aur_call_status s;

    ck_assert_msg(a != NULL, "arguments are not JSON: %s", args);
    aur_mcp_call_jsonc(h, tool, a, -1, &out);
    json_object_put(a);
    *content = strdup(out.content ? out.content : "");
    ck_assert_ptr_nonnull(*content);
    s = out.status;
    aur_tool_output_clear(&out);
    return s;
}

void h_expect(struct aur_mcp *h, const char *tool, const char *args,
              enum aur_call_status status, const char *content)
{
    char *c;
    enum aur_call_status s = h_call(h, tool, args, &c);
    ck_assert_msg(s == status, "%s: %s (%s)", tool, aur_call_status_word(s),
                  c);
    if (content)
        ck_assert_str_eq(c, content);
    free(c);
}

struct json_object *h_app_status(struct aur_mcp *h)
{
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *a = NULL;
    if (json_object_object_get_ex(st, "apps", &apps))
        a = json_object_get(json_object_array_get_idx(apps, 0));
    json_object_put(st);
    ck_assert_msg(a != NULL, "no App in the status document");
    return a;
}

const char *h_negotiated_version(struct aur_mcp *h)
{
    static char buf[32];
    struct json_object *a = h_app_status(h);
    const char *v = h_str(a, "negotiated_version");
    snprintf(buf, sizeof buf, "%s", v ? v : "");
    json_object_put(a);
    return buf;
}

bool h_wait_restart_required(struct aur_mcp *h, int ms)
{
    H_WAIT_UNTIL(aur_mcp_restart_required(h), ms, 20);
    return aur_mcp_restart_required(h);
}

const char *h_str(struct json_object *o, const char *key)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

struct kinds {
    int n;
    char k[16][64];
};

static void collect_kind(void *ud, const char *line)
{
    struct kinds *l = ud;
    struct json_object *o = json_tokener_parse(line), *v;
    ck_assert_msg(o != NULL, "journal line is not JSON");
    if (l->n < 16 && json_object_object_get_ex(o, "kind", &v))
        snprintf(l->k[l->n++], sizeof l->k[0], "%s", json_object_get_string(v));
    json_object_put(o);
}

void h_journal_is(const char *dir, const char *const *want)
{
    struct kinds l = {0};
    struct aur_error err;
    int n = 0;
    ck_assert_msg(aur_journal_dump(dir, 0, NULL, collect_kind, &l, &err) ==
                      AUR_OK,
                  "journal: %s", err.msg);
    for (; want[n]; n++) {
        ck_assert_int_gt(l.n, n);
        ck_assert_str_eq(l.k[n], want[n]);
    }
    ck_assert_int_eq(l.n, n);
}


static struct json_object *h_list(const char *const *v, size_t n)
{
    struct json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

char *h_scopes_json(const struct aur_tool_output *out)
{
    struct json_object *o;
    char *text;

    if (!out->observe && !out->publish)
        return NULL;
    ck_assert_ptr_nonnull(out->observe);
    ck_assert_ptr_nonnull(out->publish);
    o = json_object_new_object();
    json_object_object_add(o, "observe", h_list(out->observe, out->n_observe));
    json_object_object_add(o, "publish", h_list(out->publish, out->n_publish));
    text = strdup(json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return text;
}
