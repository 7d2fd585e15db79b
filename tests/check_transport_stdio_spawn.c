/*
 * check_transport_stdio_spawn.c - how transport-stdio starts an App: the
 * clean environment and its whitelist, the working directory, only fds
 * 0 to 2 in the child, start failures, and containment (the App dies
 * with a host killed by SIGKILL, outlives the thread that opened it, and
 * starts with default signal dispositions).  Same binary and test host
 * as check_transport_stdio.c.
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

Suite *stdio_spawn_suite(void);

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

Suite *stdio_spawn_suite(void)
{
    Suite *s = suite_create("transport_stdio_spawn");
    TCase *t;

    t = stdio_tcase(s, "environment");
    tcase_add_test(t, test_env_filtered);
    tcase_add_test(t, test_env_whitelist_wins);
    tcase_add_test(t, test_working_dir);
    tcase_add_test(t, test_only_std_fds);
    t = stdio_tcase(s, "start");
    tcase_add_test(t, test_spawn_failure);
    tcase_add_test(t, test_bad_plugin_config);
    tcase_add_test(t, test_descriptor_and_exports);
    t = stdio_tcase(s, "containment");
    tcase_add_test(t, test_dies_with_killed_host);
    tcase_add_test(t, test_outlives_opening_thread);
    tcase_add_test(t, test_signal_dispositions_default);
    return s;
}
