/*
 * http_host.h - test host for check_transport_http.
 *
 * A struct aur_host (log into a buffer, strict json-c parsing), a test
 * struct aur_cfg, a sink that queues messages and records on_closed, the
 * throwaway CA/server certificate (made with the openssl CLI at start)
 * and the https_fixture process.  Process-wide state on purpose: Check's
 * fork mode gives every test a fresh copy.  Recorder and log functions are
 * thread-safe; the rest is for the test's main thread.
 */
#ifndef AUR_TEST_HTTP_HOST_H
#define AUR_TEST_HTTP_HOST_H

#include <aurora/aur_plugin.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define HTTP_PLUGIN_SO AUR_TEST_BIN_DIR "/plugins/transport-http.so"

struct aur_cfg {
    size_t n;
    const char *k[32];
    const char *v[32];
};

extern const struct aur_host H;
extern const struct aur_sink SINK;
extern const struct aur_transport_ops *OPS;
extern void *ST;
extern struct aur_cfg EP;
extern char CERT_DIR[256]; /* ca.pem, srv.pem, srv.key */
extern int PORT[4];        /* fixture ports A B C D */

void cfg_add(struct aur_cfg *c, const char *k, const char *v);
int64_t t_now(void);
void sleep_ms(long ms);
bool log_has(const char *needle);

/* Make the CA and server cert into CERT_DIR (once, in main). */
void make_certs(void);

/* Start https_fixture (fills PORT) / stop it. */
void fixture_start(void);
void fixture_stop(void);
/* The fixture's log so far (static buffer) and how often needle occurs. */
const char *fx_log(void);
int fx_count(const char *needle);
bool fx_wait(const char *needle, int ms);

/* dlopen + init, with up to two [transport-http] keys (NULL = none). */
void up2(const char *k1, const char *v1, const char *k2, const char *v2);
void down(void);

/* EP = https://127.0.0.1:<PORT[0]><path>, ca_file, package, timeout. */
void ep_path(const char *path);
struct aur_conn *open_ok(void);

/* Recorder. */
struct json_object *next_msg(int ms); /* (transfer) or NULL */
struct json_object *wait_id(const char *id, int ms); /* skips others */
bool wait_closed(int ms);
int closed_count(void);
int closed_code(void);
const char *closed_msg(void);
int msg_count(void);

/* {"jsonrpc":"2.0","id":"<id>","method":"<m>","params":{}} */
struct json_object *req(const char *id, const char *method);
struct json_object *note(const char *method);
/* Send and assert AUR_OK. */
void send_ok(struct aur_conn *c, struct json_object *m);

/* Error object of a response, code, message; transport marker. */
struct json_object *err_of(struct json_object *m);
int err_code(struct json_object *m);
bool marker(struct json_object *m, int *status, bool *delivered);

void setup(void);
void teardown(void);

#endif /* AUR_TEST_HTTP_HOST_H */
