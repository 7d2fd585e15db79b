/*
 * http_host.c - certificates, fixture process, plugin and message
 * helpers of check_transport_http (see http_host.h).
 */
#define _GNU_SOURCE
#include "http_host.h"
#include "support/slack.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- certificates and fixture ---------------------------------------- */

char CERT_DIR[256];
int PORT[4];
static pid_t fx_pid;
static int fx_in = -1;
static char fx_logpath[300];

void make_certs(void)
{
    char cmd[1024];

    snprintf(CERT_DIR, sizeof CERT_DIR, "/tmp/aur-http-XXXXXX");
    if (!mkdtemp(CERT_DIR)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(cmd, sizeof cmd,
             "sh '%s/tests/support/mkcerts.sh' '%s' srv IP:127.0.0.1",
             AUR_TEST_SRC_DIR, CERT_DIR);
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
}

void fixture_start(void)
{
    int in[2], out[2];
    char cert[300], key[300], buf[128];
    ssize_t n;
    size_t got = 0;

    snprintf(fx_logpath, sizeof fx_logpath, "%s/fx-%d.log", CERT_DIR,
             (int)getpid());
    unlink(fx_logpath);
    snprintf(cert, sizeof cert, "%s/srv.pem", CERT_DIR);
    snprintf(key, sizeof key, "%s/srv.key", CERT_DIR);
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    fx_pid = fork();
    ck_assert_int_ge(fx_pid, 0);
    if (fx_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(AUR_HTTPS_FIXTURE, "https_fixture", "--cert", cert, "--key",
              key, "--log", fx_logpath, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    fx_in = in[1];
    while (got < sizeof buf - 1 && !memchr(buf, '\n', got)) {
        n = read(out[0], buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
    }
    close(out[0]);
    buf[got] = '\0';
    ck_assert_int_eq(sscanf(buf, "%d %d %d %d", &PORT[0], &PORT[1], &PORT[2],
                            &PORT[3]),
                     4);
}

void fixture_stop(void)
{
    if (fx_pid <= 0)
        return;
    close(fx_in);
    for (int i = 0; i < 100; i++) {
        if (waitpid(fx_pid, NULL, WNOHANG) == fx_pid) {
            fx_pid = 0;
            return;
        }
        sleep_ms(20);
    }
    kill(fx_pid, SIGKILL);
    waitpid(fx_pid, NULL, 0);
    fx_pid = 0;
}

const char *fx_log(void)
{
    static char buf[1 << 16];
    FILE *f = fopen(fx_logpath, "r");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

int fx_count(const char *needle)
{
    int n = 0;
    for (const char *p = fx_log(); (p = strstr(p, needle)); p++)
        n++;
    return n;
}

bool fx_wait(const char *needle, int ms)
{
    H_WAIT_UNTIL(fx_count(needle) > 0, ms, 20);
    return fx_count(needle) > 0;
}

/* ---- plugin ---------------------------------------------------------- */

void up2(const char *k1, const char *v1, const char *k2, const char *v2)
{
    static struct aur_cfg pc;

    memset(&pc, 0, sizeof pc);
    if (k1)
        cfg_add(&pc, k1, v1);
    if (k2)
        cfg_add(&pc, k2, v2);
    plugin_up(HTTP_PLUGIN_SO, &pc);
}

void ep_path(const char *path)
{
    static char url[512], ca[300];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", PORT[0], path);
    snprintf(ca, sizeof ca, "%s/ca.pem", CERT_DIR);
    memset(&EP, 0, sizeof EP);
    cfg_add(&EP, "url", url);
    cfg_add(&EP, "ca_file", ca);
    cfg_add(&EP, "package", "org.test.http");
    cfg_add(&EP, "timeout_ms", "3000");
}

struct aur_conn *open_ok(void)
{
    uint32_t caps;
    struct aur_conn *c = open_ep(&caps);
    ck_assert(caps & AUR_TCAP_SERVER_PUSH);
    return c;
}

struct json_object *req(const char *id, const char *method)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "id", json_object_new_string(id));
    json_object_object_add(m, "method", json_object_new_string(method));
    json_object_object_add(m, "params", json_object_new_object());
    return m;
}

struct json_object *note(const char *method)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "method", json_object_new_string(method));
    return m;
}

void send_ok(struct aur_conn *c, struct json_object *m)
{
    struct aur_error err;
    int rc = OPS->send(c, m, t_now() + 4000, &err);
    json_object_put(m);
    ck_assert_msg(rc == AUR_OK, "send: %s", err.msg);
}

const char *str_at(struct json_object *m, const char *k1,
                          const char *k2)
{
    struct json_object *a, *b;
    if (!json_object_object_get_ex(m, k1, &a))
        return "";
    if (!k2)
        return json_object_get_string(a);
    return json_object_object_get_ex(a, k2, &b) ? json_object_get_string(b)
                                                : "";
}

struct json_object *err_of(struct json_object *m)
{
    struct json_object *e = NULL;
    json_object_object_get_ex(m, "error", &e);
    return e;
}

int err_code(struct json_object *m)
{
    struct json_object *c = NULL;
    json_object_object_get_ex(err_of(m), "code", &c);
    return json_object_get_int(c);
}

bool marker(struct json_object *m, int *status, bool *delivered)
{
    struct json_object *t, *v;
    if (!json_object_object_get_ex(m, "_end", &t))
        return false;
    *status = json_object_object_get_ex(t, "http_status", &v)
                  ? json_object_get_int(v)
                  : -1;
    *delivered = json_object_object_get_ex(t, "delivered", &v) &&
                 json_object_get_boolean(v);
    return true;
}

void setup(void)
{
    log_clear();
    fixture_start();
}

void teardown(void)
{
    down();
    fixture_stop();
}

void set_proto(struct aur_conn *c, int modern, const char *v)
{
    struct aur_protocol_info pi = {sizeof pi, modern, v};
    struct aur_error err;
    ck_assert_int_eq(OPS->set_protocol(c, &pi, &err), AUR_OK);
}

struct aur_conn *legacy_initialized(const char *path)
{
    struct aur_conn *c;
    struct json_object *m;
    up2(NULL, NULL, NULL, NULL);
    ep_path(path);
    c = open_ok();
    send_ok(c, req("i0", "initialize"));
    m = wait_id("i0", 5000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    send_ok(c, note("notifications/initialized"));
    return c;
}
