/*
 * check_peers_http.c - the whole host over HTTPS (transport-http) against
 * the official MCP TypeScript SDK servers (tests/peers: sdk2-http-server.mjs
 * on SDK v2 2.4.0 createMcpHandler speaks 2026-07-28, sdk1-http-server.mjs
 * on SDK v1 1.32.2 StreamableHTTPServerTransport the legacy revisions with
 * sessions).  Each test makes a throwaway CA and a 127.0.0.1 server
 * certificate with the openssl CLI in its config dir, starts the server as
 * a child in its own process group and reads what it logged per request.
 * Needs `npm ci` in tests/peers.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/harness.h"

#define PEER(tool) "aur.mcp.org.test.peer." tool

#define PORT_WAIT_MS 15000
#define TOKEN_ENV "AUR_PEERS_HTTP_TOKEN"
#define TOKEN "peer-secret-0123"

static char *dir, *logpath, *script2, *script1;
static pid_t srv_pid = -1;
static int srv_in = -1;
static int srv_port;
static int app_timeout_s = 20; /* timeout_seconds of the App */

/* A CA (ca.pem) and a server certificate for 127.0.0.1/localhost signed by
 * it (srv.pem, srv.key), all in the config dir; ca.pem is what ca_file
 * names (relative to the config dir, as the config rules require).  Same
 * CA, a certificate for another host: wrong.pem/key. */
static void make_certs(void)
{
    char *cmd;
    ck_assert(asprintf(&cmd, "sh '%s/tests/support/mkcerts.sh' '%s' "
                       "srv IP:127.0.0.1,DNS:localhost "
                       "wrong DNS:wrong.example,IP:192.0.2.7",
                       AUR_TEST_SRC_DIR, dir) > 0);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
    free(cmd);
}

static void setup(void)
{
    h_need_peers("@modelcontextprotocol/server");
    dir = h_mkconfig(NULL, NULL);
    ck_assert(asprintf(&logpath, "%s/peer.log", dir) > 0);
    script2 = h_src("tests/peers/sdk2-http-server.mjs");
    script1 = h_src("tests/peers/sdk1-http-server.mjs");
    make_certs();
    unsetenv(TOKEN_ENV);
    app_timeout_s = 20;
}

static void server_stop(void)
{
    int st;
    if (srv_pid <= 0)
        return;
    /* stdin EOF asks the server to exit; the group kill is the bound. */
    close(srv_in);
    srv_in = -1;
    for (int i = 0; i < 100; i++) {
        if (waitpid(srv_pid, &st, WNOHANG) == srv_pid)
            break;
        usleep(20000);
        if (i == 99) {
            kill(-srv_pid, SIGKILL);
            waitpid(srv_pid, &st, 0);
        }
    }
    kill(-srv_pid, SIGKILL); /* anything the server left in its group */
    srv_pid = -1;
}

static void teardown(void)
{
    server_stop();
    h_rmtree(dir);
    free(dir);
    free(logpath);
    free(script2);
    free(script1);
}

/* Starts `node script --cert --key --log <opts>` in its own process group
 * and waits (bounded) for its "PORT <n>" line. */
static void server_start_as(const char *script, const char *const *opts,
                            const char *certname)
{
    const char *argv[40];
    char *cert, *key, *errpath;
    size_t n = 0;

    ck_assert(asprintf(&cert, "%s/%s.pem", dir, certname) > 0);
    ck_assert(asprintf(&key, "%s/%s.key", dir, certname) > 0);
    ck_assert(asprintf(&errpath, "%s/server.err", dir) > 0);
    argv[n++] = "node";
    argv[n++] = script;
    argv[n++] = "--cert";
    argv[n++] = cert;
    argv[n++] = "--key";
    argv[n++] = key;
    argv[n++] = "--log";
    argv[n++] = logpath;
    for (size_t i = 0; opts && opts[i] && n < 38; i++)
        argv[n++] = opts[i];
    argv[n] = NULL;
    srv_port = h_spawn_port_peer(argv, errpath, PORT_WAIT_MS, &srv_pid,
                                 &srv_in);
    free(cert);
    free(key);
    free(errpath);
}

static void server_start(const char *script, const char *const *opts)
{
    server_start_as(script, opts, "srv");
}

/* host.ini with both transports, and one streamable_http App at the
 * running server.  with_ca: ca_file = ca.pem; auth: auth_env set. */
static void write_config(bool with_ca, bool auth)
{
    char *text;
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio transport-http\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = warn\n"
                       "[mcp]\nenabled = true\n",
                       AUR_TEST_BIN_DIR) > 0);
    h_write(dir, "host.ini", text);
    free(text);
    ck_assert(asprintf(&text,
                       "[app]\npackage = org.test.peer\nenabled = true\n"
                       "transport = streamable_http\ntimeout_seconds = %d\n"
                       "[http]\nurl = https://127.0.0.1:%d/mcp\n%s%s",
                       app_timeout_s, srv_port, with_ca ? "ca_file = ca.pem\n" : "",
                       auth ? "auth_env = " TOKEN_ENV "\n" : "") > 0);
    h_write(dir, "apps.d/peer.ini", text);
    free(text);
}

static struct aur_mcp *start_host(bool with_ca, bool auth,
                                  struct aur_startup_error *serr, int *rc)
{
    struct aur_mcp *h;
    write_config(with_ca, auth);
    *rc = h_start(dir, &h, serr);
    return h;
}

/* The server's request log as an array of objects, in arrival order. */
static struct json_object *read_log(void)
{
    struct json_object *arr = json_object_new_array();
    char *text = h_slurp(logpath), *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        struct json_object *o = json_tokener_parse(l);
        ck_assert_msg(o != NULL, "bad log line: %s", l);
        json_object_array_add(arr, o);
    }
    free(text);
    return arr;
}

static bool has(struct json_object *o, const char *key)
{
    return json_object_object_get_ex(o, key, NULL);
}

/* Index of the first POST whose JSON-RPC method is method (from index
 * from), or -1. */
static int find_method(struct json_object *log, const char *method, int from)
{
    int n = (int)json_object_array_length(log);
    for (int i = from < 0 ? 0 : from; i < n; i++) {
        const char *m = h_str(json_object_array_get_idx(log, i), "method");
        if (m && strcmp(m, method) == 0)
            return i;
    }
    return -1;
}

static bool wait_log_line(const char *needle)
{
    int64_t until = h_now_ms() + h_slack(5000);

    do {
        char *text = h_slurp(logpath);
        bool found = text && strstr(text, needle);
        free(text);
        if (found)
            return true;
        usleep(20000);
    } while (h_now_ms() < until);
    return false;
}

/* The server's log and stderr, for failure messages (static buffer). */
static const char *server_said(void)
{
    static char buf[4096];
    char *errpath, *l, *e;
    ck_assert(asprintf(&errpath, "%s/server.err", dir) > 0);
    l = h_slurp(logpath);
    e = h_slurp(errpath);
    snprintf(buf, sizeof buf, "\nlog:\n%s\nstderr:\n%s", l ? l : "",
             e ? e : "");
    free(l);
    free(e);
    free(errpath);
    return buf;
}

/* Startup against the server fails in connect for our App, with needle
 * in the message (NULL: not checked).  Returns what the server logged by
 * then (put it); the host is destroyed. */
static struct json_object *connect_fails(bool with_ca, const char *needle,
                                         struct aur_startup_error *serr)
{
    struct json_object *log;
    int rc;
    struct aur_mcp *h = start_host(with_ca, false, serr, &rc);

    ck_assert_int_ne(rc, AUR_OK);
    ck_assert_str_eq(serr->phase, "connect");
    ck_assert_str_eq(serr->app, "org.test.peer");
    if (needle)
        ck_assert_msg(strstr(serr->message, needle), "%s", serr->message);
    log = read_log();
    aur_mcp_destroy(h);
    return log;
}

START_TEST(sdk2_modern_over_https)
{
    const char *opts[] = {"--tools", "10", "--page-size", "4", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log, *e;
    int rc, listen, list, pages = 0, callix;

    server_start(script2, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(h_negotiated_version(h), "2026-07-28");
    ck_assert_uint_eq(aur_mcp_tool_count(h), 15);

    h_expect(h, PEER("echo"), "{\"text\":\"hi\"}", AUR_CALL_SUCCEEDED, "hi");
    h_expect(h, PEER("add"), "{\"a\":2,\"b\":40}", AUR_CALL_SUCCEEDED,
             "{\"sum\":42}");
    h_expect(h, PEER("fail"), "{}", AUR_CALL_UNKNOWN, "boom");
    h_expect(h, PEER("nope"), "{}", AUR_CALL_FAILED, NULL);

    log = read_log();
    /* The probe carries the version and method headers. */
    e = json_object_array_get_idx(log, find_method(log, "server/discover", 0));
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(h_str(e, "mcp-protocol-version"), "2026-07-28");
    ck_assert_str_eq(h_str(e, "mcp-method"), "server/discover");
    /* subscriptions/listen went out before the first tools/list page. */
    listen = find_method(log, "subscriptions/listen", 0);
    list = find_method(log, "tools/list", 0);
    ck_assert_int_ge(listen, 0);
    ck_assert_int_gt(list, listen);
    /* 15 tools at 4 per page: 4 pages, the later ones with a cursor. */
    for (int i = list; i >= 0; i = find_method(log, "tools/list", i + 1)) {
        e = json_object_array_get_idx(log, i);
        ck_assert_int_eq(has(e, "cursor"), pages > 0);
        ck_assert_str_eq(h_str(e, "mcp-method"), "tools/list");
        pages++;
    }
    ck_assert_int_eq(pages, 4);
    /* tools/call: MCP-Protocol-Version, Mcp-Method, Mcp-Name; no session,
     * no Authorization (no auth_env configured). */
    callix = find_method(log, "tools/call", 0);
    ck_assert_int_ge(callix, 0);
    e = json_object_array_get_idx(log, callix);
    ck_assert_str_eq(h_str(e, "name"), "echo");
    ck_assert_str_eq(h_str(e, "mcp-protocol-version"), "2026-07-28");
    ck_assert_str_eq(h_str(e, "mcp-method"), "tools/call");
    ck_assert_str_eq(h_str(e, "mcp-name"), "echo");
    for (size_t i = 0; i < json_object_array_length(log); i++) {
        e = json_object_array_get_idx(log, i);
        ck_assert(!has(e, "mcp-session-id"));
        ck_assert(!has(e, "authorization"));
        ck_assert(find_method(log, "initialize", 0) < 0);
    }
    json_object_put(log);
    aur_mcp_destroy(h);
}
END_TEST

/*
 * Legacy era over HTTPS: the standalone GET stream is up before the first
 * tools/list, so a change the server pushes while we page is seen and the
 * catalog is paged again.  The server holds every GET for 500 ms (a client
 * that listed at once would page while no stream exists, and the SDK
 * would drop the change: a stale catalog frozen), and pushes list_changed
 * right after the first page.
 */
START_TEST(sdk1_legacy_listens_before_listing)
{
    const char *opts[] = {"--tools", "7", "--page-size", "5",
                          "--change-during-list", "1", "--get-delay", "500",
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;
    int rc, get_done = -1, first_list, passes = 0;

    server_start(script1, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(h_negotiated_version(h), "2025-11-25");
    ck_assert_uint_eq(aur_mcp_tool_count(h), 12);
    aur_mcp_destroy(h);

    log = read_log();
    for (int i = 0; i < (int)json_object_array_length(log); i++) {
        struct json_object *e = json_object_array_get_idx(log, i);
        const char *done = h_str(e, "done"), *m = h_str(e, "method");
        if (get_done < 0 && done && strcmp(done, "GET") == 0)
            get_done = i;
        if (m && strcmp(m, "tools/list") == 0 &&
            !json_object_object_get_ex(e, "cursor", NULL))
            passes++;
    }
    first_list = find_method(log, "tools/list", 0);
    ck_assert_int_ge(get_done, 0);
    ck_assert_msg(get_done < first_list, "the first tools/list (line %d) "
                  "went out before the GET stream was up (line %d)",
                  first_list, get_done);
    /* the change reached us: the catalog was paged again from the start */
    ck_assert_int_eq(passes, 2);
    json_object_put(log);
}
END_TEST

START_TEST(sdk1_legacy_session_over_https)
{
    /* The held 202 makes any request that overtakes the end of the
     * handshake show up before the notification's "done" line. */
    const char *opts[] = {"--tools", "7", "--page-size", "5",
                          "--initialized-delay", "300", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log, *e;
    int rc, init, n;

    server_start(script1, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(h_negotiated_version(h), "2025-11-25");
    ck_assert_uint_eq(aur_mcp_tool_count(h), 12);
    h_expect(h, PEER("echo"), "{\"text\":\"yo\"}", AUR_CALL_SUCCEEDED, "yo");
    h_expect(h, PEER("nope"), "{}", AUR_CALL_FAILED, NULL);
    aur_mcp_destroy(h);

    log = read_log();
    n = (int)json_object_array_length(log);
    init = find_method(log, "initialize", 0);
    ck_assert_int_ge(init, 0);
    e = json_object_array_get_idx(log, init);
    ck_assert(!has(e, "mcp-session-id"));
    ck_assert(!has(e, "mcp-protocol-version"));
    /* The handshake completes before anything else goes out
     * (docs/protocol.md: POST notifications/initialized, its 202, then
     * the rest): the
     * next thing the server got is the notification, and the next log
     * line is its answered 202, not an early tools/list or GET. */
    e = json_object_array_get_idx(log, init + 1);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(h_str(e, "method") &&
                      strcmp(h_str(e, "method"), "notifications/initialized")
                          == 0,
                  "after initialize the server first got %s %s",
                  h_str(e, "http"),
                  h_str(e, "method") ? h_str(e, "method") : "");
    e = json_object_array_get_idx(log, init + 2);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(h_str(e, "done") != NULL,
                  "%s %s overtook notifications/initialized%s",
                  h_str(e, "http"),
                  h_str(e, "method") ? h_str(e, "method") : "",
                  server_said());
    ck_assert_str_eq(h_str(e, "done"), "notifications/initialized");
    {
        struct json_object *st = NULL;
        json_object_object_get_ex(e, "status", &st);
        ck_assert_int_eq(json_object_get_int(st), 202);
    }
    /* Everything after initialize carries the session: initialized,
     * the pages, the calls, the GET stream and the closing DELETE. */
    ck_assert_int_ge(find_method(log, "notifications/initialized", init), 0);
    ck_assert_int_ge(find_method(log, "tools/call", init), 0);
    for (int i = init + 1; i < n; i++) {
        e = json_object_array_get_idx(log, i);
        ck_assert_msg(h_str(e, "done") || has(e, "mcp-session-id"),
                      "line %d has no session", i);
    }
    e = json_object_array_get_idx(log, find_method(log, "tools/call", init));
    ck_assert_str_eq(h_str(e, "mcp-protocol-version"), "2025-11-25");
    {
        bool get = false, del = false;
        for (int i = init + 1; i < n; i++) {
            const char *m = h_str(json_object_array_get_idx(log, i), "http");
            get = get || (m && strcmp(m, "GET") == 0);
            del = del || (m && strcmp(m, "DELETE") == 0);
        }
        ck_assert(get);
        ck_assert(del);
    }
    json_object_put(log);
    server_stop();
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* Legacy list_changed arrives on the session's standalone GET stream. */
START_TEST(sdk1_runtime_list_changed_over_get)
{
    const char *opts[] = {"--change-on-call", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;

    server_start(script1, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert(!aur_mcp_restart_required(h));
    /* The GET stream is opened asynchronously and may reach the server
     * after startup finished; TS v1 drops a notification sent while no
     * GET is open (no event store), so wait until it got there. */
    ck_assert_msg(wait_log_line("\"done\":\"GET\",\"status\":200"),
                  "no GET stream%s", server_said());
    h_expect(h, PEER("echo"), "{\"text\":\"x\"}", AUR_CALL_SUCCEEDED, NULL);
    ck_assert_msg(h_wait_restart_required(h, 5000), "no list_changed seen%s",
                  server_said());
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(sdk2_bearer_token)
{
    const char *opts[] = {"--require-bearer", TOKEN, NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;
    int rc;

    server_start(script2, opts);
    setenv(TOKEN_ENV, TOKEN, 1);
    struct aur_mcp *h = start_host(true, true, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_str_eq(h_negotiated_version(h), "2026-07-28");
    h_expect(h, PEER("echo"), "{\"text\":\"t\"}", AUR_CALL_SUCCEEDED, "t");
    aur_mcp_destroy(h);
    log = read_log();
    ck_assert_int_ge((int)json_object_array_length(log), 4);
    for (size_t i = 0; i < json_object_array_length(log); i++)
        ck_assert(has(json_object_array_get_idx(log, i), "authorization"));
    json_object_put(log);
    /* The token never reaches the server's log file. */
    {
        char *text = h_slurp(logpath);
        ck_assert_ptr_null(strstr(text, TOKEN));
        free(text);
    }
    server_stop();
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(sdk2_bearer_missing_fails_connect)
{
    const char *opts[] = {"--require-bearer", TOKEN, NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;

    server_start(script2, opts);
    log = connect_fails(true, "HTTP 401", &serr);
    /* 401 is an outage, never era evidence: no legacy initialize. */
    ck_assert_int_ge(find_method(log, "server/discover", 0), 0);
    ck_assert_int_lt(find_method(log, "initialize", 0), 0);
    json_object_put(log);
}
END_TEST

/* A 5xx on the probe is an outage, not a legacy server. */
START_TEST(server_5xx_at_startup_fails_connect)
{
    const char *opts[] = {"--status-for", "server/discover=503", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;

    server_start(script2, opts);
    log = connect_fails(true, "HTTP 503", &serr);
    ck_assert_int_lt(find_method(log, "initialize", 0), 0);
    json_object_put(log);
}
END_TEST

/* A 5xx answer to a call that reached the server: its effect is unknown. */
START_TEST(server_5xx_during_call_is_unknown)
{
    const char *opts[] = {"--status-for", "tools/call=502", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    char *c;
    int rc;

    server_start(script2, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    ck_assert_int_eq(h_call(h, PEER("echo"), "{\"text\":\"x\"}", &c),
                     AUR_CALL_UNKNOWN);
    ck_assert_msg(strstr(c, "HTTP 502"), "%s", c);
    /* the status is reported as what it is: no JSON-RPC code invented */
    ck_assert_msg(!strstr(c, "-32000"), "%s", c);
    free(c);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(untrusted_ca_fails_connect)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;

    server_start(script2, NULL);
    log = connect_fails(false, "certificate", &serr);
    /* The handshake failed: nothing reached the server. */
    ck_assert_int_eq((int)json_object_array_length(log), 0);
    json_object_put(log);
}
END_TEST

/* A call whose connection dies, whose SSE stream ends mid-event, or whose
 * stream goes silent reached the server: its effect is unknown, and the
 * host goes on serving other calls on new connections. */
static void call_fault_is_unknown(const char *fault, const char *needle)
{
    char opt[64];
    const char *opts[] = {"--fault-for", opt, NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    char *c;
    int rc;

    snprintf(opt, sizeof opt, "tools/call=%s", fault);
    /* One deadline bounds the startup and the call: it must cover a slow
     * startup too (the HTTPS handshakes against node on a loaded CI
     * machine under ASan once took 3 s), valgrind's more so. */
    app_timeout_s = (int)h_slack(8);
    server_start(script2, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s%s", serr.phase, serr.message,
                  server_said());
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(h_call(h, PEER("echo"), "{\"text\":\"x\"}", &c),
                     AUR_CALL_UNKNOWN);
    ck_assert_msg(strstr(c, needle), "%s: %s", fault, c);
    /* Bounded by the App's timeout, whatever the fault: the deadline and
     * the time to end the call after it (which stretches, as the timeout
     * does, in a slow run). */
    ck_assert_int_lt(h_now_ms() - t0, app_timeout_s * 1000 + h_slack(3000));
    free(c);
    /* One tools/call reached the server: never retried. */
    struct json_object *log = read_log();
    int first = find_method(log, "tools/call", 0);
    ck_assert_int_ge(first, 0);
    ck_assert_int_lt(find_method(log, "tools/call", first + 1), 0);
    json_object_put(log);
    aur_mcp_destroy(h);
}

START_TEST(reset_during_call_is_unknown)
{
    call_fault_is_unknown("reset", "transport");
}
END_TEST

START_TEST(truncated_sse_during_call_is_unknown)
{
    call_fault_is_unknown("truncate", "stream ended before the response");
}
END_TEST

START_TEST(stalled_sse_during_call_is_unknown)
{
    call_fault_is_unknown("stall", "time");
}
END_TEST

/* A reset on the probe is an outage, not a legacy server. */
START_TEST(reset_at_probe_fails_connect)
{
    const char *opts[] = {"--fault-for", "server/discover=reset", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;

    server_start(script2, opts);
    log = connect_fails(true, NULL, &serr);
    ck_assert_int_lt(find_method(log, "initialize", 0), 0);
    json_object_put(log);
}
END_TEST

/* A listener that accepts TCP and never speaks TLS: startup fails in
 * connect at the App's deadline, not later. */
START_TEST(tls_stall_fails_connect_at_deadline)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(fd, 8), 0); /* the kernel completes TCP */
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    srv_port = ntohs(sa.sin_port);
    app_timeout_s = 2;
    int64_t t0 = h_now_ms();
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    int64_t took = h_now_ms() - t0;
    ck_assert_int_ne(rc, AUR_OK);
    ck_assert_str_eq(serr.phase, "connect");
    ck_assert_int_ge(took, 1500);
    ck_assert_int_lt(took, 2000 + h_slack(4000));
    aur_mcp_destroy(h);
    close(fd);
}
END_TEST

/* A certificate from the trusted CA, but for another host: refused
 * before any request is sent. */
START_TEST(wrong_host_certificate_fails_connect)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct json_object *log;

    server_start_as(script2, NULL, "wrong");
    log = connect_fails(true, NULL, &serr);
    ck_assert_msg(strstr(serr.message, "certificate") ||
                      strstr(serr.message, "SSL"),
                  "%s", serr.message);
    ck_assert_int_eq((int)json_object_array_length(log), 0);
    json_object_put(log);
}
END_TEST

START_TEST(sdk2_runtime_list_changed_over_listen)
{
    const char *opts[] = {"--change-on-call", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;

    server_start(script2, opts);
    struct aur_mcp *h = start_host(true, false, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s", serr.phase, serr.message);
    size_t before = aur_mcp_tool_count(h);
    ck_assert(!aur_mcp_restart_required(h));
    h_expect(h, PEER("echo"), "{\"text\":\"x\"}", AUR_CALL_SUCCEEDED, NULL);
    ck_assert(h_wait_restart_required(h, 5000));
    ck_assert_uint_eq(aur_mcp_tool_count(h), before);
    /* Still serving after the change. */
    h_expect(h, PEER("echo"), "{\"text\":\"y\"}", AUR_CALL_SUCCEEDED, "y");
    aur_mcp_destroy(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("peers_http");
    TCase *tc = tcase_create("sdk_https");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sdk2_modern_over_https);
    tcase_add_test(tc, sdk1_legacy_session_over_https);
    tcase_add_test(tc, sdk1_legacy_listens_before_listing);
    tcase_add_test(tc, sdk1_runtime_list_changed_over_get);
    tcase_add_test(tc, sdk2_bearer_token);
    tcase_add_test(tc, sdk2_bearer_missing_fails_connect);
    tcase_add_test(tc, untrusted_ca_fails_connect);
    tcase_add_test(tc, server_5xx_at_startup_fails_connect);
    tcase_add_test(tc, server_5xx_during_call_is_unknown);
    tcase_add_test(tc, sdk2_runtime_list_changed_over_listen);
    tcase_add_test(tc, reset_during_call_is_unknown);
    tcase_add_test(tc, truncated_sse_during_call_is_unknown);
    tcase_add_test(tc, stalled_sse_during_call_is_unknown);
    tcase_add_test(tc, reset_at_probe_fails_connect);
    tcase_add_test(tc, tls_stall_fails_connect_at_deadline);
    tcase_add_test(tc, wrong_host_certificate_fails_connect);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return aur_check_main(suite(), NULL);
}
