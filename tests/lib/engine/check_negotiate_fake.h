/*
 * check_negotiate_fake.h - the fixture of the check_negotiate suites
 * (check_negotiate.c, check_negotiate_fail.c): the minimum real engine
 * structures aur__app_connect reads (struct aur_mcp with its host vtable
 * clock, struct aur__app, its config and transport def, the transport
 * plugin slot) around a fake transport that answers each request from a
 * script.
 *
 * The script is consumed one step per request (a message with an id and
 * a method); notifications and our answers to server requests consume
 * nothing.  Each step names the method it expects and how the "server"
 * reacts, synchronously inside send(): a reply, a raw text frame, a
 * request end (ABI 1.3), silence, or the end of the connection.  Every
 * message sent is kept as text for the test to read back.
 */
#ifndef AUR_CHECK_NEGOTIATE_FAKE_H
#define AUR_CHECK_NEGOTIATE_FAKE_H

#include "aur_setup.h"

#include <check.h>
#include <pthread.h>

#include <json-c/json.h>

#include "clock.h"
#include "engine.h"

enum nf_act {
    NF_REPLY,  /* body: the members after "jsonrpc" and "id" */
    NF_TEXT,   /* body: a whole frame, '@' replaced by the id's JSON */
    NF_END,    /* on_request_end: code, delivered, status; body: the
                  server's error object, or NULL */
    NF_SILENT, /* nothing, ever */
    NF_CLOSE,  /* on_closed: code 0 = clean EOF, else why */
};

struct nf_step {
    const char *method;
    enum nf_act act;
    const char *body;
    int code;
    int status;
    int delivered;
};

/* Steps, every member given (-Wmissing-field-initializers). */
#define NF_STEP_REPLY(m, body)                                                \
    {                                                                         \
        m, NF_REPLY, body, 0, 0, 0                                            \
    }
#define NF_STEP_TEXT(m, frame)                                                \
    {                                                                         \
        m, NF_TEXT, frame, 0, 0, 0                                            \
    }
#define NF_STEP_END(m, error, code, status, delivered)                        \
    {                                                                         \
        m, NF_END, error, code, status, delivered                             \
    }
#define NF_STEP_SILENT(m)                                                     \
    {                                                                         \
        m, NF_SILENT, NULL, 0, 0, 0                                           \
    }
#define NF_STEP_CLOSE(m, code)                                                \
    {                                                                         \
        m, NF_CLOSE, NULL, code, 0, 0                                         \
    }

#define NF_MAX_SENT 32

struct nf {
    struct aur_mcp mcp;
    struct aur__app app;
    struct aur__app_cfg cfg;
    struct aur__transport_def tdef;
    struct aur__plugin tp;
    struct aur__plugin ext;
    struct aur__plugin *exts[1];

    pthread_mutex_t mu; /* the fields below */
    struct aur_sink sink;
    const struct nf_step *script;
    size_t nsteps, next;
    char *sent[NF_MAX_SENT];
    size_t nsent;
    int reopens;
    size_t sent_at_reopen; /* nsent when reopen was called */
    int set_protocol_calls;
    int proto_modern;
    char proto_version[32];
};

extern struct nf nf;

/* A fresh fixture over script[0..n).  stream: the transport def has
 * AUR_TCAP_STREAM (stdio-like: silence may be a legacy server's answer);
 * reopen: the transport has the reopen hook. */
void nf_setup(const struct nf_step *script, size_t n, bool stream,
              bool reopen);
/* Close the connection (if open) and free what connect left. */
void nf_teardown(void);
/* aur__app_connect with a deadline ms from now. */
int nf_connect(int64_t ms, struct aur_error *err);
/* The i-th message sent (new object, transfer); assert its method; how
 * many were sent. */
struct json_object *nf_sent(size_t i);
void nf_assert_method(size_t i, const char *method);
size_t nf_nsent(void);
/* The member at a path of keys ("a", "b", NULL) or NULL (borrowed). */
struct json_object *nf_get(struct json_object *o, ...);

/* An extension plugin (its ops borrowed) in mcp->exts. */
void nf_add_ext(const struct aur_extension_ops *ops, void *state);

void negotiate_add_fail(Suite *s);

#endif
