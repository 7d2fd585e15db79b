/*
 * check_budgets.c - the per-App budgets of docs/budgets.md (issue 8 item
 * 2) through the embedding API, against the real fixture server:
 * notifications per second (startup and after activation), schema depth
 * and size and description size per tool, result content size, and the
 * config errors of every budget key in [mcp] and in an App's [app].
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/harness.h"

/* Each App's deadline: the tests need it met, or need a failure to come
 * well before it, so a slow run (valgrind, TSan) stretches it. */
#define DEADLINE_MS h_slack(20000)

#define PKG "org.test.budgets"
#define TOOL "aur.mcp.org.test.budgets.t0000"

static char *dir, *fixture, *logpath;

static void setup(void)
{
    fixture = h_bin("bin/aur-fixture-server");
    dir = NULL;
    logpath = NULL;
}

static void teardown(void)
{
    if (dir)
        h_rmtree(dir);
    free(dir);
    free(fixture);
    free(logpath);
}

/* A config whose [mcp] holds mcp_lines and one fixture App with
 * app_extra in [app] and the fixture options opts. */
static void config(const char *mcp_lines, const char *app_extra,
                   const char *const *opts)
{
    char *mcp;
    ck_assert(asprintf(&mcp, "enabled = true\n%s", mcp_lines ? mcp_lines
                                                             : "") > 0);
    dir = h_mkconfig(NULL, mcp);
    free(mcp);
    ck_assert(asprintf(&logpath, "%s/server.log", dir) > 0);
    h_add_logged_app(dir, "a.ini", PKG, (double)DEADLINE_MS / 1000,
                     app_extra, fixture, NULL, logpath, opts);
}

static int start(struct aur_mcp **h, struct aur_startup_error *serr)
{
    return h_start(dir, h, serr);
}

static void start_ok(struct aur_mcp **h)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    ck_assert_msg(start(h, &serr) == AUR_OK, "start: %s %s %s", serr.phase,
                  serr.app, serr.message);
}

/* Startup fails for our App in phase with a message holding both. */
static void start_fails(const char *phase, const char *want1,
                        const char *want2)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.code, "startup_failed");
    ck_assert_str_eq(serr.app, PKG);
    if (phase)
        ck_assert_str_eq(serr.phase, phase);
    ck_assert_msg(strstr(serr.message, want1), "message: %s", serr.message);
    if (want2)
        ck_assert_msg(strstr(serr.message, want2), "message: %s",
                      serr.message);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}

static bool member_bool(struct json_object *o, const char *key)
{
    struct json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* ---- notifications per second --------------------------------------- */

#define FLOOD_BUDGET                                                         \
    "max_notifications_per_second = 100\nnotification_burst = 100\n"

static const char *const eras[] = {"modern", "legacy"};

/* A burst far over the bucket while the catalog is read: the App fails
 * in the phase that was running, at once, not at its deadline. */
START_TEST(flood_during_startup_fails_naming_budget)
{
    const char *opts[] = {"--era", eras[_i], "--flood", "5000", NULL};
    static const char *const j[] = {"mcp.app.starting", "mcp.app.failed",
                                    NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t t0 = h_now_ms();
    config(FLOOD_BUDGET, NULL, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_int_lt(h_now_ms() - t0, DEADLINE_MS / 2);
    ck_assert_str_eq(serr.code, "startup_failed");
    ck_assert_str_eq(serr.app, PKG);
    /* The fixture floods once its handshake is done, which for legacy
     * is notifications/initialized, sent at the very end of connect. */
    ck_assert_msg(strcmp(serr.phase, "tools/list") == 0 ||
                      strcmp(serr.phase, "catalog/listen") == 0 ||
                      (_i == 1 && strcmp(serr.phase, "connect") == 0),
                  "phase %s", serr.phase);
    ck_assert_msg(strstr(serr.message, "max_notifications_per_second"),
                  "message: %s", serr.message);
    ck_assert_msg(strstr(serr.message, "app " PKG), "message: %s",
                  serr.message);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, j);
}
END_TEST

/* A steady sender below the rate, for longer than the burst covers (the
 * fixture floods before it answers tools/list, so start sees all of it).
 * The host counts messages as it reads them: a reader held up for
 * burst / rate seconds (0.8 s at 120 a second) would find a burst past
 * the bucket, so a slow run (valgrind) sends slower, never the budget
 * looser. */
START_TEST(steady_rate_under_budget_is_fine)
{
    char rate[16];
    const char *opts[] = {"--era", "modern", "--flood", "300",
                          "--flood-rate", rate, NULL};
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *a;
    struct aur_mcp *h;
    snprintf(rate, sizeof rate, "%d", (int)(120 * 1000 / h_slack(1000)));
    config("max_notifications_per_second = 200\nnotification_burst = 100\n",
           NULL, opts);
    start_ok(&h);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, 10000, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    aur_tool_output_clear(&out);
    a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "state"), "ready");
    ck_assert_ptr_null(h_str(a, "last_error"));
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* The same budget, a steady sender well over the rate: faulty. */
START_TEST(steady_rate_over_budget_fails)
{
    const char *opts[] = {"--era", "modern", "--flood", "1000",
                          "--flood-rate", "1000", NULL};
    config("max_notifications_per_second = 200\nnotification_burst = 100\n",
           NULL, opts);
    start_fails(NULL, "max_notifications_per_second", "notification_burst");
}
END_TEST

/* [app] overrides [mcp]: the App is allowed more than the default. */
START_TEST(per_app_override_raises_budget)
{
    const char *opts[] = {"--era", "modern", "--flood", "2000", NULL};
    struct aur_mcp *h;
    config(FLOOD_BUDGET, "notification_burst = 100000", opts);
    start_ok(&h);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

struct bg_call {
    struct aur_mcp *h;
    struct aur_tool_output out;
};

static void *bg_call_main(void *arg)
{
    struct bg_call *c = arg;
    aur_mcp_call_jsonc(c->h, TOOL, NULL, 15000, &c->out);
    return NULL;
}

/*
 * After activation: the first call's answer is followed by a flood.  The
 * call answered before it succeeds; the one outstanding ends unknown; a
 * later one fails unsent; status says why.
 */
/* Whether the App's state is still "ready". */
static bool app_ready(struct aur_mcp *h)
{
    struct json_object *a = h_app_status(h);
    bool ready = strcmp(h_str(a, "state"), "ready") == 0;

    json_object_put(a);
    return ready;
}

START_TEST(flood_after_activation_makes_app_unavailable)
{
    const char *opts[] = {"--era", "modern", "--event-flood", "5000",
                          "--call-delay-ms", "400", NULL};
    static const char *const j[] = {"mcp.app.starting", "mcp.app.ready",
                                    "mcp.catalog.frozen",
                                    "mcp.app.disconnected", NULL};
    struct bg_call first = {0}, second = {0};
    struct aur_tool_output out = {.struct_size = sizeof out};
    pthread_t t1, t2;
    struct json_object *a;
    struct aur_mcp *h;
    config("max_notifications_per_second = 100\nnotification_burst = 1000\n",
           NULL, opts);
    start_ok(&h);
    first.h = second.h = h;
    ck_assert_int_eq(pthread_create(&t1, NULL, bg_call_main, &first), 0);
    /* The second call starts once the first is at the server (it logs a
     * request as it reads it, then waits its 400 ms), not after a fixed
     * sleep that a slow run can outlast. */
    H_WAIT_UNTIL(h_count_lines(logpath, "tools/call") >= 1, 5000, 5);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
    ck_assert_int_eq(pthread_create(&t2, NULL, bg_call_main, &second), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ck_assert_int_eq(first.out.status, AUR_CALL_SUCCEEDED);
    ck_assert_int_eq(second.out.status, AUR_CALL_UNKNOWN);
    aur_tool_output_clear(&first.out);
    aur_tool_output_clear(&second.out);

    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, 5000, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_FAILED);
    aur_tool_output_clear(&out);
    /* The dispatch thread marks the App; its close item jumps the
     * queue, so this is prompt. */
    H_WAIT_UNTIL(!app_ready(h), 2000, 20);
    a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "state"), "unavailable");
    ck_assert_ptr_nonnull(h_str(a, "last_error"));
    ck_assert_msg(strstr(h_str(a, "last_error"),
                         "max_notifications_per_second"),
                  "last_error: %s", h_str(a, "last_error"));
    ck_assert(member_bool(a, "restart_required"));
    json_object_put(a);
    ck_assert_int_eq(aur_mcp_restart_required(h), 1);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    h_journal_is(dir, j);
}
END_TEST

/* ---- schema and description ---------------------------------------- */

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static char *tool_json(const char *name, const char *desc,
                       const char *input, const char *output)
{
    char *t;
    ck_assert(asprintf(&t, "{\"name\":\"%s\",\"description\":\"%s\","
                           "\"inputSchema\":%s%s%s}",
                       name, desc, input, output ? ",\"outputSchema\":" : "",
                       output ? output : "") > 0);
    return t;
}

/* depth 5: object > properties > a > properties > b */
#define DEEP5                                                                \
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","      \
    "\"properties\":{\"b\":{\"type\":\"string\"}}}}}"

struct schema_row {
    const char *mcp, *app;
    const char *name, *input, *output;
    size_t desc_len;
    const char *key; /* NULL = startup succeeds */
};

static const struct schema_row schema_rows[] = {
    /* description */
    {"max_description_bytes = 64\n", NULL, "long_desc", "{\"type\":\"object\"}",
     NULL, 65, "max_description_bytes"},
    {"max_description_bytes = 64\n", NULL, "edge_desc", "{\"type\":\"object\"}",
     NULL, 64, NULL},
    {NULL, "max_description_bytes = 64", "app_desc", "{\"type\":\"object\"}",
     NULL, 65, "max_description_bytes"},
    /* depth */
    {"max_schema_depth = 4\n", NULL, "deep_in", DEEP5, NULL, 8,
     "max_schema_depth"},
    {"max_schema_depth = 5\n", NULL, "edge_in", DEEP5, NULL, 8, NULL},
    {"max_schema_depth = 4\n", NULL, "deep_out", "{\"type\":\"object\"}",
     DEEP5, 8, "max_schema_depth"},
    /* size: DEEP5 is 91 bytes canonical */
    {"max_schema_bytes = 90\n", NULL, "big_in", DEEP5, NULL, 8,
     "max_schema_bytes"},
    {"max_schema_bytes = 91\n", NULL, "edge_big", DEEP5, NULL, 8, NULL},
    {"max_schema_bytes = 90\n", NULL, "big_out", "{\"type\":\"object\"}",
     DEEP5, 8, "max_schema_bytes"},
    {"max_schema_bytes = 20\n", "max_schema_bytes = 200", "app_raised",
     DEEP5, NULL, 8, NULL},
};

START_TEST(tool_budgets_at_discovery)
{
    const struct schema_row *r = &schema_rows[_i];
    char *desc = repeat('d', r->desc_len);
    char *tj = tool_json(r->name, desc, r->input, r->output);
    const char *opts[] = {"--era", "modern", "--tool-json", tj, NULL};
    char id[128];
    config(r->mcp, r->app, opts);
    snprintf(id, sizeof id, "aur.mcp." PKG ".%s", r->name);
    if (r->key) {
        start_fails("tools/list", id, r->key);
    } else {
        struct aur_mcp *h;
        start_ok(&h);
        ck_assert_uint_eq(aur_mcp_tool_count(h), 2);
        aur_mcp_destroy(h);
        ck_assert_int_eq(h_procs_with(logpath), 0);
    }
    free(desc);
    free(tj);
}
END_TEST

/* ---- result content -------------------------------------------------- */

static struct aur_tool_output call_text(struct aur_mcp *h, size_t n)
{
    struct json_object *args = json_object_new_object();
    char *text = repeat('r', n);
    struct aur_tool_output out = {.struct_size = sizeof out};
    json_object_object_add(args, "text", json_object_new_string(text));
    free(text);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, args, 10000, &out), AUR_OK);
    json_object_put(args);
    return out;
}

/* Over the budget the call ran but its output is withheld: unknown; the
 * App stays ready (a big result is not a faulty App). */
START_TEST(result_over_budget_is_unknown)
{
    const char *opts[] = {"--era", eras[_i], NULL};
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *a;
    struct aur_mcp *h;
    config("max_result_bytes = 64\n", NULL, opts);
    start_ok(&h);
    out = call_text(h, 64);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_uint_eq(strlen(out.content), 64);
    aur_tool_output_clear(&out);
    out = call_text(h, 65);
    ck_assert_int_eq(out.status, AUR_CALL_UNKNOWN);
    ck_assert_msg(strstr(out.content, "max_result_bytes"), "content: %s",
                  out.content);
    ck_assert_ptr_null(strstr(out.content, "rrrr"));
    aur_tool_output_clear(&out);
    a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "state"), "ready");
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* structuredContent counts by its canonical text. */
START_TEST(structured_result_over_budget_is_unknown)
{
    const char *opts[] = {
        "--era", "legacy", "--call-result",
        "{\"content\":[],\"structuredContent\":{\"k\":"
        "\"0123456789012345678901234567890123456789\"}}",
        NULL};
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct aur_mcp *h;
    config("max_result_bytes = 40\n", NULL, opts);
    start_ok(&h);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, 10000, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_UNKNOWN);
    ck_assert_msg(strstr(out.content, "max_result_bytes = 40"), "content: %s",
                  out.content);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    /* with room for its 48 bytes it succeeds */
    h_rmtree(dir);
    free(dir);
    free(logpath);
    config("max_result_bytes = 48\n", NULL, opts);
    start_ok(&h);
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, 10000, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(out.content,
                     "{\"k\":\"0123456789012345678901234567890123456789\"}");
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* ---- config errors --------------------------------------------------- */

struct cfg_row {
    bool in_app; /* else [mcp] of host.ini */
    const char *key, *value;
};

static const struct cfg_row cfg_rows[] = {
    {false, "max_notifications_per_second", "0"},
    {false, "max_notifications_per_second", "1000001"},
    {false, "notification_burst", "0"},
    {false, "notification_burst", "100000001"},
    {false, "max_schema_bytes", "15"},
    {false, "max_schema_bytes", "1073741825"},
    {false, "max_schema_depth", "0"},
    {false, "max_schema_depth", "129"},
    {false, "max_description_bytes", "0"},
    {false, "max_description_bytes", "1e6"},
    {false, "max_result_bytes", "-1"},
    {false, "max_result_bytes", "1073741825"},
    {true, "max_notifications_per_second", "0"},
    {true, "notification_burst", "x"},
    {true, "max_schema_bytes", "1073741825"},
    {true, "max_schema_depth", "129"},
    {true, "max_description_bytes", "0"},
    {true, "max_result_bytes", "0"},
    {false, "max_app_memory_bytes", "1048575"},
    {false, "max_app_memory_bytes", "68719476737"},
    {false, "max_queued_bytes", "65535"},
    {false, "max_queued_bytes", "68719476737"},
    {true, "max_app_memory_bytes", "0"},
    {true, "max_queued_bytes", "1e9"},
};

START_TEST(config_out_of_range_names_file_line_key)
{
    const struct cfg_row *r = &cfg_rows[_i];
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    char line[128], want[256];
    int rc;
    snprintf(line, sizeof line, "%s = %s", r->key, r->value);
    /* host.ini: [host] lines 1-6, [mcp] 7, enabled 8, the key 9;
     * apps.d/a.ini: [app] 1, four keys 2-5, the key 6. */
    config(r->in_app ? NULL : line, r->in_app ? line : NULL, NULL);
    rc = aur_mcp_create(dir, NULL, &h, &serr, &err);
    ck_assert_int_eq(rc, AUR_E_CONFIG);
    snprintf(want, sizeof want, "%s: %s: must be an integer in ",
             r->in_app ? "apps.d/a.ini:6" : "host.ini:9", r->key);
    ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "got: %s",
                  err.msg);
    aur_mcp_destroy(h);
}
END_TEST

/* Both ends of every range are accepted, in [mcp] and in [app]. */
START_TEST(config_range_ends_accepted)
{
    static const char *const lo =
        "max_notifications_per_second = 1\nnotification_burst = 1\n"
        "max_schema_bytes = 16\nmax_schema_depth = 1\n"
        "max_description_bytes = 1\nmax_result_bytes = 1\n"
        "max_app_memory_bytes = 1048576\nmax_queued_bytes = 65536\n";
    static const char *const hi_app =
        "max_notifications_per_second = 1000000\n"
        "notification_burst = 100000000\n"
        "max_schema_bytes = 1073741824\nmax_schema_depth = 128\n"
        "max_description_bytes = 1073741824\nmax_result_bytes = 1073741824\n"
        "max_app_memory_bytes = 68719476736\nmax_queued_bytes = 68719476736";
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    config(lo, hi_app, NULL);
    ck_assert_msg(aur_mcp_create(dir, NULL, &h, &serr, &err) == AUR_OK,
                  "create: %s", err.msg);
    aur_mcp_destroy(h);
}
END_TEST

/* A budget key in the endpoint section is pointed to [app]. */
START_TEST(config_budget_key_in_stdio_section)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    config(NULL, NULL, NULL);
    h_write(dir, "apps.d/a.ini",
            "[app]\npackage = " PKG "\nenabled = true\ntransport = stdio\n"
            "timeout_seconds = 5\n[stdio]\ncommand = /bin/true\n"
            "working_dir = .\nmax_result_bytes = 10\n");
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_E_CONFIG);
    ck_assert_msg(strstr(err.msg, "apps.d/a.ini:9: max_result_bytes: "
                                  "belongs in [app]"),
                  "got: %s", err.msg);
    aur_mcp_destroy(h);
}
END_TEST

static Suite *budgets_suite(void)
{
    Suite *s = suite_create("budgets");
    TCase *tc;

    tc = tcase_create("notifications");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, flood_during_startup_fails_naming_budget, 0, 2);
    tcase_add_test(tc, steady_rate_under_budget_is_fine);
    tcase_add_test(tc, steady_rate_over_budget_fails);
    tcase_add_test(tc, per_app_override_raises_budget);
    tcase_add_test(tc, flood_after_activation_makes_app_unavailable);
    suite_add_tcase(s, tc);

    tc = tcase_create("tools");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, tool_budgets_at_discovery, 0,
                        (int)(sizeof schema_rows / sizeof schema_rows[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("results");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, result_over_budget_is_unknown, 0, 2);
    tcase_add_test(tc, structured_result_over_budget_is_unknown);
    suite_add_tcase(s, tc);

    tc = tcase_create("config");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, config_out_of_range_names_file_line_key, 0,
                        (int)(sizeof cfg_rows / sizeof cfg_rows[0]));
    tcase_add_test(tc, config_range_ends_accepted);
    tcase_add_test(tc, config_budget_key_in_stdio_section);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return aur_check_main(budgets_suite(), NULL); }
