/*
 * check_calls.c - tool calls against our C fixture server: every row of
 * the call table of docs/protocol.md, runtime changes and disconnects, and
 * the embedding API under 8 concurrent threads.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/harness.h"

#define PKG "org.test.calls"
#define TOOL "aur.mcp.org.test.calls.t0000"

static char *dir, *fixture, *logpath;

static void setup(void) { h_fixture_env(&dir, &fixture, &logpath); }

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

static struct aur_mcp *start_with(const char *era, double timeout,
                                  const char *const *opts)
{
    const char *args[40] = {"--era", era};
    size_t n = 2;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    for (size_t i = 0; opts && opts[i] && n < 39; i++)
        args[n++] = opts[i];
    h_add_logged_app(dir, "a.ini", PKG, timeout, NULL, fixture, NULL,
                     logpath, args);
    ck_assert_msg(h_start(dir, &h, &serr) == AUR_OK, "start: %s",
                  serr.message);
    return h;
}

/* Call TOOL once; returns status, fills content (caller frees). */
static enum aur_call_status call(struct aur_mcp *h, const char *args_json,
                                 char **content)
{
    struct json_object *args = args_json ? json_tokener_parse(args_json) : NULL;
    struct aur_tool_output out = {.struct_size = sizeof out};
    enum aur_call_status s;
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, args, -1, &out), AUR_OK);
    json_object_put(args);
    ck_assert_ptr_nonnull(out.content);
    ck_assert_int_gt(strlen(out.content), 0);
    s = out.status;
    *content = strdup(out.content);
    aur_tool_output_clear(&out);
    return s;
}

struct row {
    const char *era;
    const char *flag;
    const char *value;
    enum aur_call_status status;
    const char *content; /* exact, or a "~substring" */
};

static const struct row rows[] = {
    /* result normalisation */
    {"modern", "--call-result",
     "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
     "\"text\":\"  \"},{\"type\":\"text\",\"text\":\"b\"}]}",
     AUR_CALL_SUCCEEDED, "a\nb"},
    {"modern", "--call-result", "{\"content\":[]}", AUR_CALL_SUCCEEDED,
     "MCP tool completed but returned no text content"},
    /* read without a tree (call_reply.c): escapes, members nobody reads */
    {"modern", "--call-result",
     "{\"_meta\":{\"a\":[1,{}]},\"resultType\":\"complete\",\"isError\":"
     "false,\"content\":[{\"annotations\":{\"priority\":1},\"type\":"
     "\"text\",\"text\":\"q\\\"\\n\\u00e9\\ud83d\\ude00\"}]}",
     AUR_CALL_SUCCEEDED, "q\"\n\xc3\xa9\xf0\x9f\x98\x80"},
    /* the same outcome where the scanner declines (an escaped key) */
    {"modern", "--call-result",
     "{\"content\":[{\"type\":\"text\",\"te\\u0078t\":\"esc\"}]}",
     AUR_CALL_SUCCEEDED, "esc"},
    {"modern", "--call-result",
     "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"structuredContent\":"
     "{\"z\":1,\"a\":\"\xe4\xb8\xad\",\"m\":{\"y\":[1.0,1e2,0.1],\"b\":"
     "123456789012345678901234567890}}}",
     AUR_CALL_SUCCEEDED,
     "{\"a\":\"\xe4\xb8\xad\",\"m\":{\"b\":123456789012345678901234567890,"
     "\"y\":[1.0,100.0,0.1]},\"z\":1}"},
    {"modern", "--call-result",
     "{\"content\":[],\"structuredContent\":[3,\"s\\n\",null,true]}",
     AUR_CALL_SUCCEEDED, "[3,\"s\\n\",null,true]"},
    {"modern", "--call-result",
     "{\"content\":[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":"
     "\"image/png\"},{\"type\":\"audio\",\"data\":\"AA\",\"mimeType\":"
     "\"audio/wav\"},{\"type\":\"text\",\"text\":\"t\"}],"
     "\"structuredContent\":{\"a\":1}}",
     AUR_CALL_UNKNOWN, "~audio, image"},
    {"modern", "--call-result",
     "{\"content\":[{\"type\":\"resource_link\",\"uri\":\"file:///x\","
     "\"name\":\"x\"},{\"type\":\"resource\",\"resource\":{\"uri\":"
     "\"file:///y\",\"text\":\"y\"}}]}",
     AUR_CALL_UNKNOWN, "~resource, resource_link"},
    /* isError without the tool contract: the effect is unknown */
    {"modern", "--call-result",
     "{\"content\":[{\"type\":\"text\",\"text\":\"boom\"}],\"isError\":true}",
     AUR_CALL_UNKNOWN, "boom"},
    {"modern", "--call-result", "{\"content\":[],\"isError\":true}",
     AUR_CALL_UNKNOWN, "MCP server returned isError"},
    {"modern", "--call-result",
     "{\"content\":[],\"isError\":true,\"structuredContent\":{\"b\":2,\"a\":1}}",
     AUR_CALL_UNKNOWN, "{\"a\":1,\"b\":2}"},
    /* outcomes (docs/protocol.md, Calls) */
    {"modern", "--call-result",
     "{\"resultType\":\"input_required\",\"inputRequests\":{}}",
     AUR_CALL_UNKNOWN, "~input_required"},
    {"modern", "--call-result", "{\"resultType\":\"task\",\"content\":[]}",
     AUR_CALL_UNKNOWN, "~not enabled"},
    {"modern", "--call-result", "{\"nocontent\":true}", AUR_CALL_UNKNOWN,
     "~cannot be confirmed"},
    {"modern", "--call-result", "{\"content\":[{\"type\":\"text\"}]}",
     AUR_CALL_UNKNOWN, "~cannot be confirmed"},
    {"modern", "--call-error", "-32602", AUR_CALL_FAILED, "~rejected"},
    {"modern", "--call-error", "-32601", AUR_CALL_FAILED, "~rejected"},
    {"modern", "--call-error", "-32603", AUR_CALL_UNKNOWN, "~-32603"},
    {"modern", "--call-error", "-32000", AUR_CALL_UNKNOWN, "~-32000"},
    {"legacy", "--call-result",
     "{\"content\":[{\"type\":\"text\",\"text\":\"legacy ok\"}]}",
     AUR_CALL_SUCCEEDED, "legacy ok"},
    {"legacy", "--call-result",
     "{\"content\":[{\"type\":\"text\",\"text\":\"no\"}],\"isError\":true}",
     AUR_CALL_UNKNOWN, "no"},
};

START_TEST(result_mapping)
{
    const struct row *r = &rows[_i];
    const char *opts[] = {r->flag, r->value, NULL};
    struct aur_mcp *h = start_with(r->era, 5, opts);
    char *content;
    enum aur_call_status s = call(h, "{\"text\":\"hi\"}", &content);
    ck_assert_msg(s == r->status, "row %d: status %s, content %s", _i,
                  aur_call_status_word(s), content);
    if (r->content[0] == '~')
        ck_assert_msg(strstr(content, r->content + 1), "row %d: %s", _i,
                      content);
    else
        ck_assert_str_eq(content, r->content);
    free(content);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(arguments_reach_the_server_unchanged)
{
    struct aur_mcp *h = start_with("modern", 5, NULL);
    char *content;
    ck_assert_int_eq(call(h, "{\"text\":\"Z\\u00fcrich \\ud83d\\ude00\"}",
                          &content),
                     AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(content, "Z\xc3\xbcrich \xf0\x9f\x98\x80");
    free(content);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(timeout_is_unknown_and_cancelled)
{
    /* The fixture sleeps through the call, then reads our cancel. */
    const char *opts[] = {"--call-delay-ms", "1500", NULL};
    struct aur_mcp *h = start_with("modern", 1, opts);
    char *content;
    ck_assert_int_eq(call(h, NULL, &content), AUR_CALL_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(content, "timed out"));
    free(content);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "notifications/cancelled"), 1);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
}
END_TEST

struct kind_ctx {
    const char *kind;
    int n;
};

static void count_emit(void *ud, const char *line)
{
    struct kind_ctx *c = ud;
    char needle[128];
    snprintf(needle, sizeof needle, "\"kind\":\"%s\"", c->kind);
    if (strstr(line, needle))
        c->n++;
}

/* Commits of this kind in the test's journal. */
static int count_kind(const char *kind)
{
    struct kind_ctx c = {kind, 0};
    struct aur_error err;
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, count_emit, &c, &err),
                     AUR_OK);
    return c.n;
}

START_TEST(exit_during_call_is_unknown_then_failed)
{
    const char *opts[] = {"--exit-during-call", NULL};
    struct aur_mcp *h = start_with("modern", 5, opts);
    char *content;
    ck_assert_int_eq(call(h, NULL, &content), AUR_CALL_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(content, "connection lost"));
    free(content);
    /* the disconnect is processed on the dispatch thread: wait a bit */
    ck_assert(h_wait_restart_required(h, 2000));
    ck_assert_int_eq(call(h, NULL, &content), AUR_CALL_FAILED);
    ck_assert_ptr_nonnull(strstr(content, "not sent"));
    free(content);
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *a, *v;
    json_object_object_get_ex(st, "apps", &apps);
    a = json_object_array_get_idx(apps, 0);
    json_object_object_get_ex(a, "state", &v);
    ck_assert_str_eq(json_object_get_string(v), "unavailable");
    json_object_object_get_ex(a, "last_error", &v);
    ck_assert_ptr_nonnull(v);
    json_object_put(st);
    aur_mcp_destroy(h);
    /* the second call never reached a server */
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    ck_assert_int_eq(count_kind("mcp.app.disconnected"), 1);
}
END_TEST

START_TEST(runtime_list_changed_sets_restart_required)
{
    const char *opts[] = {"--notify-after-call",
                          "notifications/tools/list_changed", "null", NULL};
    struct aur_mcp *h = start_with("modern", 5, opts);
    char *content;
    int lists_before = h_count_lines(logpath, "tools/list");
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(call(h, NULL, &content), AUR_CALL_SUCCEEDED);
        free(content);
    }
    ck_assert(h_wait_restart_required(h, 2000));
    /* the catalog and the App stay as they were: still ready, callable */
    ck_assert_uint_eq(aur_mcp_tool_count(h), 1);
    ck_assert_int_eq(call(h, NULL, &content), AUR_CALL_SUCCEEDED);
    free(content);
    usleep(100000);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/list"), lists_before);
    ck_assert_int_eq(count_kind("mcp.catalog.changed"), 1);
}
END_TEST

START_TEST(unknown_tool_fails_before_sending)
{
    struct aur_mcp *h = start_with("modern", 5, NULL);
    struct aur_tool_output out = {.struct_size = sizeof out};
    ck_assert_int_eq(aur_mcp_call_jsonc(h, "aur.mcp.org.test.calls.nope", NULL, -1,
                                  &out),
                     AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_FAILED);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

START_TEST(default_scopes_returned)
{
    struct aur_mcp *h = start_with("modern", 5, NULL);
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct aur_tool_output again = {.struct_size = sizeof again};
    char *text;
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, -1, &out), AUR_OK);
    text = h_scopes_json(&out);
    ck_assert_str_eq(text, "{\"observe\":[\"aurora:mcp:" PKG "\"],"
                           "\"publish\":[\"aurora:mcp:" PKG "\"]}");
    free(text);
    /* Nothing resolves them per call: every call hands out the registry's
     * own frozen lists, and clearing one output leaves the next intact. */
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, NULL, -1, &again), AUR_OK);
    ck_assert_ptr_eq(again.observe, out.observe);
    ck_assert_ptr_null(out.owned);
    aur_tool_output_clear(&out);
    ck_assert_str_eq(again.publish[0], "aurora:mcp:" PKG);
    aur_tool_output_clear(&again);
    aur_mcp_destroy(h);
}
END_TEST

struct worker_arg {
    struct aur_mcp *h;
    int ok;
};

static void *worker(void *p)
{
    struct worker_arg *w = p;
    for (int i = 0; i < 50; i++) {
        char args[64], expect[64];
        struct aur_tool_output out = {.struct_size = sizeof out};
        struct json_object *a;
        snprintf(args, sizeof args, "{\"text\":\"w%p-%d\"}", p, i);
        snprintf(expect, sizeof expect, "w%p-%d", p, i);
        a = json_tokener_parse(args);
        aur_mcp_call_jsonc(w->h, TOOL, a, -1, &out);
        json_object_put(a);
        if (out.status == AUR_CALL_SUCCEEDED && strcmp(out.content, expect) == 0)
            w->ok++;
        aur_tool_output_clear(&out);
    }
    return NULL;
}

START_TEST(eight_threads_at_once)
{
    const char *opts[] = {"--call-delay-ms", "2", NULL};
    struct aur_mcp *h = start_with("modern", 10, opts);
    pthread_t t[8];
    struct worker_arg w[8];
    for (int i = 0; i < 8; i++) {
        w[i].h = h;
        w[i].ok = 0;
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].ok, 50);
    }
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 400);
}
END_TEST

static void builtin_echo(void *ud, struct json_object *args,
                         struct aur_tool_output *out)
{
    (void)ud;
    out->status = AUR_CALL_SUCCEEDED;
    out->content = strdup(json_object_to_json_string(args ? args : NULL));
}

START_TEST(builtins_join_the_registry)
{
    const char *args[] = {"--log", logpath, "--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct aur_tool_output out = {.struct_size = sizeof out};
    h_add_app(dir, "a.ini", PKG, 5, NULL, fixture, args);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    ck_assert_int_eq(aur_mcp_add_builtin_jsonc(h, "aur.core.echo", "echo", NULL,
                                         builtin_echo, NULL, &err),
                     AUR_OK);
    ck_assert_int_eq(aur_mcp_add_builtin_jsonc(h, "Bad.Id", "x", NULL, builtin_echo,
                                         NULL, &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(aur_mcp_start(h, &serr, &err), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 2);
    ck_assert_str_eq(aur_mcp_tool_at(h, 0)->id, "aur.core.echo");
    ck_assert_int_eq(aur_mcp_call_jsonc(h, "aur.core.echo", NULL, -1, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    /* It set no scopes: its defaults, which are none (resolved, empty). */
    ck_assert_ptr_nonnull(out.observe);
    ck_assert_ptr_nonnull(out.publish);
    ck_assert_uint_eq(out.n_observe + out.n_publish, 0);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("calls");
    TCase *map = tcase_create("mapping");
    TCase *rt = tcase_create("runtime");
    tcase_add_checked_fixture(map, setup, teardown);
    tcase_add_checked_fixture(rt, setup, teardown);
    tcase_set_timeout(map, 60);
    tcase_set_timeout(rt, 60);
    tcase_add_loop_test(map, result_mapping, 0,
                        (int)(sizeof rows / sizeof rows[0]));
    tcase_add_test(map, arguments_reach_the_server_unchanged);
    tcase_add_test(map, unknown_tool_fails_before_sending);
    tcase_add_test(map, default_scopes_returned);
    tcase_add_test(rt, timeout_is_unknown_and_cancelled);
    tcase_add_test(rt, exit_during_call_is_unknown_then_failed);
    tcase_add_test(rt, runtime_list_changed_sets_restart_required);
    tcase_add_test(rt, eight_threads_at_once);
    tcase_add_test(rt, builtins_join_the_registry);
    suite_add_tcase(s, map);
    suite_add_tcase(s, rt);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
