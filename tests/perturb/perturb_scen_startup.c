/*
 * Scenario "startup": 2 to 4 stdio Apps (aur-fixture-server, as is) start
 * concurrently; some are slow (--start-delay-ms), eras and pagination
 * vary, and in about 40% of the runs one or two of them get a fault from
 * the table below.
 *
 * Invariant: a run without a fault succeeds with exactly the expected
 * frozen tool set (every App's t0000..t<n-1>, nothing else); a run with
 * faults fails with code startup_failed, naming one of the faulty Apps
 * and the phase its fault lives in; every run ends (the runner's timeout)
 * without a crash and leaves no App process behind.  In half the runs a
 * thread reads the status all through the start: every document is
 * whole (each App's state a word, its version one a handshake gives, its
 * tool ids all of its catalog or none, the registry all or nothing).
 */
#define _GNU_SOURCE 1
#include "perturb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

enum era { ERA_MODERN, ERA_LEGACY, ERA_DUAL };
static const char *const era_words[] = {"modern", "legacy", "dual"};

struct fault {
    const char *name;
    const char *opt, *val; /* val "K" = a page number chosen per run */
    const char *phase;
    int era; /* -1 any, else ERA_MODERN (also dual) or ERA_LEGACY */
    bool slow; /* waits for the deadline: short timeout */
};

static const struct fault faults[] = {
    {"exit-at-listen", "--exit-at", "listen", "catalog/listen", ERA_MODERN, false},
    {"error-at-listen", "--error-at", "listen", "catalog/listen", ERA_MODERN, false},
    {"no-ack", "--no-ack", NULL, "catalog/listen", ERA_MODERN, false},
    {"exit-at-page", "--exit-at", "K", "tools/list", -1, false},
    {"error-at-page", "--error-at", "K", "tools/list", -1, false},
    {"bad-tool-name", "--tool-name", "bad.name", "tools/list", -1, false},
    {"bad-legacy-version", "--legacy-version", "2023-01-01", "connect",
     ERA_LEGACY, false},
    {"exit-at-initialize", "--exit-at", "initialize", "connect", ERA_LEGACY,
     false},
    {"hang-at-page", "--hang-at", "K", "tools/list", -1, true},
    {"partial-at-page", "--partial-at", "K", "tools/list", -1, true},
};
#define NFAULTS (sizeof faults / sizeof *faults)

struct app {
    char pkg[64];
    enum era era;
    unsigned tools, page_size, pages, delay_ms;
    const struct fault *fault;
};

static bool fits(const struct fault *f, enum era e)
{
    if (f->era < 0)
        return true;
    if (f->era == ERA_LEGACY)
        return e == ERA_LEGACY;
    return e != ERA_LEGACY;
}

struct watch {
    const struct app *apps;
    unsigned napps, total; /* total: the tools of every App */
    int reads;
    char bad[320]; /* the first inconsistency, or "" */
};

static bool word_in(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

/* One status document read during the start, checked (see the top). */
static const char *status_fault(const struct watch *w, struct json_object *d)
{
    static const char *const states[] = {"starting", "ready", "unavailable",
                                         "closed", "not_started", NULL};
    static const char *const versions[] = {"2026-07-28", "2025-11-25",
                                           "2025-06-18", "2025-03-26", NULL};
    struct json_object *apps = NULL, *tools = NULL, *v;
    size_t n;

    if (!json_object_object_get_ex(d, "apps", &apps) ||
        json_object_array_length(apps) != w->napps)
        return "not a document of every App";
    for (unsigned i = 0; i < w->napps; i++) {
        struct json_object *a = json_object_array_get_idx(apps, i);
        if (!json_object_object_get_ex(a, "state", &v) ||
            !word_in(json_object_get_string(v), states))
            return "an App's state is no word";
        if (json_object_object_get_ex(a, "negotiated_version", &v) && v &&
            !word_in(json_object_get_string(v), versions))
            return "a version no handshake gives";
        n = json_object_object_get_ex(a, "tool_ids", &v)
                ? json_object_array_length(v)
                : 0;
        if (n != 0 && n != w->apps[i].tools)
            return "part of an App's catalog";
    }
    json_object_object_get_ex(d, "tools", &tools);
    n = json_object_array_length(tools);
    return n != 0 && n != w->total ? "part of the registry" : NULL;
}

static void watch_status(struct aur_mcp *h, const bool *done, void *ud)
{
    struct watch *w = ud;
    while (!__atomic_load_n(done, __ATOMIC_ACQUIRE) && !w->bad[0]) {
        struct aur_error err;
        char *text = NULL;
        size_t len = 0;
        const char *f;
        w->reads++;
        if (aur_mcp_status(h, 1, &text, &len, &err) != AUR_OK) {
            snprintf(w->bad, sizeof w->bad, "read %d: %s", w->reads, err.msg);
            break;
        }
        struct json_object *d = json_tokener_parse(text);
        aur_free(text);
        if ((f = status_fault(w, d)) != NULL)
            snprintf(w->bad, sizeof w->bad, "read %d: %s", w->reads, f);
        json_object_put(d);
        pt_sleep_ms(1);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void pt_scen_startup(struct pt_run *r)
{
    struct app apps[4];
    /* 2 or 3 Apps, 4 in one run of five */
    unsigned napps = pt_chance(r, 20) ? 4 : 2 + pt_below(r, 2), nfaulty = 0;
    char *fixture = pt_bin("bin/aur-fixture-server"), *logpath;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t ms;
    int rc;
    char plan[512] = "";
    size_t pl = 0;

    pt_mkconfig(r, "transport-stdio", NULL);
    logpath = pt_path(r, "server.log");
    /* faults: none (60%), one (30%), two (10%) */
    unsigned want_faults = pt_chance(r, 60) ? 0 : pt_chance(r, 75) ? 1 : 2;
    for (unsigned i = 0; i < napps; i++) {
        struct app *a = &apps[i];
        snprintf(a->pkg, sizeof a->pkg, "org.pt.app%u", i);
        a->era = (enum era)pt_below(r, 3);
        a->tools = 1 + pt_below(r, 8);
        a->page_size = pt_below(r, 4); /* 0 = one page */
        a->pages = a->page_size ? (a->tools + a->page_size - 1) / a->page_size
                                : 1;
        a->delay_ms = pt_chance(r, 35) ? 50 + pt_below(r, 250) : 0;
        a->fault = NULL;
    }
    for (unsigned k = 0; k < want_faults; k++) {
        struct app *a = &apps[pt_below(r, napps)];
        for (int tries = 0; tries < 20 && !a->fault; tries++) {
            const struct fault *f = &faults[pt_below(r, NFAULTS)];
            /* deadline faults cost seconds: one run in three only */
            if (fits(f, a->era) && (!f->slow || pt_chance(r, 33)))
                a->fault = f;
        }
    }
    for (unsigned i = 0; i < napps; i++) {
        struct app *a = &apps[i];
        const char *args[24];
        char tools[16], ps[16], delay[16], page[16], file[32];
        size_t n = 0;
        args[n++] = "--log";
        args[n++] = logpath;
        args[n++] = "--era";
        args[n++] = era_words[a->era];
        snprintf(tools, sizeof tools, "%u", a->tools);
        args[n++] = "--tools";
        args[n++] = tools;
        if (a->page_size) {
            snprintf(ps, sizeof ps, "%u", a->page_size);
            args[n++] = "--page-size";
            args[n++] = ps;
        }
        if (a->fault && a->fault->slow)
            a->delay_ms = 0; /* its 2 s deadline is for the hang, not this */
        if (a->delay_ms) {
            snprintf(delay, sizeof delay, "%u", a->delay_ms);
            args[n++] = "--start-delay-ms";
            args[n++] = delay;
        }
        if (a->fault) {
            nfaulty++;
            args[n++] = a->fault->opt;
            if (a->fault->val && strcmp(a->fault->val, "K") == 0) {
                /* a page the listing surely reaches */
                unsigned pages = a->pages;
                snprintf(page, sizeof page, "list:%u", 1 + pt_below(r, pages));
                args[n++] = page;
            } else if (a->fault->val) {
                args[n++] = a->fault->val;
            }
        }
        args[n] = NULL;
        snprintf(file, sizeof file, "%02u.ini", i);
        pt_add_app(r, file, a->pkg, a->fault && a->fault->slow ? 2.0 : 20,
                   NULL, fixture, args);
        pl += (size_t)snprintf(plan + pl, sizeof plan - pl, "%s%s:%s/%ut/%up%s%s%s",
                               i ? " " : "", a->pkg + 7, era_words[a->era],
                               a->tools, a->pages, a->delay_ms ? "/slow" : "",
                               a->fault ? "/" : "",
                               a->fault ? a->fault->name : "");
        if (pl >= sizeof plan)
            pl = sizeof plan - 1;
    }

    struct watch w = {.apps = apps, .napps = napps};
    for (unsigned i = 0; i < napps; i++)
        w.total += apps[i].tools;
    bool watched = pt_chance(r, 50);
    rc = pt_start_watched(r, &h, &serr, &ms, watched ? watch_status : NULL,
                          &w);
    if (w.bad[0])
        pt_violation(r, "status-during-start", "[%s] %s", plan, w.bad);

    if (nfaulty == 0) {
        if (rc != AUR_OK) {
            pt_violation(r, "unexpected-failure",
                         "[%s] no fault injected, yet startup failed in %s "
                         "(%s, app %s): %s",
                         plan, serr.phase, aur_rc_word(rc), serr.app,
                         serr.message);
        } else {
            /* exactly the expected ids: sorted expected vs the registry */
            size_t want_n = 0, got_n = aur_mcp_tool_count(h);
            for (unsigned i = 0; i < napps; i++)
                want_n += apps[i].tools;
            char **want = calloc(want_n ? want_n : 1, sizeof *want);
            size_t k = 0;
            for (unsigned i = 0; i < napps; i++)
                for (unsigned t = 0; t < apps[i].tools; t++)
                    if (asprintf(&want[k++], "aur.mcp.%s.t%04u", apps[i].pkg,
                                 t) < 0)
                        exit(3);
            qsort(want, want_n, sizeof *want, cmp_str);
            bool same = want_n == got_n;
            for (size_t i = 0; same && i < got_n; i++)
                same = strcmp(aur_mcp_tool_at(h, i)->id, want[i]) == 0;
            if (!same)
                pt_violation(r, "wrong-tool-set",
                             "[%s] frozen %zu tools (first %s), expected %zu",
                             plan, got_n,
                             got_n ? aur_mcp_tool_at(h, 0)->id : "-", want_n);
            for (size_t i = 0; i < want_n; i++)
                free(want[i]);
            free(want);
        }
    } else if (rc == AUR_OK) {
        pt_violation(r, "fault-not-reported",
                     "[%s] %u fault(s) injected, yet startup succeeded", plan,
                     nfaulty);
    } else {
        const struct app *named = NULL;
        for (unsigned i = 0; i < napps; i++)
            if (apps[i].fault && strcmp(apps[i].pkg, serr.app) == 0)
                named = &apps[i];
        if (strcmp(serr.code, "startup_failed") != 0 || !named)
            pt_violation(r, "wrong-app",
                         "[%s] startup failed as %s naming app '%s' (phase "
                         "%s): %s",
                         plan, serr.code, serr.app, serr.phase, serr.message);
        else if (strcmp(serr.phase, named->fault->phase) != 0)
            pt_violation(r, "wrong-phase",
                         "[%s] %s's fault %s belongs to phase %s, startup "
                         "failed in %s (%s): %s",
                         plan, named->pkg, named->fault->name,
                         named->fault->phase, serr.phase, aur_rc_word(rc),
                         serr.message);
    }
    char phase_cat[64];
    snprintf(phase_cat, sizeof phase_cat, "failed-as-injected:%s", serr.phase);
    int64_t t_close = pt_now_ms();
    aur_mcp_destroy(h);
    t_close = pt_now_ms() - t_close;
    if (pt_no_leftovers(r)) {
        if (nfaulty == 0)
            pt_ok(r, "started", "[%s] %lld ms, closed in %lld ms", plan,
                  (long long)ms, (long long)t_close);
        else
            pt_allowed(r, phase_cat,
                       "[%s] %s in %s (%s) after %lld ms", plan, serr.app,
                       serr.phase, aur_rc_word(rc), (long long)ms);
    }
    free(fixture);
    free(logpath);
}
