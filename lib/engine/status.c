/*
 * status.c - the status document (what check and discover print,
 * docs/aurora-mcp.1) and the public registry view.  Status never holds
 * env values, tokens, command lines or URLs.
 */
#include "aur_setup.h"

#include "engine.h"

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

static struct json_object *tool_json(const struct aur__tool *t)
{
    struct json_object *o = json_object_new_object(), *v;
    json_object_object_add(o, "id", json_object_new_string(t->id));
    json_object_object_add(o, "app",
                           json_object_new_string(t->app ? t->app->cfg->package
                                                         : ""));
    json_object_object_add(o, "raw_name", json_object_new_string(t->raw_name));
    json_object_object_add(o, "description",
                           json_object_new_string_len(t->description,
                                                      (int)t->description_len));
    /* A tool that only runs as a task is listed, but not callable. */
    json_object_object_add(o, "callable",
                           json_object_new_boolean(!t->task_required));
    json_object_object_add(o, "input_schema", aur__json_copy(t->schema));
    if (json_object_object_get_ex(t->scopes, "observe", &v))
        json_object_object_add(o, "observe", aur__json_copy(v));
    if (json_object_object_get_ex(t->scopes, "publish", &v))
        json_object_object_add(o, "publish", aur__json_copy(v));
    return o;
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
    for (size_t i = 0; i < a->ntools; i++) {
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

struct json_object *aur_mcp_status_jsonc(struct aur_mcp *h, int with_tools)
{
    struct json_object *o = json_object_new_object();
    struct json_object *apps = json_object_new_array();

    json_object_object_add(o, "platform_enabled",
                           json_object_new_boolean(h->cfg->mcp_enabled));
    json_object_object_add(o, "restart_required",
                           json_object_new_boolean(aur_mcp_restart_required(h)));
    if (with_tools) {
        struct json_object *tools = json_object_new_array();
        for (size_t i = 0; i < h->nregistry; i++)
            json_object_array_add(tools, tool_json(h->registry[i]));
        json_object_object_add(o, "tools", tools);
    }
    for (size_t i = 0; i < h->napps; i++)
        json_object_array_add(apps, app_json(h, &h->apps[i]));
    json_object_object_add(o, "apps", apps);
    return o;
}

size_t aur_mcp_tool_count(const struct aur_mcp *h)
{
    return h->nregistry;
}

const struct aur_tool_info *aur_mcp_tool_at(const struct aur_mcp *h, size_t i)
{
    return i < h->nregistry ? &h->registry[i]->info : NULL;
}
