/*
 * check_jsonx.c - the strict JSON parser and the canonical serializer
 * (lib/jsonx/jsonx.h).  Expected canonical strings were produced with Python
 * json.dumps(json.loads(x), ensure_ascii=False, sort_keys=True,
 * separators=(",", ":")) and are hard-coded here.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include <json-c/json.h>

#include "jsonx.h"
#include "jsonx_int.h"
#include "jsonx_parser.h"

#define DEPTH 128

struct golden {
    const char *in;
    const char *out;
};

static const struct golden goldens[] = {
    /* key order at every depth, arrays keep order */
    {"{\"z\":1,\"a\":\"中文\"}", "{\"a\":\"中文\",\"z\":1}"},
    {"{\"b\":{\"y\":[3,{\"d\":1,\"c\":2}],\"x\":null},\"a\":true,\"c\":false}",
     "{\"a\":true,\"b\":{\"x\":null,\"y\":[3,{\"c\":2,\"d\":1}]},\"c\":false}"},
    {"{\"é\":1,\"e\":2,\"中\":3,\"\":0,\"😀\":4,"
     "\"\xef\xbf\xbf\":5,\"Z\":6}",
     "{\"\":0,\"Z\":6,\"e\":2,\"é\":1,\"中\":3,"
     "\"\xef\xbf\xbf\":5,\"😀\":4}"},
    {" [ 1 , 2 ] ", "[1,2]"},
    {"[]", "[]"},
    {"{}", "{}"},
    {"[[],{}]", "[[],{}]"},
    {"\t\r\n{ \"a\" : [ true , false , null ] }\n",
     "{\"a\":[true,false,null]}"},
    /* duplicate keys: the last one wins */
    {"{\"a\":1,\"a\":2}", "{\"a\":2}"},
    {"{\"a\":{\"x\":1},\"b\":0,\"a\":[1]}", "{\"a\":[1],\"b\":0}"},
    /* strings */
    {"\"\\u00e9\\u4e2d\\ud83d\\ude00\"", "\"é中😀\""},
    {"\"\\u00E9\\uD83D\\uDE00\"", "\"é😀\""},
    {"\"中文 😀\"", "\"中文 😀\""},
    {"\"\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f\\\"\\\\\\/ "
     "\xe2\x80\xa8\xe2\x80\xa9\"",
     "\"\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\\\"\\\\/ \xe2\x80\xa8\xe2\x80\xa9\""},
    {"\"a\\u0000b\"", "\"a\\u0000b\""},
    {"\"\\u000b\\u001b\"", "\"\\u000b\\u001b\""},
    {"\"\xf4\x8f\xbf\xbf\"", "\"\xf4\x8f\xbf\xbf\""},
    /* integers of any size */
    {"123456789012345678901234567890", "123456789012345678901234567890"},
    {"-123456789012345678901234567890", "-123456789012345678901234567890"},
    {"18446744073709551615", "18446744073709551615"},
    {"18446744073709551616", "18446744073709551616"},
    {"9223372036854775807", "9223372036854775807"},
    {"9223372036854775808", "9223372036854775808"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"-9223372036854775809", "-9223372036854775809"},
    {"-0", "0"},
    {"0", "0"},
    {"100", "100"},
    {"9007199254740993", "9007199254740993"},
    {"[1,{\"n\":99999999999999999999999999999999999999999}]",
     "[1,{\"n\":99999999999999999999999999999999999999999}]"},
    /* floats as Python repr */
    {"1.0", "1.0"},
    {"1e2", "100.0"},
    {"1E2", "100.0"},
    {"1E+2", "100.0"},
    {"0.0001", "0.0001"},
    {"1e-4", "0.0001"},
    {"0.00001", "1e-05"},
    {"1e-05", "1e-05"},
    {"1e16", "1e+16"},
    {"1e15", "1000000000000000.0"},
    {"1.5e300", "1.5e+300"},
    {"-0.0", "-0.0"},
    {"-0e5", "-0.0"},
    {"0e0", "0.0"},
    {"0.1", "0.1"},
    {"0.3", "0.3"},
    {"4.35", "4.35"},
    {"2.5", "2.5"},
    {"123e-2", "1.23"},
    {"-1.5e-7", "-1.5e-07"},
    {"1.7976931348623157e308", "1.7976931348623157e+308"},
    {"5e-324", "5e-324"},
    {"1234567890123456.0", "1234567890123456.0"},
    {"12345678901234567.0", "1.2345678901234568e+16"},
    {"1e21", "1e+21"},
    {"1e22", "1e+22"},
    {"9007199254740993.0", "9007199254740992.0"},
    {"3.141592653589793", "3.141592653589793"},
    /* 2^122: the nearest 16-digit decimal misses, the next one up hits */
    {"5316911983139663491615228241121378304.0", "5.316911983139664e+36"},
    {"[1.0,-2,3.5e-10]", "[1.0,-2,3.5e-10]"},
};

static struct json_object *parse_ok(const char *in, size_t len)
{
    struct aur_error err;
    struct json_object *v = NULL;
    int rc;

    aur_error_clear(&err);
    rc = aur__json_parse(in, len, DEPTH, &v, &err);
    ck_assert_msg(rc == AUR_OK, "parse of '%s' failed: %s", in, err.msg);
    return v;
}

#define P(s) parse_ok((s), strlen(s))

static char *canon_ok(struct json_object *v)
{
    struct aur_error err;
    char *out = NULL;
    size_t len = 0;
    int rc;

    aur_error_clear(&err);
    rc = aur__json_canonical(v, &out, &len, &err);
    ck_assert_msg(rc == AUR_OK, "canonical failed: %s", err.msg);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(len, strlen(out));
    return out;
}

START_TEST(golden_canonical)
{
    const struct golden *g = &goldens[_i];
    struct json_object *v = parse_ok(g->in, strlen(g->in));
    char *out = canon_ok(v);

    ck_assert_str_eq(out, g->out);
    free(out);
    json_object_put(v);
}
END_TEST

/* parse(canonical(x)) canonicalises to the same bytes. */
START_TEST(golden_round_trip)
{
    const struct golden *g = &goldens[_i];
    struct json_object *v = parse_ok(g->in, strlen(g->in)), *w;
    char *c1 = canon_ok(v), *c2;

    w = parse_ok(c1, strlen(c1));
    c2 = canon_ok(w);
    ck_assert_str_eq(c1, c2);
    free(c1);
    free(c2);
    json_object_put(v);
    json_object_put(w);
}
END_TEST

struct bad {
    const char *in;
    size_t len; /* 0: strlen(in) */
};

static const struct bad bads[] = {
    {"", 0},
    {"   \n\t", 0},
    {"{", 0},
    {"[", 0},
    {"[1", 0},
    {"[1,", 0},
    {"[1,]", 0},
    {"[,1]", 0},
    {"[1,,2]", 0},
    {"[1 2]", 0},
    {"{\"a\":1,}", 0},
    {"{,}", 0},
    {"{\"a\"}", 0},
    {"{\"a\" 1}", 0},
    {"{\"a\":}", 0},
    {"{a:1}", 0},
    {"{'a':1}", 0},
    {"{\"a\":1 \"b\":2}", 0},
    {"{\"a\":1}}", 0},
    {"]", 0},
    {"}", 0},
    {"01", 0},
    {"-01", 0},
    {"00", 0},
    {"+1", 0},
    {".5", 0},
    {"1.", 0},
    {"1.e5", 0},
    {"1e", 0},
    {"1e+", 0},
    {"-", 0},
    {"--1", 0},
    {"0x10", 0},
    {"1_000", 0},
    {"NaN", 0},
    {"Infinity", 0},
    {"-Infinity", 0},
    {"nul", 0},
    {"tru", 0},
    {"True", 0},
    {"null x", 0},
    {"1 2", 0},
    {"/*c*/1", 0},
    {"[1]//c", 0},
    {"\"abc", 0},
    {"\"abc\\", 0},
    {"\"\\x\"", 0},
    {"\"\\'\"", 0},
    {"\"\\u12\"", 0},
    {"\"\\u12g4\"", 0},
    {"\"\\ud800\"", 0},
    {"\"\\udc00\"", 0},
    {"\"\\ud800\\u0041\"", 0},
    {"\"\\ud800\\ud800\"", 0},
    {"\"\\ud800x\"", 0},
    {"\"a\x01" "b\"", 0},
    {"\"\t\"", 0},
    {"\"\n\"", 0},
    {"\"a\0b\"", 5},
    {"\"\xc0\xaf\"", 0},         /* overlong '/' */
    {"\"\xe0\x80\xaf\"", 0},     /* overlong, 3 bytes */
    {"\"\xf0\x80\x80\xaf\"", 0}, /* overlong, 4 bytes */
    {"\"\xed\xa0\x80\"", 0},     /* UTF-8 encoded surrogate */
    {"\"\xf4\x90\x80\x80\"", 0}, /* past U+10FFFF */
    {"\"\xf5\x80\x80\x80\"", 0},
    {"\"\xe4\xb8\"", 0},         /* truncated */
    {"\"\xe4\xb8", 0},
    {"\"\x80\"", 0},             /* lone continuation byte */
    {"\"\xff\"", 0},
    {"\xef\xbb\xbf{}", 0},       /* byte order mark */
    {"\xc2\xa0" "1", 0},         /* no-break space is not whitespace */
    {"\f1", 0},
    {"\v1", 0},
    {"\0", 1},
    {"1\0", 2},
    {"{\"a\\u0000\":1}", 0},     /* key with U+0000 */
    {"é", 0},
};

START_TEST(reject_malformed)
{
    const struct bad *b = &bads[_i];
    size_t len = b->len ? b->len : strlen(b->in);
    struct json_object *sentinel = (struct json_object *)&sentinel;
    struct json_object *v = sentinel;
    struct aur_error err;
    int rc;

    aur_error_clear(&err);
    rc = aur__json_parse(b->in, len, DEPTH, &v, &err);
    ck_assert_msg(rc == AUR_E_PROTOCOL, "case %d accepted (rc %d)", _i, rc);
    ck_assert_int_eq(err.code, AUR_E_PROTOCOL);
    ck_assert_ptr_eq(v, sentinel);
    ck_assert_msg(strncmp(err.msg, "JSON parse error at byte ", 25) == 0,
                  "message: %s", err.msg);
}
END_TEST

struct where {
    const char *in;
    const char *msg;
};

static const struct where wheres[] = {
    {"[1,]", "JSON parse error at byte 3: unexpected character"},
    {"01", "JSON parse error at byte 0: leading zero in number"},
    {"  x", "JSON parse error at byte 2: unexpected character"},
    {"\"\xed\xa0\x80\"", "JSON parse error at byte 1: invalid UTF-8 in string"},
    {"{\"a\":1}}",
     "JSON parse error at byte 7: trailing characters after JSON value"},
    {"[\"\\ud800\"]",
     "JSON parse error at byte 2: lone high surrogate in \\u escape"},
    {"", "JSON parse error at byte 0: unexpected end of input"},
    {"{\"a\" 1}", "JSON parse error at byte 5: expected ':' after object key"},
    {"\"a\x01\"", "JSON parse error at byte 2: control character in string"},
    {"1.", "JSON parse error at byte 2: expected a digit after '.'"},
};

START_TEST(reject_reports_offset)
{
    const struct where *w = &wheres[_i];
    struct json_object *v = NULL;
    struct aur_error err;

    aur_error_clear(&err);
    ck_assert_int_eq(aur__json_parse(w->in, strlen(w->in), DEPTH, &v, &err),
                     AUR_E_PROTOCOL);
    ck_assert_str_eq(err.msg, w->msg);
}
END_TEST

START_TEST(parse_types)
{
    struct json_object *v, *e;
    struct aur_error err;

    v = P("null");
    ck_assert_ptr_null(v);
    v = P("[null,true,false,\"s\",1,1.5,{}]");
    ck_assert_int_eq(json_object_array_length(v), 7);
    ck_assert_ptr_null(json_object_array_get_idx(v, 0));
    ck_assert(json_object_get_boolean(json_object_array_get_idx(v, 1)));
    e = json_object_array_get_idx(v, 2);
    ck_assert(json_object_is_type(e, json_type_boolean));
    ck_assert(!json_object_get_boolean(e));
    ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 3)),
                     "s");
    e = json_object_array_get_idx(v, 4);
    ck_assert(json_object_is_type(e, json_type_int));
    ck_assert_int_eq(json_object_get_int64(e), 1);
    e = json_object_array_get_idx(v, 5);
    ck_assert(json_object_is_type(e, json_type_double));
    ck_assert(json_object_get_double(e) == 1.5);
    ck_assert(json_object_is_type(json_object_array_get_idx(v, 6),
                                  json_type_object));
    json_object_put(v);

    /* A NULL buffer with a length is a caller bug, not bad input. */
    aur_error_clear(&err);
    ck_assert_int_eq(aur__json_parse(NULL, 3, DEPTH, &v, &err), AUR_E_INVAL);
}
END_TEST

START_TEST(parse_strings_exact)
{
    struct json_object *v = P("\"a\\u0000b\""), *o, *x;

    ck_assert_int_eq(json_object_get_string_len(v), 3);
    ck_assert_mem_eq(json_object_get_string(v), "a\0b", 3);
    json_object_put(v);

    v = P("\"\\ud83d\\ude00\\/\"");
    ck_assert_str_eq(json_object_get_string(v), "\xf0\x9f\x98\x80/");
    json_object_put(v);

    /* Duplicate keys: one member, the last value. */
    o = P("{\"k\":1,\"j\":0,\"k\":{\"z\":true}}");
    ck_assert_int_eq(json_object_object_length(o), 2);
    ck_assert(json_object_object_get_ex(o, "k", &x));
    ck_assert(json_object_is_type(x, json_type_object));
    json_object_put(o);
}
END_TEST

START_TEST(parse_integer_types)
{
    struct json_object *v;

    v = P("9223372036854775807");
    ck_assert(json_object_is_type(v, json_type_int));
    ck_assert_int_eq(json_object_get_int64(v), INT64_MAX);
    json_object_put(v);

    v = P("-9223372036854775808");
    ck_assert(json_object_is_type(v, json_type_int));
    ck_assert_int_eq(json_object_get_int64(v), INT64_MIN);
    json_object_put(v);

    v = P("18446744073709551615");
    ck_assert(json_object_is_type(v, json_type_int));
    ck_assert_uint_eq(json_object_get_uint64(v), UINT64_MAX);
    json_object_put(v);

    /* Past uint64: a double carrying the exact digits. */
    v = P("123456789012345678901234567890");
    ck_assert(json_object_is_type(v, json_type_double));
    ck_assert(fabs(json_object_get_double(v) - 1.2345678901234568e29) <
              1e14);
    ck_assert_str_eq(json_object_to_json_string(v),
                     "123456789012345678901234567890");
    json_object_put(v);

    v = P("-0");
    ck_assert(json_object_is_type(v, json_type_int));
    ck_assert_int_eq(json_object_get_int64(v), 0);
    json_object_put(v);

    v = P("-0.0");
    ck_assert(json_object_is_type(v, json_type_double));
    ck_assert(signbit(json_object_get_double(v)));
    json_object_put(v);

    /* Overflowing floats become inf, as in Python. */
    v = P("-1e400");
    ck_assert(isinf(json_object_get_double(v)));
    ck_assert(json_object_get_double(v) < 0);
    json_object_put(v);
}
END_TEST

/* Kept big integers survive json-c's own printer and deep copy. */
START_TEST(big_integers_in_json_c)
{
    const char *in = "{\"b\":[-123456789012345678901234567890],"
                     "\"a\":123456789012345678901234567890}";
    struct json_object *v = parse_ok(in, strlen(in)), *copy = NULL;
    char *compact = aur__json_compact(v), *c1, *c2;

    ck_assert_ptr_nonnull(compact);
    ck_assert_str_eq(compact, "{\"b\":[-123456789012345678901234567890],"
                              "\"a\":123456789012345678901234567890}");
    free(compact);
    ck_assert_int_eq(json_object_deep_copy(v, &copy, NULL), 0);
    c1 = canon_ok(v);
    c2 = canon_ok(copy);
    ck_assert_str_eq(c1, "{\"a\":123456789012345678901234567890,"
                         "\"b\":[-123456789012345678901234567890]}");
    ck_assert_str_eq(c1, c2);
    free(c1);
    free(c2);
    json_object_put(v);
    json_object_put(copy);
}
END_TEST

static int parse_depth(const char *in, int max_depth, struct aur_error *err)
{
    struct json_object *v = NULL;
    int rc;

    aur_error_clear(err);
    rc = aur__json_parse(in, strlen(in), max_depth, &v, err);
    json_object_put(v);
    return rc;
}

START_TEST(depth_limit)
{
    struct aur_error err;

    ck_assert_int_eq(parse_depth("[[[1]]]", 3, &err), AUR_OK);
    ck_assert_int_eq(parse_depth("[[[[1]]]]", 3, &err), AUR_E_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.msg, "nesting deeper than 3"));
    ck_assert_int_eq(parse_depth("{\"a\":[{\"b\":{}}]}", 4, &err), AUR_OK);
    ck_assert_int_eq(parse_depth("{\"a\":[{\"b\":{}}]}", 3, &err),
                     AUR_E_PROTOCOL);
    ck_assert_int_eq(parse_depth("[[],[],{\"a\":1}]", 2, &err), AUR_OK);
    ck_assert_int_eq(parse_depth("[[],[],{\"a\":[]}]", 2, &err),
                     AUR_E_PROTOCOL);
    ck_assert_int_eq(parse_depth("1", 0, &err), AUR_OK);
    ck_assert_int_eq(parse_depth("[]", 0, &err), AUR_E_PROTOCOL);
    ck_assert_int_eq(parse_depth("\"x\"", -1, &err), AUR_OK);
    ck_assert_int_eq(parse_depth("{}", -1, &err), AUR_E_PROTOCOL);
}
END_TEST

/* Hostile nesting neither exhausts the C stack in the parser nor in the
 * serializer, which refuses past its own bound. */
START_TEST(deep_nesting)
{
    enum { N = 20000 };
    char *in = malloc(2 * N + 2), *out = NULL;
    struct json_object *v = NULL;
    struct aur_error err;

    ck_assert_ptr_nonnull(in);
    memset(in, '[', N);
    memset(in + N, ']', N);
    in[2 * N] = '\0';
    ck_assert_int_eq(parse_depth(in, DEPTH, &err), AUR_E_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.msg, "at byte 128: nesting"));
    aur_error_clear(&err);
    ck_assert_int_eq(aur__json_parse(in, 2 * N, INT_MAX, &v, &err), AUR_OK);
    ck_assert_int_eq(aur__json_canonical(v, &out, NULL, &err), AUR_E_LIMIT);
    ck_assert_ptr_null(out);
    json_object_put(v);
    free(in);
}
END_TEST

START_TEST(canonical_built_values)
{
    struct json_object *v;
    struct aur_error err;
    char *out = NULL, num[32];

    /* json-c values not from the parser: plain doubles and ints. */
    v = json_object_new_array();
    json_object_array_add(v, json_object_new_double(5.0));
    json_object_array_add(v, json_object_new_int(-7));
    json_object_array_add(v, json_object_new_uint64(UINT64_MAX));
    json_object_array_add(v, NULL);
    json_object_array_add(v, json_object_new_string_len("a\0\x1f\x7f", 4));
    out = canon_ok(v);
    ck_assert_str_eq(out, "[5.0,-7,18446744073709551615,null,"
                          "\"a\\u0000\\u001f\x7f\"]");
    free(out);
    json_object_put(v);

    out = canon_ok(NULL);
    ck_assert_str_eq(out, "null");
    free(out);

    /* Values Python could not print as JSON. */
    v = json_object_new_double(NAN);
    aur_error_clear(&err);
    out = NULL;
    ck_assert_int_eq(aur__json_canonical(v, &out, NULL, &err), AUR_E_INVAL);
    ck_assert_int_eq(err.code, AUR_E_INVAL);
    ck_assert_ptr_null(out);
    json_object_put(v);

    v = P("{\"x\":[1e400]}");
    ck_assert_int_eq(aur__json_canonical(v, &out, NULL, &err), AUR_E_INVAL);
    ck_assert_ptr_null(out);
    json_object_put(v);

    v = json_object_new_string_len("\xc3", 1);
    ck_assert_int_eq(aur__json_canonical(v, &out, NULL, &err), AUR_E_INVAL);
    json_object_put(v);

    v = json_object_new_object();
    json_object_object_add(v, "\xed\xa0\x80", json_object_new_int(1));
    ck_assert_int_eq(aur__json_canonical(v, &out, NULL, &err), AUR_E_INVAL);
    json_object_put(v);

    /* A double with foreign userdata that is not a digit string stays a
     * float. */
    v = json_object_new_double_s(2.5, "2.50");
    out = canon_ok(v);
    ck_assert_str_eq(out, "2.5");
    free(out);
    json_object_put(v);

    /* json-c's tokener keeps the source text of doubles as userdata. */
    v = json_tokener_parse("[1.50,2E3]");
    ck_assert_ptr_nonnull(v);
    out = canon_ok(v);
    ck_assert_str_eq(out, "[1.5,2000.0]");
    free(out);
    ck_assert_int_eq(aur__json_integer_text(json_object_array_get_idx(v, 1),
                                            num, sizeof num),
                     AUR_E_INVAL);
    json_object_put(v);
}
END_TEST

struct itext {
    const char *in;
    int rc;
    const char *text;
};

static const struct itext itexts[] = {
    {"1", AUR_OK, "1"},
    {"-0", AUR_OK, "0"},
    {"42", AUR_OK, "42"},
    {"-42", AUR_OK, "-42"},
    {"9223372036854775807", AUR_OK, "9223372036854775807"},
    {"9223372036854775808", AUR_OK, "9223372036854775808"},
    {"-9223372036854775808", AUR_OK, "-9223372036854775808"},
    {"18446744073709551615", AUR_OK, "18446744073709551615"},
    {"18446744073709551616", AUR_OK, "18446744073709551616"},
    {"123456789012345678901234567890", AUR_OK,
     "123456789012345678901234567890"},
    {"-123456789012345678901234567890", AUR_OK,
     "-123456789012345678901234567890"},
    {"1.0", AUR_E_INVAL, NULL},
    {"1e3", AUR_E_INVAL, NULL},
    {"-0.0", AUR_E_INVAL, NULL},
    {"true", AUR_E_INVAL, NULL},
    {"null", AUR_E_INVAL, NULL},
    {"\"1\"", AUR_E_INVAL, NULL},
    {"[1]", AUR_E_INVAL, NULL},
    {"{}", AUR_E_INVAL, NULL},
};

START_TEST(integer_text)
{
    const struct itext *t = &itexts[_i];
    struct json_object *v = parse_ok(t->in, strlen(t->in));
    char buf[64];

    memset(buf, 'x', sizeof buf);
    ck_assert_int_eq(aur__json_integer_text(v, buf, sizeof buf), t->rc);
    if (t->text)
        ck_assert_str_eq(buf, t->text);
    json_object_put(v);
}
END_TEST

START_TEST(integer_text_buffer)
{
    struct json_object *v = P("-12345"), *b;
    char buf[8];

    ck_assert_int_eq(aur__json_integer_text(v, buf, 6), AUR_E_LIMIT);
    ck_assert_int_eq(aur__json_integer_text(v, buf, 7), AUR_OK);
    ck_assert_str_eq(buf, "-12345");
    ck_assert_int_eq(aur__json_integer_text(v, NULL, 0), AUR_E_LIMIT);
    json_object_put(v);

    b = P("123456789012345678901234567890");
    ck_assert_int_eq(aur__json_integer_text(b, buf, sizeof buf),
                     AUR_E_LIMIT);
    json_object_put(b);

    /* Integers built by other code. */
    v = json_object_new_uint64((uint64_t)INT64_MAX + 5);
    ck_assert_int_eq(aur__json_integer_text(v, buf, 0), AUR_E_LIMIT);
    json_object_put(v);
    v = json_object_new_int(7);
    ck_assert_int_eq(aur__json_integer_text(v, buf, sizeof buf), AUR_OK);
    ck_assert_str_eq(buf, "7");
    json_object_put(v);
}
END_TEST

START_TEST(compact_text)
{
    const char *in = "{\"a\":\"x/y\",\"b\":[1,null,true]}";
    struct json_object *v = parse_ok(in, strlen(in));
    char *s = aur__json_compact(v);

    ck_assert_str_eq(s, "{\"a\":\"x/y\",\"b\":[1,null,true]}");
    free(s);
    json_object_put(v);
    s = aur__json_compact(NULL);
    ck_assert_str_eq(s, "null");
    free(s);
}
END_TEST

/* The parser's plain bytes, spelt out: printable ASCII but the quote and
 * the backslash.  quote_span.h's strict mode is exactly that, byte by
 * byte (check_aurx holds its eight-at-a-time span to the byte test). */
START_TEST(plain_bytes_are_printable_ascii)
{
    for (int c = 0; c < 256; c++) {
        unsigned char b = (unsigned char)c;
        int plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';

        ck_assert_int_eq(plain, !aur__quote_stop(b, true));
        ck_assert_uint_eq(aur__json_plain_span(&b, 1), (size_t)plain);
    }
}
END_TEST

/* The vocabulary's length groups match its table: every key is found
 * at its own index, nothing one byte shorter or longer is taken for it,
 * and no key is there twice.  A group bound off by one would read a
 * longer key's prefix as a match. */
START_TEST(vocabulary_groups)
{
    ck_assert_uint_le(aur__jp_vocab_len, VOCAB_BITS);
    for (size_t i = 0; i < aur__jp_vocab_len; i++) {
        const char *k = aur__jp_vocab[i];
        size_t n = strlen(k);
        char longer[64];
        int j;

        ck_assert_uint_lt(n + 2, sizeof longer);
        ck_assert_int_eq(aur__jp_intern((const unsigned char *)k, n), (int)i);
        for (size_t m = 0; m < n; m++) {
            j = aur__jp_intern((const unsigned char *)k, m);
            ck_assert_msg(j < 0 || (strlen(aur__jp_vocab[j]) == m &&
                                    memcmp(aur__jp_vocab[j], k, m) == 0),
                          "prefix %zu of %s found as %d", m, k, j);
        }
        snprintf(longer, sizeof longer, "%sx", k);
        ck_assert_int_eq(aur__jp_intern((const unsigned char *)longer, n + 1),
                         -1);
        for (size_t o = i + 1; o < aur__jp_vocab_len; o++)
            ck_assert_str_ne(k, aur__jp_vocab[o]);
    }
}
END_TEST

/* An object of every vocabulary key, each given twice (the last wins),
 * then once more spelled with an escape: the seen bits of both words, and
 * the look-up that an escaped key forces. */
START_TEST(vocabulary_keys_parse)
{
    struct aur__buf b = {0};
    struct json_object *v = NULL, *x;
    struct aur_error err;

    ck_assert_int_eq(aur__buf_put(&b, "{", 1, SIZE_MAX), 0);
    for (size_t i = 0; i < aur__jp_vocab_len; i++) {
        char item[128];
        int n = snprintf(item, sizeof item, "\"%s\":%zu,\"%s\":%zu,",
                         aur__jp_vocab[i], i, aur__jp_vocab[i], i + 1000);
        ck_assert_int_eq(aur__buf_put(&b, item, (size_t)n, SIZE_MAX), 0);
    }
    /* "\u0069d" is "id": found by look-up, replacing 1000 */
    const char *tail = "\"\\u0069d\":7}";
    ck_assert_int_eq(aur__buf_put(&b, tail, strlen(tail), SIZE_MAX), 0);
    ck_assert_int_eq(aur__json_parse(b.p, b.n, DEPTH, &v, &err), AUR_OK);
    ck_assert_int_eq(json_object_object_length(v), (int)aur__jp_vocab_len);
    for (size_t i = 0; i < aur__jp_vocab_len; i++) {
        ck_assert(json_object_object_get_ex(v, aur__jp_vocab[i], &x));
        ck_assert_int_eq(json_object_get_int64(x),
                         strcmp(aur__jp_vocab[i], "id") == 0
                             ? 7
                             : (int64_t)(i + 1000));
    }
    json_object_put(v);
    free(b.p);
}
END_TEST

static Suite *jsonx_suite(void)
{
    Suite *s = suite_create("jsonx");
    TCase *tc;

    tc = tcase_create("canonical");
    tcase_add_loop_test(tc, golden_canonical, 0, (int)AUR__ARRAY_LEN(goldens));
    tcase_add_test(tc, canonical_built_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("round_trip");
    tcase_add_loop_test(tc, golden_round_trip, 0,
                        (int)AUR__ARRAY_LEN(goldens));
    tcase_add_test(tc, big_integers_in_json_c);
    suite_add_tcase(s, tc);

    tc = tcase_create("reject");
    tcase_add_loop_test(tc, reject_malformed, 0, (int)AUR__ARRAY_LEN(bads));
    tcase_add_loop_test(tc, reject_reports_offset, 0,
                        (int)AUR__ARRAY_LEN(wheres));
    suite_add_tcase(s, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, parse_types);
    tcase_add_test(tc, parse_strings_exact);
    tcase_add_test(tc, parse_integer_types);
    tcase_add_test(tc, plain_bytes_are_printable_ascii);
    tcase_add_test(tc, vocabulary_groups);
    tcase_add_test(tc, vocabulary_keys_parse);
    suite_add_tcase(s, tc);

    tc = tcase_create("depth");
    tcase_add_test(tc, depth_limit);
    tcase_add_test(tc, deep_nesting);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);

    tc = tcase_create("integer_text");
    tcase_add_loop_test(tc, integer_text, 0, (int)AUR__ARRAY_LEN(itexts));
    tcase_add_test(tc, integer_text_buffer);
    suite_add_tcase(s, tc);

    tc = tcase_create("compact");
    tcase_add_test(tc, compact_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return aur_check_main(jsonx_suite(), NULL); }
