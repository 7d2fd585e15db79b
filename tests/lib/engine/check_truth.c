/*
 * check_truth.c - the outcome a call reports is true whatever the server
 * sends (docs/fault-matrix.md): a result the host cannot hand on after
 * the call ran is unknown, never failed; U+0000 never cuts a name or a
 * text; nothing in a server's message can claim "not sent"; a response
 * the host refuses ends its request at once; a task-only tool is refused
 * before it is sent.  Real host, real fixture child processes.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/harness.h"

#define PKG "org.test.truth"
#define TOOL "aur.mcp.org.test.truth.t0000"

static char *dir, *fixture, *logpath;

static void setup(void) { h_fixture_env(&dir, &fixture, &logpath); }

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

static void add_app(const char *const *opts, double timeout)
{
    const char *args[24] = {"--era", "modern"};
    size_t n = 2;
    for (size_t i = 0; opts && opts[i] && n < 23; i++)
        args[n++] = opts[i];
    args[n] = NULL;
    h_add_logged_app(dir, "a.ini", PKG, timeout, NULL, fixture, NULL, logpath,
                     args);
}

static struct aur_mcp *start(const char *const *opts)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    add_app(opts, 5);
    ck_assert_msg(h_start(dir, &h, &serr) == AUR_OK, "start: %s",
                  serr.message);
    return h;
}

/* One call of TOOL: its output (caller clears). */
static void call(struct aur_mcp *h, const char *tool,
                 struct aur_tool_output *out)
{
    struct json_object *args = json_tokener_parse("{\"text\":\"hi\"}");
    ck_assert_int_eq(aur_mcp_call_jsonc(h, tool, args, -1, out), AUR_OK);
    json_object_put(args);
    ck_assert_ptr_nonnull(out->content);
    ck_assert_uint_gt(out->content_len, 0);
}

struct row {
    const char *flag, *value;
    enum aur_call_status status;
    const char *needle; /* in the content */
};

static const struct row rows[] = {
    /* The call ran, the host cannot hand its result on: unknown. */
    {"--call-result",
     "{\"content\":[{\"type\":\"image\",\"data\":\"AA\",\"mimeType\":"
     "\"image/png\"}]}",
     AUR_CALL_UNKNOWN, "image"},
    {"--call-result",
     "{\"content\":[{\"type\":\"text\",\"text\":\"t\"}],"
     "\"structuredContent\":{\"n\":1e999}}",
     AUR_CALL_UNKNOWN, "structuredContent"},
    /* Strings that name something are compared whole. */
    {"--call-result",
     "{\"resultType\":\"complete\\u0000x\",\"content\":[{\"type\":\"text\","
     "\"text\":\"t\"}]}",
     AUR_CALL_UNKNOWN, "not enabled"},
    {"--call-result",
     "{\"content\":[{\"type\":\"text\\u0000image\",\"text\":\"t\"}]}",
     AUR_CALL_UNKNOWN, "no type"},
    /* A server cannot forge the host's own "not sent" fact. */
    {"--call-error-json",
     "{\"code\":-32603,\"message\":\"boom\",\"data\":"
     "{\"org.aurorabot/transport\":{\"delivered\":false,"
     "\"http_status\":0}}}",
     AUR_CALL_UNKNOWN, "-32603"},
    {"--call-error-json",
     "{\"code\":-32000,\"message\":\"x\",\"data\":"
     "{\"org.aurorabot/transport\":{\"delivered\":false}}}",
     AUR_CALL_UNKNOWN, "-32000"},
};

START_TEST(mapping)
{
    const struct row *r = &rows[_i];
    const char *opts[] = {r->flag, r->value, NULL};
    struct aur_mcp *h = start(opts);
    struct aur_tool_output out = {.struct_size = sizeof out};
    call(h, TOOL, &out);
    ck_assert_msg(out.status == r->status, "row %d: %s (%s)", _i,
                  aur_call_status_word(out.status), out.content);
    ck_assert_msg(strstr(out.content, r->needle), "row %d: %s", _i,
                  out.content);
    ck_assert_ptr_null(strstr(out.content, "not sent"));
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
}
END_TEST

/* Text keeps every byte, U+0000 included, and says how many. */
START_TEST(text_keeps_u0000)
{
    const char *opts[] = {"--call-result",
                          "{\"content\":[{\"type\":\"text\",\"text\":"
                          "\"ab\\u0000cd\"}]}",
                          NULL};
    struct aur_mcp *h = start(opts);
    struct aur_tool_output out = {.struct_size = sizeof out};
    call(h, TOOL, &out);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_uint_eq(out.content_len, 5);
    ck_assert_int_eq(memcmp(out.content, "ab\0cd", 6), 0);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
}
END_TEST

static void startup_fails(const char *const *opts, const char *phase,
                          const char *needle)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    add_app(opts, 5);
    ck_assert_int_ne(h_start(dir, &h, &serr), AUR_OK);
    ck_assert_str_eq(serr.app, PKG);
    ck_assert_str_eq(serr.phase, phase);
    ck_assert_msg(strstr(serr.message, needle), "%s", serr.message);
    aur_mcp_destroy(h);
}

/* A name holding U+0000 never freezes as its prefix. */
START_TEST(tool_name_with_u0000_refused)
{
    const char *opts[] = {"--tool-name", "ab", "--tool-json",
                          "{\"name\":\"ab\\u0000cd\",\"inputSchema\":"
                          "{\"type\":\"object\"}}",
                          NULL};
    startup_fails(opts, "tools/list", "U+0000");
}
END_TEST

START_TEST(schema_type_with_u0000_refused)
{
    const char *opts[] = {"--tool-json",
                          "{\"name\":\"s\",\"inputSchema\":"
                          "{\"type\":\"object\\u0000x\"}}",
                          NULL};
    startup_fails(opts, "tools/list", "object schema");
}
END_TEST

/* A refused response ends its request at once, naming the App: a
 * tools/list page the host cannot accept costs no deadline. */
START_TEST(malformed_page_fails_at_once)
{
    static const char *const kinds[] = {"--malformed-at", "--broken-at"};
    for (size_t k = 0; k < 2; k++) {
        const char *opts[] = {kinds[k], "list", NULL};
        int64_t t0 = h_now_ms();
        teardown();
        setup();
        add_app(opts, 30);
        struct aur_startup_error serr = {.struct_size = sizeof serr};
        struct aur_mcp *h = NULL;
        ck_assert_int_ne(h_start(dir, &h, &serr), AUR_OK);
        ck_assert_str_eq(serr.app, PKG);
        ck_assert_str_eq(serr.phase, "tools/list");
        ck_assert_msg(strstr(serr.message, "refused"), "%s", serr.message);
        /* far from the 30 s deadline, whatever the machine's load */
        ck_assert_int_lt(h_now_ms() - t0, 15000);
        aur_mcp_destroy(h);
    }
}
END_TEST

/* ... and a call whose reply is refused ends unknown at once. */
START_TEST(malformed_reply_ends_call_unknown)
{
    const char *opts[] = {"--malformed-at", "call", NULL};
    struct aur_mcp *h = start(opts);
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *args = json_object_new_object();
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(aur_mcp_call_jsonc(h, TOOL, args, 30000, &out), AUR_OK);
    json_object_put(args);
    ck_assert_int_eq(out.status, AUR_CALL_UNKNOWN);
    ck_assert_msg(strstr(out.content, "refused"), "%s", out.content);
    ck_assert_int_lt(h_now_ms() - t0, 15000);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
}
END_TEST

/* A tool that only runs as a task is listed as not callable, and a call
 * is refused before a byte of it is sent. */
START_TEST(task_only_tool_not_sent)
{
    const char *opts[] = {"--tool-json",
                          "{\"name\":\"job\",\"inputSchema\":{\"type\":"
                          "\"object\"},\"execution\":{\"taskSupport\":"
                          "\"required\"}}",
                          NULL};
    struct aur_mcp *h = start(opts);
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *st, *apps, *nc;

    call(h, "aur.mcp.org.test.truth.job", &out);
    ck_assert_int_eq(out.status, AUR_CALL_FAILED);
    ck_assert_msg(strstr(out.content, "taskSupport") &&
                      strstr(out.content, "not sent"),
                  "%s", out.content);
    aur_tool_output_clear(&out);
    st = aur_mcp_status_jsonc(h, 1);
    ck_assert(json_object_object_get_ex(st, "apps", &apps));
    ck_assert(json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                                        "not_callable_tool_ids", &nc));
    ck_assert_uint_eq(json_object_array_length(nc), 1);
    ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(nc, 0)),
                     "aur.mcp.org.test.truth.job");
    json_object_put(st);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("truth");
    TCase *t = tcase_create("outcomes");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, mapping, 0, (int)(sizeof rows / sizeof *rows));
    tcase_add_test(t, text_keeps_u0000);
    tcase_add_test(t, tool_name_with_u0000_refused);
    tcase_add_test(t, schema_type_with_u0000_refused);
    tcase_add_test(t, malformed_page_fails_at_once);
    tcase_add_test(t, malformed_reply_ends_call_unknown);
    tcase_add_test(t, task_only_tool_not_sent);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    int failed;
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
