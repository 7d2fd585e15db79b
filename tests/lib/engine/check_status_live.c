/*
 * check_status_live.c - the status document read on another thread while
 * aur_mcp_start runs (aur_host.h: status is for any thread, a start
 * included).  A watcher thread reads it without pause through the whole
 * start, with both extensions negotiated, a legacy App and a modern one,
 * through a freeze or a failure and its closes.  The Apps are held (the
 * fixture's --start-after) until the watcher has seen each step, so the
 * reads overlap every write a start makes, however the threads are
 * scheduled.  Each document must be whole and consistent; under
 * ThreadSanitizer (scripts/tsan.sh) the same test shows any field a
 * start writes without the lock status reads under.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>
#include <check.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/harness.h"

#define WE "org.aurorabot/world-events"
#define TC "org.aurorabot/tool-contract"
#define CAPS "{\"" WE "\":{\"version\":1},\"" TC "\":{\"version\":1}}"
#define NAPPS 3

static char *dir, *fixture, *logpath, *go_b, *go_c;

/* The Apps in config order, and the tools each lists. */
static const char *const pkg[NAPPS] = {"org.test.sa", "org.test.sb",
                                       "org.test.sc"};
static const int ntools[NAPPS] = {3, 20, 30};

static void setup(void)
{
    char *ini;

    h_fixture_env(&dir, &fixture, &logpath);
    ck_assert(asprintf(&ini,
                       "[host]\n"
                       "plugins = transport-stdio ext-world-events "
                       "ext-tool-contract\n"
                       "plugin_dir = %s/plugins\n"
                       "journal = data/world.sqlite3\n"
                       "log_level = warn\n"
                       "[mcp]\nenabled = true\n",
                       AUR_TEST_BIN_DIR) > 0);
    h_write(dir, "host.ini", ini);
    free(ini);
    ck_assert(asprintf(&go_b, "%s/go-b", dir) > 0);
    ck_assert(asprintf(&go_c, "%s/go-c", dir) > 0);
}

static void teardown(void)
{
    free(go_b);
    free(go_c);
    h_fixture_env_free(&dir, &fixture, &logpath);
}

/* a: modern, world events sent before activation; b: legacy, held until
 * go-b; c: modern with both extensions, held until go-c, and failing at
 * its third page when fail is set. */
static void configure(bool fail)
{
    const char *a[] = {"--era", "modern", "--extensions", CAPS, "--tools",
                       "3", "--events-after-list", "2", NULL};
    const char *b[] = {"--era", "legacy", "--start-after", go_b, "--tools",
                       "20", "--page-size", "3", NULL};
    const char *c[] = {"--era", "modern", "--extensions", CAPS,
                       "--start-after", go_c, "--tools", "30",
                       "--page-size", "4", fail ? "--exit-at" : NULL,
                       "list:3", NULL};
    double t = (double)h_slack(30000) / 1000.0;

    h_add_logged_app(dir, "a.ini", pkg[0], t, "event_mode = world_events",
                     fixture, NULL, logpath, a);
    h_add_logged_app(dir, "b.ini", pkg[1], t, NULL, fixture, NULL, logpath,
                     b);
    h_add_logged_app(dir, "c.ini", pkg[2], t, NULL, fixture, NULL, logpath,
                     c);
}

struct watch {
    struct aur_mcp *h;
    atomic_bool done; /* the start returned */
    int reads, step;  /* documents read; holds released (0 to 2) */
    bool saw_starting, saw_session;
    char bad[512];    /* the first inconsistency, or "" */
};

static void bad(struct watch *w, const char *what, const char *app)
{
    if (!w->bad[0])
        snprintf(w->bad, sizeof w->bad, "read %d: %s: %s", w->reads, app,
                 what);
}

/* On the watcher's thread: no Check assertion there. */
static void touch(struct watch *w, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        bad(w, "cannot make the file that lets it go", path);
    else
        close(fd);
}

static const char *str_of(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;
    json_object_object_get_ex(o, k, &v);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                    : NULL;
}

static bool flag_of(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;
    json_object_object_get_ex(o, k, &v);
    return json_object_is_type(v, json_type_boolean) &&
           json_object_get_boolean(v);
}

static bool one_of(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

/* One App's entry: whole words, a version some handshake finished, and
 * a catalog that is all of the App's or none of it. */
static void check_app(struct watch *w, struct json_object *o, int i)
{
    static const char *const states[] = {
        "disabled", "starting", "ready", "unavailable", "closed",
        "not_started", NULL};
    static const char *const versions[] = {
        "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
        "2024-11-05", NULL};
    struct json_object *ext = NULL, *ids = NULL, *v = NULL;
    const char *state = str_of(o, "state");
    size_t n;

    if (!one_of(str_of(o, "package"), (const char *const[]){pkg[i], NULL}))
        bad(w, "not in config order", pkg[i]);
    if (!one_of(state, states))
        bad(w, "no state word", pkg[i]);
    json_object_object_get_ex(o, "negotiated_version", &v);
    if (v && !one_of(json_object_get_string(v), versions))
        bad(w, "a version no handshake gave", pkg[i]);
    if (!json_object_object_get_ex(o, "extensions", &ext) ||
        json_object_object_length(ext) != 2)
        bad(w, "not both extension keys", pkg[i]);
    json_object_object_get_ex(o, "tool_ids", &ids);
    n = json_object_array_length(ids);
    if (n != 0 && n != (size_t)ntools[i])
        bad(w, "part of a catalog", pkg[i]);
    if (state && strcmp(state, "ready") == 0 && n != (size_t)ntools[i])
        bad(w, "ready without its catalog", pkg[i]);
    if (i == 0 && state && strcmp(state, "starting") == 0)
        w->saw_starting = true;
    if (i == 0 && flag_of(ext, WE) && v)
        w->saw_session = true;
}

/* One read of the whole document (tools too), checked. */
static struct json_object *read_once(struct watch *w)
{
    struct json_object *doc, *apps = NULL, *tools = NULL, *j = NULL;
    struct aur_error err;
    char *text = NULL;
    size_t len = 0;
    size_t nt;

    w->reads++;
    if (aur_mcp_status(w->h, 1, &text, &len, &err) != AUR_OK) {
        bad(w, err.msg, "status");
        return NULL;
    }
    doc = json_tokener_parse(text);
    aur_free(text);
    if (!json_object_object_get_ex(doc, "apps", &apps) ||
        json_object_array_length(apps) != NAPPS) {
        bad(w, "not a document of three Apps", "status");
        json_object_put(doc);
        return NULL;
    }
    for (int i = 0; i < NAPPS; i++)
        check_app(w, json_object_array_get_idx(apps, (size_t)i), i);
    json_object_object_get_ex(doc, "tools", &tools);
    nt = json_object_array_length(tools);
    if (nt != 0 && nt != 3 + 20 + 30)
        bad(w, "part of the registry", "tools");
    if (!json_object_object_get_ex(doc, "journal", &j) ||
        (j && !str_of(j, "backend")))
        bad(w, "a journal without its backend", "journal");
    return doc;
}

/* App i's entry in doc. */
static struct json_object *app_at(struct json_object *doc, int i)
{
    struct json_object *apps = NULL;
    json_object_object_get_ex(doc, "apps", &apps);
    return json_object_array_get_idx(apps, (size_t)i);
}

/* App i's negotiated version in doc, or NULL. */
static const char *version_of(struct json_object *doc, int i)
{
    return str_of(app_at(doc, i), "negotiated_version");
}

/*
 * Reads until the start returns.  b is let go once a is negotiated with
 * its world-events session; c once b is negotiated (legacy).  A step not
 * seen within its bound is let go anyway, and the test fails on it.
 */
static void *watcher(void *arg)
{
    struct watch *w = arg;
    int64_t dl = h_now_ms() + h_slack(20000);

    while (!atomic_load(&w->done)) {
        struct json_object *doc = read_once(w);
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        struct aur_error err;
        /* The streamed form of the same document, alike. */
        if (fd >= 0 && aur_mcp_status_write(w->h, 1, fd, &err) != AUR_OK)
            bad(w, err.msg, "status_write");
        if (fd >= 0)
            close(fd);
        bool late = w->step < 2 && h_now_ms() > dl;
        if (late)
            bad(w, "its step was not seen in time", pkg[w->step]);
        if (w->step == 0 && (w->saw_session || late)) {
            touch(w, go_b);
            w->step = 1;
            dl = h_now_ms() + h_slack(20000);
        } else if (w->step == 1 && (version_of(doc, 1) || late)) {
            touch(w, go_c);
            w->step = 2;
        }
        json_object_put(doc);
        usleep(200);
    }
    return NULL;
}

/* Starts the host configured by configure(fail) with a watcher beside
 * it; rc and serr are the start's. */
static struct aur_mcp *start_watched(struct watch *w,
                                     struct aur_startup_error *serr, int *rc)
{
    struct aur_error err;
    pthread_t t;

    ck_assert_int_eq(aur_mcp_create(dir, NULL, &w->h, serr, &err), AUR_OK);
    ck_assert_int_eq(pthread_create(&t, NULL, watcher, w), 0);
    *rc = aur_mcp_start(w->h, serr, &err);
    atomic_store(&w->done, true);
    pthread_join(t, NULL);
    ck_assert_msg(!w->bad[0], "%s", w->bad);
    ck_assert_msg(w->saw_starting, "a was never seen starting (%d reads)",
                  w->reads);
    ck_assert_msg(w->saw_session,
                  "a's world-events session was never seen (%d reads)",
                  w->reads);
    ck_assert_int_eq(w->step, 2);
    return w->h;
}

START_TEST(status_read_through_a_start)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct watch w = {0};
    struct json_object *doc;
    int rc;

    configure(false);
    start_watched(&w, &serr, &rc);
    ck_assert_msg(rc == AUR_OK, "start: %s %s %s", serr.app, serr.phase,
                  serr.message);
    /* The document after the start is whole: every App ready. */
    doc = read_once(&w);
    ck_assert_msg(!w.bad[0], "%s", w.bad);
    for (int i = 0; i < NAPPS; i++)
        ck_assert_str_eq(str_of(app_at(doc, i), "state"), "ready");
    ck_assert_str_eq(version_of(doc, 0), "2026-07-28");
    ck_assert_ptr_nonnull(version_of(doc, 1));
    ck_assert_str_ne(version_of(doc, 1), "2026-07-28");
    json_object_put(doc);
    aur_mcp_destroy(w.h);
}
END_TEST

/* c fails at its third page once the others are negotiated: the start
 * closes every App (their sessions end) while the watcher still reads. */
START_TEST(status_read_through_a_failed_start)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct watch w = {0};
    struct json_object *doc;
    int rc;

    configure(true);
    start_watched(&w, &serr, &rc);
    ck_assert_int_ne(rc, AUR_OK);
    ck_assert_str_eq(serr.app, pkg[2]);
    doc = read_once(&w);
    ck_assert_msg(!w.bad[0], "%s", w.bad);
    for (int i = 0; i < NAPPS; i++) {
        struct json_object *ext = NULL;
        json_object_object_get_ex(app_at(doc, i), "extensions", &ext);
        ck_assert_msg(!flag_of(ext, WE) && !flag_of(ext, TC),
                      "%s: an extension still active after the close",
                      pkg[i]);
    }
    json_object_put(doc);
    aur_mcp_destroy(w.h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("status_live");
    TCase *tc = tcase_create("live");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, status_read_through_a_start);
    tcase_add_test(tc, status_read_through_a_failed_start);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
