/*
 * status.c - the status document (what check and discover print,
 * docs/aurora-mcp.1) and the public registry view.  Status never holds
 * env values, tokens, command lines or URLs.
 */
#include "aur_setup.h"

#include "engine.h"
#include "journal.h"
#include "journal_backend.h"
#include "grow.h"
#include "jsonx.h"
#include "nosigpipe.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

const char *aur__state_word(enum aur__app_state s)
{
    static const char *const w[] = {"disabled",    "starting", "ready",
                                    "unavailable", "closed",   "not_started"};
    return (unsigned)s < AUR__ARRAY_LEN(w) ? w[s] : "unknown";
}

const char *aur_call_status_word(enum aur_call_status s)
{
    switch (s) {
    case AUR_CALL_SUCCEEDED:
        return "succeeded";
    case AUR_CALL_FAILED:
        return "failed";
    case AUR_CALL_UNKNOWN:
        break;
    }
    return "unknown";
}

static struct json_object *str_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

/*
 * The status document and a tool's JSON are written as text straight
 * from the frozen registry.  Its schemas and scope lists are read where
 * they lie: a deep copy of every schema into a status tree, printing it
 * and freeing it was most of what `discover` cost beyond the wire
 * (docs/benchmarks.md), and a registry tree may not be shared instead
 * (json-c's reference counts and its printer's cache are writes).  The
 * keys are written in sorted order, so the text is canonical like every
 * text the API hands out.  The first failure sticks in rc.
 */
struct writer {
    struct aur__buf b;
    int rc;
    struct aur_error *err;
    int fd; /* -1: all of it into b; else b goes out to fd as it fills */
};

/* With an fd, what b holds goes out once it passes this: the document
 * for a thousand Apps is tens of megabytes, never held whole. */
#define FLUSH_AT ((size_t)64 << 10)

static void flush(struct writer *w, bool all)
{
    struct aur__nosigpipe ns;
    size_t done = 0;

    if (w->fd < 0 || w->rc != AUR_OK || (!all && w->b.n < FLUSH_AT))
        return;
    aur__nosigpipe_begin(&ns);
    while (done < w->b.n) {
        ssize_t n = write(w->fd, w->b.p + done, w->b.n - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            aur__nosigpipe_end(&ns, e == EPIPE);
            w->rc = aur_fail(w->err, AUR_E_IO, e, "cannot write the status: "
                             "%s", strerror(e));
            return;
        }
        done += (size_t)n;
    }
    aur__nosigpipe_end(&ns, false);
    w->b.n = 0;
}

static void raw_n(struct writer *w, const char *s, size_t n)
{
    if (w->rc == AUR_OK && aur__buf_put(&w->b, s, n, SIZE_MAX) != 0)
        w->rc = aur_fail(w->err, AUR_E_NOMEM, ENOMEM, "out of memory");
}

static void raw(struct writer *w, const char *s)
{
    raw_n(w, s, strlen(s));
}

static void quoted(struct writer *w, const char *s, size_t n)
{
    if (w->rc == AUR_OK)
        w->rc = aur__json_quoted_put(&w->b, s, n, w->err);
}

static void value(struct writer *w, struct json_object *v)
{
    if (w->rc == AUR_OK)
        w->rc = aur__json_canonical_put(&w->b, v, w->err);
}

static void scope_list(struct writer *w, const struct aur__tool *t,
                       const char *k)
{
    struct json_object *v = NULL;

    if (json_object_object_get_ex(t->scopes, k, &v))
        value(w, v);
    else
        raw(w, "[]");
}

static void tool_put(struct writer *w, const struct aur__tool *t,
                     bool with_callable)
{
    const char *app = t->app ? t->app->cfg->package : "";

    raw(w, "{\"app\":");
    quoted(w, app, strlen(app));
    /* A tool that only runs as a task is listed, but not callable. */
    if (with_callable)
        raw(w, t->task_required ? ",\"callable\":false"
                                : ",\"callable\":true");
    raw(w, ",\"description\":");
    quoted(w, t->description, t->description_len);
    raw(w, ",\"id\":");
    quoted(w, t->id, strlen(t->id));
    raw(w, ",\"input_schema\":");
    /* An App's tool kept the text its budget check made. */
    if (t->schema_text)
        raw_n(w, t->schema_text, t->schema_len);
    else
        value(w, t->schema);
    raw(w, ",\"observe\":");
    scope_list(w, t, "observe");
    raw(w, ",\"publish\":");
    scope_list(w, t, "publish");
    raw(w, ",\"raw_name\":");
    quoted(w, t->raw_name, strlen(t->raw_name));
    raw(w, "}");
}

/* The end of a writer: its text (transfer) on AUR_OK, else freed. */
static int finish(struct writer *w, char **out, size_t *len)
{
    if (w->rc != AUR_OK) {
        free(w->b.p);
        return w->rc;
    }
    *out = w->b.p;
    *len = w->b.n;
    return AUR_OK;
}

int aur__tool_text(const struct aur__tool *t, char **out, size_t *len,
                   struct aur_error *err)
{
    struct writer w = {{0}, AUR_OK, err, -1};

    tool_put(&w, t, false);
    return finish(&w, out, len);
}

static struct json_object *app_json(struct aur_mcp *mcp, struct aur__app *a)
{
    struct json_object *o = json_object_new_object();
    struct json_object *ext = json_object_new_object();
    struct json_object *ids = json_object_new_array();

    pthread_mutex_lock(&a->mu);
    json_object_object_add(o, "package", json_object_new_string(a->cfg->package));
    json_object_object_add(o, "enabled", json_object_new_boolean(a->cfg->enabled));
    json_object_object_add(o, "active",
                           json_object_new_boolean(mcp->cfg->mcp_enabled &&
                                                   a->cfg->enabled &&
                                                   !a->skipped));
    json_object_object_add(o, "transport",
                           json_object_new_string(
                               aur__transport_word(a->cfg->transport)));
    json_object_object_add(o, "state",
                           json_object_new_string(aur__state_word(a->state)));
    json_object_object_add(o, "negotiated_version",
                           str_or_null(a->version[0] ? a->version : NULL));
    for (size_t i = 0; i < mcp->nexts; i++) {
        bool on = false;
        for (size_t k = 0; k < a->next; k++)
            if (a->ext[k].p == mcp->exts[i])
                on = a->ext[k].active;
        if (mcp->exts[i]->ops.e.cap_key)
            json_object_object_add(ext, mcp->exts[i]->ops.e.cap_key,
                                   json_object_new_boolean(on));
    }
    json_object_object_add(o, "extensions", ext);
    struct json_object *xs = NULL;
    for (size_t k = 0; k < a->next; k++) {
        struct aur__ext_session *x = &a->ext[k];
        struct json_object *one;
        struct aur_error err;
        if (!x->active || !AUR_HAS(&x->p->ops.e, status) ||
            !x->p->ops.e.cap_key)
            continue;
        one = json_object_new_object();
        if (x->p->ops.e.status(x->p->state, x->session, one, &err) == AUR_OK) {
            if (!xs)
                xs = json_object_new_object();
            json_object_object_add(xs, x->p->ops.e.cap_key, one);
        } else {
            json_object_put(one);
        }
    }
    if (xs)
        json_object_object_add(o, "extension_status", xs);
    struct json_object *uncallable = json_object_new_array();
    /* Only a frozen catalog is the App's: what a failed or cancelled
     * start had read so far (part of it, or a stale pass) is not. */
    for (size_t i = 0; a->frozen && i < a->ntools; i++) {
        json_object_array_add(ids, json_object_new_string(a->tools[i]->id));
        if (a->tools[i]->task_required)
            json_object_array_add(uncallable,
                                  json_object_new_string(a->tools[i]->id));
    }
    json_object_object_add(o, "tool_ids", ids);
    json_object_object_add(o, "not_callable_tool_ids", uncallable);
    json_object_object_add(o, "last_error", str_or_null(a->last_error));
    json_object_object_add(o, "restart_required",
                           json_object_new_boolean(a->restart_required));
    pthread_mutex_unlock(&a->mu);
    return o;
}

int aur_mcp_restart_required(struct aur_mcp *h)
{
    int any = 0;
    for (size_t i = 0; i < h->napps; i++) {
        pthread_mutex_lock(&h->apps[i].mu);
        any |= h->apps[i].restart_required;
        pthread_mutex_unlock(&h->apps[i].mu);
    }
    return any;
}

/* "journal": what the backend reports (docs/journal.md), or null when
 * the runtime brought its own world writer or the host is not started. */
static void journal_put(struct writer *w, struct aur_mcp *h)
{
    struct aur__journal *j = __atomic_load_n(&h->journal, __ATOMIC_ACQUIRE);
    struct aur__jstate st;
    struct json_object *o;

    if (!j) {
        raw(w, ",\"journal\":null");
        return;
    }
    aur__journal_state(j, &st);
    o = json_object_new_object();
    if (o) {
        json_object_object_add(o, "backend", json_object_new_string(st.backend));
        json_object_object_add(o, "target", json_object_new_string(st.target));
        json_object_object_add(o, "connection",
                               json_object_new_string(st.state));
        json_object_object_add(o, "reconnects",
                               json_object_new_int64((int64_t)st.reconnects));
        json_object_object_add(o, "failures",
                               json_object_new_int64((int64_t)st.failures));
        json_object_object_add(o, "down_ms", json_object_new_int64(st.down_ms));
        json_object_object_add(o, "last_error",
                               str_or_null(st.last_error[0] ? st.last_error
                                                            : NULL));
    }
    raw(w, ",\"journal\":");
    if (!o)
        w->rc = aur_fail(w->err, AUR_E_NOMEM, ENOMEM, "out of memory");
    value(w, o);
    json_object_put(o);
}

static void status_put(struct writer *w, struct aur_mcp *h, int with_tools)
{
    raw(w, "{\"apps\":[");
    for (size_t i = 0; i < h->napps && w->rc == AUR_OK; i++) {
        struct json_object *a = app_json(h, &h->apps[i]);
        if (i)
            raw(w, ",");
        if (!a)
            w->rc = aur_fail(w->err, AUR_E_NOMEM, ENOMEM, "out of memory");
        value(w, a);
        json_object_put(a);
        flush(w, false);
    }
    raw(w, "]");
    journal_put(w, h); /* keys in order: the text is canonical */
    raw(w, h->cfg->mcp_enabled ? ",\"platform_enabled\":true"
                               : ",\"platform_enabled\":false");
    raw(w, aur_mcp_restart_required(h) ? ",\"restart_required\":true"
                                       : ",\"restart_required\":false");
    if (with_tools) {
        /* Empty until the start has frozen the registry whole. */
        size_t n = __atomic_load_n(&h->nregistry, __ATOMIC_ACQUIRE);
        raw(w, ",\"tools\":[");
        for (size_t i = 0; i < n && w->rc == AUR_OK; i++) {
            if (i)
                raw(w, ",");
            tool_put(w, h->registry[i], true);
            flush(w, false);
        }
        raw(w, "]");
    }
    raw(w, "}");
}

int aur__status_text(struct aur_mcp *h, int with_tools, char **out,
                     size_t *len, struct aur_error *err)
{
    struct writer w = {{0}, AUR_OK, err, -1};

    status_put(&w, h, with_tools);
    return finish(&w, out, len);
}

int aur_mcp_status_write(struct aur_mcp *h, int with_tools, int fd,
                         struct aur_error *err)
{
    struct writer w = {{0}, AUR_OK, err, fd};

    if (!h || fd < 0)
        return aur_fail(err, AUR_E_INVAL, 0, "no host or no descriptor");
    status_put(&w, h, with_tools);
    flush(&w, true);
    free(w.b.p);
    return w.rc;
}

/* The tree is the text parsed back: one writer for both forms.  Nesting
 * is bounded by the parser's own budget for a message plus the status
 * document's three levels above a schema. */
struct json_object *aur_mcp_status_jsonc(struct aur_mcp *h, int with_tools)
{
    struct json_object *o = NULL;
    struct aur_error err;
    char *text = NULL;
    size_t n = 0;

    if (aur__status_text(h, with_tools, &text, &n, &err) != AUR_OK)
        return NULL;
    if (aur__json_parse_mem(text, n, AUR__JSON_MAX_DEPTH + 8, 0, &o, NULL,
                            &err) != AUR_OK)
        o = NULL;
    free(text);
    return o;
}

size_t aur_mcp_tool_count(const struct aur_mcp *h)
{
    return h->nregistry;
}

/* An App's tool keeps its schema as canonical text alone: the json-c
 * tree of even a small schema is some 2 KiB, most of what a tool cost
 * to hold.  The tree aur_tool_info promises is made the first time
 * somebody asks for this tool, and kept until destroy. */
static pthread_mutex_t schema_mu = PTHREAD_MUTEX_INITIALIZER;

const struct aur_tool_info *aur_mcp_tool_at(const struct aur_mcp *h, size_t i)
{
    struct aur__tool *t;

    if (i >= h->nregistry)
        return NULL;
    t = h->registry[i];
    if (t->schema_text &&
        !__atomic_load_n(&t->info.input_schema, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&schema_mu);
        if (!t->info.input_schema) {
            struct json_object *o = NULL;
            struct aur_error err;
            /* It was parsed once already, within the same depth. */
            if (aur__json_parse_mem(t->schema_text, t->schema_len,
                                    AUR__JSON_MAX_DEPTH, 0, &o, NULL,
                                    &err) == AUR_OK) {
                t->schema = o;
                __atomic_store_n(&t->info.input_schema, o, __ATOMIC_RELEASE);
            }
        }
        pthread_mutex_unlock(&schema_mu);
    }
    return &t->info;
}
