/*
 * http_host.h - test host for check_transport_http.
 *
 * The test host, log and sink recorder are tests/support/plugin_host.h;
 * here are the throwaway CA/server certificate (made with the openssl CLI
 * at start), the https_fixture process, transport-http's endpoint and
 * message helpers.  Process-wide state on purpose: Check's fork mode
 * gives every test a fresh copy.  Test's main thread only.
 */
#ifndef AUR_TEST_HTTP_HOST_H
#define AUR_TEST_HTTP_HOST_H

#include "support/plugin_host.h"

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#define HTTP_PLUGIN_SO AUR_TEST_BIN_DIR "/plugins/transport-http.so"

extern char CERT_DIR[256]; /* ca.pem, srv.pem, srv.key */
extern int PORT[4];        /* fixture ports A B C D */

/* Make the CA and server cert into CERT_DIR (once, in main). */
void make_certs(void);

/* Start https_fixture (fills PORT) / stop it. */
void fixture_start(void);
void fixture_stop(void);
/* The fixture's log so far (static buffer) and how often needle occurs. */
const char *fx_log(void);
int fx_count(const char *needle);
/* Whether needle occurs in the log within slack_ms(ms). */
bool fx_wait(const char *needle, int ms);

/* plugin_up(HTTP_PLUGIN_SO) with up to two [transport-http] keys (NULL =
 * none). */
void up2(const char *k1, const char *v1, const char *k2, const char *v2);

/* EP = https://127.0.0.1:<PORT[0]><path>, ca_file, package, timeout. */
void ep_path(const char *path);
struct aur_conn *open_ok(void);

/* {"jsonrpc":"2.0","id":"<id>","method":"<m>","params":{}} */
struct json_object *req(const char *id, const char *method);
struct json_object *note(const char *method);
/* Send and assert AUR_OK. */
void send_ok(struct aur_conn *c, struct json_object *m);

/* Error object of a response, code, message.  marker: the request end
 * (on_request_end, recorded by the test sink under "_end"); false for a
 * response the server sent. */
/* m[k1] (or m[k1][k2]) as a string; "" when absent. */
const char *str_at(struct json_object *m, const char *k1, const char *k2);
struct json_object *err_of(struct json_object *m);
int err_code(struct json_object *m);
bool marker(struct json_object *m, int *status, bool *delivered);

/* set_protocol(modern, version v) on c; must succeed. */
void set_proto(struct aur_conn *c, int modern, const char *v);
/* A legacy session on the fixture's path, initialized (the
 * notification sent, not yet answered); the protocol not yet set, so no
 * standalone GET yet. */
struct aur_conn *legacy_initialized(const char *path);

void setup(void);
void teardown(void);

#endif /* AUR_TEST_HTTP_HOST_H */
