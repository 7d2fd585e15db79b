/*
 * killpoints_trial.c - one attempt of a kill-point cell: a fresh config
 * directory, a host, the server that dies at the cell's point (the C
 * fixture over stdio, killpoint_https over HTTPS), the warm-up and the
 * target call, and the verdict of check_killpoints.c on what came back
 * and what the server recorded.
 */
#define _GNU_SOURCE 1
#include "killpoints.h"

/* ---- the host ------------------------------------------------------------ */

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0) {
        /* best effort, like h_rmtree */
    }
    return 0;
}

/* A trial's directory, listed in the shared directory first: a trial
 * that fails an assertion exits at once (Check's fork mode runs no
 * teardown), and main removes what is listed at the end. */
static char *trial_mkdir(void)
{
    char *dir = h_mkconfig(NULL, NULL), *list, line[512];
    int fd, n;

    ck_assert(asprintf(&list, "%s/dirs.list", shared_dir) > 0);
    fd = open(list, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    n = snprintf(line, sizeof line, "%s\n", dir);
    if (fd >= 0 && n > 0 && (size_t)n < sizeof line &&
        write(fd, line, (size_t)n) != n) {
        /* best effort: only the final sweep misses it */
    }
    if (fd >= 0)
        close(fd);
    free(list);
    return dir;
}

/* h_rmtree without its shell: a trial's directory, gone in-process
 * (kept with AUR_KILLPOINT_KEEP=1: its path is in the results line). */
void remove_dir(const char *dir)
{
    const char *keep = getenv("AUR_KILLPOINT_KEEP");
    if (keep && strcmp(keep, "1") == 0)
        return;
    if (strncmp(dir, "/tmp/aur-test-", 14) == 0)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Lifecycle commits go nowhere: the journal (SQLite, fsync per commit) is
 * not under test here and would be most of a stdio trial's time. */
static int drop_commit(void *ud, const struct aur_commit *commit,
                       struct aur_error *err)
{
    (void)ud;
    (void)commit;
    (void)err;
    return AUR_OK;
}

static struct aur_mcp *host_start(const struct cell *c, const char *dir)
{
    struct aur_world_writer w = {sizeof w, NULL, drop_commit};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;

    memset(&serr, 0, sizeof serr);
    ck_assert_msg(aur_mcp_create(dir, NULL, &h, &serr, &err) == AUR_OK,
                  "%s: x: create: %s", c->name, err.msg);
    ck_assert_msg(aur_mcp_set_world_writer(h, &w, &err) == AUR_OK,
                  "%s: x: world writer: %s", c->name, err.msg);
    ck_assert_msg(aur_mcp_start(h, &serr, &err) == AUR_OK,
                  "%s: x: start: %s %s", c->name, serr.code, serr.message);
    return h;
}

/* Until the server recorded its death (bounded): the host must not stop
 * it (SIGTERM, SIGKILL at shutdown) between its reply and its record. */
static void wait_killed(const char *recpath)
{
    int64_t end = h_now_ms() + h_slack(5000);
    for (;;) {
        struct record r;
        read_record(recpath, &r);
        if (r.killed || h_now_ms() >= end)
            return; /* a miss is judged: "the kill point was never
                       reached" */
        usleep(2000);
    }
}

/* ---- calls -------------------------------------------------------------- */

static int timeout_s(void)
{
    return (int)(h_slack(10000) / 1000);
}

static enum aur_call_status call(struct aur_mcp *h, size_t text_len,
                                 char **content)
{
    struct json_object *args = json_object_new_object();
    struct aur_tool_output out = {.struct_size = sizeof out};
    enum aur_call_status s;
    char *text = malloc(text_len + 1);

    ck_assert_ptr_nonnull(text);
    memset(text, 'x', text_len);
    text[text_len] = '\0';
    json_object_object_add(args, "text", json_object_new_string(text));
    free(text);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, args, -1, &out), AUR_OK);
    json_object_put(args);
    *content = strdup(out.content ? out.content : "");
    s = out.status;
    aur_tool_output_clear(&out);
    return s;
}

static void warm_up(struct aur_mcp *h, const struct cell *c)
{
    char *content;
    enum aur_call_status s = call(h, 4, &content);
    ck_assert_msg(s == AUR_CALL_SUCCEEDED && strcmp(content, "kp-ok 4") == 0,
                  "%s: x: the warm-up call was %s (%s)", c->name,
                  aur_call_status_word(s), content);
    free(content);
}

/* The verdict of one attempt, and its results line. */
static void finish_trial(const struct cell *c, int rep, int attempt,
                         const char *recpath, enum aur_call_status st,
                         const char *content, int64_t t0, struct verdict *v)
{
    struct record r;

    read_record(recpath, &r);
    judge(c, st, content, &r, v);
    log_result(c, rep, attempt, st, content, &r, v, h_now_ms() - t0);
}

/* ---- stdio -------------------------------------------------------------- */

/* host.ini of every trial: transport-stdio, and transport-http for the
 * HTTPS ones (loading libcurl and OpenSSL costs a stdio trial half its
 * time); log_level error (thousands
 * of expected "disconnected" warnings otherwise); term_grace_ms 0: every
 * stdio App of a trial is dead, or lingers until SIGTERM by design, once
 * its record says so (wait_killed), so shutdown need not wait 2 s. */
static void write_host_ini(const char *dir, bool https)
{
    char *text;
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio%s\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = error\n"
                       "[mcp]\nenabled = true\n"
                       "[transport-stdio]\nterm_grace_ms = 0\n",
                       https ? " transport-http" : "", AUR_TEST_BIN_DIR) > 0);
    h_write(dir, "host.ini", text);
    free(text);
}

void stdio_trial(const struct cell *c, int rep, int attempt,
                        struct verdict *v)
{
    char *dir = trial_mkdir();
    char *fixture = h_bin("bin/aur-fixture-server"), *recpath, *content;
    const char *args[16];
    struct aur_mcp *h = NULL;
    enum aur_call_status st;
    int64_t t0 = h_now_ms(), t;
    size_t n = 0;

    trial_dir = dir;
    write_host_ini(dir, false);
    ck_assert(asprintf(&recpath, "%s/kill.rec", dir) > 0);
    args[n++] = "--kill-at";
    args[n++] = c->spoint;
    args[n++] = "--kill-how";
    args[n++] = c->how;
    args[n++] = "--kill-record";
    args[n++] = recpath;
    args[n++] = "--kill-warm";
    args[n++] = "1";
    args[n++] = "--kill-part-bytes";
    args[n++] = c->big ? "1000" : "20";
    args[n] = NULL;
    h_add_app(dir, "a.ini", PKG, timeout_s(), NULL, fixture, args);
    h = host_start(c, dir);
    phase_ms[0] = (t = h_now_ms()) - t0;
    warm_up(h, c);
    if (strcmp(c->point, "gone-seen") == 0)
        ck_assert_msg(h_wait_restart_required(h, 15000),
                      "%s: x: the host never noticed the App died",
                      c->name);
    phase_ms[1] = h_now_ms() - t;
    t = h_now_ms();
    st = call(h, c->big ? BIG_TEXT : SMALL_TEXT, &content);
    phase_ms[2] = h_now_ms() - t;
    t = h_now_ms();
    wait_killed(recpath);
    aur_mcp_destroy(h); /* reaps the App */
    phase_ms[3] = h_now_ms() - t;
    finish_trial(c, rep, attempt, recpath, st, content, t0, v);
    free(content);
    free(recpath);
    free(fixture);
    remove_dir(dir);
    free(dir);
}

/* ---- HTTPS -------------------------------------------------------------- */

struct server {
    pid_t pid;
    int in; /* its stdin: closing it makes it exit */
    int port;
};

static struct server server_start(const struct cell *c, const char *dir,
                                  const char *recpath)
{
    struct server s = {-1, -1, 0};
    char *cert, *key, *errpath, buf[128];
    const char *argv[24];
    size_t n = 0;
    int in[2], out[2];

    ck_assert(asprintf(&cert, "%s/srv.pem", shared_dir) > 0);
    ck_assert(asprintf(&key, "%s/srv.key", shared_dir) > 0);
    ck_assert(asprintf(&errpath, "%s/server.err", dir) > 0);
    argv[n++] = AUR_KP_HTTPS;
    argv[n++] = "--cert";
    argv[n++] = cert;
    argv[n++] = "--key";
    argv[n++] = key;
    argv[n++] = "--record";
    argv[n++] = recpath;
    argv[n++] = "--point";
    argv[n++] = c->spoint;
    argv[n++] = "--how";
    argv[n++] = c->how;
    argv[n++] = "--conn";
    argv[n++] = c->conn;
    argv[n++] = "--warm";
    argv[n++] = "1";
    if (getenv("AUR_KILLPOINT_LATE") &&
        strcmp(getenv("AUR_KILLPOINT_LATE"), "1") == 0) {
        argv[n++] = "--late-conns";
        argv[n++] = "1";
    }
    argv[n] = NULL;
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    s.pid = fork();
    ck_assert_int_ge(s.pid, 0);
    if (s.pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (fd >= 0)
            dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    setpgid(s.pid, s.pid);
    close(in[0]);
    close(out[1]);
    s.in = in[1];
    h_read_line(out[0], buf, sizeof buf, h_slack(15000));
    close(out[0]);
    if (sscanf(buf, "PORT %d", &s.port) != 1 || s.port <= 0) {
        char *e = h_slurp(errpath);
        ck_abort_msg("%s: x: no PORT line from killpoint_https: '%s' %s",
                     c->name, buf, e ? e : "");
    }
    free(cert);
    free(key);
    free(errpath);
    return s;
}

/* Waits (bounded) for the server to exit; true if it did. */
static bool server_wait(struct server *s, int64_t ms)
{
    int64_t end = h_now_ms() + ms;
    int st;
    if (s->pid <= 0)
        return true;
    for (;;) {
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid || (r < 0 && errno == ECHILD)) {
            s->pid = -1;
            return true;
        }
        if (h_now_ms() >= end)
            return false;
        usleep(5000);
    }
}

static void server_stop(struct server *s)
{
    if (s->in >= 0)
        close(s->in);
    s->in = -1;
    if (s->pid > 0 && !server_wait(s, h_slack(5000))) {
        kill(-s->pid, SIGKILL);
        server_wait(s, 5000);
    }
    if (s->pid > 0)
        kill(-s->pid, SIGKILL);
}

static void write_https_config(const char *dir, int port)
{
    char *text, *ca, *capath;

    write_host_ini(dir, true);
    ck_assert(asprintf(&capath, "%s/ca.pem", shared_dir) > 0);
    ca = h_slurp(capath);
    ck_assert_msg(ca != NULL, "no test CA at %s", capath);
    h_write(dir, "ca.pem", ca);
    free(ca);
    free(capath);
    ck_assert(asprintf(&text,
                       "[app]\npackage = " PKG "\nenabled = true\n"
                       "transport = streamable_http\ntimeout_seconds = %d\n"
                       "[http]\nurl = https://127.0.0.1:%d/mcp\n"
                       "ca_file = ca.pem\n",
                       timeout_s(), port) > 0);
    h_write(dir, "apps.d/a.ini", text);
    free(text);
}

/* gone: until nothing of the server accepts or holds a connection. */
static void wait_server_gone(const struct cell *c, struct server *s,
                             const char *recpath)
{
    int64_t end = h_now_ms() + h_slack(15000);
    if (strcmp(c->how, "exit") == 0 || strcmp(c->how, "sigkill") == 0) {
        ck_assert_msg(server_wait(s, h_slack(15000)),
                      "%s: x: the server did not die", c->name);
        return;
    }
    for (;;) {
        struct record r;
        read_record(recpath, &r);
        if (r.gone_done)
            return;
        ck_assert_msg(h_now_ms() < end, "%s: x: the server never went away",
                      c->name);
        usleep(5000);
    }
}

void https_trial(const struct cell *c, int rep, int attempt,
                        struct verdict *v)
{
    char *dir = trial_mkdir(), *recpath, *content;
    struct aur_mcp *h = NULL;
    enum aur_call_status st;
    struct server s;
    int64_t t0 = h_now_ms(), t;

    trial_dir = dir;
    ck_assert(asprintf(&recpath, "%s/kill.rec", dir) > 0);
    s = server_start(c, dir, recpath);
    write_https_config(dir, s.port);
    h = host_start(c, dir);
    phase_ms[0] = (t = h_now_ms()) - t0;
    warm_up(h, c);
    if (strcmp(c->point, "gone") == 0)
        wait_server_gone(c, &s, recpath);
    else if (strcmp(c->conn, "reused") == 0)
        /* Let the worker that ran the warm-up go idle, so the target is
         * not handed to a new worker (a new curl handle, a new
         * connection).  A miss is re-run, never judged as reused, and
         * each re-run waits four times longer (30 ms up to 2 s): on a
         * loaded machine the worker may need longer than a quiet one
         * suggests (CI under ASan saw four misses in a row once). */
        usleep((useconds_t)(attempt < 5 ? 30000 << 2 * (attempt - 1)
                                        : 2000000));
    phase_ms[1] = h_now_ms() - t;
    t = h_now_ms();
    st = call(h, c->big ? BIG_TEXT : SMALL_TEXT, &content);
    phase_ms[2] = h_now_ms() - t;
    t = h_now_ms();
    wait_killed(recpath);
    aur_mcp_destroy(h);
    server_stop(&s);
    phase_ms[3] = h_now_ms() - t;
    finish_trial(c, rep, attempt, recpath, st, content, t0, v);
    free(content);
    free(recpath);
    remove_dir(dir);
    free(dir);
}

