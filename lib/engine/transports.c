/*
 * transports.c - the transport plugins as the rest of the core sees them:
 * what the config loader checks an App file against (ABI 1.4 words,
 * section, keys, check), what `aurora-mcp doctor` asks of an App
 * without starting it (the preflight hook), and the start's head start
 * (the prepare hook).  The core names no transport:
 * everything here comes from the loaded plugins (docs/transports.md).
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "engine.h"
#include "fdlimit.h"

#include <json-c/json.h>

/* A section or word a transport may claim: [a-z0-9_-]+, short. */
static bool word_ok(const char *w)
{
    size_t n = w ? strlen(w) : 0;
    if (n == 0 || n > 48)
        return false;
    for (; *w; w++)
        if (!((*w >= 'a' && *w <= 'z') || (*w >= '0' && *w <= '9') ||
              *w == '-' || *w == '_'))
            return false;
    return true;
}

/* No two transports share a section or a word. */
static int defs_distinct(const struct aur_mcp *mcp, struct aur_error *err)
{
    for (size_t i = 0; i < mcp->ntdefs; i++)
        for (size_t j = i + 1; j < mcp->ntdefs; j++) {
            const struct aur__transport_def *a = &mcp->tdefs[i],
                                            *b = &mcp->tdefs[j];
            const char *w =
                aur__transport_takes(b, a->name) ? a->name : NULL;
            for (const char *const *p = a->words; !w && p && *p; p++)
                if (aur__transport_takes(b, *p))
                    w = *p;
            if (w)
                return aur_fail(err, AUR_E_PLUGIN, 0,
                                "transports %s and %s both take "
                                "transport = %s", a->name, b->name, w);
            if (strcmp(a->section, b->section) == 0)
                return aur_fail(err, AUR_E_PLUGIN, 0,
                                "transports %s and %s both read section "
                                "[%s]", a->name, b->name, a->section);
        }
    return AUR_OK;
}

/* The transports as the config loader sees them (ABI 1.4 words, section,
 * keys, check); words and sections unambiguous across the loaded set. */
int aur__transport_defs(struct aur_mcp *mcp, struct aur_error *err)
{
    size_t n = 0;

    for (size_t i = 0; i < mcp->plugins.n; i++)
        n += mcp->plugins.v[i].desc.kind == AUR_KIND_TRANSPORT;
    mcp->tdefs = calloc(n ? n : 1, sizeof *mcp->tdefs);
    mcp->tplugins = calloc(n ? n : 1, sizeof *mcp->tplugins);
    if (!mcp->tdefs || !mcp->tplugins)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < mcp->plugins.n; i++) {
        struct aur__plugin *p = &mcp->plugins.v[i];
        const struct aur_transport_ops *t = &p->ops.t;
        struct aur__transport_def *d = &mcp->tdefs[mcp->ntdefs];
        if (p->desc.kind != AUR_KIND_TRANSPORT)
            continue;
        aur__transport_def_init(d, p->name, t, p->state);
        if (!word_ok(d->section) || strcmp(d->section, "app") == 0)
            return aur_fail(err, AUR_E_PLUGIN, 0,
                            "%s: bad App file section name", p->name);
        for (const char *const *w = d->words; w && *w; w++)
            if (!word_ok(*w))
                return aur_fail(err, AUR_E_PLUGIN, 0,
                                "%s: bad transport word", p->name);
        for (const struct aur_cfg_key *k = d->keys; k && k->key; k++)
            if (!word_ok(k->key))
                return aur_fail(err, AUR_E_PLUGIN, 0,
                                "%s: bad key name in its section", p->name);
        mcp->tplugins[mcp->ntdefs++] = p;
    }
    return defs_distinct(mcp, err);
}

struct checks {
    struct json_object *list;
};

static void report(void *ctx, const char *what, const char *problem)
{
    struct checks *c = ctx;
    struct json_object *o = json_object_new_object();

    json_object_object_add(o, "check", json_object_new_string(what ? what : ""));
    json_object_object_add(o, "ok", json_object_new_boolean(!problem));
    json_object_object_add(o, "problem",
                           problem ? json_object_new_string(problem) : NULL);
    json_object_array_add(c->list, o);
}

struct json_object *aur_mcp_app_checks_jsonc(struct aur_mcp *h, const char *package)
{
    const struct aur__app *a = NULL;
    const struct aur__plugin *t;
    struct checks c;

    for (size_t i = 0; h && package && i < h->napps && !a; i++)
        if (strcmp(h->apps[i].cfg->package, package) == 0)
            a = &h->apps[i];
    if (!a)
        return NULL;
    c.list = json_object_new_array();
    t = a->transport;
    if (c.list && t->ops.t.preflight)
        t->ops.t.preflight(t->state, &a->cfg->endpoint, report, &c);
    return c.list;
}

/* Descriptors that must be free for prepare to be asked: the journal's
 * (its file, WAL, shared memory, a directory for a sync) and the first
 * App's (pipes, the supervisor's status pipe and lifeline, its cgroup),
 * with room to spare.  With fewer, what the App took first could leave
 * the journal, not the App, the one that runs out, where without
 * prepare the journal opens first (fdlimit_test: "out of file
 * descriptors" names the App). */
#define PREPARE_FD_ROOM 64

void aur__transport_prepare(struct aur__app *a)
{
    const struct aur__plugin *t = a->transport;

    if (t && AUR_HAS(&t->ops.t, prepare) && aur__fd_room(PREPARE_FD_ROOM)) {
        AUR_PERTURB("startup.prepare");
        t->ops.t.prepare(t->state, &a->cfg->endpoint);
    }
}

void aur__transport_unprepare(struct aur__app *a)
{
    const struct aur__plugin *t = a->transport;

    if (t && AUR_HAS(&t->ops.t, unprepare))
        t->ops.t.unprepare(t->state, &a->cfg->endpoint);
}
