/*
 * check_call_reply.c - the tools/call reply scanner (lib/engine/
 * call_reply.c): which replies it reads without a tree, what text it
 * makes of them, and that everything else is left to the general path.
 * check_calls runs the same shapes end to end through a real App;
 * fuzz/fuzz_call_reply.c compares the scanner with the general path.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "call_reply.h"
#include "rpc.h"
#include "jsonx.h"

#define OK(r) "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":" r "}"
#define TEXT(t) "{\"type\":\"text\",\"text\":\"" t "\"}"

struct row {
    const char *in;
    const char *text; /* NULL: declined */
    int64_t id;
};

static const struct row rows[] = {
    /* read without a tree */
    {OK("{\"content\":[" TEXT("hi") "]}"), "hi", 7},
    {"{\"id\":0,\"result\":{\"content\":[" TEXT("a") "]},\"jsonrpc\":\"2.0\"}",
     "a", 0},
    {" {\"jsonrpc\" : \"2.0\" ,\r\n\t\"id\":123456789012345678,\"result\":"
     "{ \"content\" : [ " TEXT("x") " ] } } \n",
     "x", 123456789012345678},
    {OK("{\"content\":[" TEXT("a") "," TEXT("  ") "," TEXT("b") "]}"), "a\nb",
     7},
    {OK("{\"content\":[" TEXT(" \\t") "]}"), "", 7},
    {OK("{\"content\":[]}"), "", 7},
    {OK("{\"content\":[" TEXT("q\\\"\\\\\\/\\b\\f\\n\\r\\t") "]}"),
     "q\"\\/\b\f\n\r\t", 7},
    {OK("{\"content\":[" TEXT("\\u00e9\\u4e2d\\ud83d\\ude00 \xc3\xa9") "]}"),
     "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80 \xc3\xa9", 7},
    {OK("{\"content\":[{\"text\":\"t\",\"annotations\":{\"audience\":"
        "[\"user\"],\"priority\":0.5e-1},\"type\":\"text\"}],\"isError\":false,"
        "\"resultType\":\"complete\",\"_meta\":{\"a\":[1,-2,3.5E+2,true,null,"
        "{}],\"b\":[]}}"),
     "t", 7},
    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"x\":{\"y\":[[]]},\"result\":{\"content\":"
     "[" TEXT("z") "]}}",
     "z", 7},
    /* the general path decides */
    {OK("{\"content\":[" TEXT("x") "],\"isError\":true}"), NULL, 0},
    {OK("{\"content\":[],\"structuredContent\":null}"), NULL, 0},
    {OK("{\"content\":[{\"type\":\"image\",\"data\":\"AA\"}]}"), NULL, 0},
    {OK("{\"content\":[{\"type\":\"text\"}]}"), NULL, 0},
    {OK("{\"content\":[{}]}"), NULL, 0},
    {OK("{\"resultType\":\"task\",\"content\":[]}"), NULL, 0},
    {OK("{\"isError\":0,\"content\":[]}"), NULL, 0},
    {OK("{\"content\":{}}"), NULL, 0},
    {OK("{}"), NULL, 0},
    {OK("{\"content\":[],\"content\":[]}"), NULL, 0},
    {OK("{\"con\\u0074ent\":[]}"), NULL, 0},
    {OK("{\"content\":[" TEXT("nul\\u0000") "]}"), NULL, 0},
    {OK("{\"content\":[" TEXT("\\ud800") "]}"), NULL, 0},
    {OK("{\"content\":[" TEXT("bad\xc3") "]}"), NULL, 0},
    {OK("{\"content\":[" TEXT("ctl\x01") "]}"), NULL, 0},
    {OK("{\"content\":[" TEXT("\\x") "]}"), NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":1,\"message\":\"m\"}}",
     NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"result\":{\"content\":"
     "[]}}",
     NULL, 0},
    {"{\"jsonrpc\":\"1.0\",\"id\":7,\"result\":{\"content\":[]}}", NULL, 0},
    {"{\"id\":7,\"result\":{\"content\":[]}}", NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{\"content\":[]}}", NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":-1,\"result\":{\"content\":[]}}", NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":7.0,\"result\":{\"content\":[]}}", NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":07,\"result\":{\"content\":[]}}", NULL, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":1234567890123456789,\"result\":{\"content\":"
     "[]}}",
     NULL, 0},
    {OK("{\"content\":[]}") " x", NULL, 0},
    {OK("{\"content\":[]}") "}", NULL, 0},
    {OK("{\"content\":[],}"), NULL, 0},
    {OK("{\"content\":[],\"m\":01}"), NULL, 0},
    {OK("{\"content\":[],\"m\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}"), NULL,
     0},
    {"\xef\xbb\xbf" OK("{\"content\":[]}"), NULL, 0},
    {OK("{\"content\":[]"), NULL, 0},
    {"", NULL, 0},
};

START_TEST(scan_table)
{
    const struct row *r = &rows[_i];
    int64_t id = -5;
    char *text = NULL;
    size_t tlen = 0;
    bool ok = aur__call_reply_scan(r->in, strlen(r->in), &id, &text, &tlen);

    if (!r->text) {
        ck_assert_msg(!ok, "row %d: read %s", _i, r->in);
        ck_assert_ptr_null(text);
        return;
    }
    ck_assert_msg(ok, "row %d: declined %s", _i, r->in);
    ck_assert_str_eq(text, r->text);
    ck_assert_uint_eq(tlen, strlen(r->text));
    ck_assert_int_eq(id, r->id);
    free(text);
}
END_TEST

/* Whatever the scanner reads, the strict parser accepts too. */
START_TEST(accepted_rows_parse)
{
    const struct row *r = &rows[_i];
    struct json_object *v = NULL;
    struct aur_error err;

    if (!r->text)
        return;
    ck_assert_int_eq(aur__json_parse(r->in, strlen(r->in), AUR__JSON_MAX_DEPTH,
                                     &v, &err),
                     AUR_OK);
    ck_assert(json_object_is_type(v, json_type_object));
    json_object_put(v);
}
END_TEST

/* A frame is not NUL-terminated: nothing past len is read. */
START_TEST(only_len_bytes_are_read)
{
    const char *full = OK("{\"content\":[" TEXT("ab") "]}");
    size_t n = strlen(full);
    char *exact = malloc(n), *text = NULL;
    size_t tlen;
    int64_t id;

    memcpy(exact, full, n);
    ck_assert(aur__call_reply_scan(exact, n, &id, &text, &tlen));
    ck_assert_str_eq(text, "ab");
    free(text);
    for (size_t cut = 0; cut < n; cut++)
        ck_assert_msg(!aur__call_reply_scan(exact, cut, &id, &text, &tlen),
                      "cut at %zu", cut);
    free(exact);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("call_reply");
    TCase *t = tcase_create("scan");
    int n = (int)(sizeof rows / sizeof rows[0]);

    tcase_add_loop_test(t, scan_table, 0, n);
    tcase_add_loop_test(t, accepted_rows_parse, 0, n);
    tcase_add_test(t, only_len_bytes_are_read);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
