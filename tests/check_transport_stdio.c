/*
 * check_transport_stdio.c - transport-stdio through its ABI only.
 *
 * The suite dlopens the built plugin, gives it a test host
 * (tests/fixtures/stdio_host.c) and drives real child processes
 * (tests/fixtures/stdio_child.c).  Fork mode isolates each test, so the
 * process-wide recorders are per test.
 */
#define _GNU_SOURCE
#include "fixtures/stdio_host.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Frames                                                             */
/* ------------------------------------------------------------------ */

START_TEST(test_roundtrip)
{
    struct aur_error err;
    struct json_object *req, *m;
    struct aur_conn *c;

    up();
    ep_child("echo", NULL);
    c = open_ok();
    wait_hello();
    req = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
                             "\"tools/list\",\"params\":{\"_meta\":{\"u\":"
                             "\"a/b\",\"t\":\"l1\\nl2\"}}}");
    ck_assert_ptr_nonnull(req);
    ck_assert_int_eq(OPS->send(c, req, t_now() + 2000, &err), AUR_OK);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert(json_object_equal(m, req));
    json_object_put(m);
    json_object_put(req);
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 0); /* close reports nothing */
}
END_TEST

START_TEST(test_malformed_dropped)
{
    struct aur_conn *c;
    struct json_object *m;

    up();
    ep_child("malformed", NULL);
    c = open_ok();
    wait_hello();
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(method_of(m), "crlf");
    json_object_put(m);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(method_of(m), "good");
    json_object_put(m);
    ck_assert(log_has(PKG ": dropped malformed frame (8 bytes)"));
    ck_assert(log_has(PKG ": dropped malformed frame (7 bytes)"));
    ck_assert(log_has(PKG ": dropped malformed frame (11 bytes)"));
    ck_assert(log_has(PKG ": dropped malformed frame (3 bytes)"));
    /* Empty and CR-only lines are skipped silently. */
    ck_assert_int_eq(log_count("dropped malformed frame"), 4);
    ck_assert(!log_has("not json"));
    ck_assert(!log_has("[1,2,3]"));
    ck_assert_ptr_null(next_msg(100));
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_oversized_line)
{
    struct aur_conn *c;

    up2("max_line_bytes", "1024", NULL, NULL);
    ep_child("bigline", "1025");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_LIMIT);
    ck_assert_ptr_nonnull(strstr(R.msg, "max_line_bytes"));
    sleep_ms(300);
    ck_assert_int_eq(closed_count(), 1);
    ck_assert_ptr_null(next_msg(0)); /* the big frame never arrives */
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_line_at_limit)
{
    struct aur_conn *c;
    struct json_object *m;

    up2("max_line_bytes", "1024", NULL, NULL);
    ep_child("bigline", "1024");
    c = open_ok();
    wait_hello();
    m = wait_method("big", 3000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    ck_assert_int_eq(closed_count(), 0);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_big_frame)
{
    struct aur_conn *c;
    struct json_object *m, *p, *s;

    up();
    ep_child("bigline", "3000000");
    c = open_ok();
    wait_hello();
    m = wait_method("big", 5000);
    ck_assert_ptr_nonnull(m);
    ck_assert(json_object_object_get_ex(m, "params", &p));
    ck_assert(json_object_object_get_ex(p, "s", &s));
    /* 3000000 minus the 50 bytes of JSON around the string */
    ck_assert_int_eq(json_object_get_string_len(s), 3000000 - 50);
    json_object_put(m);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_partial_frame)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0;

    up();
    ep_child("partial", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_ptr_null(next_msg(300));
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    ck_assert_int_lt(t_now() - t0, 2000);
    ck_assert_ptr_null(next_msg(0));
    ck_assert_int_eq(closed_count(), 0);
    ck_assert(group_gone(h.pgid));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Environment                                                        */
/* ------------------------------------------------------------------ */

START_TEST(test_env_filtered)
{
    static const char *allowed[] = {"HOME", "LOGNAME", "PATH", "TERM",
                                    "USER", "AUR_WL"};
    static char buf[65536];
    struct aur_conn *c;
    struct hello h;
    size_t n;

    setenv("AUR_CANARY", "secret-xyz", 1);
    setenv("AUR_WL", "visible-1", 1);
    setenv("HOME", "/tmp/home-x", 1);
    setenv("SHELL", "() { :; }", 1); /* exported function: skipped */
    setenv("TERM", "xterm-test", 1);
    setenv("LANG", "C.UTF-8", 1);
    setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 0);
    unsetenv("AUR_MISSING");
    up();
    ep_child("echo", NULL);
    cfg_add(&EP, "env", "AUR_WL");
    cfg_add(&EP, "env", "AUR_MISSING");
    cfg_add(&EP, "env", "AUR_WL");
    c = open_ok();
    h = wait_hello();
    n = read_environ(h.pid, buf, sizeof buf);
    ck_assert_ptr_null(memmem(buf, n, "secret-xyz", 10));
    ck_assert_int_eq(env_has(buf, n, "AUR_WL=visible-1"), 1);
    ck_assert_int_eq(env_has(buf, n, "HOME=/tmp/home-x"), 1);
    ck_assert_int_eq(env_has(buf, n, "TERM=xterm-test"), 1);
    ck_assert(env_has_name(buf, n, "PATH"));
    ck_assert(!env_has_name(buf, n, "SHELL"));
    ck_assert(!env_has_name(buf, n, "LANG"));
    ck_assert(!env_has_name(buf, n, "AUR_MISSING"));
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        bool ok = false;
        for (size_t j = 0; j < sizeof allowed / sizeof *allowed; j++) {
            size_t k = strlen(allowed[j]);
            ok |= strncmp(buf + i, allowed[j], k) == 0 && buf[i + k] == '=';
        }
        ck_assert_msg(ok, "unexpected variable in the child: %.20s",
                      buf + i);
    }
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_env_whitelist_wins)
{
    static char buf[65536];
    struct aur_conn *c;
    struct hello h;
    size_t n;

    setenv("HOME", "() { home; }", 1); /* base would skip it */
    setenv("USER", "() { user; }", 1);
    up();
    ep_child("echo", NULL);
    cfg_add(&EP, "env", "HOME");
    c = open_ok();
    h = wait_hello();
    n = read_environ(h.pid, buf, sizeof buf);
    ck_assert_int_eq(env_has(buf, n, "HOME=() { home; }"), 1);
    ck_assert(!env_has_name(buf, n, "USER"));
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_working_dir)
{
    char dir[] = "/tmp/aur-stdio-XXXXXX", path[64], link[4096];
    struct aur_conn *c;
    struct hello h;
    ssize_t n;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    up();
    ep_child("echo", NULL);
    EP.v[2] = dir; /* working_dir */
    c = open_ok();
    h = wait_hello();
    snprintf(path, sizeof path, "/proc/%ld/cwd", h.pid);
    n = readlink(path, link, sizeof link - 1);
    ck_assert_int_gt(n, 0);
    link[n] = '\0';
    ck_assert_str_eq(link, dir);
    OPS->close(c, t_now() + 3000);
    rmdir(dir);
}
END_TEST

START_TEST(test_only_std_fds)
{
    char path[64];
    struct aur_conn *c;
    struct hello h;
    struct dirent *de;
    int n = 0, leak;
    DIR *d;

    /* Without CLOEXEC: closefrom in the child must still drop it. */
    leak = fcntl(STDERR_FILENO, F_DUPFD, 10);
    ck_assert_int_ge(leak, 10);
    up();
    ep_child("echo", NULL);
    c = open_ok();
    h = wait_hello();
    snprintf(path, sizeof path, "/proc/%ld/fd", h.pid);
    d = opendir(path);
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        ck_assert_msg(atoi(de->d_name) <= 2, "child has fd %s", de->d_name);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, 3);
    OPS->close(c, t_now() + 3000);
    close(leak);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Containment: the App dies with the host                            */
/* ------------------------------------------------------------------ */

/* Reap pid (a child or an orphan reparented to us) within ms. */
static bool reap_within(pid_t pid, int ms, int *status)
{
    int64_t until = t_now() + ms;

    while (t_now() < until) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
        sleep_ms(10);
    }
    return false;
}

START_TEST(test_dies_with_killed_host)
{
    int pp[2], status;
    long app = 0;
    pid_t host;

    /* Orphans come to us instead of init, so we can see how they end. */
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ck_assert_int_eq(pipe(pp), 0);
    host = fork();
    ck_assert_int_ge(host, 0);
    if (host == 0) {
        struct hello h;
        close(pp[0]);
        up();
        /* Naps without reading stdin: the host's death must kill it, not
         * stdin EOF. */
        ep_child("ignore-term", NULL);
        (void)open_ok();
        h = wait_hello();
        if (write(pp[1], &h.pid, sizeof h.pid) != (ssize_t)sizeof h.pid)
            _exit(3);
        sleep_ms(20000); /* until SIGKILL: no cleanup runs */
        _exit(4);
    }
    close(pp[1]);
    ck_assert_int_eq(read(pp[0], &app, sizeof app), (ssize_t)sizeof app);
    close(pp[0]);
    ck_assert(proc_exists(app));
    ck_assert_int_eq(kill(host, SIGKILL), 0);
    ck_assert(reap_within(host, 5000, &status));
    ck_assert(reap_within((pid_t)app, 5000, &status));
    ck_assert(WIFSIGNALED(status));
    ck_assert_int_eq(WTERMSIG(status), SIGKILL);
}
END_TEST

static void *open_on_thread(void *arg)
{
    *(struct aur_conn **)arg = open_ok();
    return NULL;
}

/* PR_SET_PDEATHSIG fires when the forking *thread* ends: an App opened
 * from a thread that then exits must live on. */
START_TEST(test_outlives_opening_thread)
{
    struct aur_conn *c = NULL;
    struct json_object *req, *m;
    struct aur_error err;
    struct hello h;
    pthread_t t;

    up();
    ep_child("echo", NULL);
    ck_assert_int_eq(pthread_create(&t, NULL, open_on_thread, &c), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_ptr_nonnull(c);
    h = wait_hello();
    sleep_ms(200);
    ck_assert(proc_exists(h.pid));
    req = rpc("1", 0);
    ck_assert_int_eq(OPS->send(c, req, t_now() + 2000, &err), AUR_OK);
    m = wait_method("x", 3000);
    ck_assert_ptr_nonnull(m); /* the echo of our request */
    json_object_put(m);
    json_object_put(req);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_signal_dispositions_default)
{
    char path[64], line[256];
    struct aur_conn *c;
    struct hello h;
    bool seen = false;
    FILE *f;

    signal(SIGPIPE, SIG_IGN); /* as the host does */
    up();
    ep_child("echo", NULL);
    c = open_ok();
    h = wait_hello();
    snprintf(path, sizeof path, "/proc/%ld/status", h.pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "SigIgn:", 7) == 0 ||
            strncmp(line, "SigBlk:", 7) == 0) {
            ck_assert_msg(strspn(line + 7, "\t 0") == strlen(line + 7) - 1,
                          "child has %s", line);
            seen = true;
        }
    }
    fclose(f);
    ck_assert(seen);
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Start failures                                                     */
/* ------------------------------------------------------------------ */

static int open_fails(struct aur_error *err)
{
    struct aur_conn *c = (struct aur_conn *)&self_tag;
    uint32_t caps = 77;
    int rc = OPS->open(ST, &EP, &SINK, t_now() + 3000, &c, &caps, err);

    ck_assert_int_ne(rc, AUR_OK);
    ck_assert_int_eq(err->code, rc);
    ck_assert_ptr_eq(c, (struct aur_conn *)&self_tag); /* untouched */
    return rc;
}

START_TEST(test_spawn_failure)
{
    struct aur_error err;

    setenv("AUR_CANARY", "secret-xyz", 1);
    up();
    ep_child("echo", NULL);
    EP.v[0] = "/nonexistent/aur-no-such-binary";
    cfg_add(&EP, "env", "AUR_CANARY");
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/aur-no-such-binary"));
    ck_assert_ptr_null(strstr(err.msg, "secret-xyz"));

    EP.v[0] = "aur-no-such-command-on-path";
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);
    ck_assert_ptr_nonnull(strstr(err.msg, "aur-no-such-command-on-path"));

    ep_child("echo", NULL);
    EP.v[2] = "/nonexistent-aur-dir";
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);

    EP.v[2] = "relative/dir";
    ck_assert_int_eq(open_fails(&err), AUR_E_CONFIG);

    EP.v[2] = "/tmp";
    EP.k[0] = "no-command";
    ck_assert_int_eq(open_fails(&err), AUR_E_CONFIG);

    sleep_ms(200);
    ck_assert_int_eq(R.messages, 0);
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

START_TEST(test_bad_plugin_config)
{
    static const char *bad[][2] = {
        {"max_line_bytes", "abc"},   {"max_line_bytes", "10"},
        {"stderr_line_bytes", "10"}, {"term_grace_ms", "-1"},
    };
    struct aur_error err;
    void *st = NULL;

    D = load();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct aur_cfg pc = {0};
        cfg_add(&pc, bad[i][0], bad[i][1]);
        ck_assert_int_eq(D->init(&H, NULL, &pc, &st, &err), AUR_E_CONFIG);
        ck_assert_ptr_nonnull(strstr(err.msg, bad[i][0]));
    }
    ck_assert_int_eq(D->init(&H, NULL, NULL, &st, &err), AUR_OK);
    D->fini(st);
}
END_TEST

START_TEST(test_descriptor_and_exports)
{
    char line[512], name[256], type;
    int n = 0, found = 0;
    FILE *p;

    D = load();
    ck_assert_uint_eq(D->magic, AUR_PLUGIN_MAGIC);
    ck_assert_uint_eq(D->kind, AUR_KIND_TRANSPORT);
    ck_assert_str_eq(D->name, "transport-stdio");
    OPS = D->ops;
    ck_assert_uint_eq(OPS->struct_size, sizeof *OPS);
    ck_assert_uint_eq(OPS->caps,
                      AUR_TCAP_SERVER_PUSH | AUR_TCAP_CHILD_PROCESS);
    ck_assert_ptr_nonnull(OPS->reopen);
    ck_assert_ptr_null(OPS->cancel);

    if (system("command -v nm >/dev/null 2>&1") != 0)
        return; /* no binutils: the descriptor checks above still ran */
    p = popen("nm -D --defined-only '" PLUGIN_SO "'", "r");
    ck_assert_ptr_nonnull(p);
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "%*s %c %255s", &type, name) != 2)
            continue;
        n++;
        found += strcmp(name, "aur_plugin_entry") == 0;
        ck_assert_msg(strcmp(name, "aur_plugin_entry") == 0,
                      "unexpected export %s", name);
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(found, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lifecycle                                                          */
/* ------------------------------------------------------------------ */

START_TEST(test_close_kills_group)
{
    struct aur_conn *c;
    struct hello h;

    up();
    ep_child("echo", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_eq(h.pgid, h.pid); /* its own group */
    ck_assert_int_ne(h.pgid, (long)getpgrp());
    OPS->close(c, t_now() + 3000);
    ck_assert(group_gone(h.pgid));
    ck_assert(!proc_exists(h.pid)); /* reaped: no zombie */
}
END_TEST

START_TEST(test_close_kills_grandchild)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0;

    /* Orphans come to us, so their zombies can be reaped below. */
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    up();
    ep_child("fork-grandchild", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_gt(h.grandchild, 1);
    ck_assert_int_eq(kill((pid_t)h.grandchild, 0), 0);
    ck_assert_int_eq(proc_pgrp(h.grandchild), h.pgid);
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    ck_assert_int_lt(t_now() - t0, 2500);
    for (int i = 0; i < 200 && !group_gone(h.pgid); i++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        sleep_ms(10);
    }
    ck_assert(group_gone(h.pgid));
}
END_TEST

START_TEST(test_sigterm_ignored)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0, el;

    up(); /* term_grace_ms = 300 */
    ep_child("ignore-term", NULL);
    c = open_ok();
    h = wait_hello();
    t0 = t_now();
    OPS->close(c, t_now() + 5000);
    el = t_now() - t0;
    /* 300 ms after stdin EOF, 300 ms after SIGTERM, then SIGKILL; well
     * before the 5 s deadline it would take without the escalation. */
    ck_assert_int_ge(el, 550);
    ck_assert_int_lt(el, 4000);
    ck_assert(group_gone(h.pgid));
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

START_TEST(test_close_deadline)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0, el;

    up2("term_grace_ms", "10000", NULL, NULL);
    ep_child("ignore-term", NULL);
    c = open_ok();
    h = wait_hello();
    t0 = t_now();
    OPS->close(c, t0 + 400);
    el = t_now() - t0;
    /* dl, then SIGTERM's minimum 200 ms, then SIGKILL and reaping; the
     * upper bound leaves a loaded machine room and is still far below
     * the 10 s term_grace_ms that ignoring dl would cost. */
    ck_assert_int_ge(el, 550);
    ck_assert_int_lt(el, 3000);
    ck_assert(group_gone(h.pgid));
}
END_TEST

START_TEST(test_escaped_grandchild)
{
    struct aur_conn *c;
    struct hello h;
    int64_t t0;

    up();
    ep_child("escape", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert_int_gt(h.grandchild, 1);
    /* The leader says hello right after the fork: wait (bounded) until
     * the grandchild has really left the group, however slow the machine
     * is to schedule it. */
    for (int i = 0; i < 500 && proc_pgrp(h.grandchild) == h.pgid; i++)
        sleep_ms(10);
    ck_assert_int_ne(proc_pgrp(h.grandchild), h.pgid);
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    /* It still holds the pipes: close must not wait for their EOF. */
    ck_assert_int_lt(t_now() - t0, 2000);
    ck_assert(!proc_exists(h.pid));
    ck_assert_int_eq(kill((pid_t)h.grandchild, 0), 0);
    kill((pid_t)h.grandchild, SIGKILL);
}
END_TEST

START_TEST(test_exit_status_once)
{
    struct aur_error err;
    struct json_object *m;
    struct aur_conn *c;

    up();
    ep_child("exit-now", "3");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_CLOSED);
    ck_assert_int_eq(R.detail, 3);
    ck_assert_ptr_nonnull(strstr(R.msg, "status 3"));
    sleep_ms(400);
    ck_assert_int_eq(closed_count(), 1);
    m = rpc("late", 10);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_E_CLOSED);
    json_object_put(m);
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_exit_clean)
{
    struct aur_conn *c;

    up();
    ep_child("exit-now", "0");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert(R.why_null);
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_stdout_eof_while_alive)
{
    struct aur_conn *c;
    struct hello h;

    up();
    ep_child("close-stdout", NULL);
    c = open_ok();
    h = wait_hello();
    ck_assert(wait_closed(2000)); /* EOF is the end, even if it lingers */
    ck_assert(R.why_null);
    ck_assert(proc_exists(h.pid));
    OPS->close(c, t_now() + 3000);
    ck_assert_int_eq(closed_count(), 1);
    ck_assert(group_gone(h.pgid));
}
END_TEST

START_TEST(test_exit_with_sigchld_ignored)
{
    struct aur_conn *c;
    int64_t t0;

    signal(SIGCHLD, SIG_IGN); /* the kernel reaps: no status for us */
    up();
    ep_child("exit-now", "3");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_CLOSED);
    t0 = t_now();
    OPS->close(c, t_now() + 3000);
    ck_assert_int_lt(t_now() - t0, 1500);
    ck_assert_int_eq(closed_count(), 1);
}
END_TEST

START_TEST(test_exit_signal)
{
    struct aur_conn *c;

    up();
    ep_child("die-signal", NULL);
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(R.code, AUR_E_CLOSED);
    ck_assert_int_eq(R.detail, SIGKILL);
    ck_assert_ptr_nonnull(strstr(R.msg, "signal 9"));
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_send_epipe)
{
    struct aur_error err;
    struct json_object *m;
    struct aur_conn *c;

    signal(SIGPIPE, SIG_DFL); /* a host that forgot to ignore it */
    up();
    ep_child("closed-stdin", NULL);
    c = open_ok();
    wait_hello();
    m = rpc("p1", 100);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_E_CLOSED);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_E_CLOSED);
    json_object_put(m);
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_send_timeout)
{
    struct aur_error err;
    struct json_object *big, *small;
    struct aur_conn *c;
    int64_t t0, el;

    up();
    ep_child("noread", NULL);
    c = open_ok();
    wait_hello();
    big = rpc("big", 4 << 20);
    t0 = t_now();
    ck_assert_int_eq(OPS->send(c, big, t0 + 300, &err), AUR_E_TIMEOUT);
    el = t_now() - t0;
    ck_assert_int_ge(el, 250);
    ck_assert_int_lt(el, 3000); /* the App never reads: only dl ends it */
    ck_assert_ptr_nonnull(strstr(err.msg, "deadline"));
    /* Half a line went out: later frames would be corrupt. */
    small = rpc("small", 1);
    ck_assert_int_eq(OPS->send(c, small, t_now() + 200, &err), AUR_E_CLOSED);
    json_object_put(small);
    json_object_put(big);
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* Wait (bounded) until the App's stdin pipe is full, i.e. a sender is
 * certainly blocked in the middle of its write. */
static bool stdin_pipe_full(long pid, int ms)
{
    char path[64];
    int fd, size, queued = 0;
    int64_t until = t_now() + ms;

    snprintf(path, sizeof path, "/proc/%ld/fd/0", pid);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    size = fcntl(fd, F_GETPIPE_SZ);
    while (size > 0 && ioctl(fd, FIONREAD, &queued) == 0 && queued < size &&
           t_now() < until)
        sleep_ms(10);
    close(fd);
    return size > 0 && queued >= size;
}

struct sender {
    struct aur_conn *c;
    struct json_object *m;
    int64_t dl;
    int rc;
    int tid;
};

static void *send_main(void *arg)
{
    struct sender *s = arg;
    struct aur_error err;
    s->rc = OPS->send(s->c, s->m, s->dl, &err);
    return NULL;
}

START_TEST(test_waiting_sender_deadline)
{
    struct sender a;
    struct aur_error err;
    struct json_object *small;
    pthread_t t;
    struct hello h;
    int64_t t0, el;

    up();
    ep_child("noread", NULL);
    a.c = open_ok();
    h = wait_hello();
    a.m = rpc("big", 4 << 20);
    a.dl = t_now() + 4000;
    ck_assert_int_eq(pthread_create(&t, NULL, send_main, &a), 0);
    /* Only once the big write is stuck is the small one behind it (a
     * fixed nap lost that race on a loaded machine). */
    ck_assert(stdin_pipe_full(h.pid, 3000));
    small = rpc("small", 1);
    t0 = t_now();
    /* Stuck behind the big write, it still keeps its own deadline, not
     * the big one's (about 4 s away). */
    ck_assert_int_eq(OPS->send(a.c, small, t0 + 200, &err), AUR_E_TIMEOUT);
    el = t_now() - t0;
    ck_assert_int_lt(el, 1500);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.rc, AUR_E_TIMEOUT);
    json_object_put(small);
    json_object_put(a.m);
    OPS->close(a.c, t_now() + 3000);
}
END_TEST

START_TEST(test_reopen)
{
    struct aur_error err;
    struct json_object *m;
    struct aur_conn *c;
    struct hello h1, h2;

    up();
    ep_child("echo", NULL);
    c = open_ok();
    h1 = wait_hello();
    ck_assert_int_eq(OPS->reopen(c, t_now() + 5000, &err), AUR_OK);
    h2 = wait_hello();
    ck_assert_int_ne(h1.pid, h2.pid);
    ck_assert(group_gone(h1.pgid));
    m = rpc("after-reopen", 10);
    ck_assert_int_eq(OPS->send(c, m, t_now() + 1000, &err), AUR_OK);
    json_object_put(m);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    ck_assert_int_eq(closed_count(), 0); /* the old child's end is silent */
    OPS->close(c, t_now() + 3000);
    ck_assert(group_gone(h2.pgid));
}
END_TEST

START_TEST(test_reopen_after_exit)
{
    struct aur_error err;
    struct aur_conn *c;
    struct hello h;

    up();
    ep_child("exit-now", "5");
    c = open_ok();
    wait_hello();
    ck_assert(wait_closed(3000));
    ck_assert_int_eq(OPS->reopen(c, t_now() + 5000, &err), AUR_OK);
    h = wait_hello(); /* the same endpoint: it exits again */
    ck_assert(wait_closed(3000));
    sleep_ms(300);
    ck_assert_int_eq(closed_count(), 2);
    OPS->close(c, t_now() + 3000);
    ck_assert(group_gone(h.pgid));
}
END_TEST

#define NTHREADS 4
#define PER_THREAD 50

static size_t pad_len(int t, int i)
{
    return (size_t)(((t * PER_THREAD + i) * 7919) % 60000);
}

static void *burst_main(void *arg)
{
    struct sender *s = arg;
    struct aur_error err;
    char id[32];

    s->rc = AUR_OK;
    for (int i = 0; i < PER_THREAD && s->rc == AUR_OK; i++) {
        struct json_object *m;
        snprintf(id, sizeof id, "%d-%d", s->tid, i);
        m = rpc(id, pad_len(s->tid, i));
        s->rc = OPS->send(s->c, m, t_now() + 5000, &err);
        json_object_put(m);
    }
    return NULL;
}

START_TEST(test_concurrent_sends)
{
    struct sender s[NTHREADS];
    pthread_t t[NTHREADS];
    bool seen[NTHREADS][PER_THREAD];
    struct aur_conn *c;

    memset(seen, 0, sizeof seen);
    up();
    ep_child("echo", NULL);
    c = open_ok();
    wait_hello();
    for (int k = 0; k < NTHREADS; k++) {
        s[k] = (struct sender){.c = c, .tid = k};
        ck_assert_int_eq(pthread_create(&t[k], NULL, burst_main, &s[k]), 0);
    }
    for (int n = 0; n < NTHREADS * PER_THREAD; n++) {
        struct json_object *m = next_msg(10000), *id, *p, *pad;
        int tk, ti;
        ck_assert_msg(m != NULL, "only %d echoes", n);
        ck_assert(json_object_object_get_ex(m, "id", &id));
        ck_assert_int_eq(sscanf(json_object_get_string(id), "%d-%d", &tk,
                                &ti),
                         2);
        ck_assert(tk >= 0 && tk < NTHREADS && ti >= 0 && ti < PER_THREAD);
        ck_assert(!seen[tk][ti]);
        seen[tk][ti] = true;
        ck_assert(json_object_object_get_ex(m, "params", &p));
        ck_assert(json_object_object_get_ex(p, "pad", &pad));
        ck_assert_uint_eq((size_t)json_object_get_string_len(pad),
                          pad_len(tk, ti));
        json_object_put(m);
    }
    for (int k = 0; k < NTHREADS; k++) {
        pthread_join(t[k], NULL);
        ck_assert_int_eq(s[k].rc, AUR_OK);
    }
    ck_assert(!log_has("dropped malformed"));
    OPS->close(c, t_now() + 3000);
}
END_TEST

START_TEST(test_stderr_logged)
{
    struct aur_conn *c;
    const char *p;
    size_t xs = 0, len;
    char *log;

    up2("stderr_line_bytes", "100", NULL, NULL);
    ep_child("stderr", NULL);
    c = open_ok();
    wait_hello();
    ck_assert(log_wait("[" PKG "] stderr: last without newline", 3000));
    ck_assert(log_has("[" PKG "] stderr: hello from child\n"));
    ck_assert(log_has("[" PKG "] stderr: ctl??[31mred\n"));
    ck_assert(log_has("[" PKG "] stderr: caf\xc3\xa9 ? end\n"));
    log = log_copy(&len);
    p = strstr(log, "[" PKG "] stderr: x");
    ck_assert_ptr_nonnull(p);
    p = strchr(p, ':') + 2;
    while (p[xs] == 'x')
        xs++;
    ck_assert_uint_eq(xs, 100);
    ck_assert(strncmp(p + xs, " [truncated]\n", 13) == 0);
    ck_assert_int_eq(log_count("] stderr:"), 5); /* the empty line: none */
    ck_assert_ptr_null(memchr(log, '\x1b', len));
    ck_assert_ptr_null(memchr(log, '\x01', len));
    free(log);
    ck_assert_ptr_null(next_msg(100)); /* never into the sink */
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* ------------------------------------------------------------------ */

static TCase *tc(Suite *s, const char *name)
{
    TCase *t = tcase_create(name);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 30);
    suite_add_tcase(s, t);
    return t;
}

static Suite *stdio_suite(void)
{
    Suite *s = suite_create("transport_stdio");
    TCase *t;

    t = tc(s, "frames");
    tcase_add_test(t, test_roundtrip);
    tcase_add_test(t, test_malformed_dropped);
    tcase_add_test(t, test_oversized_line);
    tcase_add_test(t, test_line_at_limit);
    tcase_add_test(t, test_big_frame);
    tcase_add_test(t, test_partial_frame);
    t = tc(s, "environment");
    tcase_add_test(t, test_env_filtered);
    tcase_add_test(t, test_env_whitelist_wins);
    tcase_add_test(t, test_working_dir);
    tcase_add_test(t, test_only_std_fds);
    t = tc(s, "start");
    tcase_add_test(t, test_spawn_failure);
    tcase_add_test(t, test_bad_plugin_config);
    tcase_add_test(t, test_descriptor_and_exports);
    t = tc(s, "shutdown");
    tcase_add_test(t, test_close_kills_group);
    tcase_add_test(t, test_close_kills_grandchild);
    tcase_add_test(t, test_sigterm_ignored);
    tcase_add_test(t, test_close_deadline);
    tcase_add_test(t, test_escaped_grandchild);
    t = tc(s, "containment");
    tcase_add_test(t, test_dies_with_killed_host);
    tcase_add_test(t, test_outlives_opening_thread);
    tcase_add_test(t, test_signal_dispositions_default);
    t = tc(s, "child_exit");
    tcase_add_test(t, test_exit_status_once);
    tcase_add_test(t, test_exit_clean);
    tcase_add_test(t, test_exit_signal);
    tcase_add_test(t, test_stdout_eof_while_alive);
    tcase_add_test(t, test_exit_with_sigchld_ignored);
    tcase_add_test(t, test_reopen_after_exit);
    t = tc(s, "send");
    tcase_add_test(t, test_send_epipe);
    tcase_add_test(t, test_send_timeout);
    tcase_add_test(t, test_waiting_sender_deadline);
    tcase_add_test(t, test_concurrent_sends);
    t = tc(s, "reopen");
    tcase_add_test(t, test_reopen);
    t = tc(s, "stderr");
    tcase_add_test(t, test_stderr_logged);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stdio_suite());
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
