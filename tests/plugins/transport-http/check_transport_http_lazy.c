/*
 * check_transport_http_lazy.c - transport-http keeps libcurl out of a
 * process that has no HTTP App (http_front.c says why), through the whole
 * host (libaurora-mcp):
 *
 *  - the default-style plugin set with a stdio App alone starts, and
 *    neither libcurl nor the backend (transport-http-libcurl.so) is
 *    mapped afterwards;
 *  - an HTTPS App (the SDK v2 peer of tests/peers, a throwaway CA) maps
 *    both and its calls work;
 *  - with transport-http.so alone in plugin_dir (no backend beside it),
 *    an HTTP App's config fails naming the file looked for, while a host
 *    of stdio Apps still starts.
 *
 * What is mapped is read with dl_iterate_phdr (the dynamic loader's own
 * list, also right under valgrind).  Every test starts in a fresh forked
 * process; with CK_FORK=no the first test must stay first.  Needs `npm ci`
 * in tests/peers for the HTTPS test.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/harness.h"

#define BACKEND "transport-http-libcurl.so"
#define PORT_WAIT_MS 15000

static char *dir, *fixture, *log_;
static pid_t srv_pid = -1;
static int srv_in = -1;

static int has_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    return info->dlpi_name && strstr(info->dlpi_name, arg) != NULL;
}

/* Whether an object whose path contains needle is loaded. */
static bool mapped(const char *needle)
{
    return dl_iterate_phdr(has_object, (void *)needle) != 0;
}

/* host.ini: both transports from plugin_dir (NULL = the build's). */
static void write_host(const char *plugin_dir)
{
    char *text, *pd = NULL;
    if (!plugin_dir)
        ck_assert(asprintf(&pd, "%s/plugins", AUR_TEST_BIN_DIR) > 0);
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio transport-http\n"
                       "plugin_dir = %s\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = warn\n"
                       "[mcp]\nenabled = true\n",
                       plugin_dir ? plugin_dir : pd) > 0);
    h_write(dir, "host.ini", text);
    free(text);
    free(pd);
}

/* apps.d/web.ini: an HTTP App at 127.0.0.1:port, trusting ca.pem. */
static void write_http_app(int port)
{
    char *text;
    ck_assert(asprintf(&text,
                       "[app]\npackage = org.test.web\nenabled = true\n"
                       "transport = streamable_http\ntimeout_seconds = 20\n"
                       "[http]\nurl = https://127.0.0.1:%d/mcp\n"
                       "ca_file = ca.pem\n",
                       port) > 0);
    h_write(dir, "apps.d/web.ini", text);
    free(text);
}

static void setup(void)
{
    h_fixture_env(&dir, &fixture, &log_);
}

static void teardown(void)
{
    if (srv_pid > 0) {
        close(srv_in);
        kill(-srv_pid, SIGKILL);
        waitpid(srv_pid, NULL, 0);
        srv_pid = -1;
    }
    h_fixture_env_free(&dir, &fixture, &log_);
}

/* The SDK v2 peer over HTTPS with a certificate from a throwaway CA in
 * dir (ca.pem); returns its port. */
static int peer_start(void)
{
    char *cmd, *cert, *key, *script;
    int port;

    h_need_peers("@modelcontextprotocol/server");
    ck_assert(asprintf(&cmd, "sh '%s/tests/support/mkcerts.sh' '%s' srv "
                       "IP:127.0.0.1,DNS:localhost",
                       AUR_TEST_SRC_DIR, dir) > 0);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
    free(cmd);
    ck_assert(asprintf(&cert, "%s/srv.pem", dir) > 0);
    ck_assert(asprintf(&key, "%s/srv.key", dir) > 0);
    script = h_src("tests/peers/sdk2-http-server.mjs");
    {
        const char *const argv[] = {"node", script, "--cert", cert, "--key",
                                    key, "--log", "/dev/null", NULL};
        port = h_spawn_port_peer(argv, NULL, PORT_WAIT_MS, &srv_pid,
                                 &srv_in);
    }
    free(cert);
    free(key);
    free(script);
    return port;
}

/* The old plugin linked libcurl, so merely listing it mapped libcurl. */
START_TEST(stdio_apps_never_load_libcurl)
{
    struct aur_mcp *h;

    ck_assert(!mapped("libcurl"));
    write_host(NULL);
    h = h_fixture_host(dir, fixture, log_, "org.test.lazy", "2", false);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 2);
    ck_assert_msg(mapped("/transport-http.so"), "transport-http not loaded");
    ck_assert_msg(!mapped(BACKEND), "the backend was loaded");
    ck_assert_msg(!mapped("libcurl"), "libcurl was loaded");
    ck_assert_msg(!mapped("libssl"), "libssl was loaded");
    aur_mcp_destroy(h);
    ck_assert(!mapped("libcurl"));
}
END_TEST

START_TEST(https_app_loads_backend)
{
    struct aur_startup_error serr;
    struct aur_mcp *h;
    int rc;

    ck_assert(!mapped("libcurl"));
    write_host(NULL);
    write_http_app(peer_start());
    rc = h_start(dir, &h, &serr);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_msg(mapped(BACKEND), "the backend is not loaded");
    ck_assert_msg(mapped("libcurl"), "libcurl is not loaded");
    h_expect(h, "aur.mcp.org.test.web.echo", "{\"text\":\"hi\"}",
             AUR_CALL_SUCCEEDED, "hi");
    aur_mcp_destroy(h);
    /* Never unloaded: libcurl has no safe way back out of a process. */
    ck_assert(mapped(BACKEND));
}
END_TEST

START_TEST(missing_backend_fails_http_apps_only)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    char *plug, *cmd, *want;
    int rc;

    ck_assert(asprintf(&plug, "%s/plug", dir) > 0);
    ck_assert(asprintf(&cmd, "mkdir '%s' && cd '%s/plugins' && "
                       "cp transport-stdio.so aur-contain transport-http.so "
                       "'%s/'", plug, AUR_TEST_BIN_DIR, plug) > 0);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
    ck_assert(asprintf(&want, "cannot load %s/" BACKEND, plug) > 0);
    write_host(plug);
    write_http_app(9); /* never reached: its config already fails */
    rc = aur_mcp_create(dir, NULL, &h, &serr, &err);
    ck_assert_int_ne(rc, AUR_OK);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(serr.message, want), "%s", serr.message);
    ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
    ck_assert_str_eq(serr.phase, "config");
    ck_assert(!mapped("libcurl"));

    /* The same host with a stdio App instead. */
    free(cmd);
    ck_assert(asprintf(&cmd, "%s/apps.d/web.ini", dir) > 0);
    ck_assert_int_eq(unlink(cmd), 0);
    h = h_fixture_host(dir, fixture, log_, "org.test.lazy", "1", false);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 1);
    aur_mcp_destroy(h);
    ck_assert(!mapped("libcurl"));
    free(plug);
    free(cmd);
    free(want);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("transport_http_lazy");
    TCase *t = tcase_create("lazy");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, stdio_apps_never_load_libcurl);
    tcase_add_test(t, missing_backend_fails_http_apps_only);
    tcase_add_test(t, https_app_loads_backend);
    suite_add_tcase(s, t);
    return aur_check_main(s, NULL);
}
