/*
 * api_text.c - the embedding API's JSON as text (aur_host.h): each call
 * is its json-c form (aur_host_jsonc.h) with the tree parsed from, or
 * printed to, canonical text, so a binding from any language needs no
 * JSON library of ours.  Also the library's exported version and error
 * words.
 *
 * aur_host.h is included first: in this file aur_rc_word and aur_strerror
 * are the exported functions, not aur_plugin.h's inline copies.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>

#include "aur_setup.h"

#include "engine.h"
#include "jsonx.h"

#include <json-c/json.h>

const char *aur_version(void) { return AUR_VERSION_STRING; }

const char *aur_rc_word(int rc) { return aur__rc_text(rc, 0); }

const char *aur_strerror(int rc) { return aur__rc_text(rc, 1); }

void aur_free(void *p) { free(p); }

/* v (taken) as canonical text into *json / *len. */
static int to_text(struct json_object *v, char **json, size_t *len,
                   struct aur_error *err)
{
    size_t n = 0;
    int rc;

    if (!json)
        rc = aur_fail(err, AUR_E_INVAL, 0, "no output pointer");
    else
        rc = aur__json_canonical(v, json, &n, err);
    json_object_put(v);
    if (rc == AUR_OK && len)
        *len = n;
    return rc;
}

int aur_mcp_call(struct aur_mcp *h, const char *tool_id,
                 const char *args_json, size_t args_len, int64_t timeout_ms,
                 struct aur_tool_output *out)
{
    struct json_object *args;
    struct aur_error err;
    int rc;

    if ((rc = aur__call_args(args_json, args_len, &args, &err)) != AUR_OK) {
        aur__out_reset(out);
        if (rc == AUR_E_NOMEM)
            aur__out_nomem(out, AUR_CALL_FAILED);
        else
            aur__out_set(out, AUR_CALL_FAILED, "%s", err.msg);
        return rc;
    }
    rc = aur_mcp_call_jsonc(h, tool_id, args, timeout_ms, out);
    json_object_put(args);
    return rc;
}

int aur_mcp_status(struct aur_mcp *h, int with_tools, char **json,
                   size_t *len, struct aur_error *err)
{
    size_t n;
    int rc;

    if (!json)
        return aur_fail(err, AUR_E_INVAL, 0, "no output pointer");
    rc = aur__status_text(h, with_tools, json, &n, err);
    if (rc == AUR_OK && len)
        *len = n;
    return rc;
}

int aur_mcp_app_checks(struct aur_mcp *h, const char *package, char **json,
                       size_t *len, struct aur_error *err)
{
    struct json_object *o = aur_mcp_app_checks_jsonc(h, package);

    if (!o)
        return aur_fail(err, AUR_E_NOTFOUND, 0, "no App has the package %s",
                        package ? package : "(null)");
    return to_text(o, json, len, err);
}

int aur_plugin_info(const char *path, char **json, size_t *len,
                    struct aur_error *err)
{
    struct aur_error local;
    struct json_object *o;

    if (!err)
        err = &local;
    if (!(o = aur_plugin_info_jsonc(path, err)))
        return err->code ? err->code : AUR_E_PLUGIN;
    return to_text(o, json, len, err);
}

/* Tool t as the object aur_mcp_tool_json describes, or NULL. */
static struct aur__text *tool_text(const struct aur__tool *t)
{
    struct aur__text *x = NULL;
    struct aur_error err;
    char *s;
    size_t n;

    if (aur__tool_text(t, &s, &n, &err) != AUR_OK)
        return NULL;
    if ((x = malloc(sizeof *x + n + 1))) {
        x->len = n;
        memcpy(x->s, s, n + 1);
    }
    free(s);
    return x;
}

const char *aur_mcp_tool_json(struct aur_mcp *h, size_t i, size_t *len)
{
    struct aur__tool *t;
    struct aur__text *x, *none = NULL;

    if (!h || i >= h->nregistry)
        return NULL;
    t = h->registry[i];
    x = __atomic_load_n(&t->json, __ATOMIC_ACQUIRE);
    if (!x) {
        /* Two threads may both make it; one keeps its copy. */
        if (!(x = tool_text(t)))
            return NULL;
        if (!__atomic_compare_exchange_n(&t->json, &none, x, false,
                                         __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            free(x);
            x = none;
        }
    }
    if (len)
        *len = x->len;
    return x->s;
}
