/*
 * check_transport_http_xheader.c - x-mcp-header (SEP-2243) through
 * transport-http against the fixture's /xh endpoints: Mcp-Param-*
 * headers sent, tools with invalid annotations dropped with a warning
 * (on every page and relist), values the rules cannot carry failing the
 * call before it is sent, and nothing of it on the legacy revision.
 * Part of check_transport_http.
 */
#define _GNU_SOURCE
#include "http/http_host.h"
#include "http_int.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void http_xheader_tests(Suite *s);

/* Tools of the fixture's /xh list that break a rule, and a piece of the
 * reason the warning must give. */
static const struct {
    const char *tool, *why;
} XH_BAD_TOOLS[] = {
    {"bad_empty", "on property \"v\" is empty"},
    {"bad_space", "\"My Region\" on property \"v\" is not an HTTP token"},
    {"bad_colon", "is not an HTTP token"},
    {"bad_nonascii", "is not an HTTP token"},
    {"bad_tab", "contains a control character"},
    {"bad_crlf", "contains a control character"},
    {"bad_notstring", "is not a string"},
    {"bad_dup_case", "\"myfield\" on property \"b\" repeats \"MyField\""},
    {"bad_dup_nested", "repeats"},
    {"bad_object", "of type object"},
    {"bad_array", "of type array"},
    {"bad_null", "of type null"},
    {"bad_number", "of type number"},
    {"bad_notype", "needs \"type\""},
    {"bad_typelist", "needs \"type\""},
    {"bad_items", "under \"items\""},
    {"bad_anyof", "under \"anyOf\""},
    {"bad_allof_props", "under \"allOf\""},
    {"bad_additional", "under \"additionalProperties\""},
    {"bad_ref", "under \"$defs\""},
    {"bad_ifthen", "under \"then\""},
    {"bad_not", "under \"not\""},
    {"bad_root", "on the root"},
};
#define XH_NBAD (sizeof XH_BAD_TOOLS / sizeof *XH_BAD_TOOLS)

/* Send a request whose params are the JSON text p; its response. */
static struct json_object *xh_rpc(struct aur_conn *c, const char *id,
                                  const char *method, const char *p)
{
    struct json_object *m = req(id, method), *r;
    json_object_object_add(m, "params", json_tokener_parse(p));
    send_ok(c, m);
    r = wait_id(id, 5000);
    ck_assert_msg(r != NULL, "no response for %s", id);
    return r;
}

/* The names in a tools/list response, comma-separated (static). */
static const char *xh_names(struct json_object *m)
{
    static char out[4096];
    struct json_object *res, *tools, *n;
    out[0] = '\0';
    ck_assert(json_object_object_get_ex(m, "result", &res));
    ck_assert(json_object_object_get_ex(res, "tools", &tools));
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        json_object_object_get_ex(json_object_array_get_idx(tools, i), "name",
                                  &n);
        size_t l = strlen(out);
        snprintf(out + l, sizeof out - l, "%s%s", l ? "," : "",
                 json_object_get_string(n));
    }
    return out;
}

static void xh_list(struct aur_conn *c, const char *id, const char *params,
                    const char *want)
{
    struct json_object *m = xh_rpc(c, id, "tools/list", params);
    ck_assert_str_eq(xh_names(m), want);
    json_object_put(m);
}

/* The xparams of the fixture's last tools/call line (static). */
static const char *xh_last_call(void)
{
    static char out[20000];
    const char *l = fx_log(), *p, *last = NULL;
    for (p = l; (p = strstr(p, "rpc=tools/call ")); p++)
        last = p;
    ck_assert_ptr_nonnull(last);
    p = strstr(last, " xparams=");
    ck_assert_ptr_nonnull(p);
    p += 9;
    size_t n = strcspn(p, "\n");
    ck_assert_uint_lt(n, sizeof out);
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

/* A tools/call that must succeed; the Mcp-Param-* headers it carried. */
static const char *xh_call(struct aur_conn *c, const char *id,
                           const char *tool, const char *args)
{
    char p[16384];
    snprintf(p, sizeof p, "{\"name\":\"%s\",\"arguments\":%s}", tool, args);
    json_object_put(xh_rpc(c, id, "tools/call", p));
    return xh_last_call();
}

static struct aur_conn *xh_modern(const char *path)
{
    struct aur_conn *c;
    up2(NULL, NULL, NULL, NULL);
    ep_path(path);
    c = open_ok();
    set_proto(c, 1, "2026-07-28");
    return c;
}

START_TEST(xh_headers_sent)
{
    struct aur_conn *c = xh_modern("/xh");
    const char *x;

    xh_list(c, "l1", "{}", "t_ok,t_plain");
    x = xh_call(c, "c1", "t_ok",
                "{\"region\":\"us-west1\",\"priority\":42,\"verbose\":false,"
                "\"debug\":true,\"empty\":\"\",\"method_val\":\"test-method\","
                "\"nonascii\":\"Hello, \xe4\xb8\x96\xe7\x95\x8c\","
                "\"padded\":\" padded \",\"inner\":\"us west 1\","
                "\"nested\":{\"zone\":\"z1\"},\"x-mcp-header\":\"q\","
                "\"plain\":\"p\",\"score\":3.5}");
    ck_assert_str_eq(x, " mcp-param-region=[us-west1]"
                        " mcp-param-priority=[42]"
                        " mcp-param-verbose=[false]"
                        " mcp-param-debug=[true]"
                        " mcp-param-emptyval=[]"
                        " mcp-param-method=[test-method]"
                        " mcp-param-nonascii=[=?base64?SGVsbG8sIOS4lueVjA==?=]"
                        " mcp-param-padded=[=?base64?IHBhZGRlZCA=?=]"
                        " mcp-param-inner_space=[us west 1]"
                        " mcp-param-zone=[z1]");
    /* Mcp-Param-Method is not Mcp-Method */
    ck_assert(fx_count("mcp-method=tools/call protocol") == 0);
    ck_assert(fx_count("rpc=tools/call mcp-method=tools/call "
                       "mcp-protocol-version=2026-07-28 mcp-session-id=- "
                       "mcp-name=t_ok") == 1);
    /* null and absent: no header; a path through a non-object ends */
    x = xh_call(c, "c2", "t_ok",
                "{\"region\":\"r\",\"priority\":null,\"nested\":\"flat\"}");
    ck_assert_str_eq(x, " mcp-param-region=[r]");
    x = xh_call(c, "c3", "t_ok", "{\"priority\":-9007199254740991}");
    ck_assert_str_eq(x, " mcp-param-priority=[-9007199254740991]");
    /* no arguments member at all */
    x = xh_call(c, "c4", "t_ok", "null");
    ck_assert_str_eq(x, " -");
    x = xh_call(c, "c5", "t_plain", "{\"region\":\"r\"}");
    ck_assert_str_eq(x, " -");
    /* a long value still fits (the old line bound was 1 KiB) */
    char args[7000];
    snprintf(args, sizeof args, "{\"region\":\"%06000d\"}", 7);
    x = xh_call(c, "c6", "t_ok", args);
    ck_assert_uint_eq(strlen(x), strlen(" mcp-param-region=[]") + 6000);
    OPS->close(c, t_now() + 2000);
}
END_TEST

START_TEST(xh_invalid_tools_dropped)
{
    struct aur_conn *c = xh_modern("/xh");
    char needle[256];

    xh_list(c, "l1", "{}", "t_ok,t_plain");
    for (size_t i = 0; i < XH_NBAD; i++) {
        snprintf(needle, sizeof needle,
                 "1 [test] org.test.http: tool %s dropped: ",
                 XH_BAD_TOOLS[i].tool);
        ck_assert_msg(log_count(needle) == 1, "no warning for %s",
                      XH_BAD_TOOLS[i].tool);
        const char *l = strstr(log_text(), needle);
        size_t n = strcspn(l, "\n");
        ck_assert_msg(memmem(l, n, XH_BAD_TOOLS[i].why,
                             strlen(XH_BAD_TOOLS[i].why)) != NULL,
                      "%s: %.*s", XH_BAD_TOOLS[i].tool, (int)n, l);
    }
    ck_assert_int_eq(log_count(" dropped: "), (int)XH_NBAD);
    /* schema text never reaches the log raw */
    ck_assert(!log_has("\r"));
    ck_assert(!log_has("\t"));
    ck_assert(!log_has("\nX-Evil"));
    OPS->close(c, t_now() + 2000);
}
END_TEST

START_TEST(xh_pages_and_relist)
{
    struct aur_conn *c = xh_modern("/xh?paged=1");

    xh_list(c, "l1", "{}", "t_ok,t_plain");
    /* the listing is not complete yet: no table to go by */
    ck_assert_str_eq(xh_call(c, "c1", "t_ok", "{\"region\":\"a\"}"), " -");
    xh_list(c, "l2", "{\"cursor\":\"p2\"}", "t_page2");
    ck_assert(log_has("tool bad_empty dropped: "));
    ck_assert_str_eq(xh_call(c, "c2", "t_ok", "{\"region\":\"a\"}"),
                     " mcp-param-region=[a]");
    ck_assert_str_eq(xh_call(c, "c3", "t_page2", "{\"k\":\"v\"}"),
                     " mcp-param-k=[v]");
    /* a new listing replaces the old table once complete */
    xh_list(c, "l3", "{\"variant\":\"b\"}", "t_ok");
    ck_assert_str_eq(xh_call(c, "c4", "t_ok", "{\"region\":\"a\"}"), " -");
    ck_assert_str_eq(xh_call(c, "c5", "t_page2", "{\"k\":\"v\"}"), " -");
    OPS->close(c, t_now() + 2000);
}
END_TEST

START_TEST(xh_unsendable_values)
{
    static const char *const bad[] = {
        "{\"priority\":9007199254740992}",
        "{\"priority\":-9007199254740992}",
        "{\"priority\":1.5}",
        "{\"region\":{\"a\":1}}",
        "{\"nested\":{\"zone\":[\"z\"]}}",
    };
    struct aur_conn *c = xh_modern("/xh");
    struct aur_error err;
    char p[512], big[9200];

    xh_list(c, "l1", "{}", "t_ok,t_plain");
    int seen = msg_count();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct json_object *m = req("u", "tools/call");
        snprintf(p, sizeof p, "{\"name\":\"t_ok\",\"arguments\":%s}", bad[i]);
        json_object_object_add(m, "params", json_tokener_parse(p));
        /* Refused before any byte left: the call is provably not sent. */
        ck_assert_int_eq(OPS->send(c, m, t_now() + 2000, &err),
                         AUR_E_NOT_SENT);
        ck_assert_int_eq(err.detail, AUR_E_INVAL);
        json_object_put(m);
        ck_assert_ptr_nonnull(strstr(err.msg, "cannot be sent in Mcp-Param-"));
        ck_assert_ptr_null(strstr(err.msg, "900719925474099"));
    }
    ck_assert_ptr_nonnull(strstr(err.msg, "argument \"nested.zone\""));
    /* over the header bound: refused before anything is sent */
    snprintf(big, sizeof big,
             "{\"name\":\"t_ok\",\"arguments\":{\"region\":\"%09000d\"}}", 1);
    struct json_object *m = req("u", "tools/call");
    json_object_object_add(m, "params", json_tokener_parse(big));
    ck_assert_int_eq(OPS->send(c, m, t_now() + 2000, &err), AUR_E_NOT_SENT);
    ck_assert_int_eq(err.detail, AUR_E_LIMIT);
    json_object_put(m);
    ck_assert_ptr_nonnull(strstr(err.msg, "too long"));
    sleep_ms(200);
    ck_assert_int_eq(fx_count("rpc=tools/call "), 0);
    ck_assert_int_eq(msg_count(), seen);
    OPS->close(c, t_now() + 2000);
}
END_TEST

START_TEST(xh_legacy_ignored)
{
    struct aur_conn *c;
    struct json_object *m;
    char want[2048] = "t_ok,t_plain";

    up2(NULL, NULL, NULL, NULL);
    ep_path("/legacy?noget=1&xh=1");
    c = open_ok();
    send_ok(c, req("i0", "initialize"));
    json_object_put(wait_id("i0", 5000));
    send_ok(c, note("notifications/initialized"));
    ck_assert(fx_wait("rpc=notifications/initialized", 3000));
    set_proto(c, 0, "2025-11-25");
    for (size_t i = 0; i < XH_NBAD; i++) {
        strcat(want, ",");
        strcat(want, XH_BAD_TOOLS[i].tool);
    }
    m = xh_rpc(c, "l1", "tools/list", "{}");
    ck_assert_str_eq(xh_names(m), want);
    json_object_put(m);
    ck_assert(!log_has(" dropped: "));
    ck_assert_str_eq(xh_call(c, "c1", "t_ok", "{\"region\":\"us\"}"), " -");
    /* no table either: a value no header could carry is no reason to
     * refuse the call */
    ck_assert_str_eq(xh_call(c, "c2", "t_ok",
                             "{\"priority\":9007199254740993}"),
                     " -");
    OPS->close(c, t_now() + 3000);
}
END_TEST

void http_xheader_tests(Suite *s)
{
    TCase *t;

    t = tcase_create("xheader");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 30);
    tcase_add_test(t, xh_headers_sent);
    tcase_add_test(t, xh_invalid_tools_dropped);
    tcase_add_test(t, xh_pages_and_relist);
    tcase_add_test(t, xh_unsendable_values);
    tcase_add_test(t, xh_legacy_ignored);
    suite_add_tcase(s, t);
}
