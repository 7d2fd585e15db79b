/*
 * rfc3339.c - see rfc3339.h.  By hand, not strptime/strftime or timegm:
 * those depend on the locale and the TZ environment, and this runs for
 * every event and every commit.
 */
#include "rfc3339.h"

static bool num(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static int days_in(int y, int m)
{
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date, and back
 * (H. Hinnant's civil calendar algorithms). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* v as exactly n decimal digits (v >= 0 and < 10^n); returns the end. */
static char *digits_to(char *p, long v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* The stored form, from a unix time t already known to be in range. */
static void format(int64_t t, long usec, char out[AUR__UTC_SIZE])
{
    int64_t days = (t >= 0 ? t : t - 86399) / 86400, y;
    int64_t rem = t - days * 86400;
    int m, d;
    char *o = out;

    civil_from_days(days, &y, &m, &d);
    o = digits_to(o, (long)y, 4);
    *o++ = '-';
    o = digits_to(o, m, 2);
    *o++ = '-';
    o = digits_to(o, d, 2);
    *o++ = 'T';
    o = digits_to(o, (long)(rem / 3600), 2);
    *o++ = ':';
    o = digits_to(o, (long)(rem / 60 % 60), 2);
    *o++ = ':';
    o = digits_to(o, (long)(rem % 60), 2);
    if (usec) {
        *o++ = '.';
        o = digits_to(o, usec, 6);
    }
    *o++ = 'Z';
    *o = '\0';
}

void aur__utc_format(int64_t secs, long usec, char out[AUR__UTC_SIZE])
{
    format(secs, usec, out);
}

bool aur__rfc3339_utc(const char *s, size_t len, bool offsets, int max_frac,
                      char out[AUR__UTC_SIZE])
{
    int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
    long usec = 0;
    size_t p = 19;

    if (len < 20 || !num(s, 4, &y) || s[4] != '-' || !num(s + 5, 2, &mo) ||
        s[7] != '-' || !num(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !num(s + 11, 2, &h) || s[13] != ':' || !num(s + 14, 2, &mi) ||
        s[16] != ':' || !num(s + 17, 2, &se))
        return false;
    if (s[p] == '.') {
        int nd = 0;
        for (p++; p < len && s[p] >= '0' && s[p] <= '9'; p++, nd++) {
            if (max_frac > 0 && nd == max_frac)
                return false;
            if (nd < 6)
                usec = usec * 10 + (s[p] - '0');
        }
        if (nd == 0)
            return false;
        for (; nd < 6; nd++)
            usec *= 10;
    }
    if (p + 1 == len && (s[p] == 'Z' || s[p] == 'z')) {
        sign = 0;
    } else if (offsets && p + 6 == len && (s[p] == '+' || s[p] == '-') &&
               num(s + p + 1, 2, &oh) && s[p + 3] == ':' &&
               num(s + p + 4, 2, &om)) {
        sign = s[p] == '+' ? 1 : -1;
        if (oh > 23 || om > 59)
            return false;
    } else {
        return false;
    }
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) ||
        h > 23 || mi > 59 || se > 59)
        return false;
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
                sign * (oh * 3600 + om * 60);
    /* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z */
    if (t < -62135596800 || t > 253402300799)
        return false;
    format(t, usec, out);
    return true;
}
