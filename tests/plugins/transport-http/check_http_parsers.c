/*
 * check_http_parsers.c - transport-http's pure parts, compiled in from the
 * plugin's sources: the SSE parser (http_sse.c) and the URL, redirect and
 * header-value rules (http_url.c).  No network, no plugin loading.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include "support/check_main.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* SSE parser                                                         */
/* ================================================================== */

struct col {
    char out[8192];
    int n;
    int stop_after; /* 0 = never */
};

static int collect(void *ud, const struct sse_event *ev)
{
    struct col *c = ud;
    size_t l = strlen(c->out);
    snprintf(c->out + l, sizeof c->out - l, "[%s|%s|%s]", ev->type, ev->data,
             ev->last_id);
    c->n++;
    return c->stop_after && c->n >= c->stop_after;
}

static const char *parse_all(const char *s, size_t len, size_t max)
{
    static struct col c;
    struct sse_parser p;
    memset(&c, 0, sizeof c);
    sse_init(&p, max);
    ck_assert_int_eq(sse_feed(&p, s, len, collect, &c), SSE_OK);
    sse_finish(&p);
    sse_free(&p);
    return c.out;
}

#define PARSE(s) parse_all((s), sizeof(s) - 1, 1 << 20)

START_TEST(sse_line_ends)
{
    ck_assert_str_eq(PARSE("data: a\n\n"), "[message|a|]");
    ck_assert_str_eq(PARSE("data: a\r\n\r\n"), "[message|a|]");
    ck_assert_str_eq(PARSE("data: a\r\rdata: b\r\r"),
                     "[message|a|][message|b|]");
    ck_assert_str_eq(PARSE("data: a\r\n\ndata: b\n\r\n"),
                     "[message|a|][message|b|]");
}
END_TEST

START_TEST(sse_fields)
{
    /* multi-line data joins with LF; one leading space stripped only */
    ck_assert_str_eq(PARSE("data: x\ndata:  y\ndata:z\n\n"),
                     "[message|x\n y\nz|]");
    ck_assert_str_eq(PARSE(": comment\n: keepalive\n\n"), "");
    ck_assert_str_eq(PARSE("event: other\ndata: q\n\ndata: r\n\n"),
                     "[other|q|][message|r|]");
    ck_assert_str_eq(PARSE("id: 7\ndata: a\n\ndata: b\n\n"),
                     "[message|a|7][message|b|7]");
    ck_assert_str_eq(PARSE("foo: bar\ndata\n\n"), "[message||]");
    ck_assert_str_eq(PARSE("data: \n\n"), "[message||]"); /* priming */
    ck_assert_str_eq(PARSE("event: x\n\ndata: a\n\n"), "[message|a|]");
    ck_assert_str_eq(PARSE("data:a:b\n\n"), "[message|a:b|]");
}
END_TEST

START_TEST(sse_retry_and_id_rules)
{
    struct sse_parser p;
    struct col c;
    memset(&c, 0, sizeof c);
    sse_init(&p, 4096);
    sse_feed(&p, "retry: 2000\n\n", 13, collect, &c);
    ck_assert_int_eq(p.retry_ms, 2000);
    sse_feed(&p, "retry: 2x\n\nretry:\n\n", 19, collect, &c);
    ck_assert_int_eq(p.retry_ms, 2000);
    sse_feed(&p, "id: a\0b\ndata: x\n\n", 17, collect, &c);
    ck_assert_str_eq(c.out, "[message|x|]"); /* id with NUL ignored */
    /* The line buffer keeps stale bytes from a longer earlier line;
     * the value is exactly the field's bytes (a CI failure once read
     * past them). */
    sse_feed(&p, "data: 123456789\n\nretry: 5\n\n", 27, collect, &c);
    ck_assert_int_eq(p.retry_ms, 5);
    sse_free(&p);
}
END_TEST

START_TEST(sse_eof_discards)
{
    ck_assert_str_eq(PARSE("data: a\n\ndata: b\n"), "[message|a|]");
    ck_assert_str_eq(PARSE("data: a\n\ndata: b"), "[message|a|]");
}
END_TEST

START_TEST(sse_bom)
{
    ck_assert_str_eq(PARSE("\xEF\xBB\xBF" "data: a\n\n"), "[message|a|]");
    /* only one BOM is dropped; a second one is field text */
    ck_assert_str_eq(PARSE("\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\n"), "");
    /* a partial BOM is ordinary text */
    ck_assert_str_eq(PARSE("\xEF\xBB" "data: a\n\ndata: b\n\n"),
                     "[message|b|]");
    /* BOM split over three chunks */
    struct sse_parser p;
    struct col c;
    memset(&c, 0, sizeof c);
    sse_init(&p, 4096);
    sse_feed(&p, "\xEF", 1, collect, &c);
    sse_feed(&p, "\xBB", 1, collect, &c);
    sse_feed(&p, "\xBF" "data: z\n\n", 10, collect, &c);
    ck_assert_str_eq(c.out, "[message|z|]");
    sse_free(&p);
}
END_TEST

START_TEST(sse_max_event)
{
    struct sse_parser p;
    struct col c;
    char big[300];
    memset(&c, 0, sizeof c);
    memset(big, 'x', sizeof big);
    sse_init(&p, 256);
    ck_assert_int_eq(sse_feed(&p, "data: ok\n\n", 10, collect, &c), SSE_OK);
    ck_assert_int_eq(sse_feed(&p, "data: ", 6, collect, &c), SSE_OK);
    ck_assert_int_eq(sse_feed(&p, big, sizeof big, collect, &c),
                     SSE_TOO_BIG);
    /* sticky: later input is refused, nothing more dispatched */
    ck_assert_int_eq(sse_feed(&p, "\n\ndata: y\n\n", 11, collect, &c),
                     SSE_TOO_BIG);
    ck_assert_str_eq(c.out, "[message|ok|]");
    ck_assert_uint_le(p.line_cap, 257);
    sse_free(&p);
    /* many short data lines cannot grow one event past the bound */
    memset(&c, 0, sizeof c);
    sse_init(&p, 256);
    int rc = SSE_OK;
    for (int i = 0; i < 100 && rc == SSE_OK; i++)
        rc = sse_feed(&p, "data: 0123456789\n", 17, collect, &c);
    ck_assert_int_eq(rc, SSE_TOO_BIG);
    ck_assert_uint_le(p.data_cap, 257);
    sse_free(&p);
}
END_TEST

START_TEST(sse_stop)
{
    struct sse_parser p;
    struct col c;
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    sse_init(&p, 4096);
    ck_assert_int_eq(sse_feed(&p, "data: a\n\ndata: b\n\n", 18, collect, &c),
                     SSE_STOPPED);
    ck_assert_str_eq(c.out, "[message|a|]");
    sse_free(&p);
}
END_TEST

/* Every split of the sample into two chunks, and byte-by-byte, gives the
 * same events as one feed. */
START_TEST(sse_every_split)
{
    static const char s[] =
        "\xEF\xBB\xBFid: 1\r\nretry: 10\r\ndata: \r\n\r\n: ka\r\n\r\n"
        "event: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n"
        "event: other\ndata: x\n\ndata: cr\r\rdata: last\n\ndata: tail";
    const size_t n = sizeof s - 1;
    char want[8192];
    snprintf(want, sizeof want, "%s", parse_all(s, n, 1 << 20));
    ck_assert_str_eq(want, "[message||1][message|{\"a\":\n1}|1][other|x|1]"
                           "[message|cr|1][message|last|1]");
    for (size_t cut = 0; cut <= n; cut++) {
        struct sse_parser p;
        struct col c;
        memset(&c, 0, sizeof c);
        sse_init(&p, 1 << 20);
        sse_feed(&p, s, cut, collect, &c);
        sse_feed(&p, s + cut, n - cut, collect, &c);
        sse_finish(&p);
        sse_free(&p);
        ck_assert_msg(strcmp(c.out, want) == 0, "split at %zu: %s", cut,
                      c.out);
    }
    struct sse_parser p;
    struct col c;
    memset(&c, 0, sizeof c);
    sse_init(&p, 1 << 20);
    for (size_t i = 0; i < n; i++)
        sse_feed(&p, s + i, 1, collect, &c);
    sse_free(&p);
    ck_assert_str_eq(c.out, want);
}
END_TEST

/* ================================================================== */
/* URL rules                                                          */
/* ================================================================== */

static int url_rc(const char *u, char origin[HTTP_ORIGIN_SIZE])
{
    char *out = NULL;
    struct aur_error err;
    int rc = http_url_check(u, &out, origin, &err);
    free(out);
    return rc;
}

START_TEST(url_valid)
{
    char o[HTTP_ORIGIN_SIZE];
    ck_assert_int_eq(url_rc("https://Example.COM/mcp?x=1", o), AUR_OK);
    ck_assert_str_eq(o, "https://example.com:443");
    ck_assert_int_eq(url_rc("HTTPS://h:8443/rpc", o), AUR_OK);
    ck_assert_str_eq(o, "https://h:8443");
    ck_assert_int_eq(url_rc("https://h:443/", o), AUR_OK);
    ck_assert_str_eq(o, "https://h:443");
    ck_assert_int_eq(url_rc("https://127.0.0.1:9/", o), AUR_OK);
}
END_TEST

START_TEST(url_invalid)
{
    char o[HTTP_ORIGIN_SIZE];
    struct aur_error err;
    char *out = NULL;
    const char *bad[] = {"http://h/rpc", "https:///missing-host",
                         "https://u:p@h/rpc", "https://u@h/rpc",
                         "https://h/rpc#f", "ftp://h/", "", "https://h/ x",
                         "https://h/\r\nX: y", "//h/x", "h/x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(url_rc(bad[i], o) == AUR_E_INVAL, "accepted %s",
                      bad[i]);
    /* the reason never quotes the URL (userinfo may be a secret) */
    http_url_check("https://user:hunter2@h/", &out, o, &err);
    ck_assert_ptr_null(strstr(err.msg, "hunter2"));
}
END_TEST

START_TEST(url_redirects)
{
    char o[HTTP_ORIGIN_SIZE], *out = NULL;
    struct aur_error err;
    ck_assert_int_eq(http_url_redirect("https://a:1/x/y", "/z?q", &out, o,
                                       &err),
                     AUR_OK);
    ck_assert_str_eq(out, "https://a:1/z?q");
    ck_assert_str_eq(o, "https://a:1");
    free(out);
    ck_assert_int_eq(http_url_redirect("https://a/x/y", "w", &out, o, &err),
                     AUR_OK);
    ck_assert_str_eq(out, "https://a/x/w");
    free(out);
    ck_assert_int_eq(http_url_redirect("https://a/x", "https://B:2/m", &out,
                                       o, &err),
                     AUR_OK);
    ck_assert_str_eq(o, "https://b:2");
    free(out);
    ck_assert_int_eq(http_url_redirect("https://a/x", "http://a/x", &out, o,
                                       &err),
                     AUR_E_INVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "redirect refused"));
    ck_assert_int_eq(http_url_redirect("https://a/x", "https://u@a/x", &out,
                                       o, &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(http_url_redirect("https://a/x", "/y#frag", &out, o,
                                       &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(http_url_redirect("https://a/x", "", &out, o, &err),
                     AUR_E_INVAL);
}
END_TEST

START_TEST(header_encoding)
{
    struct {
        const char *in, *out;
    } t[] = {
        {"echo", "echo"},
        {"a b", "a b"},
        {"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
        {"Zürich ", "=?base64?WsO8cmljaCA=?="},
        {" x", "=?base64?IHg=?="},
        {"=?base64?ZWNobw==?=", "=?base64?PT9iYXNlNjQ/WldOb2J3PT0/PQ==?="},
        {"a\r\nb", "=?base64?YQ0KYg==?="},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        char *v = http_header_value(t[i].in, strlen(t[i].in));
        ck_assert_str_eq(v, t[i].out);
        free(v);
    }
    ck_assert(http_visible_ascii("abc-1"));
    ck_assert(!http_visible_ascii("a b"));
    ck_assert(!http_visible_ascii(""));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("http_parsers");
    TCase *t;

    t = tcase_create("sse");
    tcase_add_test(t, sse_line_ends);
    tcase_add_test(t, sse_fields);
    tcase_add_test(t, sse_retry_and_id_rules);
    tcase_add_test(t, sse_eof_discards);
    tcase_add_test(t, sse_bom);
    tcase_add_test(t, sse_max_event);
    tcase_add_test(t, sse_stop);
    tcase_add_test(t, sse_every_split);
    suite_add_tcase(s, t);

    t = tcase_create("url");
    tcase_add_test(t, url_valid);
    tcase_add_test(t, url_invalid);
    tcase_add_test(t, url_redirects);
    tcase_add_test(t, header_encoding);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
