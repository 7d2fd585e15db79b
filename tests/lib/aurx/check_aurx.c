/*
 * check_aurx.c - the rules lib/aurx shares between the core and the
 * plugins, tested once where they are written: strict UTF-8 decoding and
 * Python's whitespace (utf8.c), RFC 3339 to the stored UTC form
 * (rfc3339.c), growth with a ceiling (grow.c), the words for running
 * out of file descriptors (fdlimit.c).  The rules as each user applies them are tested by that
 * user's suite too (check_names, check_jsonx, check_journal,
 * check_ext_tool_contract, check_ext_world_events); this suite pins the
 * shared edges so a change to one file is seen by all of them.
 */
#include "fdlimit.h"
#include "grow.h"
#include "quote_span.h"
#include "rfc3339.h"
#include "utf8.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "support/check_main.h"

static size_t next(const char *s, size_t n, uint32_t *cp)
{
    return aur__utf8_next((const unsigned char *)s, n, cp);
}

START_TEST(utf8_boundaries)
{
    static const struct {
        const char *s;
        size_t n, len;
        uint32_t cp;
    } rows[] = {
        {"A", 1, 1, 0x41},
        {"\x7f", 1, 1, 0x7f},
        {"\xc2\x80", 2, 2, 0x80},         /* first two-byte */
        {"\xdf\xbf", 2, 2, 0x7ff},        /* last two-byte */
        {"\xe0\xa0\x80", 3, 3, 0x800},    /* first three-byte */
        {"\xed\x9f\xbf", 3, 3, 0xd7ff},   /* below the surrogates */
        {"\xee\x80\x80", 3, 3, 0xe000},   /* above them */
        {"\xef\xbf\xbf", 3, 3, 0xffff},
        {"\xf0\x90\x80\x80", 4, 4, 0x10000},
        {"\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff},
        {"\xe9\xa2\x91", 3, 3, 0x9891},
        /* refused: 0 */
        {"\x80", 1, 0, 0},                /* stray continuation */
        {"\xc0\x80", 2, 0, 0},            /* overlong NUL */
        {"\xc1\xbf", 2, 0, 0},            /* overlong */
        {"\xe0\x9f\xbf", 3, 0, 0},        /* overlong */
        {"\xed\xa0\x80", 3, 0, 0},        /* surrogate D800 */
        {"\xed\xbf\xbf", 3, 0, 0},        /* surrogate DFFF */
        {"\xf0\x8f\xbf\xbf", 4, 0, 0},    /* overlong */
        {"\xf4\x90\x80\x80", 4, 0, 0},    /* above U+10FFFF */
        {"\xf5\x80\x80\x80", 4, 0, 0},
        {"\xff", 1, 0, 0},
        {"\xc3", 1, 0, 0},                /* cut by n */
        {"\xe9\xa2\x91", 2, 0, 0},        /* cut by n */
        {"\xc3\x28", 2, 0, 0},            /* bad continuation */
        {"\xe9\xa2\x28", 3, 0, 0},
        {"\xf0\x9f\x98\x28", 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        uint32_t cp = 0xdeadbeef;
        size_t len = next(rows[i].s, rows[i].n, &cp);
        ck_assert_msg(len == rows[i].len, "row %zu: length %zu, want %zu", i,
                      len, rows[i].len);
        if (len)
            ck_assert_msg(cp == rows[i].cp, "row %zu: U+%04X", i,
                          (unsigned)cp);
        ck_assert_uint_eq(next(rows[i].s, rows[i].n, NULL), rows[i].len);
    }
}
END_TEST

/* Python: [c for c in range(0x110000) if chr(c).isspace()] */
START_TEST(py_space_is_pythons)
{
    static const uint32_t space[] = {
        0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20,
        0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
        0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
        0x202f, 0x205f, 0x3000};
    size_t k = 0, n = 0;

    for (uint32_t c = 0; c < 0x110000; c++) {
        bool want = k < sizeof space / sizeof *space && space[k] == c;
        if (aur__py_space(c) != want) /* one check call per failure only */
            ck_abort_msg("U+%04X", (unsigned)c);
        if (want)
            k++, n++;
    }
    ck_assert_uint_eq(n, sizeof space / sizeof *space);
}
END_TEST

static const char *utc(const char *s, bool offsets, int max_frac)
{
    static char out[AUR__UTC_SIZE];
    memset(out, 'x', sizeof out);
    return aur__rfc3339_utc(s, strlen(s), offsets, max_frac, out) ? out
                                                                   : NULL;
}

START_TEST(rfc3339_to_utc)
{
    static const struct {
        const char *in;
        bool offsets;
        int max_frac;
        const char *want; /* NULL: refused */
    } rows[] = {
        {"2026-05-01T08:30:00Z", false, 9, "2026-05-01T08:30:00Z"},
        {"2026-05-01t08:30:00z", false, 9, "2026-05-01T08:30:00Z"},
        {"2024-02-29T23:59:59.5Z", false, 9, "2024-02-29T23:59:59.500000Z"},
        {"2026-01-01T00:00:00.000000000Z", false, 9, "2026-01-01T00:00:00Z"},
        {"2026-01-01T00:00:00.0000000000Z", false, 9, NULL}, /* 10 digits */
        {"2026-01-01T00:00:00.0000000000Z", true, 0, "2026-01-01T00:00:00Z"},
        {"2026-01-01T00:00:00.1234569Z", true, 0,
         "2026-01-01T00:00:00.123456Z"}, /* kept to the microsecond */
        {"2026-05-01T08:30:00+05:30", false, 9, NULL},
        {"2026-05-01T08:30:00+05:30", true, 0, "2026-05-01T03:00:00Z"},
        {"2026-12-31T23:00:00-01:00", true, 0, "2027-01-01T00:00:00Z"},
        {"2024-03-01T00:30:00+01:00", true, 0, "2024-02-29T23:30:00Z"},
        {"0001-01-01T00:00:00Z", true, 0, "0001-01-01T00:00:00Z"},
        {"0001-01-01T00:30:00+01:00", true, 0, NULL}, /* year 0 in UTC */
        {"9999-12-31T23:59:59Z", true, 0, "9999-12-31T23:59:59Z"},
        {"9999-12-31T23:59:59-00:01", true, 0, NULL}, /* year 10000 */
        {"0000-01-01T00:00:00Z", true, 0, NULL},
        {"2023-02-29T00:00:00Z", true, 0, NULL},
        {"2100-02-29T00:00:00Z", true, 0, NULL},
        {"2000-02-29T00:00:00Z", true, 0, "2000-02-29T00:00:00Z"},
        {"2026-04-31T00:00:00Z", true, 0, NULL},
        {"2026-05-01T24:00:00Z", true, 0, NULL},
        {"2026-05-01T23:60:00Z", true, 0, NULL},
        {"2026-05-01T23:59:60Z", true, 0, NULL}, /* leap second */
        {"2026-05-01T08:30:00+24:00", true, 0, NULL},
        {"2026-05-01T08:30:00+05:60", true, 0, NULL},
        {"2026-05-01T08:30:00.Z", true, 0, NULL},
        {"2026-05-01T08:30:00", true, 0, NULL},
        {"2026-05-01 08:30:00Z", true, 0, NULL},
        {"2026-05-01T08:30:00ZZ", true, 0, NULL},
        {"2026-5-01T08:30:00Z", true, 0, NULL},
        {"", true, 0, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const char *got = utc(rows[i].in, rows[i].offsets, rows[i].max_frac);
        if (!rows[i].want)
            ck_assert_msg(!got, "%s: accepted as %s", rows[i].in, got);
        else
            ck_assert_msg(got && strcmp(got, rows[i].want) == 0,
                          "%s: %s, want %s", rows[i].in,
                          got ? got : "refused", rows[i].want);
    }
}
END_TEST

START_TEST(utc_format)
{
    char out[AUR__UTC_SIZE];

    aur__utc_format(0, 0, out);
    ck_assert_str_eq(out, "1970-01-01T00:00:00Z");
    aur__utc_format(1780000000, 1, out);
    ck_assert_str_eq(out, "2026-05-28T20:26:40.000001Z");
    aur__utc_format(-1, 999999, out);
    ck_assert_str_eq(out, "1969-12-31T23:59:59.999999Z");
    aur__utc_format(253402300799, 0, out);
    ck_assert_str_eq(out, "9999-12-31T23:59:59Z");
}
END_TEST

START_TEST(grow_doubles_to_ceiling)
{
    size_t cap = 0;
    int *v = aur__grow(NULL, &cap, 1, sizeof *v, 4, 10), *same;

    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(cap, 4);
    same = aur__grow(v, &cap, 4, sizeof *v, 4, 10); /* room already */
    ck_assert_ptr_eq(same, v);
    v = aur__grow(v, &cap, 5, sizeof *v, 4, 10);
    ck_assert_uint_eq(cap, 8);
    v = aur__grow(v, &cap, 9, sizeof *v, 4, 10); /* 16 capped to 10 */
    ck_assert_uint_eq(cap, 10);
    v[9] = 7;
    errno = 0;
    ck_assert_ptr_null(aur__grow(v, &cap, 11, sizeof *v, 4, 10));
    ck_assert_int_eq(errno, EFBIG);
    ck_assert_uint_eq(cap, 10); /* unchanged, still the caller's */
    ck_assert_int_eq(v[9], 7);
    free(v);

    /* max elements that cannot fit in size_t bytes: EFBIG, no wrap */
    cap = 0;
    errno = 0;
    ck_assert_ptr_null(aur__grow(NULL, &cap, SIZE_MAX / 8 + 1, 16, 1,
                                 SIZE_MAX));
    ck_assert_int_eq(errno, EFBIG);
    ck_assert_uint_eq(cap, 0);
}
END_TEST

START_TEST(buf_put_keeps_nul_and_bound)
{
    struct aur__buf b = {0};

    ck_assert_int_eq(aur__buf_put(&b, "", 0, 5), 0);
    ck_assert_str_eq(b.p, ""); /* an empty put still gives a string */
    ck_assert_int_eq(aur__buf_put(&b, "abc", 3, 5), 0);
    ck_assert_int_eq(aur__buf_put(&b, "de", 2, 5), 0);
    ck_assert_str_eq(b.p, "abcde");
    ck_assert_uint_eq(b.n, 5);
    ck_assert_int_eq(aur__buf_put(&b, "f", 1, 5), EFBIG);
    ck_assert_str_eq(b.p, "abcde");
    ck_assert_uint_eq(b.n, 5);
    for (int i = 0; i < 1000; i++) /* many doublings */
        ck_assert_int_eq(aur__buf_put(&b, "0123456789", 10, SIZE_MAX), 0);
    ck_assert_uint_eq(b.n, 10005);
    ck_assert_uint_eq(strlen(b.p), 10005);
    ck_assert(b.cap > b.n);
    free(b.p);
}
END_TEST

/* The limit in the words is the soft limit as it is when they are said. */
START_TEST(fd_text_names_the_limit)
{
    struct rlimit rl;
    char want[96], buf[96], small[12];

    ck_assert(aur__fd_exhausted(EMFILE));
    ck_assert(aur__fd_exhausted(ENFILE));
    ck_assert(!aur__fd_exhausted(EAGAIN));
    ck_assert(!aur__fd_exhausted(0));
    ck_assert(!aur__fd_exhausted(-24)); /* an AUR_E_* code, not an errno */
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    snprintf(want, sizeof want, "out of file descriptors (EMFILE, limit %llu)",
             (unsigned long long)rl.rlim_cur);
    ck_assert_str_eq(aur__fd_text(EMFILE, buf, sizeof buf), want);
    ck_assert_ptr_eq(aur__fd_text(EMFILE, buf, sizeof buf), buf);
    ck_assert(strncmp(aur__fd_text(ENFILE, buf, sizeof buf),
                      AUR__FD_WORDS " (ENFILE, system-wide limit",
                      strlen(AUR__FD_WORDS " (ENFILE, system-wide limit")) == 0);
    ck_assert_str_eq(aur__fd_text(ENOENT, buf, sizeof buf),
                     "No such file or directory");
    /* cut, never unterminated */
    ck_assert_str_eq(aur__fd_text(EMFILE, small, sizeof small), "out of file");
}
END_TEST

/* Room is what RLIMIT_NOFILE leaves beside the descriptors open now:
 * with the soft limit set 10 above them, 10 more fit and 11 do not;
 * below them, none. */
START_TEST(fd_room_counts_what_is_open)
{
    struct rlimit rl, low;
    int fd = open("/dev/null", O_RDONLY), used = 0;
    DIR *d;
    struct dirent *de;

    ck_assert_int_ge(fd, 0);
    ck_assert(aur__fd_room(8));
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    /* Counted as aur__fd_room counts them, its own directory's among
     * them (it holds one while it reads). */
    ck_assert_ptr_nonnull(d = opendir("/proc/self/fd"));
    while ((de = readdir(d)) != NULL)
        used += de->d_name[0] != '.';
    closedir(d);
    low = rl;
    low.rlim_cur = (rlim_t)used + 10;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    ck_assert(aur__fd_room(10));
    ck_assert(!aur__fd_room(11));
    close(fd); /* one more free */
    ck_assert(aur__fd_room(11));
    ck_assert(!aur__fd_room(12));
    low.rlim_cur = (rlim_t)used - 2; /* below what is open: none */
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    bool none = !aur__fd_room(1);
    /* Check reports through descriptors of its own: the limit back. */
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert(none);
}
END_TEST

/* The reference: aur__quote_stop, a byte at a time. */
static size_t span_ref(const unsigned char *s, size_t n, bool high)
{
    size_t i = 0;

    while (i < n && !aur__quote_stop(s[i], high))
        i++;
    return i;
}

static void span_agrees(const unsigned char *s, size_t n)
{
    ck_assert_uint_eq(aur__quote_span(s, n, true), span_ref(s, n, true));
    ck_assert_uint_eq(aur__quote_span(s, n, false), span_ref(s, n, false));
}

/* The eight-at-a-time span stops where a byte at a time does, in both
 * modes: every byte value at every place of three words (so in each lane,
 * and after bytes whose borrow could hide it), from every start offset,
 * the input ending just before it, just after it or at the end; then
 * seeded runs of mixed bytes and lengths. */
START_TEST(quote_span_matches_bytes)
{
    static const unsigned char pick[] = {0x20, 0x21, 0x22, 0x23, 0x5b,
                                         0x5c, 0x5d, 0x7f, 0x80, 0x1f,
                                         0x00, 0xff, 0xa2, 0xdc, 'a', 'a'};
    unsigned char buf[40];
    uint64_t seed = 0x9e3779b97f4a7c15u;

    for (int c = 0; c < 256; c++) {
        for (size_t at = 0; at < 24; at++) {
            memset(buf, 'a', sizeof buf);
            buf[at] = (unsigned char)c;
            for (size_t off = 0; off < 8 && off <= at; off++) {
                span_agrees(buf + off, at - off);
                span_agrees(buf + off, at - off + 1);
                span_agrees(buf + off, 32 - off);
            }
        }
    }
    for (int round = 0; round < 20000; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            /* mostly runs, so they reach past a word */
            buf[i] = (seed & 0xf00) ? (unsigned char)('a' + seed % 26)
                                    : pick[seed % sizeof pick];
        }
        span_agrees(buf, (size_t)(seed >> 40) % (sizeof buf + 1));
    }
}
END_TEST

/* aur__utf8_valid, byte by byte: the decoder over the whole input. */
static bool utf8_valid_bytes(const unsigned char *s, size_t n)
{
    size_t k;
    for (size_t i = 0; i < n; i += k)
        if (!(k = aur__utf8_next(s + i, n - i, NULL)))
            return false;
    return true;
}

/* The word skip agrees with the decoder: every byte value at every place
 * of three words of ASCII (each lane, first and last of a word, the
 * tail), from every start offset; then seeded runs of ASCII with well-
 * and ill-formed sequences. */
START_TEST(utf8_valid_matches_bytes)
{
    static const char *const pick[] = {"\xc3\xa9", "\xe9\xa2\x91",
                                       "\xf0\x9f\x98\x80", "\x80", "\xc3",
                                       "\xed\xa0\x80", "\xff", "\xc0\xaf"};
    unsigned char buf[48];
    uint64_t seed = 0x2545f4914f6cdd1du;

    for (int c = 0; c < 256; c++) {
        for (size_t at = 0; at < 24; at++) {
            memset(buf, 'a', sizeof buf);
            buf[at] = (unsigned char)c;
            for (size_t off = 0; off < 8 && off <= at; off++)
                for (size_t end = at - off; end <= 32 - off; end++)
                    ck_assert_int_eq(aur__utf8_valid(buf + off, end),
                                     utf8_valid_bytes(buf + off, end));
        }
    }
    for (int round = 0; round < 20000; round++) {
        size_t n = 0;
        while (n < 40) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            if (seed & 0xf00) {
                buf[n++] = (unsigned char)('a' + seed % 26);
            } else {
                const char *u = pick[seed % (sizeof pick / sizeof pick[0])];
                memcpy(buf + n, u, strlen(u));
                n += strlen(u);
            }
        }
        n = (size_t)(seed >> 40) % (n + 1);
        ck_assert_int_eq(aur__utf8_valid(buf, n), utf8_valid_bytes(buf, n));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("aurx");
    TCase *t = tcase_create("rules");

    tcase_set_timeout(t, 60); /* every code point, under sanitizers too */

    tcase_add_test(t, utf8_boundaries);
    tcase_add_test(t, utf8_valid_matches_bytes);
    tcase_add_test(t, py_space_is_pythons);
    tcase_add_test(t, rfc3339_to_utc);
    tcase_add_test(t, utc_format);
    tcase_add_test(t, grow_doubles_to_ceiling);
    tcase_add_test(t, buf_put_keeps_nul_and_bound);
    tcase_add_test(t, fd_text_names_the_limit);
    tcase_add_test(t, fd_room_counts_what_is_open);
    tcase_add_test(t, quote_span_matches_bytes);
    suite_add_tcase(s, t);
    return aur_check_main(s, NULL);
}
