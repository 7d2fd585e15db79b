/*
 * registry.c - the frozen tool registry (MCP tools + builtins, sorted by
 * id) and the agents.ini reference check (README: Configuration).
 */
#include "aur_setup.h"

#include "engine.h"
#include "log.h"
#include "names.h"

#include <json-c/json.h>

static int by_id(const void *a, const void *b)
{
    const struct aur__tool *x = *(struct aur__tool *const *)a;
    const struct aur__tool *y = *(struct aur__tool *const *)b;
    return strcmp(x->id, y->id);
}

static void fill_info(struct aur__tool *t)
{
    t->info.id = t->id;
    t->info.app = t->app ? t->app->cfg->package : "";
    t->info.raw_name = t->raw_name;
    t->info.description = t->description;
    t->info.description_len = t->description_len;
    t->info.input_schema = t->schema;
    t->info.scopes = t->scopes;
}

int aur__registry_freeze(struct aur_mcp *mcp, struct aur_error *err)
{
    size_t n = mcp->nbuiltins;
    struct aur__tool **v;

    for (size_t i = 0; i < mcp->napps; i++)
        if (mcp->apps[i].frozen)
            n += mcp->apps[i].ntools;
    v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    n = 0;
    for (size_t i = 0; i < mcp->nbuiltins; i++)
        v[n++] = mcp->builtins[i];
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        if (!a->frozen)
            continue;
        for (size_t t = 0; t < a->ntools; t++)
            v[n++] = a->tools[t];
    }
    qsort(v, n, sizeof *v, by_id);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(v[i - 1]->id, v[i]->id) == 0) {
            int rc = aur_fail(err, AUR_E_CATALOG, 0,
                              "duplicate tool id: %s", v[i]->id);
            free(v);
            return rc;
        }
    }
    for (size_t i = 0; i < n; i++) {
        /* Sorted by id, an App's tools are neighbours: those sharing the
         * App's default scopes object share its view too. */
        struct aur__scope_view *sv = mcp->views;
        if (!sv || sv->of != v[i]->scopes) {
            sv = aur__scope_view_new(v[i]->scopes, false);
            if (!sv) {
                int rc = errno == ENOMEM
                             ? aur_fail(err, AUR_E_NOMEM, ENOMEM,
                                        "out of memory")
                             : aur_fail(err, AUR_E_CATALOG, 0,
                                        "tool %s: scopes are not lists of "
                                        "strings", v[i]->id);
                free(v);
                return rc;
            }
            sv->next = mcp->views;
            mcp->views = sv;
        }
        v[i]->view = sv;
        fill_info(v[i]);
    }
    mcp->registry = v;
    __atomic_store_n(&mcp->nregistry, n, __ATOMIC_RELEASE);
    return AUR_OK;
}

struct aur__tool *aur__registry_find(const struct aur_mcp *mcp, const char *id)
{
    size_t lo = 0, hi = mcp->nregistry;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(mcp->registry[mid]->id, id);
        if (c == 0)
            return mcp->registry[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *aur__registry_suggest(const struct aur_mcp *mcp, const char *id)
{
    const char **ids = malloc((mcp->nregistry + 1) * sizeof *ids);
    const char *near;

    if (!ids)
        return NULL;
    for (size_t i = 0; i < mcp->nregistry; i++)
        ids[i] = mcp->registry[i]->id;
    near = aur_suggest(id, ids, mcp->nregistry);
    free(ids);
    return near;
}

/* id names a tool of an App left out of this run: aur.mcp.<package>.<raw>
 * (a raw name has no dot, so the package is all but the last segment). */
static bool skipped_tool(const struct aur_mcp *mcp, const char *id)
{
    static const char prefix[] = "aur.mcp.";
    const char *dot = strrchr(id, '.');
    size_t plen;

    if (strncmp(id, prefix, sizeof prefix - 1) != 0 || !dot)
        return false;
    id += sizeof prefix - 1;
    if (dot <= id)
        return false;
    plen = (size_t)(dot - id);
    for (size_t i = 0; i < mcp->napps; i++) {
        const char *p = mcp->apps[i].cfg->package;
        if (mcp->apps[i].skipped && strlen(p) == plen &&
            strncmp(p, id, plen) == 0)
            return true;
    }
    return false;
}

int aur__agents_check(struct aur_mcp *mcp, struct aur_error *err)
{
    const struct aur__config *cfg = mcp->cfg;
    for (size_t a = 0; a < cfg->nagents; a++) {
        const struct aur__agent_cfg *ag = &cfg->agents[a];
        for (size_t e = 0; e < ag->ntools; e++) {
            const char *pat = ag->tools[e];
            size_t hits = 0;
            if (pat[0] == '!')
                continue; /* exclusions are never checked */
            if (!aur__pattern_has_wildcard(pat)) {
                if (!aur__registry_find(mcp, pat) && skipped_tool(mcp, pat)) {
                    aur__log(mcp->log, AUR_LOG_WARN, NULL,
                             "agents.ini:%d: agent %s references %s, of an "
                             "App left out of this run",
                             ag->tool_lines[e], ag->id, pat);
                    continue;
                }
                if (!aur__registry_find(mcp, pat)) {
                    const char *near = aur__registry_suggest(mcp, pat);
                    return aur_fail(err, AUR_E_AGENTS, 0,
                                    "agents.ini:%d: agent %s references an "
                                    "unregistered tool: %s%s%s%s",
                                    ag->tool_lines[e], ag->id, pat,
                                    near ? " (did you mean " : "",
                                    near ? near : "", near ? "?)" : "");
                }
                continue;
            }
            for (size_t i = 0; i < mcp->nregistry; i++)
                if (aur__pattern_match(pat, mcp->registry[i]->id))
                    hits++;
            if (!hits)
                aur__log(mcp->log, AUR_LOG_WARN, NULL,
                         "agents.ini:%d: agent %s: pattern %s matches no tool",
                         ag->tool_lines[e], ag->id, pat);
        }
    }
    return AUR_OK;
}
