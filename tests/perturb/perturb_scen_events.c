/*
 * Scenario "events": one App with event_mode = world_events (revision
 * 2026-07-28 over stdio, org.aurorabot/world-events negotiated) on
 * aur-perturb-server --mode events, which floods numbered valid events
 * e0, e1, ... on its one ordered stdout from its first instruction on
 * (before the handshake) until the test's "stop" call, pacing and burst
 * size chosen per seed.  Budgets are set far above the flood, so nothing
 * may be dropped for a budget.
 *
 * The server logs three marks (its log is the truth):
 *   lastpage N0  e0..e<N0-1> were written before the last tools/list
 *                answer, so they reached the host before it could
 *                activate;
 *   mark M       the "mark" call, sent after aur_mcp_start returned, was
 *                read when e<M> was next: e<M>.. left after activation;
 *   stop S       the flood ended after e<S-1>; the "stop" answer follows
 *                every event on the stream.
 *
 * Invariant: the committed events (journal, mcp.event.received) are
 * exactly a contiguous suffix e<k>..e<S-1> of what was sent before the
 * stop, with N0 <= k <= M: nothing that arrived before activation is
 * committed, and from the first committed event on nothing is missing.
 * No crash, no hang, no App process left behind.
 */
#define _GNU_SOURCE 1
#include "perturb.h"
#include "../support/we_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define PKG "org.pt.events"
#define SCOPE "perturb:flood"

struct seen {
    unsigned char *bits;
    size_t cap;       /* in events */
    uint64_t count, max, min, dups, foreign;
    int64_t after;    /* journal seq read so far */
};

static void seen_add(struct seen *s, uint64_t i)
{
    if (i >= s->cap) {
        size_t cap = s->cap ? s->cap : 1 << 16;
        while (cap <= i)
            cap *= 2;
        s->bits = realloc(s->bits, cap / 8);
        if (!s->bits)
            exit(3);
        memset(s->bits + s->cap / 8, 0, (cap - s->cap) / 8);
        s->cap = cap;
    }
    if (s->bits[i / 8] & (1u << (i % 8))) {
        s->dups++;
        return;
    }
    s->bits[i / 8] |= (unsigned char)(1u << (i % 8));
    if (!s->count || i > s->max)
        s->max = i;
    if (!s->count || i < s->min)
        s->min = i;
    s->count++;
}

static bool seen_has(const struct seen *s, uint64_t i)
{
    return i < s->cap && (s->bits[i / 8] & (1u << (i % 8)));
}

static void on_line(void *ud, const char *line)
{
    struct seen *s = ud;
    struct json_object *o = json_tokener_parse(line), *v;
    const char *id;
    unsigned long long i;
    if (!o)
        return;
    if (json_object_object_get_ex(o, "seq", &v) &&
        json_object_get_int64(v) > s->after)
        s->after = json_object_get_int64(v);
    if (json_object_object_get_ex(o, "kind", &v) &&
        strcmp(json_object_get_string(v), "mcp.event.received") == 0 &&
        json_object_object_get_ex(o, "commit_id", &v) &&
        (id = json_object_get_string(v)) &&
        sscanf(id, "mcp:" PKG ":event:e%llu", &i) == 1)
        seen_add(s, i);
    else
        s->foreign++;
    json_object_put(o);
}

static long long log_value(const char *text, const char *key, bool last)
{
    long long v = -1;
    size_t kl = strlen(key);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
            v = atoll(p + kl + 1);
            if (!last)
                return v;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return v;
}

static bool call(struct aur_mcp *h, const char *tool, char *content,
                 size_t size, const char **status)
{
    struct aur_tool_output out = {.struct_size = sizeof out};
    aur_mcp_call_jsonc(h, tool, NULL, -1, &out);
    *status = aur_call_status_word(out.status);
    snprintf(content, size, "%s", out.content ? out.content : "");
    bool ok = out.status == AUR_CALL_SUCCEEDED;
    aur_tool_output_clear(&out);
    return ok;
}

void pt_scen_events(struct pt_run *r)
{
    /* Flood shapes: (pause between bursts in us, burst).  Perturbed, the
     * host takes a few thousand events a second, so most shapes stay
     * near that (the backlog before activation stays small) and one in
     * eight floods unpaced, which makes the server wait on its pipe. */
    static const unsigned shapes[][2] = {{0, 16},   {300, 1},  {500, 1},
                                         {1000, 2}, {2000, 4}, {800, 1},
                                         {4000, 8}, {400, 1}};
    unsigned extra_tools = pt_below(r, 3), page_size = pt_below(r, 2);
    unsigned shape = pt_below(r, 8);
    unsigned pace = shapes[shape][0], burst = shapes[shape][1];
    unsigned before_mark = pt_below(r, 20), before_stop = 5 + pt_below(r, 25);
    char *server = pt_bin("bin/aur-perturb-server"), *logpath, *text;
    char seed[32], ts[16], pss[16], ps[16], bs[16], plan[256], content[256];
    const char *args[24], *st = "";
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    struct seen s = {0};
    int64_t ms;
    int rc;
    size_t n = 0;

    pt_mkconfig(r, "transport-stdio ext-world-events",
                "max_notifications_per_second = 1000000\n"
                "notification_burst = 100000000");
    logpath = pt_path(r, "server.log");
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
    snprintf(ts, sizeof ts, "%u", 2 + extra_tools);
    snprintf(pss, sizeof pss, "%u", page_size);
    snprintf(ps, sizeof ps, "%u", pace);
    snprintf(bs, sizeof bs, "%u", burst);
    args[n++] = "--mode";
    args[n++] = "events";
    args[n++] = "--era";
    args[n++] = "modern";
    args[n++] = "--seed";
    args[n++] = seed;
    args[n++] = "--log";
    args[n++] = logpath;
    args[n++] = "--tools";
    args[n++] = ts;
    args[n++] = "--page-size";
    args[n++] = pss;
    args[n++] = "--pace-us";
    args[n++] = ps;
    args[n++] = "--burst";
    args[n++] = bs;
    args[n] = NULL;
    pt_add_app(r, "a.ini", PKG, 20, "event_mode = world_events", server, args);
    snprintf(plan, sizeof plan,
             "pace=%uus burst=%u tools=%u page=%u mark-after=%ums "
             "stop-after=%ums",
             pace, burst, 2 + extra_tools, page_size, before_mark,
             before_stop);

    rc = pt_start(r, &h, &serr, &ms);
    if (rc != AUR_OK) {
        pt_violation(r, "startup-failed", "[%s] %s in %s: %s", plan,
                     aur_rc_word(rc), serr.phase, serr.message);
        goto out;
    }
    pt_sleep_ms(before_mark);
    if (!call(h, "aur.mcp." PKG ".mark", content, sizeof content, &st)) {
        pt_violation(r, "call-failed", "[%s] mark: %s %s", plan, st, content);
        goto out;
    }
    pt_sleep_ms(before_stop);
    if (!call(h, "aur.mcp." PKG ".stop", content, sizeof content, &st)) {
        pt_violation(r, "call-failed", "[%s] stop: %s %s", plan, st, content);
        goto out;
    }
    uint64_t stop = strtoull(content, NULL, 10);
    /* Everything before the stop answer was read by the host; wait
     * (bounded) until the last event is in the journal, so closing does
     * not race the queue (events after close begins may be dropped). */
    int64_t until = pt_now_ms() + 30000;
    while (stop > 0 && !seen_has(&s, stop - 1) && pt_now_ms() < until) {
        pt_journal(r, s.after, SCOPE, on_line, &s);
        if (!seen_has(&s, stop - 1))
            pt_sleep_ms(20);
    }
    int64_t t_drain = pt_now_ms() - (until - 30000);
    int64_t dropped = aur_test_we_count(h, "dropped_inactive");
    int64_t rejected = aur_test_we_count(h, "rejected");
    int64_t t_close = pt_now_ms();
    aur_mcp_destroy(h);
    h = NULL;
    t_close = pt_now_ms() - t_close;
    pt_journal(r, s.after, SCOPE, on_line, &s);

    text = pt_slurp(logpath);
    long long n0 = log_value(text, "lastpage", true);
    long long mark = log_value(text, "mark", false);
    long long stopped = log_value(text, "stop", false);
    free(text);
    char facts[512];
    snprintf(facts, sizeof facts,
             "[%s] sent e0..e%lld; last page after e%lld, mark at e%lld; "
             "committed %llu (e%llu..e%llu), dropped_inactive=%lld "
             "rejected=%lld dups=%llu",
             plan, (long long)stop - 1, n0 - 1, mark,
             (unsigned long long)s.count,
             (unsigned long long)(s.count ? s.min : 0),
             (unsigned long long)(s.count ? s.max : 0), (long long)dropped,
             (long long)rejected, (unsigned long long)s.dups);
    if (n0 < 0 || mark < 0 || stopped < 0 || (uint64_t)stopped != stop) {
        pt_violation(r, "server-log", "%s: the server log is incomplete",
                     facts);
        goto out;
    }
    if (s.count && s.min < (uint64_t)n0) {
        uint64_t early = 0;
        for (uint64_t i = s.min; i < (uint64_t)n0; i++)
            early += seen_has(&s, i);
        pt_violation(r, "committed-before-activation",
                     "%s: %llu event(s) that reached the host before the "
                     "last tools/list answer were committed",
                     facts, (unsigned long long)early);
    } else if (s.count && s.max + 1 != stop) {
        pt_violation(r, "tail-missing",
                     "%s: events up to the stop were not all committed",
                     facts);
    } else if (s.count && s.count != s.max - s.min + 1) {
        pt_violation(r, "gap",
                     "%s: %llu event(s) missing inside the committed range",
                     facts,
                     (unsigned long long)(s.max - s.min + 1 - s.count));
    } else if (!s.count && (uint64_t)mark < stop) {
        pt_violation(r, "nothing-committed",
                     "%s: events sent after activation were not committed",
                     facts);
    } else if (s.count && s.min > (uint64_t)mark) {
        pt_violation(r, "lost-after-activation",
                     "%s: events sent after activation (from e%lld) were "
                     "not committed",
                     facts, mark);
    } else if (s.dups || rejected > 0) {
        pt_violation(r, "rejected-or-duplicate", "%s", facts);
    }
    /* the host was destroyed above: its Apps must be gone */
    if (pt_no_leftovers(r))
        pt_ok(r, "contiguous-suffix",
              "%s; started in %lld ms, drained in %lld ms, closed in %lld ms",
              facts, (long long)ms, (long long)t_drain, (long long)t_close);
out:
    if (h) { /* an early verdict: still close and look for leftovers */
        aur_mcp_destroy(h);
        pt_no_leftovers(r);
    }
    free(s.bits);
    free(server);
    free(logpath);
}
