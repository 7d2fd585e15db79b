/*
 * plugin_host.h - the test side of the plugin ABI, shared by the suites
 * that drive a plugin through its descriptor without the real host
 * (check_transport_stdio, check_transport_http, check_abi).
 *
 * H is a struct aur_host whose log goes into one buffer, a line
 * "<level> [<self tag or ->] <text>\n" per call; cfg_* read the test-side
 * struct aur_cfg below; json_parse is json-c in strict mode; world_write
 * refuses (no world here).  SINK records into R: messages in a queue,
 * on_closed's count and the last reason.  D/OPS/ST are the plugin that
 * plugin_up() loaded and initialised.
 *
 * The state is process-wide on purpose: Check's fork mode gives every
 * test a fresh copy.  Log and recorder functions are thread-safe (plugin
 * threads call them); the rest is for the test's main thread.
 */
#ifndef AUR_TEST_PLUGIN_HOST_H
#define AUR_TEST_PLUGIN_HOST_H

#include <aurora/aur_plugin.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define PH_CFG_MAX 32
#define QCAP 1024

/* The ABI keeps aur_cfg opaque; the test host defines its own.  Keys and
 * values are borrowed. */
struct aur_cfg {
    size_t n;
    const char *k[PH_CFG_MAX];
    const char *v[PH_CFG_MAX];
};

/* Likewise aur_self: the tag is what H's log prints for it. */
struct aur_self {
    char tag[64];
};

/* Everything the sink saw.  Read the fields under mu, or after the
 * plugin's threads are gone (after close).  code, detail and msg are the
 * last on_closed's reason (0, 0, "" when it was NULL, and why_null). */
struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct json_object *q[QCAP];
    size_t head, tail;
    int messages, closed, code, detail;
    bool why_null;
    char msg[AUR_ERR_MSG_SIZE];
};

extern const struct aur_host H;
extern const struct aur_sink SINK; /* ctx = &R */
/* The same recorder behind an ABI 1.2 sink (on_text); TEXT counts what
 * reached it: frames, frames still holding a CR or LF, responses it
 * announced, and messages the transport wrongly sent to on_message. */
struct text_stats {
    int frames, with_eol, responses, direct;
};
extern const struct aur_sink TEXT_SINK;
extern struct text_stats TEXT;
extern const struct aur_sink *OPEN_SINK; /* open_ep's; SINK unless set */
extern struct recorder R;
extern struct aur_self SELF; /* tag "test", what plugin_up() passes */
extern const struct aur_plugin_desc *D;
extern const struct aur_transport_ops *OPS;
extern void *ST;          /* the plugin state of plugin_up() */
extern struct aur_cfg EP; /* an endpoint for the suite to fill */

/* Append k = v (asserts room). */
void cfg_add(struct aur_cfg *c, const char *k, const char *v);
int64_t t_now(void); /* CLOCK_MONOTONIC ms, also H.now_ms */
void sleep_ms(long ms);

bool log_has(const char *needle);
int log_count(const char *needle);
bool log_wait(const char *needle, int ms); /* bounded by slack_ms(ms) */
char *log_copy(size_t *len);               /* caller frees */
/* The log itself: only while no plugin thread can write to it. */
const char *log_text(void);
void log_clear(void);

struct json_object *next_msg(int ms); /* (transfer) or NULL after ms */
const char *method_of(struct json_object *m); /* "" when none */
/* Skip (and put) other messages; NULL after ms. */
struct json_object *wait_method(const char *method, int ms);
struct json_object *wait_id(const char *id, int ms); /* string ids */
bool wait_closed(int ms);
int closed_count(void);
int closed_code(void);
const char *closed_msg(void); /* R.msg: read after the close */
int msg_count(void);
void drain_queue(void);

/* dlopen so and return its descriptor (asserts every step). */
const struct aur_plugin_desc *load_plugin(const char *so);
/* load_plugin, then D, OPS and ST = init(&H, &SELF, pc) (asserts AUR_OK).
 * pc is borrowed until down(). */
void plugin_up(const char *so, const struct aur_cfg *pc);
void down(void); /* drop queued messages, fini */
/* OPS->open(ST, &EP, &SINK) within 5 s; asserts AUR_OK and a connection;
 * *caps = the transport's caps. */
struct aur_conn *open_ep(uint32_t *caps);

#endif /* AUR_TEST_PLUGIN_HOST_H */
