/*
 * check_names.c - the grammars of aurora-semantics §1 and the agents
 * pattern matcher of §3.5, from the spec's own example tables.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <stdio.h>

#include "names.h"

struct ex {
    const char *s;
    bool ok;
};

#define CHECK_TABLE(fn, table)                                               \
    do {                                                                     \
        size_t i_;                                                           \
        for (i_ = 0; i_ < AUR__ARRAY_LEN(table); i_++)                       \
            ck_assert_msg(fn(table[i_].s) == table[i_].ok,                   \
                          "%s(\"%s\") should be %s", #fn, table[i_].s,       \
                          table[i_].ok ? "true" : "false");                  \
    } while (0)

START_TEST(package_grammar)
{
    static const struct ex t[] = {
        {"org.aurora.clock", true},
        {"com.github.windows_mcp", true},
        {"im.polaris.weather", true},
        {"a.b-c", true},
        {"a.b", true},
        {"a0.b_.c-", true},
        {"clock", false},
        {"Org.example.clock", false},
        {"org..clock", false},
        {"org.example.clock!", false},
        {"org.1x", false},
        {"org.example.", false},
        {".org.example", false},
        {"", false},
        {"org.Example", false},
        {"org._x", false},
        {"org.-x", false},
        {"org.ex ample", false},
        {"org.example\n", false},
    };
    CHECK_TABLE(aur__valid_package, t);
    ck_assert(!aur__valid_package(NULL));
}
END_TEST

START_TEST(raw_name_grammar)
{
    static const struct ex t[] = {
        {"now", true},        {"Screenshot", true}, {"WaitFor", true},
        {"create_event", true}, {"a-b_c9", true},   {"x", true},
        {"", false},          {"a.b", false},       {"x.Y", false},
        {"9lives", false},    {"_x", false},        {"-x", false},
        {" now", false},      {"now ", false},      {"no w", false},
        {"caf\xc3\xa9", false},
    };
    CHECK_TABLE(aur__valid_raw_name, t);
    ck_assert(!aur__valid_raw_name(NULL));
}
END_TEST

START_TEST(builtin_id_grammar)
{
    static const struct ex t[] = {
        {"aur.core.echo", true},
        {"aur.a.b.c", true},
        {"aur.mcp.org.example.clock.alpha", true},
        {"aur.core", false},
        {"aur", false},
        {"aur.", false},
        {"aur.core.Echo", false},
        {"aurx.core.echo", false},
        {"Aur.core.echo", false},
        {"aur.core..echo", false},
        {"aur.mcp.com.github.windows_mcp.Screenshot", false},
        {"aur.core.echo.", false},
    };
    CHECK_TABLE(aur__valid_builtin_id, t);
}
END_TEST

START_TEST(env_name_grammar)
{
    static const struct ex t[] = {
        {"CLOCK_TOKEN", true}, {"_x", true},     {"a1", true},
        {"ANONYMIZED_TELEMETRY", true},          {"BAD-NAME", false},
        {"1X", false},         {"", false},      {"A B", false},
        {"\xc3\x84X", false},  {"A=B", false},
    };
    CHECK_TABLE(aur__valid_env_name, t);
}
END_TEST

START_TEST(scope_grammar)
{
    static const struct ex t[] = {
        {"qq:group:100", true},
        {"calendar:personal", true},
        {"aurora:mcp:org.x.y", true},
        {"a b", true},
        {"\xe9\xa2\x91\xe9\x81\x93:\xe4\xb8\x80", true}, /* 频道:一 */
        {"{x}", true},
        {"a\x7f", true},
        {"", false},
        {" qq:1", false},
        {"qq:1 ", false},
        {"scope\nline", false},
        {"\tx", false},
        {"x\x01y", false},
        {"\xc2\xa0x", false},          /* U+00A0 leading */
        {"x\xe3\x80\x80", false},      /* U+3000 trailing */
        {"\xe2\x80\x8ax", false},      /* U+200A leading */
        {"x\xe2\x80\xa8", false},      /* U+2028 trailing */
        {"\xc2\x85x", false},          /* U+0085 leading */
        {"x\xe2\x80\xaf", false},      /* U+202F trailing */
        {"a\xc2\xa0" "b", true},       /* inside is fine */
        {"\xe2\x80\x8bx", true},       /* U+200B is not Python space */
        {"\xff", false},               /* not UTF-8 */
        {"\xc0\xaf", false},           /* overlong */
        {"\xed\xa0\x80", false},       /* surrogate */
    };
    char buf[1024];

    CHECK_TABLE(aur__valid_scope, t);
    ck_assert(!aur__valid_scope(NULL));
    memset(buf, 's', 256);
    buf[256] = '\0';
    ck_assert(aur__valid_scope(buf));
    buf[256] = 's';
    buf[257] = '\0';
    ck_assert(!aur__valid_scope(buf));
    /* 256 code points of 3 bytes each: the limit is code points. */
    for (int i = 0; i < 256; i++)
        memcpy(buf + 3 * i, "\xe4\xb8\x80", 3);
    buf[768] = '\0';
    ck_assert(aur__valid_scope(buf));
    memcpy(buf + 768, "\xe4\xb8\x80", 4);
    ck_assert(!aur__valid_scope(buf));
}
END_TEST

START_TEST(event_id_grammar)
{
    static const struct ex t[] = {
        {"e-1", true},          {"A", true},          {"0:a.b_c-d", true},
        {"contains space", false}, {"-lead", false},  {"", false},
        {".x", false},          {"a/b", false},       {"a\xc3\xa9", false},
    };
    char buf[200];

    CHECK_TABLE(aur__valid_event_id, t);
    memset(buf, 'e', 160);
    buf[160] = '\0';
    ck_assert(aur__valid_event_id(buf));
    buf[160] = 'e';
    buf[161] = '\0';
    ck_assert(!aur__valid_event_id(buf));
}
END_TEST

START_TEST(utf8_length)
{
    ck_assert_int_eq(aur__utf8_len("", 0), 0);
    ck_assert_int_eq(aur__utf8_len("abc", 3), 3);
    ck_assert_int_eq(aur__utf8_len("\xe9\xa2\x91\xe9\x81\x93", 6), 2);
    ck_assert_int_eq(aur__utf8_len("\xf0\x9f\x98\x80x", 5), 2);
    ck_assert_int_eq(aur__utf8_len("\xc3\xa9", 2), 1);
    /* n bounds the scan: a cut sequence is invalid. */
    ck_assert_int_eq(aur__utf8_len("\xc3\xa9", 1), -1);
    ck_assert_int_eq(aur__utf8_len("\xff", 1), -1);
    ck_assert_int_eq(aur__utf8_len("\xc0\x80", 2), -1);
    ck_assert_int_eq(aur__utf8_len("\xe0\x80\xaf", 3), -1);
    ck_assert_int_eq(aur__utf8_len("\xed\xbf\xbf", 3), -1);
    ck_assert_int_eq(aur__utf8_len("\xf4\x90\x80\x80", 4), -1);
    ck_assert_int_eq(aur__utf8_len("\x80", 1), -1);
    ck_assert_int_eq(aur__utf8_len("a\0b", 3), 3);
}
END_TEST

struct pm {
    const char *pat, *id;
    bool ok;
};

START_TEST(pattern_matching)
{
    static const struct pm t[] = {
        {"aur.mcp.org.example.clock.*", "aur.mcp.org.example.clock.now", 1},
        {"aur.mcp.org.example.clock.*", "aur.mcp.org.example.clock.a.b", 0},
        {"aur.mcp.org.example.clock.*", "aur.mcp.org.example.clockx.now", 0},
        {"aur.mcp.**", "aur.mcp.org.example.clock.now", 1},
        {"aur.mcp.**", "aur.mcp.x", 1},
        {"aur.mcp.**", "aur.mcp", 0},
        {"aur.mcp.**", "aur.core.echo", 0},
        {"**", "aur.core.echo", 1},
        {"**.now", "aur.mcp.a.b.now", 1},
        {"**.now", "now", 0},
        {"aur.**.now", "aur.x.now", 1},
        {"aur.**.now", "aur.now", 0},
        {"aur.**.**.now", "aur.a.b.now", 1},
        {"aur.**.**.now", "aur.a.now", 0},
        {"aur.core.echo", "aur.core.echo", 1},
        {"aur.core.echo", "aur.core.echo2", 0},
        {"aur.core.ec?o", "aur.core.echo", 1},
        {"aur.core.ec?o", "aur.core.eco", 0},
        {"aur.core?echo", "aur.core.echo", 0},
        {"aur*", "aur.core.echo", 0},
        {"aur.c*", "aur.core", 1},
        {"aur.*e", "aur.core", 1},
        {"aur.*x*", "aur.core", 0},
        {"aur.c**e", "aur.core", 1},
        {"aur.c**e", "aur.c.e", 0},
        {"aur.[a-c]ore", "aur.core", 1},
        {"aur.[!a-c]ore", "aur.core", 0},
        {"aur.[^a-c]ore", "aur.dore", 1},
        {"aur.[]x]", "aur.]", 1},
        {"aur.[a-]", "aur.-", 1},
        {"aur.[c-a]ore", "aur.core", 0},
        {"aur.[abc", "aur.a", 0},
        {"a.S*", "a.Screenshot", 1},
        {"a.s*", "a.Screenshot", 0},
        {"", "aur.x", 0},
    };
    size_t i;

    for (i = 0; i < AUR__ARRAY_LEN(t); i++)
        ck_assert_msg(aur__pattern_match(t[i].pat, t[i].id) == t[i].ok,
                      "match(\"%s\", \"%s\") should be %d", t[i].pat,
                      t[i].id, t[i].ok);
    ck_assert(!aur__pattern_match(NULL, "a"));
    ck_assert(!aur__pattern_match("a", NULL));
}
END_TEST

START_TEST(pattern_many_double_stars_is_fast)
{
    char pat[4096], id[4096];
    size_t n = 0, m = 0;
    int i;

    for (i = 0; i < 500; i++) {
        memcpy(pat + n, "**.", 3);
        n += 3;
        memcpy(id + m, "a.", 2);
        m += 2;
    }
    memcpy(pat + n, "b", 2);
    memcpy(id + m, "c", 2);
    ck_assert(!aur__pattern_match(pat, id));
    id[m] = 'b';
    ck_assert(aur__pattern_match(pat, id));
}
END_TEST

START_TEST(pattern_wildcards)
{
    ck_assert(aur__pattern_has_wildcard("aur.mcp.*"));
    ck_assert(aur__pattern_has_wildcard("aur.mcp.?"));
    ck_assert(aur__pattern_has_wildcard("aur.[ab]"));
    ck_assert(aur__pattern_has_wildcard("**"));
    ck_assert(!aur__pattern_has_wildcard("aur.core.echo"));
    ck_assert(!aur__pattern_has_wildcard(""));
    ck_assert(!aur__pattern_has_wildcard(NULL));
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *g = tcase_create("grammars");
    TCase *p = tcase_create("patterns");

    tcase_add_test(g, package_grammar);
    tcase_add_test(g, raw_name_grammar);
    tcase_add_test(g, builtin_id_grammar);
    tcase_add_test(g, env_name_grammar);
    tcase_add_test(g, scope_grammar);
    tcase_add_test(g, event_id_grammar);
    tcase_add_test(g, utf8_length);
    suite_add_tcase(s, g);
    tcase_add_test(p, pattern_matching);
    tcase_add_test(p, pattern_many_double_stars_is_fast);
    tcase_add_test(p, pattern_wildcards);
    suite_add_tcase(s, p);
    return s;
}

int main(void) { return aur_check_main(names_suite(), NULL); }
