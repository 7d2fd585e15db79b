/*
 * we_host.h - the test host of check_ext_world_events: the plugin .so
 * dlopened and driven through its aur_extension_ops, with world_write /
 * world_write_batch keeping commits in memory under the journal's
 * idempotency rule (README: The world journal).
 *
 * The plugin commits from a writer thread of its own, so the store is
 * guarded by hmu, and a test reads it only after the plugin says nothing
 * is queued any more (settle) or after end_session.  A gate can hold the
 * writer inside world_write_batch so that a test decides which events
 * share a transaction.  Process-wide state: Check's fork mode gives every
 * test a copy.  Every function asserts with Check (test thread only).
 */
#ifndef AUR_TEST_WE_HOST_H
#define AUR_TEST_WE_HOST_H

#include <aurora/aur_plugin.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLUGIN_SO AUR_TEST_BIN_DIR "/plugins/ext-world-events.so"
#define PKG "org.test.app"
#define EV_METHOD "notifications/org.aurorabot/world-events/event"
#define CAPS_OK                                                              \
    "{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":1}}}"

#define VALID                                                                \
    "{\"event_id\":\"ev-1\",\"scope\":\"qq:group:1\",\"kind\":"             \
    "\"qq.message.group\",\"occurred_at\":\"2026-05-01T08:30:00+08:00\","    \
    "\"summary\":\"SECRET summary\",\"data\":{\"text\":\"SECRET data\"}}"

/* Event texts: EV(id, scope, kind, at, summary, rest) with the D_ parts. */
#define EV(id, scope, kind, at, summary, rest)                               \
    "{\"event_id\":" id ",\"scope\":" scope ",\"kind\":" kind                \
    ",\"occurred_at\":" at ",\"summary\":" summary rest "}"
#define D_ID "\"ev-1\""
#define D_SC "\"qq:group:1\""
#define D_KI "\"qq.message\""
#define D_AT "\"2026-05-01T08:30:00Z\""
#define D_SU "\"SECRET summary\""
#define ID10 "abcdefghij"
#define ID50 ID10 ID10 ID10 ID10 ID10
#define ID150 ID50 ID50 ID50


#define MAXC 64

struct rec {
    char *commit_id, *kind, *source, *summary, *occurred_at;
    char *scopes[4];
    size_t n_scopes;
    struct json_object *data;
    char *data_text; /* c->data as the journal prints it */
};

/* The store and the writer's counters (hmu guards them while a session
 * runs). */
extern struct rec commits[MAXC];
extern size_t ncommits;
extern int write_calls;
extern char logbuf[65536];
extern size_t loglen;
/* When set, a log line saying events were rejected records, as it is
 * logged, log_watch's "rejected" count in rejected_at_log. */
extern void *log_watch;
extern int64_t rejected_at_log;
extern pthread_mutex_t hmu;
extern pthread_cond_t hcv;
extern bool gate_closed;          /* world_write_batch waits while set */
extern int batch_calls;           /* world_write_batch calls entered */
extern size_t batch_sizes[16];
extern int batch_delay_ms;        /* each world_write_batch sleeps this long */
extern const char *fail_summary;  /* a batch holding it fails whole */

/* The loaded plugin (borrowed, for the whole test). */
extern const struct aur_plugin_desc *D;
extern const struct aur_extension_ops *OPS;
extern void *ST;

/* Check fixtures: load and init the plugin against the 1.1 host or an
 * ABI 1.0 host (no world_write_batch); fini it. */
void setup(void);
void setup_abi10(void);
void teardown(void);

struct aur_app_info app_info(const char *pkg, const char *mode, int modern);
/* accept_server with caps given as JSON text (NULL = {}). */
int accept_mode(const char *pkg, const char *mode, int modern,
                const char *caps_json, void **sess, struct aur_error *err);
/* Accepted sessions in world_events mode (modern) and legacy mode. */
void *world_session(const char *pkg);
void *legacy_session(void);
/* A counter of sess's status (-1 if absent). */
int64_t count_of(void *sess, const char *key);
/* Wait (up to slack_ms(10 s)) until every queued event of sess is
 * answered. */
void settle(void *sess);
/* on_notify with params as JSON text; notify also settles. */
int notify_async(void *sess, const char *method, const char *params_json,
                 int active, struct aur_error *err);
int notify(void *sess, const char *method, const char *params_json,
           int active, struct aur_error *err);
/* Wait (bounded) for n world_write_batch calls; open the gate. */
void wait_batch_calls(int n);
void open_gate(void);

#endif
