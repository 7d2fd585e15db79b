/*
 * check_ext_world_events_host.c - ext-world-events inside the real host
 * with the real SQLite journal: our C fixture server (2026-07-28 with the
 * world-events extension) and the SDK v1 peer (legacy aurora/event log
 * messages), docs/protocol.md (org.aurorabot/world-events).
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include "support/check_main.h"
#include <check.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/harness.h"
#include "support/we_status.h"

#define PKG "org.test.we"
#define PKG2 "org.test.we2"
#define CAPS "{\"org.aurorabot/world-events\":{\"version\":1}}"
#define EVENT                                                                \
    "{\"event_id\":\"ev-1\",\"scope\":\"qq:group:7\",\"kind\":"              \
    "\"qq.message.group\",\"occurred_at\":\"2026-05-01T08:30:00.25+08:00\"," \
    "\"summary\":\"SECRET summary\",\"data\":{\"text\":\"SECRET text\","     \
    "\"n\":[1,2]}}"
#define BAD_EVENT                                                            \
    "{\"event_id\":\"ev-bad\",\"scope\":\"qq:group:7\",\"kind\":"            \
    "\"engine.fake\",\"occurred_at\":\"2026-05-01T08:30:00Z\","              \
    "\"summary\":\"SECRET summary\"}"
#define EVENT2                                                               \
    "{\"event_id\":\"ev-2\",\"scope\":\"aurora:mcp:" PKG "\",\"kind\":"      \
    "\"calendar.due\",\"occurred_at\":\"2026-05-01T08:30:00Z\","             \
    "\"summary\":\"SECRET due\"}"
#define EV_KIND "mcp.event.received"

static char *dir, *fixture, *logpath;

static void write_host_ini(void)
{
    char *text;
    ck_assert(asprintf(&text,
                       "[host]\n"
                       "plugins = transport-stdio ext-world-events\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_file = %s/host.log\n"
                       "log_level = debug\n"
                       "[mcp]\n"
                       "enabled = true\n",
                       AUR_TEST_BIN_DIR, dir) > 0);
    h_write(dir, "host.ini", text);
    free(text);
}

static void setup(void)
{
    h_fixture_env(&dir, &fixture, &logpath);
    write_host_ini();
}

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

/* An App on the fixture server: --log, --era era, then opts. */
static void add_fixture(const char *file, const char *pkg, const char *mode,
                        const char *era, const char *const *opts)
{
    const char *args[32];
    char extra[96];
    size_t n = 0;
    args[n++] = "--log";
    args[n++] = logpath;
    args[n++] = "--era";
    args[n++] = era;
    for (size_t i = 0; opts && opts[i] && n < 30; i++)
        args[n++] = opts[i];
    args[n] = NULL;
    snprintf(extra, sizeof extra, "event_mode = %s", mode);
    h_add_app(dir, file, pkg, 10, extra, fixture, args);
}

static struct aur_mcp *start(struct aur_startup_error *serr, int *rc)
{
    struct aur_error err;
    struct aur_mcp *h = NULL;
    memset(serr, 0, sizeof *serr);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, serr, &err), AUR_OK);
    *rc = aur_mcp_start(h, serr, &err);
    return h;
}

static struct aur_mcp *start_ok(void)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    struct aur_mcp *h = start(&serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s %s", serr.app, serr.phase,
                  serr.message);
    return h;
}

static void call_ok(struct aur_mcp *h, const char *tool)
{
    struct aur_tool_output out = {.struct_size = sizeof out};
    ck_assert_int_eq(aur_mcp_call_jsonc(h, tool, NULL, -1, &out), AUR_OK);
    ck_assert_msg(out.status == AUR_CALL_SUCCEEDED, "%s: %s", tool,
                  out.content);
    aur_tool_output_clear(&out);
}

/* ---------------------------------------------------------------- */
/* Reading the journal                                              */
/* ---------------------------------------------------------------- */

struct events {
    struct json_object *list; /* the mcp.event.received commits */
};

static void collect(void *ud, const char *line)
{
    struct events *e = ud;
    struct json_object *c = json_tokener_parse(line), *k;
    ck_assert_ptr_nonnull(c);
    if (json_object_object_get_ex(c, "kind", &k) &&
        strcmp(json_object_get_string(k), EV_KIND) == 0)
        json_object_array_add(e->list, c);
    else
        json_object_put(c);
}

/* The event commits now (transfer). */
static struct json_object *event_commits(void)
{
    struct events e = {json_object_new_array()};
    struct aur_error err;
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, collect, &e, &err),
                     AUR_OK);
    return e.list;
}

/* How many event commits the journal holds now. */
static size_t n_event_commits(void)
{
    struct json_object *l = event_commits();
    size_t n = json_object_array_length(l);

    json_object_put(l);
    return n;
}

/* Wait (up to slack_ms(5 s)) until at least n event commits exist;
 * return them. */
static struct json_object *wait_events(size_t n)
{
    struct json_object *l;

    H_WAIT_UNTIL(n_event_commits() >= n, 5000, 20);
    l = event_commits();
    ck_assert_uint_eq(json_object_array_length(l), n);
    return l;
}

/* The count stays n for a while: what a duplicate must not change.  The
 * event is sent right after the call's answer, so 500 ms is ample. */
static void stays(size_t n)
{
    for (int i = 0; i < 10; i++) {
        struct json_object *l = event_commits();
        ck_assert_uint_eq(json_object_array_length(l), n);
        json_object_put(l);
        usleep(50000);
    }
}

static const char *sget(struct json_object *o, const char *k)
{
    struct json_object *v;
    ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s", k);
    return json_object_get_string(v);
}

static bool has_scope(struct json_object *c, const char *scope)
{
    struct json_object *s;
    ck_assert(json_object_object_get_ex(c, "scopes", &s));
    if (json_object_is_type(s, json_type_object))
        return json_object_object_get_ex(s, scope, NULL);
    for (size_t i = 0; i < json_object_array_length(s); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(s, i)),
                   scope) == 0)
            return true;
    return false;
}

static size_t n_scopes(struct json_object *c)
{
    struct json_object *s;
    ck_assert(json_object_object_get_ex(c, "scopes", &s));
    return json_object_is_type(s, json_type_object)
               ? (size_t)json_object_object_length(s)
               : json_object_array_length(s);
}

static void assert_event_commit(struct json_object *c, const char *pkg)
{
    char want[128];
    struct json_object *data, *exp;
    snprintf(want, sizeof want, "mcp:%s:event:ev-1", pkg);
    ck_assert_str_eq(sget(c, "commit_id"), want);
    ck_assert_str_eq(sget(c, "kind"), EV_KIND);
    snprintf(want, sizeof want, "mcp:%s", pkg);
    ck_assert_str_eq(sget(c, "source"), want);
    ck_assert_str_eq(sget(c, "summary"), "SECRET summary");
    ck_assert_str_eq(sget(c, "occurred_at"), "2026-05-01T00:30:00.250000Z");
    ck_assert_uint_eq(n_scopes(c), 2);
    ck_assert(has_scope(c, "qq:group:7"));
    snprintf(want, sizeof want, "aurora:mcp:%s", pkg);
    ck_assert(has_scope(c, want));
    ck_assert(json_object_object_get_ex(c, "data", &data));
    exp = json_tokener_parse(
        "{\"event_id\":\"ev-1\",\"event_kind\":\"qq.message.group\","
        "\"data\":{\"text\":\"SECRET text\",\"n\":[1,2]}}");
    ck_assert_msg(json_object_equal(data, exp), "data %s",
                  json_object_to_json_string(data));
    json_object_put(exp);
}

/* The host log (debug level) never carries event contents. */
static void log_is_clean(void)
{
    char *p, *text;
    ck_assert(asprintf(&p, "%s/host.log", dir) > 0);
    text = h_slurp(p);
    ck_assert_msg(text != NULL, "no host log at %s", p);
    ck_assert_msg(strstr(text, "SECRET") == NULL, "log leaks event data");
    free(text);
    free(p);
}

/* ---------------------------------------------------------------- */
/* Tests                                                            */
/* ---------------------------------------------------------------- */

/* The world-events counters of the App's status (transfer). */
static struct json_object *we_counters(struct aur_mcp *h)
{
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *xs, *we;
    ck_assert(json_object_object_get_ex(st, "apps", &apps));
    ck_assert(json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                                        "extension_status", &xs));
    ck_assert(json_object_object_get_ex(xs, "org.aurorabot/world-events",
                                        &we));
    we = json_object_get(we);
    json_object_put(st);
    return we;
}

static int64_t counter(struct json_object *c, const char *k)
{
    struct json_object *v;
    ck_assert_msg(json_object_object_get_ex(c, k, &v), "no %s", k);
    return json_object_get_int64(v);
}

/*
 * An event is judged by what was true when it ARRIVED, not when the
 * dispatch thread reached it: events the server sent before each of its
 * three tools/list pages (so the host read them before startup could
 * end) arrive behind a flood of 30000 notifications, so they are
 * dispatched well after activation, and all of them must be refused.
 */
START_TEST(events_before_activation_refused)
{
    const char *opts[] = {"--extensions", CAPS, "--notify-before-list",
                          "notifications/org.aurorabot/world-events/event",
                          EVENT, "--flood", "30000", "--tools", "3",
                          "--page-size", "1", NULL};
    struct json_object *c = NULL;
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h = start_ok();
    int sent = h_count_lines(logpath, "tools/list");
    ck_assert_int_eq(sent, 3);
    for (int64_t i = 0; i < h_slack(10000) / 20; i++) {
        json_object_put(c);
        c = we_counters(h);
        if (counter(c, "dropped_inactive") + counter(c, "committed") +
                counter(c, "duplicates") + counter(c, "queued") >=
            sent)
            break;
        usleep(20000);
    }
    ck_assert_int_eq(counter(c, "dropped_inactive"), sent);
    ck_assert_int_eq(counter(c, "committed"), 0);
    json_object_put(c);
    aur_mcp_destroy(h);
    stays(0);
}
END_TEST

/* ---------------------------------------------------------------- */
/* A runtime's own world writer                                     */
/* ---------------------------------------------------------------- */

/* Keeps commit ids (AUR_OK for "written" and for "already present", as
 * the writer contract says); on hold_kind it waits until a watch thread
 * sets released (bounded), so a test decides what happens meanwhile. */
struct rt_writer {
    pthread_mutex_t mu;
    char ids[64][128];
    int n, events;
    const char *hold_kind;
    int released;         /* (atomic) the hold is over */
    struct aur_mcp *host; /* for a watch thread */
};

static int rt_append(void *ud, const struct aur_commit *c,
                     struct aur_error *err)
{
    struct rt_writer *w = ud;
    (void)err;
    if (w->hold_kind && strcmp(c->kind, w->hold_kind) == 0)
        H_WAIT_UNTIL(__atomic_load_n(&w->released, __ATOMIC_ACQUIRE),
                     10000, 10);
    pthread_mutex_lock(&w->mu);
    bool dup = false;
    for (int i = 0; i < w->n; i++)
        dup = dup || strcmp(w->ids[i], c->commit_id) == 0;
    if (!dup && w->n < 64) {
        snprintf(w->ids[w->n++], sizeof w->ids[0], "%s", c->commit_id);
        w->events += strcmp(c->kind, EV_KIND) == 0;
    }
    pthread_mutex_unlock(&w->mu);
    return AUR_OK;
}

/* A host whose world writer is w, started; watch (or NULL) runs on a
 * thread of its own while the start runs, given w (w->host is set). */
static struct aur_mcp *start_with_writer_watched(struct rt_writer *w,
                                                 void *(*watch)(void *))
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_world_writer ww = {sizeof ww, w, rt_append};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    pthread_t t;
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    ck_assert_int_eq(aur_mcp_set_world_writer(h, &ww, &err), AUR_OK);
    w->host = h;
    if (watch)
        ck_assert_int_eq(pthread_create(&t, NULL, watch, w), 0);
    int rc = aur_mcp_start(h, &serr, &err);
    if (watch)
        pthread_join(t, NULL);
    ck_assert_msg(rc == AUR_OK, "start: %s %s %s", serr.app, serr.phase,
                  serr.message);
    return h;
}

static struct aur_mcp *start_with_writer(struct rt_writer *w)
{
    return start_with_writer_watched(w, NULL);
}

/* Counted as the journal counts them: a runtime writer answers AUR_OK for
 * a repeat too, so the plugin must not read that as "written" (it took
 * every repeat for a new commit: committed 20, duplicates 0). */
START_TEST(runtime_writer_counts_repeats_as_duplicates)
{
    const char *opts[] = {"--extensions", CAPS, "--event-flood", "10",
                          "--event-repeat", "2", NULL};
    struct rt_writer w = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct json_object *c = NULL;
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h = start_with_writer(&w);
    call_ok(h, "aur.mcp." PKG ".t0000");
    for (int64_t i = 0; i < h_slack(10000) / 20; i++) {
        json_object_put(c);
        c = we_counters(h);
        if (counter(c, "committed") + counter(c, "duplicates") +
                counter(c, "rejected") >= 20)
            break;
        usleep(20000);
    }
    ck_assert_int_eq(w.events, 10);
    ck_assert_msg(counter(c, "committed") == 10 &&
                      counter(c, "duplicates") == 10,
                  "committed %lld, duplicates %lld (10 unique, each twice)",
                  (long long)counter(c, "committed"),
                  (long long)counter(c, "duplicates"));
    json_object_put(c);
    aur_mcp_destroy(h);
}
END_TEST

/* Lets the held commit go once the status shows all three events
 * dropped (the status is read while the start runs: aur_host.h), not at
 * the first drop's log line: under valgrind the other two were read
 * after the start went on, active by then, and committed. */
static void *release_after_three_drops(void *arg)
{
    struct rt_writer *w = arg;
    for (int64_t i = 0; i < h_slack(10000) / 20 &&
                        aur_test_we_count(w->host, "dropped_inactive") < 3;
         i++)
        usleep(20000);
    __atomic_store_n(&w->released, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Events that reach the host after its catalog froze but before startup
 * is through (here: while its first lifecycle commit is held) arrive
 * before activation: dropped, not queued for after it (they were
 * committed once the gate opened). */
START_TEST(events_between_freeze_and_activation_dropped)
{
    const char *opts[] = {"--extensions", CAPS, "--events-after-list", "3",
                          NULL};
    struct rt_writer w = {.mu = PTHREAD_MUTEX_INITIALIZER,
                          .hold_kind = "mcp.app.starting"};
    struct json_object *c = NULL;
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h =
        start_with_writer_watched(&w, release_after_three_drops);
    ck_assert_int_eq(h_count_lines(logpath, "late-events-sent"), 1);
    for (int64_t i = 0; i < h_slack(10000) / 20; i++) {
        json_object_put(c);
        c = we_counters(h);
        if (counter(c, "dropped_inactive") + counter(c, "committed") >= 3)
            break;
        usleep(20000);
    }
    ck_assert_msg(counter(c, "committed") == 0 && w.events == 0,
                  "events sent before activation were committed: %lld "
                  "counted, %d reached the writer",
                  (long long)counter(c, "committed"), w.events);
    ck_assert_int_eq(counter(c, "dropped_inactive"), 3);
    json_object_put(c);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(world_event_committed_once)
{
    const char *opts[] = {"--extensions", CAPS, "--event", EVENT, NULL};
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h = start_ok();
    call_ok(h, "aur.mcp." PKG ".t0000");
    struct json_object *l = wait_events(1);
    assert_event_commit(json_object_array_get_idx(l, 0), PKG);
    json_object_put(l);
    /* the same event again: no second commit */
    call_ok(h, "aur.mcp." PKG ".t0000");
    stays(1);
    aur_mcp_destroy(h);
    /* and across a restart: the journal persists, the id has no run id */
    h = start_ok();
    call_ok(h, "aur.mcp." PKG ".t0000");
    stays(1);
    aur_mcp_destroy(h);
    log_is_clean();
}
END_TEST

START_TEST(two_apps_same_event_id)
{
    const char *opts[] = {"--extensions", CAPS, "--event", EVENT, NULL};
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    add_fixture("b.ini", PKG2, "world_events", "modern", opts);
    struct aur_mcp *h = start_ok();
    call_ok(h, "aur.mcp." PKG ".t0000");
    call_ok(h, "aur.mcp." PKG2 ".t0000");
    struct json_object *l = wait_events(2);
    struct json_object *a = json_object_array_get_idx(l, 0);
    struct json_object *b = json_object_array_get_idx(l, 1);
    if (strcmp(sget(a, "source"), "mcp:" PKG) != 0) {
        struct json_object *t = a;
        a = b;
        b = t;
    }
    assert_event_commit(a, PKG);
    assert_event_commit(b, PKG2);
    json_object_put(l);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(rejected_event_keeps_connection)
{
    /* sent in this order after each answer: the bad one is handled
     * before the good one, so seeing ev-2 means ev-bad was refused */
    const char *opts[] = {"--extensions", CAPS, "--event", BAD_EVENT,
                          "--event", EVENT2, NULL};
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h = start_ok();
    call_ok(h, "aur.mcp." PKG ".t0000");
    struct json_object *l = wait_events(1);
    struct json_object *c = json_object_array_get_idx(l, 0);
    ck_assert_str_eq(sget(c, "commit_id"), "mcp:" PKG ":event:ev-2");
    /* the event scope is the App scope: one scope */
    ck_assert_uint_eq(n_scopes(c), 1);
    ck_assert(has_scope(c, "aurora:mcp:" PKG));
    json_object_put(l);
    /* still connected: calls work, nothing flagged */
    call_ok(h, "aur.mcp." PKG ".t0000");
    ck_assert(!aur_mcp_restart_required(h));
    stays(1);
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *state;
    ck_assert(json_object_object_get_ex(st, "apps", &apps));
    ck_assert(json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                                        "state", &state));
    ck_assert_str_eq(json_object_get_string(state), "ready");
    json_object_put(st);
    aur_mcp_destroy(h);
    log_is_clean();
    char *p, *text;
    ck_assert(asprintf(&p, "%s/host.log", dir) > 0);
    text = h_slurp(p);
    ck_assert_ptr_nonnull(strstr(text, "rejected: invalid business event: "
                                       "kind uses the reserved prefix"));
    free(text);
    free(p);
}
END_TEST

/* Startups that must fail in phase connect. */
struct fail_row {
    const char *mode, *era, *extensions; /* extensions NULL = none */
    const char *message;                 /* substring */
};

static const struct fail_row fail_rows[] = {
    {"world_events", "modern", NULL, "org.aurorabot/world-events"},
    {"world_events", "modern",
     "{\"org.aurorabot/world-events\":{\"version\":1.0}}",
     "org.aurorabot/world-events"},
    {"world_events", "modern",
     "{\"org.aurorabot/world-events\":{\"version\":1,\"x\":1}}",
     "org.aurorabot/world-events"},
    {"world_events", "legacy", CAPS, "world_events"},
    {"legacy_aurora_event", "modern", CAPS, "legacy_aurora_event"},
};

START_TEST(startup_fails_in_connect)
{
    const struct fail_row *r = &fail_rows[_i];
    const char *opts[] = {"--event", EVENT,
                          r->extensions ? "--extensions" : NULL,
                          r->extensions, NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    int rc;
    add_fixture("a.ini", PKG, r->mode, r->era, opts);
    struct aur_mcp *h = start(&serr, &rc);
    ck_assert_int_eq(rc, AUR_E_NEGOTIATION);
    ck_assert_str_eq(serr.app, PKG);
    ck_assert_str_eq(serr.phase, "connect");
    ck_assert_msg(strstr(serr.message, r->message) != NULL, "message %s",
                  serr.message);
    aur_mcp_destroy(h);
    struct json_object *l = event_commits();
    ck_assert_uint_eq(json_object_array_length(l), 0);
    json_object_put(l);
}
END_TEST

START_TEST(legacy_sdk1_aurora_event)
{
    char *mods = h_src("tests/peers/node_modules/@modelcontextprotocol/sdk");
    ck_assert_msg(access(mods, F_OK) == 0,
                  "run `npm ci` in tests/peers first (missing %s)", mods);
    free(mods);
    char *script = h_src("tests/peers/sdk1-server.mjs");
    const char *args[] = {script, "--log", logpath, "--legacy-event", EVENT,
                          NULL};
    h_add_app(dir, "a.ini", PKG, 20, "event_mode = legacy_aurora_event",
              "node", args);
    struct aur_mcp *h = start_ok();
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *a = json_tokener_parse("{\"text\":\"x\"}");
    ck_assert_int_eq(aur_mcp_call_jsonc(h, "aur.mcp." PKG ".echo", a, -1, &out),
                     AUR_OK);
    json_object_put(a);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    aur_tool_output_clear(&out);
    struct json_object *l = wait_events(1);
    assert_event_commit(json_object_array_get_idx(l, 0), PKG);
    json_object_put(l);
    call_ok(h, "aur.mcp." PKG ".echo");
    stays(1);
    aur_mcp_destroy(h);
    free(script);
    log_is_clean();
}
END_TEST

static void count_line(void *ud, const char *line)
{
    if (strstr(line, "\"kind\":\"" EV_KIND "\""))
        ++*(size_t *)ud;
}

#define FLOOD 100000

/* A flood is committed whole: the reader waits for the dispatcher
 * (bounded queue) instead of dropping. */
START_TEST(flood_committed_without_loss)
{
    const char *opts[] = {"--extensions", CAPS, "--event-flood", "100000",
                          NULL};
    struct aur_error err;
    size_t n = 0;
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h = start_ok();
    call_ok(h, "aur.mcp." PKG ".t0000");
    H_WAIT_UNTIL(aur_test_we_count(h, "committed") >= FLOOD, 120000, 50);
    ck_assert_int_eq(aur_test_we_count(h, "committed"), FLOOD);
    ck_assert_int_eq(aur_test_we_count(h, "rejected"), 0);
    ck_assert_int_eq(aur_test_we_count(h, "dropped_inactive"), 0);
    /* the App is still healthy */
    call_ok(h, "aur.mcp." PKG ".t0000");
    aur_mcp_destroy(h);
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, count_line, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, FLOOD);
}
END_TEST

/*
 * Every event that arrived before close began is committed: the server
 * sends 200 events and then the reply to a call, and the host is shut
 * down as soon as the call returns (as `aurora-mcp call` does).  They
 * all arrived before the reply on one ordered stream, so all 200 are in
 * the journal, every time.
 */
START_TEST(events_before_reply_survive_close)
{
    const char *opts[] = {"--extensions", CAPS, "--events-before-call", "200",
                          NULL};
    for (int round = 0; round < 5; round++) {
        struct aur_error err;
        size_t n = 0;
        teardown();
        setup();
        add_fixture("a.ini", PKG, "world_events", "modern", opts);
        struct aur_mcp *h = start_ok();
        call_ok(h, "aur.mcp." PKG ".t0000");
        aur_mcp_destroy(h);
        ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, count_line, &n, &err),
                         AUR_OK);
        ck_assert_msg(n == 200, "round %d: %zu of 200 events committed",
                      round, n);
    }
}
END_TEST

/* Shutdown in the middle of a flood: the plugin commits what it queued
 * before the journal closes, so the journal holds exactly the events the
 * session counted as committed (its last log line, written after the
 * flush), and at least what status showed as committed or queued. */
START_TEST(shutdown_mid_flood_loses_nothing_accepted)
{
    const char *opts[] = {"--extensions", CAPS, "--event-flood", "100000",
                          NULL};
    struct aur_error err;
    size_t n = 0;
    unsigned long long logged = 0;
    int64_t seen = 0;
    add_fixture("a.ini", PKG, "world_events", "modern", opts);
    struct aur_mcp *h = start_ok();
    call_ok(h, "aur.mcp." PKG ".t0000");
    H_WAIT_UNTIL(aur_test_we_count(h, "committed") >= 1000, 10000, 5);
    ck_assert_int_ge(aur_test_we_count(h, "committed"), 1000);
    /* one status read, whose counts add up (committed + queued never
     * counts an event twice) */
    {
        struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *xs, *we,
                           *v;
        ck_assert(json_object_object_get_ex(st, "apps", &apps));
        ck_assert(json_object_object_get_ex(
            json_object_array_get_idx(apps, 0), "extension_status", &xs));
        ck_assert(json_object_object_get_ex(xs, "org.aurorabot/world-events",
                                            &we));
        ck_assert(json_object_object_get_ex(we, "committed", &v));
        seen = json_object_get_int64(v);
        ck_assert(json_object_object_get_ex(we, "queued", &v));
        seen += json_object_get_int64(v);
        json_object_put(st);
    }
    aur_mcp_destroy(h);
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, count_line, &n, &err),
                     AUR_OK);
    char *path, *text, *at;
    ck_assert(asprintf(&path, "%s/host.log", dir) > 0);
    text = h_slurp(path);
    ck_assert_ptr_nonnull(text);
    at = strstr(text, "events: ");
    for (char *next; at && (next = strstr(at + 1, "events: "));)
        at = next; /* the last one: the session's final counts */
    ck_assert_ptr_nonnull(at);
    unsigned long long received, dup, rej, dropped;
    ck_assert_int_eq(sscanf(at,
                            "events: %llu received, %llu accepted, %llu "
                            "duplicates, %llu rejected, %llu dropped",
                            &received, &logged, &dup, &rej, &dropped),
                     5);
    ck_assert_msg(n == logged && (int64_t)n >= seen,
                  "journal %zu, status saw %lld, last log: %.160s", n,
                  (long long)seen, at);
    /* every event the session saw is accounted for, once */
    ck_assert_msg(received == logged + dup + rej + dropped,
                  "counts do not add up: %.160s", at);
    ck_assert_ptr_null(strstr(text, "journal_error"));
    free(text);
    free(path);
}
END_TEST

static Suite *host_suite(void)
{
    Suite *su = suite_create("ext_world_events_host");
    TCase *tc;

    tc = tcase_create("world_events");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, world_event_committed_once);
    tcase_add_test(tc, events_before_activation_refused);
    tcase_add_test(tc, two_apps_same_event_id);
    tcase_add_test(tc, rejected_event_keeps_connection);
    tcase_add_test(tc, runtime_writer_counts_repeats_as_duplicates);
    tcase_add_test(tc, events_between_freeze_and_activation_dropped);
    suite_add_tcase(su, tc);

    tc = tcase_create("negotiation");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, startup_fails_in_connect, 0,
                        (int)(sizeof fail_rows / sizeof fail_rows[0]));
    suite_add_tcase(su, tc);

    tc = tcase_create("legacy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, legacy_sdk1_aurora_event);
    suite_add_tcase(su, tc);

    tc = tcase_create("flood");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, flood_committed_without_loss);
    tcase_add_test(tc, events_before_reply_survive_close);
    tcase_add_test(tc, shutdown_mid_flood_loses_nothing_accepted);
    suite_add_tcase(su, tc);
    return su;
}

int main(void) { return aur_check_main(host_suite(), NULL); }
