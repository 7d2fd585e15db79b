/*
 * check_api_text.c - the embedding API's JSON-as-text surface
 * (lib/engine/api_text.c, lib/engine/builtin.c) through the shared
 * library, as a binding from another language uses it: by exported
 * symbol, text in with an explicit length, text out freed with aur_free.
 *
 * aur_host.h is included first, so aur_rc_word and aur_strerror here are
 * the library's exported functions, not aur_plugin.h's inline copies.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>

#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/harness.h"

#define PKG "org.test.text"
#define TOOL "aur.mcp.org.test.text.t0000"

static char *dir, *fixture, *logpath;

static void setup(void) { h_fixture_env(&dir, &fixture, &logpath); }

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

static struct aur_mcp *host_with(const char *ntools, bool create_only)
{
    return h_fixture_host(dir, fixture, logpath, PKG, ntools, create_only);
}

static struct json_object *parse_text(const char *s, size_t n)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = json_tokener_parse_ex(tok, s, (int)n);
    ck_assert_msg(o && json_tokener_get_parse_end(tok) == n,
                  "not one JSON value: %.*s", (int)n, s);
    json_tokener_free(tok);
    return o;
}

START_TEST(version_and_error_words_are_exported)
{
    ck_assert_str_eq(aur_version(), AUR_VERSION_STRING);
    ck_assert_str_eq(aur_rc_word(AUR_E_TIMEOUT), "timeout");
    ck_assert_str_eq(aur_strerror(AUR_E_TIMEOUT), "deadline expired");
    ck_assert_str_eq(aur_rc_word(AUR_E_NOT_SENT), "not_sent");
    ck_assert_str_eq(aur_rc_word(-999), "unknown_error");
    ck_assert_str_eq(aur_strerror(-999), "unknown error");
    /* Every code has its own word. */
#define WORD_OF(e, v, w, d) ck_assert_str_eq(aur_rc_word(e), w);
    AUR_RC_MAP(WORD_OF)
#undef WORD_OF
    aur_free(NULL);
}
END_TEST

START_TEST(call_takes_text_with_its_length)
{
    struct aur_mcp *h = host_with(NULL, false);
    struct aur_tool_output out = {.struct_size = sizeof out};
    /* The length is honoured: what follows it is not read. */
    const char buf[] = "{\"text\":\"Z\\u00fcrich\"}GARBAGE";

    ck_assert_int_eq(aur_mcp_call(h, TOOL, buf, sizeof buf - 1 - 7, -1,
                                  &out),
                     AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(out.content, "Z\xc3\xbcrich");
    ck_assert_uint_eq(out.content_len, strlen("Z\xc3\xbcrich"));
    aur_tool_output_clear(&out);
    ck_assert_int_eq(aur_mcp_call(h, TOOL, NULL, 0, -1, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 2);
}
END_TEST

/* Unusable arguments fail before anything is sent. */
static const char *const bad_args[] = {
    "{\"text\":",          /* truncated */
    "[1]",                 /* not an object */
    "{\"a\":1} {\"b\":2}", /* two values */
    "{\"a\":\"\xff\"}",    /* invalid UTF-8 */
    "",                    /* nothing */
};

START_TEST(bad_arguments_fail_unsent)
{
    struct aur_mcp *h = host_with(NULL, false);
    struct aur_tool_output out = {.struct_size = sizeof out};
    const char *a = bad_args[_i];

    ck_assert_int_eq(aur_mcp_call(h, TOOL, a, strlen(a), -1, &out),
                     AUR_E_INVAL);
    ck_assert_int_eq(out.status, AUR_CALL_FAILED);
    ck_assert_ptr_nonnull(out.content);
    ck_assert_uint_eq(out.content_len, strlen(out.content));
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

/* Every object of v has its keys in strictly increasing byte order (as
 * they were written: json-c keeps a parsed object's key order). */
static void assert_sorted(struct json_object *v)
{
    const char *prev = NULL;
    size_t n;

    if (json_object_is_type(v, json_type_array)) {
        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++)
            assert_sorted(json_object_array_get_idx(v, i));
        return;
    }
    if (!json_object_is_type(v, json_type_object))
        return;
    json_object_object_foreach(v, k, val) {
        ck_assert_msg(!prev || strcmp(prev, k) < 0, "key %s after %s", k,
                      prev);
        prev = k;
        assert_sorted(val);
    }
}

static struct json_object *member(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;
    ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s", k);
    return v;
}

/* The status text is written straight from the frozen registry (no
 * tree of its own): it must be canonical, say exactly what the registry
 * holds, and be what the tree form and aur_mcp_tool_json say too. */
START_TEST(status_text_is_canonical_and_the_registry)
{
    struct aur_mcp *h = host_with("3", false);
    struct json_object *o, *tree, *apps, *tools, *e, *one;
    char *json = NULL;
    const char *tj;
    size_t n = 0, tn;

    ck_assert_int_eq(aur_mcp_status(h, 1, &json, &n, NULL), AUR_OK);
    ck_assert_uint_eq(n, strlen(json));
    o = parse_text(json, n);
    assert_sorted(o);
    ck_assert_str_eq(json_object_to_json_string_ext(
                         o, JSON_C_TO_STRING_PLAIN |
                                JSON_C_TO_STRING_NOSLASHESCAPE),
                     json);
    tree = aur_mcp_status_jsonc(h, 1);
    ck_assert(json_object_equal(o, tree));
    apps = member(o, "apps");
    ck_assert_str_eq(h_str(json_object_array_get_idx(apps, 0), "package"),
                     PKG);
    tools = member(o, "tools");
    ck_assert_uint_eq(json_object_array_length(tools), aur_mcp_tool_count(h));
    ck_assert_uint_eq(aur_mcp_tool_count(h), 3);
    for (size_t i = 0; i < aur_mcp_tool_count(h); i++) {
        const struct aur_tool_info *t = aur_mcp_tool_at(h, i);
        e = json_object_array_get_idx(tools, i);
        ck_assert_str_eq(h_str(e, "id"), t->id);
        ck_assert_str_eq(h_str(e, "app"), PKG);
        ck_assert_str_eq(h_str(e, "raw_name"), t->raw_name);
        ck_assert_str_eq(h_str(e, "description"), t->description);
        ck_assert(json_object_get_boolean(member(e, "callable")));
        ck_assert(json_object_equal(member(e, "input_schema"),
                                    t->input_schema));
        ck_assert(json_object_equal(member(e, "observe"),
                                    member(t->scopes, "observe")));
        ck_assert(json_object_equal(member(e, "publish"),
                                    member(t->scopes, "publish")));
        /* The tool's own text is the same entry without "callable". */
        tj = aur_mcp_tool_json(h, i, &tn);
        one = parse_text(tj, tn);
        assert_sorted(one);
        json_object_object_del(e, "callable");
        ck_assert_msg(json_object_equal(one, e), "%s", tj);
        json_object_put(one);
    }
    json_object_put(o);
    json_object_put(tree);
    aur_free(json);
    ck_assert_int_eq(aur_mcp_status(h, 0, NULL, &n, NULL), AUR_E_INVAL);
    aur_mcp_destroy(h);
}
END_TEST

struct reader {
    struct aur_mcp *h;
    const char **seen; /* what this thread got for each tool */
};

static void *read_all(void *arg)
{
    struct reader *r = arg;
    size_t n = aur_mcp_tool_count(r->h), len;

    for (size_t i = 0; i < n; i++)
        r->seen[i] = aur_mcp_tool_json(r->h, i, &len);
    return NULL;
}

START_TEST(tool_json_once_for_all_threads)
{
    struct aur_mcp *h = host_with("40", false);
    size_t n = aur_mcp_tool_count(h), len;
    pthread_t th[8];
    struct reader r[8];

    ck_assert_uint_eq(n, 40);
    for (int k = 0; k < 8; k++) {
        r[k].h = h;
        r[k].seen = calloc(n, sizeof *r[k].seen);
        ck_assert_int_eq(pthread_create(&th[k], NULL, read_all, &r[k]), 0);
    }
    for (int k = 0; k < 8; k++)
        pthread_join(th[k], NULL);
    for (size_t i = 0; i < n; i++) {
        const char *s = aur_mcp_tool_json(h, i, &len);
        struct json_object *o = parse_text(s, len), *schema, *obs;

        for (int k = 0; k < 8; k++) /* one text, kept: the same pointer */
            ck_assert_ptr_eq(r[k].seen[i], s);
        ck_assert_str_eq(h_str(o, "id"), aur_mcp_tool_at(h, i)->id);
        ck_assert_str_eq(h_str(o, "app"), PKG);
        ck_assert(json_object_object_get_ex(o, "input_schema", &schema));
        ck_assert(json_object_is_type(schema, json_type_object));
        ck_assert(json_object_object_get_ex(o, "observe", &obs));
        ck_assert(json_object_is_type(obs, json_type_array));
        json_object_put(o);
    }
    ck_assert_ptr_null(aur_mcp_tool_json(h, n, &len));
    for (int k = 0; k < 8; k++)
        free(r[k].seen);
    aur_mcp_destroy(h);
}
END_TEST

/* Builtins on text.  ud selects the behaviour. */
enum { B_ECHO, B_NUL, B_SILENT, B_BAD_STATUS };

static void builtin(void *ud, const char *args, size_t len,
                    struct aur_builtin_reply *reply)
{
    switch ((int)(intptr_t)ud) {
    case B_ECHO: /* the arguments as they arrived */
        ck_assert_int_eq(aur_builtin_reply_set(reply, AUR_CALL_SUCCEEDED,
                                               args, len),
                         AUR_OK);
        break;
    case B_NUL:
        ck_assert_int_eq(aur_builtin_reply_set(reply, AUR_CALL_FAILED,
                                               "first", 5),
                         AUR_OK);
        ck_assert_int_eq(aur_builtin_reply_set(reply, AUR_CALL_SUCCEEDED,
                                               "a\0b", 3),
                         AUR_OK); /* the second answer replaces the first */
        break;
    case B_BAD_STATUS:
        ck_assert_int_eq(aur_builtin_reply_set(reply,
                                               (enum aur_call_status)7, "x",
                                               1),
                         AUR_E_INVAL);
        ck_assert_int_eq(aur_builtin_reply_set(reply, AUR_CALL_SUCCEEDED,
                                               NULL, 1),
                         AUR_E_INVAL);
        break;
    default: /* B_SILENT: returns without an answer */
        break;
    }
}

static void add(struct aur_mcp *h, const char *id, int how)
{
    struct aur_error err;
    ck_assert_int_eq(aur_mcp_add_builtin(h, id, id, NULL, 0, builtin,
                                         (void *)(intptr_t)how, &err),
                     AUR_OK);
}

START_TEST(text_builtins)
{
    struct aur_mcp *h = host_with(NULL, true);
    const char schema[] = "{\"type\":\"object\",\"required\":[\"a\"]}";
    const char args[] = "{\"b\":[1,2],\"a\":123456789012345678901234567890}";
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct json_object *o, *s;
    size_t len;

    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.echo", "echoes",
                                         schema, strlen(schema), builtin,
                                         (void *)(intptr_t)B_ECHO, &err),
                     AUR_OK);
    add(h, "aur.core.nul", B_NUL);
    add(h, "aur.core.silent", B_SILENT);
    add(h, "aur.core.bad", B_BAD_STATUS);
    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.x", "x", "{\"a\":", 5,
                                         builtin, NULL, &err),
                     AUR_E_PROTOCOL);
    ck_assert_msg(strstr(err.msg, "aur.core.x") && strstr(err.msg, "schema"),
                  "%s", err.msg);
    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.x", "x", "[]", 2,
                                         builtin, NULL, &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.x", "x", NULL, 0, NULL,
                                         NULL, NULL),
                     AUR_E_INVAL);
    /* The MCP tools' namespace is not a builtin's. */
    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.mcp.org.x.y", "x", NULL, 0,
                                         builtin, NULL, &err),
                     AUR_E_INVAL);
    ck_assert_msg(strstr(err.msg, "aur.mcp.org.x.y") &&
                  strstr(err.msg, "namespace"), "%s", err.msg);
    /* A description that is not UTF-8 could never be written as JSON:
     * refused here, naming the tool, not later by every status call. */
    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.x", "caf\xe9", NULL, 0,
                                         builtin, NULL, &err),
                     AUR_E_INVAL);
    ck_assert_msg(strstr(err.msg, "aur.core.x") &&
                  strstr(err.msg, "UTF-8"), "%s", err.msg);
    ck_assert_int_eq(aur_mcp_start(h, &serr, &err), AUR_OK);
    {
        char *json = NULL;
        size_t n = 0;
        ck_assert_int_eq(aur_mcp_status(h, 1, &json, &n, NULL), AUR_OK);
        aur_free(json);
    }
    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.late", "x", NULL, 0,
                                         builtin, NULL, &err),
                     AUR_E_STATE);

    /* The arguments arrive as canonical text, big integers exact. */
    ck_assert_int_eq(aur_mcp_call(h, "aur.core.echo", args, strlen(args), -1,
                                  &out),
                     AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_str_eq(out.content,
                     "{\"a\":123456789012345678901234567890,\"b\":[1,2]}");
    aur_tool_output_clear(&out);

    ck_assert_int_eq(aur_mcp_call(h, "aur.core.nul", NULL, 0, -1, &out),
                     AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    ck_assert_uint_eq(out.content_len, 3);
    ck_assert_mem_eq(out.content, "a\0b", 4);
    aur_tool_output_clear(&out);

    /* It ran and said nothing: unknown, never failed. */
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(aur_mcp_call(h, k ? "aur.core.bad"
                                           : "aur.core.silent",
                                      NULL, 0, -1, &out),
                         AUR_OK);
        ck_assert_int_eq(out.status, AUR_CALL_UNKNOWN);
        ck_assert_ptr_nonnull(strstr(out.content, "no answer"));
        aur_tool_output_clear(&out);
    }

    /* Its tool document: the schema given, the description. */
    for (size_t i = 0; i < aur_mcp_tool_count(h); i++) {
        if (strcmp(aur_mcp_tool_at(h, i)->id, "aur.core.echo") != 0)
            continue;
        const char *text = aur_mcp_tool_json(h, i, &len);
        struct json_object *want = json_tokener_parse(schema);

        o = parse_text(text, len);
        ck_assert_str_eq(h_str(o, "description"), "echoes");
        ck_assert_str_eq(h_str(o, "app"), "");
        ck_assert(json_object_object_get_ex(o, "input_schema", &s));
        ck_assert(json_object_equal(s, want));
        json_object_put(want);
        json_object_put(o);
    }
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(checks_and_plugin_info_as_text)
{
    struct aur_mcp *h = host_with(NULL, true);
    char *plugin = h_bin("plugins/transport-stdio.so"), *json = NULL;
    struct json_object *o;
    struct aur_error err;
    size_t n = 0;

    ck_assert_int_eq(aur_mcp_app_checks(h, "org.nope", &json, &n, &err),
                     AUR_E_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "org.nope"));
    ck_assert_int_eq(aur_mcp_app_checks(h, PKG, &json, &n, &err), AUR_OK);
    o = parse_text(json, n);
    ck_assert(json_object_is_type(o, json_type_array));
    ck_assert_int_gt((int)json_object_array_length(o), 0);
    json_object_put(o);
    aur_free(json);

    ck_assert_int_eq(aur_plugin_info(plugin, &json, &n, &err), AUR_OK);
    o = parse_text(json, n);
    ck_assert_str_eq(h_str(o, "name"), "transport-stdio");
    json_object_put(o);
    aur_free(json);
    json = NULL;
    ck_assert_int_ne(aur_plugin_info("/nonexistent/x.so", &json, &n, &err),
                     AUR_OK);
    ck_assert_ptr_null(json);
    ck_assert(err.msg[0] != '\0');
    ck_assert_int_ne(aur_plugin_info("/nonexistent/x.so", &json, &n, NULL),
                     AUR_OK); /* err may be NULL */
    free(plugin);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(startup_errors_are_enums)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    const char *dies[] = {"--era", "modern", "--exit-at", "initialize",
                          "--exit-at", "discover", NULL};
    char *bad = h_mkconfig("no_such_key = 1", NULL);
    struct aur_mcp *h = NULL;

    ck_assert_str_eq(aur_phase_word(AUR_PHASE_LISTEN), "catalog/listen");
    ck_assert_str_eq(aur_phase_word(99), "");
    ck_assert_int_eq(aur_mcp_create(bad, NULL, &h, &serr, NULL),
                     AUR_E_CONFIG);
    ck_assert_int_eq(serr.rc, AUR_E_CONFIG);
    ck_assert_int_eq(serr.phase_id, AUR_PHASE_CONFIG);
    ck_assert_str_eq(serr.code, aur_rc_word(AUR_E_CONFIG));
    ck_assert_uint_eq(serr.struct_size, sizeof serr); /* kept */
    h_rmtree(bad);
    free(bad);

    h_add_logged_app(dir, "a.ini", PKG, 5, NULL, fixture, NULL, logpath,
                     dies);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, NULL), AUR_OK);
    ck_assert_int_ne(aur_mcp_start(h, &serr, NULL), AUR_OK);
    ck_assert_int_eq(serr.rc, AUR_E_STARTUP);
    ck_assert_str_eq(serr.code, "startup_failed");
    ck_assert_int_eq(serr.phase_id, AUR_PHASE_CONNECT);
    ck_assert_str_eq(serr.app, PKG);
    aur_mcp_destroy(h);

    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, NULL), AUR_OK);
    aur_mcp_cancel(h);
    ck_assert_int_ne(aur_mcp_start(h, &serr, NULL), AUR_OK);
    ck_assert_int_eq(serr.rc, AUR_E_INTERRUPTED);
    ck_assert_str_eq(serr.code, "interrupted");
    aur_mcp_destroy(h);
}
END_TEST

static void no_line(void *ud, const char *line)
{
    (void)ud;
    (void)line;
}

START_TEST(err_may_be_null)
{
    struct aur_mcp *h = NULL;
    char *bad = h_mkconfig("no_such_key = 1", NULL);
    const char *opts[] = {"--era", "modern", NULL};

    /* A config error, told through nothing: a code, no crash. */
    ck_assert_int_eq(aur_mcp_create(bad, NULL, &h, NULL, NULL), AUR_E_CONFIG);
    ck_assert_ptr_null(h);
    ck_assert_int_ne(aur_journal_dump("/nonexistent", 0, NULL, no_line, NULL,
                                      NULL),
                     AUR_OK);
    h_rmtree(bad);
    free(bad);
    h_add_logged_app(dir, "a.ini", PKG, 5, NULL, fixture, NULL, logpath,
                     opts);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, NULL, NULL), AUR_OK);
    ck_assert_int_eq(aur_mcp_start(h, NULL, NULL), AUR_OK);
    ck_assert_int_eq(aur_mcp_start(h, NULL, NULL), AUR_E_STATE);
    ck_assert_int_eq(aur_mcp_skip_app(h, PKG, 1, NULL), AUR_E_STATE);
    aur_mcp_destroy(h);
}
END_TEST

/* What one host's sink got: its lines, one per entry. */
struct sink {
    pthread_mutex_t mu;
    char text[65536];
    size_t n, lines;
    int max_level;
};

static void to_sink(void *ud, int level, const char *line, size_t len)
{
    struct sink *k = ud;

    ck_assert_uint_eq(strlen(line), len); /* one line, NUL-terminated */
    ck_assert_ptr_null(memchr(line, '\n', len));
    pthread_mutex_lock(&k->mu);
    if (k->n + len + 2 < sizeof k->text) {
        memcpy(k->text + k->n, line, len);
        k->n += len;
        k->text[k->n++] = '\n';
        k->text[k->n] = '\0';
    }
    k->lines++;
    if (level > k->max_level)
        k->max_level = level;
    pthread_mutex_unlock(&k->mu);
}

/* Two hosts in one process: each log goes to its own sink at its own
 * level, and neither re-targets the other. */
START_TEST(two_hosts_two_logs)
{
    char *dir_b = h_mkconfig(NULL, NULL);
    const char *a_args[] = {"--era", "modern", NULL};
    const char *b_args[] = {"--era", "legacy", NULL};
    struct sink a = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0, -1};
    struct sink b = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0, -1};
    struct aur_mcp *ha = NULL, *hb = NULL;

    h_add_logged_app(dir, "a.ini", "org.test.a", 5, NULL, fixture, NULL,
                     logpath, a_args);
    h_add_logged_app(dir_b, "b.ini", "org.test.b", 5, NULL, fixture, NULL,
                     logpath, b_args);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &ha, NULL, NULL), AUR_OK);
    ck_assert_int_eq(aur_mcp_create(dir_b, NULL, &hb, NULL, NULL), AUR_OK);
    aur_mcp_set_log(ha, to_sink, &a);
    aur_mcp_set_log(hb, to_sink, &b);
    aur_mcp_log_verbosity(ha, 2); /* warn -> debug, for A alone */
    ck_assert_int_eq(aur_mcp_start(ha, NULL, NULL), AUR_OK);
    ck_assert_int_eq(aur_mcp_start(hb, NULL, NULL), AUR_OK);
    aur_mcp_destroy(ha);
    aur_mcp_destroy(hb);
    /* A at debug heard its start; B, still at warn, nothing at all. */
    ck_assert_msg(strstr(a.text, "INFO app org.test.a: ready with 1 tools"),
                  "A's sink: %s", a.text);
    ck_assert_int_eq(a.max_level, AUR_LOG_DEBUG);
    ck_assert_ptr_null(strstr(a.text, "org.test.b"));
    ck_assert_msg(b.lines == 0, "B's sink: %s", b.text);
    h_rmtree(dir_b);
    free(dir_b);
}
END_TEST

/* The library leaves SIGPIPE to the program: an embedder that keeps the
 * default must neither see it changed nor be killed by it when the log's
 * stderr is a pipe nobody reads. */
START_TEST(sigpipe_is_the_programs)
{
    const char *args[] = {"--era", "modern", "--exit-at", "initialize",
                          "--exit-at", "discover", NULL};
    int p[2], status;
    pid_t pid;

    h_add_logged_app(dir, "a.ini", PKG, 5, NULL, fixture, NULL, logpath,
                     args);
    pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        struct aur_mcp *h = NULL;
        struct sigaction sa;

        signal(SIGPIPE, SIG_DFL);
        if (pipe(p) != 0 || dup2(p[1], 2) < 0)
            _exit(10);
        close(p[0]); /* nobody reads our stderr now */
        close(p[1]);
        if (aur_mcp_create(dir, NULL, &h, NULL, NULL) != AUR_OK)
            _exit(11);
        /* The App dies at once: start fails and logs it (an EPIPE). */
        if (aur_mcp_start(h, NULL, NULL) == AUR_OK)
            _exit(12);
        aur_mcp_destroy(h);
        if (sigaction(SIGPIPE, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL)
            _exit(13);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child: %s %d", WIFSIGNALED(status) ? "signal" : "exit",
                  WIFSIGNALED(status) ? WTERMSIG(status)
                                      : WEXITSTATUS(status));
}
END_TEST

/* aur_mcp_status_write: the same text as aur_mcp_status, written in
 * pieces (600 tools are some 190 KB: several of its 64 KiB flushes); a
 * reader that went away is AUR_E_IO with EPIPE, and SIGPIPE (left at its
 * default, which would kill) is not raised.  And the schema trees that
 * aur_tool_info promises, made on first use, equal the text. */
START_TEST(status_write_streams_the_same_text)
{
    struct aur_mcp *h = host_with("600", false);
    struct aur_error err;
    char *json = NULL, *got;
    size_t n = 0;
    FILE *f = tmpfile();
    int p[2];

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(aur_mcp_status(h, 1, &json, &n, NULL), AUR_OK);
    ck_assert_uint_gt(n, 2 * 65536);
    ck_assert_int_eq(aur_mcp_status_write(h, 1, fileno(f), &err), AUR_OK);
    ck_assert_int_eq((int)lseek(fileno(f), 0, SEEK_END), (int)n);
    got = malloc(n + 1);
    ck_assert_int_eq((int)pread(fileno(f), got, n, 0), (int)n);
    ck_assert(memcmp(got, json, n) == 0);
    free(got);
    fclose(f);

    signal(SIGPIPE, SIG_DFL);
    ck_assert_int_eq(pipe(p), 0);
    close(p[0]);
    ck_assert_int_eq(aur_mcp_status_write(h, 1, p[1], &err), AUR_E_IO);
    ck_assert_int_eq(err.detail, EPIPE);
    ck_assert_msg(strstr(err.msg, "cannot write the status"), "%s", err.msg);
    close(p[1]);
    ck_assert_int_eq(aur_mcp_status_write(h, 1, -1, &err), AUR_E_INVAL);

    /* The trees: made when asked, equal to the text's, the same each
     * time. */
    struct json_object *o = parse_text(json, n), *tools;
    ck_assert(json_object_object_get_ex(o, "tools", &tools));
    for (size_t i = 0; i < aur_mcp_tool_count(h); i++) {
        const struct aur_tool_info *t = aur_mcp_tool_at(h, i);
        struct json_object *e = json_object_array_get_idx(tools, i), *sch;
        ck_assert(json_object_object_get_ex(e, "input_schema", &sch));
        ck_assert_ptr_nonnull(t->input_schema);
        ck_assert(json_object_equal(sch, t->input_schema));
        ck_assert_ptr_eq(aur_mcp_tool_at(h, i)->input_schema,
                         t->input_schema);
    }
    json_object_put(o);
    aur_free(json);
    aur_mcp_destroy(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("api_text");
    TCase *t = tcase_create("text");

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, version_and_error_words_are_exported);
    tcase_add_test(t, call_takes_text_with_its_length);
    tcase_add_loop_test(t, bad_arguments_fail_unsent, 0,
                        (int)(sizeof bad_args / sizeof bad_args[0]));
    tcase_add_test(t, status_text_is_canonical_and_the_registry);
    tcase_add_test(t, tool_json_once_for_all_threads);
    tcase_add_test(t, status_write_streams_the_same_text);
    tcase_add_test(t, text_builtins);
    tcase_add_test(t, checks_and_plugin_info_as_text);
    tcase_add_test(t, err_may_be_null);
    tcase_add_test(t, startup_errors_are_enums);
    tcase_add_test(t, sigpipe_is_the_programs);
    tcase_add_test(t, two_hosts_two_logs);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
