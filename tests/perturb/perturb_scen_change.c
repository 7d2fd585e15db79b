/*
 * Scenario "change": one stdio App on aur-perturb-server --mode change,
 * whose tool catalog REALLY changes each time it announces
 * notifications/tools/list_changed: every change bumps a generation that
 * is part of every tool name (g<gen>_t<i>) and of the tool count.  Per
 * seed: the era (legacy initialize or modern discover + listen), the
 * catalog size and page size, max_relist (1..3), how many changes may
 * land during the listing (0..max_relist+1, at random pages and moments),
 * whether one lands before the listing can begin (legacy: before the
 * initialize answer, like go-sdk servers; modern: right after the listen
 * acknowledgement) and whether one lands in the same write as the last
 * page of the listing.
 *
 * Invariant (README, "A change during startup"; the server's log is the
 * truth):
 *  - if startup succeeds, the frozen tools are exactly the server's LAST
 *    generation (a stale catalog is never frozen);
 *    or, for a change announced after the last page of the final pass
 *    (late), the generation before it with restart_required set;
 *  - a change that arrived before the listing began never fails startup
 *    (modern: a change right after the listen acknowledgement may be read
 *    after the first tools/list went out, and may then cost a relist);
 *  - startup fails only when the relist budget is exhausted (more changes
 *    during/after the listing than max_relist, failing in tools/list with
 *    catalog_changed) or on the deadline;
 *  - no crash, no hang, no App process left behind.
 */
#define _GNU_SOURCE 1
#include "perturb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PKG "org.pt.change"

#define MAX_GEN 64

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct truth {
    unsigned last_gen;
    unsigned pre, during, post; /* changes by where they landed */
    unsigned pages_answered;
    char why[MAX_GEN + 1][24];  /* why[g]: the change that made g */
    /* late[g]: announced after the answer that ended the final listing
     * pass (in a write of its own, or in the same write right after it:
     * on one ordered stream both come after the last page), so the host
     * may have frozen and activated before it read it: it may keep the
     * generation before, but must then flag restart_required.  Every
     * other change was on the wire before the end of the final listing
     * and must be in the frozen catalog. */
    bool late[MAX_GEN + 1];
    unsigned strict_gen; /* the newest generation that is not late */
};

static void read_truth(struct pt_run *r, struct truth *t)
{
    char *path = pt_path(r, "server.log"), *text = pt_slurp(path), *line;
    int idx = 0, gen_at[MAX_GEN + 1], last_listing_end_at = -1;
    memset(t, 0, sizeof *t);
    for (line = text ? strtok(text, "\n") : NULL; line;
         line = strtok(NULL, "\n"), idx++) {
        unsigned g;
        char why[24];
        if (sscanf(line, "gen %u %23s", &g, why) == 2 && g <= MAX_GEN) {
            t->last_gen = g;
            gen_at[g] = idx;
            snprintf(t->why[g], sizeof t->why[g], "%s", why);
            if (strcmp(why, "pre") == 0)
                t->pre++;
            else if (strcmp(why, "post") == 0)
                t->post++;
            else
                t->during++;
        } else if (strncmp(line, "list ", 5) == 0) {
            t->pages_answered++;
            if (strstr(line, " last"))
                last_listing_end_at = idx;
        }
    }
    for (unsigned g = 1; g <= t->last_gen; g++) {
        t->late[g] = gen_at[g] > last_listing_end_at &&
                     (strcmp(t->why[g], "list-after-last") == 0 ||
                      strcmp(t->why[g], "list-pause-last") == 0 ||
                      strcmp(t->why[g], "list-same-last") == 0 ||
                      strcmp(t->why[g], "post") == 0);
        if (!t->late[g])
            t->strict_gen = g;
    }
    free(text);
    free(path);
}

/* restart_required, given up to 1 s to turn true: a late change is
 * counted on the transport's thread, after start may have returned. */
static bool flagged_soon(struct aur_mcp *h)
{
    for (int i = 0; i < 50 && !aur_mcp_restart_required(h); i++)
        pt_sleep_ms(20);
    return aur_mcp_restart_required(h);
}

/* Whether the registry is exactly generation g's catalog. */
static bool is_gen(struct aur_mcp *h, unsigned base, unsigned g)
{
    unsigned want_n = base + g % 3;
    size_t got_n = aur_mcp_tool_count(h);
    char **want = calloc(want_n, sizeof *want);
    bool same = got_n == want_n;
    for (unsigned i = 0; i < want_n; i++)
        if (asprintf(&want[i], "aur.mcp." PKG ".g%u_t%u", g, i) < 0)
            exit(3);
    qsort(want, want_n, sizeof *want, cmp_str);
    for (size_t i = 0; same && i < got_n; i++)
        same = strcmp(aur_mcp_tool_at(h, i)->id, want[i]) == 0;
    for (unsigned i = 0; i < want_n; i++)
        free(want[i]);
    free(want);
    return same;
}

/* Which generation(s) the registry holds: "g3" or "g2+g3" (static). */
static const char *frozen_gens(struct aur_mcp *h, unsigned *count)
{
    static char out[128];
    size_t n = aur_mcp_tool_count(h), len = 0;
    unsigned seen[64], ns = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *raw = aur_mcp_tool_at(h, i)->raw_name;
        unsigned g;
        bool dup = false;
        if (sscanf(raw, "g%u_", &g) != 1)
            continue;
        for (unsigned k = 0; k < ns; k++)
            dup |= seen[k] == g;
        if (!dup && ns < 64) {
            seen[ns++] = g;
            len += (size_t)snprintf(out + len, sizeof out - len, "%sg%u",
                                    ns > 1 ? "+" : "", g);
            if (len >= sizeof out)
                len = sizeof out - 1;
        }
    }
    *count = ns;
    return out;
}

void pt_scen_change(struct pt_run *r)
{
    bool modern = pt_chance(r, 50);
    unsigned base = 1 + pt_below(r, 6), page_size = pt_below(r, 4);
    unsigned max_relist = 1 + pt_below(r, 3);
    unsigned changes = pt_below(r, max_relist + 2);
    bool pre = pt_chance(r, 50), post = pt_chance(r, 50);
    char *server = pt_bin("bin/aur-perturb-server"), *logpath, mcp[64];
    char seed[32], bs[16], pss[16], chs[16], plan[400];
    const char *args[24];
    size_t n = 0;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    struct truth t;
    bool late_flagged = false;
    int64_t ms;
    int rc;

    snprintf(mcp, sizeof mcp, "max_relist = %u", max_relist);
    pt_mkconfig(r, "transport-stdio", mcp);
    logpath = pt_path(r, "server.log");
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
    snprintf(bs, sizeof bs, "%u", base);
    snprintf(pss, sizeof pss, "%u", page_size);
    snprintf(chs, sizeof chs, "%u", changes);
    args[n++] = "--mode";
    args[n++] = "change";
    args[n++] = "--era";
    args[n++] = modern ? "modern" : "legacy";
    args[n++] = "--seed";
    args[n++] = seed;
    args[n++] = "--log";
    args[n++] = logpath;
    args[n++] = "--tools";
    args[n++] = bs;
    args[n++] = "--page-size";
    args[n++] = pss;
    args[n++] = "--changes";
    args[n++] = chs;
    if (pre)
        args[n++] = "--pre-change";
    if (post)
        args[n++] = "--post-change";
    args[n] = NULL;
    pt_add_app(r, "a.ini", PKG, 20, NULL, server, args);

    rc = pt_start(r, &h, &serr, &ms);
    read_truth(r, &t);
    {
        char hist[160] = "";
        size_t hl = 0;
        for (unsigned g = 1; g <= t.last_gen && hl < sizeof hist - 1; g++) {
            hl += (size_t)snprintf(hist + hl, sizeof hist - hl, " g%u:%s%s",
                                   g, t.why[g], t.late[g] ? "(late)" : "");
            if (hl >= sizeof hist)
                hl = sizeof hist - 1;
        }
        snprintf(plan, sizeof plan,
                 "%s tools=%u+gen%%3 page=%u max_relist=%u pages-answered=%u "
                 "| changes:%s",
                 modern ? "modern" : "legacy", base, page_size, max_relist,
                 t.pages_answered, t.last_gen ? hist : " none");
    }
    unsigned relist_needed = t.during + t.post;

    if (rc == AUR_OK && !is_gen(h, base, t.last_gen)) {
        unsigned ngens, f = 0;
        const char *gens = frozen_gens(h, &ngens);
        bool whole = false, flagged = flagged_soon(h);
        char cat[128];
        for (unsigned g = 0; g < t.last_gen && !whole; g++)
            if ((whole = is_gen(h, base, g)))
                f = g;
        if (whole && f == t.strict_gen && flagged) {
            late_flagged = true; /* activated first, then told: allowed */
        } else {
            /* name the first change the frozen catalog misses */
            unsigned missed = whole ? f + 1 : t.last_gen;
            snprintf(cat, sizeof cat, "%s-%s%s-%s",
                     whole ? "stale-catalog-missed" : "mixed-catalog",
                     t.why[missed], t.late[missed] ? "(late)" : "",
                     flagged ? "flagged" : "unflagged");
            pt_violation(r, cat,
                         "[%s] froze %zu tools of %s; the server's last "
                         "generation is g%u; the frozen catalog misses g%u "
                         "(%s), announced %s; restart_required=%s",
                         plan, aur_mcp_tool_count(h), ngens ? gens : "none",
                         t.last_gen, missed, t.why[missed],
                         t.late[missed]
                             ? "in a write of its own after the listing "
                               "ended (then restart_required must turn true)"
                             : "no later than the answer that ended the "
                               "final listing pass",
                         flagged ? "true" : "false");
        }
    } else if (rc == AUR_OK) {
        /* exactly the last generation: the promise kept */
    } else if (rc == AUR_E_TIMEOUT) {
        /* the deadline: allowed, reported under its own name */
    } else if (rc == AUR_E_CHANGED && relist_needed > max_relist) {
        /* the relist budget really ran out (whichever phase noticed) */
    } else if (rc == AUR_E_CHANGED && modern && t.pre &&
               relist_needed + 1 > max_relist &&
               strcmp(serr.phase, "tools/list") == 0) {
        /* modern: the "pre" change follows the listen acknowledgement on
         * the stream, and the host may read it after it sent the first
         * tools/list; it cannot tell it from a change during the listing,
         * so it pages again, and that pass is charged to the budget */
    } else {
        char cat[128];
        /* a tools/list failure within budget with a change before the
         * listing: that change was charged to the relist budget */
        bool charged = t.pre && rc == AUR_E_CHANGED &&
                       strcmp(serr.phase, "tools/list") == 0;
        snprintf(cat, sizeof cat, "failed-in-%s:%s", serr.phase,
                 charged ? "pre-listing-change-charged" : aur_rc_word(rc));
        pt_violation(r, cat,
                     "[%s] startup failed in %s (%s): %s -- %u change(s) "
                     "during/after the listing, max_relist %u%s",
                     plan, serr.phase, aur_rc_word(rc), serr.message,
                     relist_needed, max_relist,
                     t.pre ? "; one change arrived before the listing" : "");
    }
    aur_mcp_destroy(h);
    if (pt_no_leftovers(r)) {
        if (rc == AUR_OK && late_flagged)
            pt_allowed(r, "late-change-flagged-restart",
                       "[%s] froze g%u, then restart_required for g%u", plan,
                       t.strict_gen, t.last_gen);
        else if (rc == AUR_OK)
            pt_ok(r, relist_needed ? "fresh-after-changes" : "fresh",
                  "[%s] %lld ms", plan, (long long)ms);
        else if (rc == AUR_E_TIMEOUT)
            pt_allowed(r, "deadline", "[%s] %s: %s", plan, serr.phase,
                       serr.message);
        else {
            char cat[64];
            snprintf(cat, sizeof cat, "relist-budget-exhausted:%s",
                     serr.phase);
            pt_allowed(r, cat, "[%s] %s", plan, serr.message);
        }
    }
    free(server);
    free(logpath);
}
