/*
 * tc_plugin.c - ext-tool-contract: the org.aurorabot/tool-contract
 * extension (docs/protocol.md, Extensions).
 *
 * Every App declares {"version": 1}.  The extension is active for an App
 * only when the server answers with exactly {"version": 1} (the JSON
 * integer); otherwise it declines and the core ignores tool and result
 * metadata for that App.  When active it validates and renders scope
 * templates (tc_scope.c) and vouches for isError results that carry no
 * "unknown" status.
 *
 * No settings; no notifications.
 */
#define _GNU_SOURCE
#include "tc_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define INITIAL_BUCKETS 64

static const char INVALID_RESULT_META[] =
    "MCP tool contract result metadata is invalid; the effect of the call "
    "cannot be confirmed";

/* ------------------------------------------------------------------ */
/* init / fini                                                        */
/* ------------------------------------------------------------------ */

static int tc_init(const struct aur_host *host, struct aur_self *self,
                   const struct aur_cfg *cfg, void **state,
                   struct aur_error *err)
{
    struct tc_state *st;

    (void)cfg;
    if (!AUR_HAS(host, json_integer_text) || !host->log)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "ext-tool-contract needs a host with "
                        "json_integer_text");
    st = calloc(1, sizeof *st);
    if (!st)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    st->host = host;
    st->self = self;
    *state = st;
    return AUR_OK;
}

static void tc_fini(void *state)
{
    free(state);
}

/* ------------------------------------------------------------------ */
/* Session store: raw name -> contract, a chained hash table          */
/* ------------------------------------------------------------------ */

static size_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

void tc_tool_free(struct tc_tool *t)
{
    if (!t)
        return;
    for (size_t d = 0; d < 2; d++) {
        for (size_t i = 0; i < t->dir[d].n; i++)
            free(t->dir[d].text[i]);
        free(t->dir[d].text);
        free(t->dir[d].len);
    }
    free(t->raw);
    free(t);
}

const struct tc_tool *tc_session_find(const struct tc_session *s,
                                      const char *raw)
{
    const struct tc_tool *t;
    if (!s || !s->nbucket || !raw)
        return NULL;
    for (t = s->bucket[hash_name(raw) % s->nbucket]; t; t = t->next)
        if (strcmp(t->raw, raw) == 0)
            return t;
    return NULL;
}

static int grow(struct tc_session *s, struct aur_error *err)
{
    size_t nb = s->nbucket ? s->nbucket * 2 : INITIAL_BUCKETS;
    struct tc_tool **b = calloc(nb, sizeof *b);
    if (!b)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < s->nbucket; i++) {
        struct tc_tool *t = s->bucket[i], *next;
        for (; t; t = next) {
            size_t k = hash_name(t->raw) % nb;
            next = t->next;
            t->next = b[k];
            b[k] = t;
        }
    }
    free(s->bucket);
    s->bucket = b;
    s->nbucket = nb;
    return AUR_OK;
}

int tc_session_put(struct tc_session *s, struct tc_tool *t,
                   struct aur_error *err)
{
    struct tc_tool **pp;
    int rc;

    if (s->ntools >= s->nbucket && (rc = grow(s, err)) != AUR_OK) {
        tc_tool_free(t);
        return rc;
    }
    pp = &s->bucket[hash_name(t->raw) % s->nbucket];
    for (; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->raw, t->raw) == 0) {
            struct tc_tool *old = *pp;
            t->next = old->next;
            *pp = t;
            tc_tool_free(old);
            return AUR_OK;
        }
    }
    t->next = NULL;
    *pp = t;
    s->ntools++;
    return AUR_OK;
}

static void session_free(struct tc_session *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nbucket; i++) {
        struct tc_tool *t = s->bucket[i], *next;
        for (; t; t = next) {
            next = t->next;
            tc_tool_free(t);
        }
    }
    free(s->bucket);
    free(s->package);
    free(s);
}

/* ------------------------------------------------------------------ */
/* Negotiation                                                        */
/* ------------------------------------------------------------------ */

static int tc_declare_caps(void *st, const struct aur_app_info *app,
                           struct json_object *caps, struct aur_error *err)
{
    struct json_object *settings;

    (void)st;
    (void)app;
    settings = json_object_new_object();
    if (!settings)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    json_object_object_add(settings, "version", json_object_new_int(1));
    if (json_object_object_add(caps, TC_KEY, settings) != 0) {
        json_object_put(settings);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    return AUR_OK;
}

/* Exactly {"version": 1} with 1 a JSON integer: a float 1.0 or a kept
 * big integer is a json-c double and does not count. */
static bool strictly_v1(struct json_object *server_caps)
{
    struct json_object *exts, *mine, *ver;

    if (!json_object_is_type(server_caps, json_type_object) ||
        !json_object_object_get_ex(server_caps, "extensions", &exts) ||
        !json_object_is_type(exts, json_type_object) ||
        !json_object_object_get_ex(exts, TC_KEY, &mine) ||
        !json_object_is_type(mine, json_type_object) ||
        json_object_object_length(mine) != 1 ||
        !json_object_object_get_ex(mine, "version", &ver) ||
        !json_object_is_type(ver, json_type_int))
        return false;
    return json_object_get_int64(ver) == 1;
}

static int tc_accept_server(void *st, const struct aur_app_info *app,
                            struct json_object *server_caps, void **session,
                            struct aur_error *err)
{
    struct tc_state *s = st;
    struct tc_session *ss;

    if (!strictly_v1(server_caps)) {
        s->host->log(app->self, AUR_LOG_DEBUG,
                     "%s: " TC_KEY " not negotiated", app->package);
        return AUR_DECLINE;
    }
    ss = calloc(1, sizeof *ss);
    if (!ss || !(ss->package = strdup(app->package ? app->package : ""))) {
        free(ss);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    *session = ss;
    s->host->log(app->self, AUR_LOG_DEBUG, "%s: " TC_KEY " negotiated",
                 app->package);
    return AUR_OK;
}

static void tc_end_session(void *st, void *session)
{
    (void)st;
    session_free(session);
}

/* ------------------------------------------------------------------ */
/* Result classification (negotiated)                                 */
/* ------------------------------------------------------------------ */

static bool is_status_unknown(struct json_object *v)
{
    struct json_object *status;
    return json_object_is_type(v, json_type_object) &&
           json_object_object_length(v) == 1 &&
           json_object_object_get_ex(v, "status", &status) &&
           json_object_is_type(status, json_type_string) &&
           strcmp(json_object_get_string(status), "unknown") == 0 &&
           (size_t)json_object_get_string_len(status) == 7;
}

static int tc_classify(void *st, void *session, const struct aur_tool_ref *tool,
                       struct json_object *result, enum aur_outcome *out,
                       struct aur_error *err)
{
    struct json_object *meta, *mine, *is_error;

    (void)st;
    (void)session;
    (void)tool;
    aur_error_clear(err);
    /* A _meta that is not an object holds no contract key. */
    if (!json_object_object_get_ex(result, "_meta", &meta) ||
        !json_object_is_type(meta, json_type_object) ||
        !json_object_object_get_ex(meta, TC_KEY, &mine)) {
        /* The server negotiated the contract, so an isError without an
         * "unknown" status declares no uncertain side effect. */
        if (json_object_object_get_ex(result, "isError", &is_error) &&
            json_object_is_type(is_error, json_type_boolean) &&
            json_object_get_boolean(is_error))
            *out = AUR_OUTCOME_FAILED;
        return AUR_OK;
    }
    *out = AUR_OUTCOME_UNKNOWN;
    if (!is_status_unknown(mine))
        snprintf(err->msg, sizeof err->msg, "%s", INVALID_RESULT_META);
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* Descriptor                                                         */
/* ------------------------------------------------------------------ */

const char *const tc_dir_names[2] = {"observe", "publish"};

static const struct aur_extension_ops tc_ops = {
    .struct_size = sizeof(struct aur_extension_ops),
    .cap_key = TC_KEY,
    .methods = NULL, /* no notifications */
    .declare_caps = tc_declare_caps,
    .accept_server = tc_accept_server,
    .validate_tool = tc_validate_tool,
    .resolve_scope = tc_resolve_scope,
    .classify = tc_classify,
    .end_session = tc_end_session,
};

/* Its host.ini section's keys (ABI 1.4: the host refuses others). */
static const struct aur_cfg_key tc_settings[] = {
    {NULL, 0, 0},
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi);

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    static const struct aur_plugin_desc desc = {
        /* 1.0: later services are tested before use (AUR_HAS). */
        AUR_DESC_HEADER_MIN(AUR_KIND_EXTENSION, 0),
        .name = "ext-tool-contract",
        .version = "1.0.0",
        .summary = "org.aurorabot/tool-contract: scope templates and "
                   "effect-unknown results",
        .init = tc_init,
        .fini = tc_fini,
        .ops = &tc_ops,
        .settings = tc_settings,
    };
    (void)host_abi; /* any 1.x host: see the descriptor */
    return &desc;
}
