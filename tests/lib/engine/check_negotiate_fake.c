/*
 * check_negotiate_fake.c - the scripted transport and the engine
 * structures of the check_negotiate suites (see check_negotiate_fake.h).
 * Only what aur__app_connect and the App's rpc handlers read is filled
 * in; the rest stays zero, as it is before an App starts.
 */
#include "check_negotiate_fake.h"

#include <stdarg.h>
#include <stdio.h>

#include "jsonx.h"

struct nf nf;

struct aur_conn {
    int unused;
};
static struct aur_conn the_conn;

static int nf_open(void *state, const struct aur_cfg *endpoint,
                   const struct aur_sink *sink, aur_deadline dl,
                   struct aur_conn **out, uint32_t *out_caps,
                   struct aur_error *err)
{
    pthread_mutex_lock(&nf.mu);
    nf.sink = *sink;
    pthread_mutex_unlock(&nf.mu);
    *out = &the_conn;
    *out_caps = 0;
    return AUR_OK;
}

/* '@' in text replaced by id. */
static char *fill_id(const char *text, const char *id)
{
    size_t n = strlen(text) + 1, k = 0;
    for (const char *c = text; *c; c++)
        n += *c == '@' ? strlen(id) : 0;
    char *out = malloc(n);
    for (const char *c = text; *c; c++) {
        if (*c == '@') {
            memcpy(out + k, id, strlen(id));
            k += strlen(id);
        } else {
            out[k++] = *c;
        }
    }
    out[k] = '\0';
    return out;
}

/* What the server does about one request, on the sending thread. */
static void react(const struct nf_step *s, struct json_object *id)
{
    const char *idt =
        json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
    struct json_object *msg = NULL;
    struct aur_error err;
    char *text;

    switch (s->act) {
    case NF_REPLY:
        ck_assert(asprintf(&text, "{\"jsonrpc\":\"2.0\",\"id\":%s,%s}", idt,
                           s->body) > 0);
        ck_assert_msg(aur__json_parse(text, strlen(text), AUR__JSON_MAX_DEPTH,
                                      &msg, &err) == AUR_OK,
                      "scripted reply does not parse: %s", text);
        free(text);
        nf.sink.on_message(nf.sink.ctx, msg);
        break;
    case NF_TEXT:
        text = fill_id(s->body, idt);
        nf.sink.on_text(nf.sink.ctx, text, strlen(text), NULL, NULL, &err);
        free(text);
        break;
    case NF_END: {
        struct json_object *e = s->body ? json_tokener_parse(s->body) : NULL;
        struct aur_request_end end = {sizeof end, s->code,        s->delivered,
                                      s->status,  "scripted end", e};
        nf.sink.on_request_end(nf.sink.ctx, id, &end);
        json_object_put(e);
        break;
    }
    case NF_SILENT:
        break;
    case NF_CLOSE:
        if (s->code) {
            aur_fail(&err, s->code, 0, "scripted close");
            nf.sink.on_closed(nf.sink.ctx, &err);
        } else {
            nf.sink.on_closed(nf.sink.ctx, NULL);
        }
        break;
    }
}

static int nf_send(struct aur_conn *c, struct json_object *msg,
                   aur_deadline dl, struct aur_error *err)
{
    const char *t =
        json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
    struct json_object *id = NULL, *m = NULL;
    const struct nf_step *step = NULL;

    pthread_mutex_lock(&nf.mu);
    ck_assert_uint_lt(nf.nsent, NF_MAX_SENT);
    nf.sent[nf.nsent++] = strdup(t);
    if (json_object_object_get_ex(msg, "id", &id) &&
        json_object_object_get_ex(msg, "method", &m)) {
        ck_assert_msg(nf.next < nf.nsteps, "unscripted request: %s", t);
        step = &nf.script[nf.next++];
        ck_assert_msg(strcmp(json_object_get_string(m), step->method) == 0,
                      "expected %s, got %s", step->method, t);
    }
    pthread_mutex_unlock(&nf.mu);
    if (step)
        react(step, id);
    return AUR_OK;
}

static void nf_close(struct aur_conn *c, aur_deadline dl)
{
}

static int nf_reopen(struct aur_conn *c, aur_deadline dl,
                     struct aur_error *err)
{
    pthread_mutex_lock(&nf.mu);
    nf.reopens++;
    nf.sent_at_reopen = nf.nsent;
    pthread_mutex_unlock(&nf.mu);
    return AUR_OK;
}

static int nf_set_protocol(struct aur_conn *c,
                           const struct aur_protocol_info *info,
                           struct aur_error *err)
{
    nf.set_protocol_calls++;
    nf.proto_modern = info->modern;
    snprintf(nf.proto_version, sizeof nf.proto_version, "%s", info->version);
    return AUR_OK;
}

void nf_setup(const struct nf_step *script, size_t n, bool stream, bool reopen)
{
    memset(&nf, 0, sizeof nf);
    pthread_mutex_init(&nf.mu, NULL);
    nf.script = script;
    nf.nsteps = n;

    nf.mcp.host.struct_size = sizeof nf.mcp.host;
    nf.mcp.host.now_ms = aur__now_ms;
    pthread_mutex_init(&nf.mcp.mu, NULL);
    aur__mono_cond_init(&nf.mcp.cv);

    nf.tdef.name = "fake";
    nf.tdef.caps = stream ? AUR_TCAP_STREAM : 0;
    nf.cfg.package = "org.test.neg";
    nf.cfg.transport = &nf.tdef;
    nf.cfg.event_mode = AUR__EV_DISABLED;

    nf.tp.name = "fake";
    nf.tp.ops.t = (struct aur_transport_ops){
        .struct_size = sizeof(struct aur_transport_ops),
        .open = nf_open,
        .send = nf_send,
        .close = nf_close,
        .set_protocol = nf_set_protocol,
        .reopen = reopen ? nf_reopen : NULL,
    };

    nf.app.mcp = &nf.mcp;
    nf.app.cfg = &nf.cfg;
    nf.app.transport = &nf.tp;
    snprintf(nf.app.tag, sizeof nf.app.tag, "app org.test.neg");
    nf.app.info.struct_size = sizeof nf.app.info;
    nf.app.info.package = nf.cfg.package;
    nf.app.info.transport = "fake";
    pthread_mutex_init(&nf.app.mu, NULL);
    aur__mono_cond_init(&nf.app.cv);
}

void nf_teardown(void)
{
    aur__rpc_close(nf.app.rpc, aur__now_ms() + 2000);
    json_object_put(nf.app.server_caps);
    json_object_put(nf.app.client_caps);
    free(nf.app.envelope_text);
    free(nf.app.last_error);
    free(nf.app.listen_end);
    for (size_t i = 0; i < nf.nsent; i++)
        free(nf.sent[i]);
    memset(&nf.app, 0, sizeof nf.app);
    nf.nsent = 0;
}

int nf_connect(int64_t ms, struct aur_error *err)
{
    aur_error_clear(err);
    return aur__app_connect(&nf.app, aur__now_ms() + ms, err);
}

size_t nf_nsent(void)
{
    size_t n;
    pthread_mutex_lock(&nf.mu);
    n = nf.nsent;
    pthread_mutex_unlock(&nf.mu);
    return n;
}

struct json_object *nf_sent(size_t i)
{
    struct json_object *v;
    pthread_mutex_lock(&nf.mu);
    ck_assert_uint_lt(i, nf.nsent);
    v = json_tokener_parse(nf.sent[i]);
    pthread_mutex_unlock(&nf.mu);
    ck_assert_ptr_nonnull(v);
    return v;
}

void nf_assert_method(size_t i, const char *method)
{
    struct json_object *m = nf_sent(i), *v = NULL;
    ck_assert_msg(json_object_object_get_ex(m, "method", &v) &&
                      strcmp(json_object_get_string(v), method) == 0,
                  "message %zu: want %s, got %s", i, method,
                  json_object_to_json_string(m));
    json_object_put(m);
}

struct json_object *nf_get(struct json_object *o, ...)
{
    va_list ap;
    const char *k;

    va_start(ap, o);
    while (o && (k = va_arg(ap, const char *)) != NULL)
        if (!json_object_object_get_ex(o, k, &o))
            o = NULL;
    va_end(ap);
    return o;
}

void nf_add_ext(const struct aur_extension_ops *ops, void *state)
{
    nf.ext.name = "ext-fake";
    nf.ext.ops.e = *ops;
    nf.ext.state = state;
    nf.exts[0] = &nf.ext;
    nf.mcp.exts = nf.exts;
    nf.mcp.nexts = 1;
}
