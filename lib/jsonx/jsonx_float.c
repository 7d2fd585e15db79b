/*
 * jsonx_float.c - doubles as text: Python's repr() formatter and a
 * locale-proof strtod, for the canonical serializer and the parser.
 *
 * repr() prints the shortest decimal that reads back as the same double
 * (ties: the one nearest the exact value).  We find it by asking printf
 * for the correctly rounded p-digit decimal, p = 1..17, and stopping at
 * the first p where it round-trips.  Near a power of two the rounding
 * interval is lopsided, so the nearest p-digit decimal may miss it while
 * the one on the other side hits; we therefore also try the neighbouring
 * p-digit decimal.  Those two bracket the double, so if no p-digit
 * decimal round-trips, neither does, and the search is exact.
 *
 * printf and strtod follow LC_NUMERIC.  strtod gets a private "C" locale
 * (created once, never freed: it is immutable and shared by all
 * threads); printf output is read digit by digit, so whatever decimal
 * point the locale prints is skipped.
 */
#include "aur_setup.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include <json-c/json.h>

#include "jsonx_int.h"

#define MAX_DIGITS 17 /* always enough to round-trip a double */

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

double aur__json_strtod(const char *s)
{
    pthread_once(&c_locale_once, make_c_locale);
    /* Without memory for a locale object, fall back to the process one
     * (the "C" locale unless the embedder called setlocale). */
    if (c_locale == (locale_t)0)
        return strtod(s, NULL);
    return strtod_l(s, NULL, c_locale);
}

/* A decimal d[0].d[1]..d[n-1] x 10^exp, digits as ASCII. */
struct dec {
    char d[MAX_DIGITS + 1];
    int n;
    int exp;
};

/* The correctly rounded p-digit decimal of a > 0, from printf. */
static bool nearest_dec(double a, int p, struct dec *out)
{
    char tmp[64];
    const char *s, *e;
    int len = snprintf(tmp, sizeof tmp, "%.*e", p - 1, a);

    if (len <= 0 || (size_t)len >= sizeof tmp)
        return false;
    e = strchr(tmp, 'e');
    if (!e)
        return false;
    out->n = 0;
    for (s = tmp; s < e; s++)
        if (*s >= '0' && *s <= '9' && out->n < p)
            out->d[out->n++] = *s;
    out->d[out->n] = '\0';
    out->exp = atoi(e + 1);
    return out->n == p;
}

/* *dc moved by one unit in its last digit (dir +1 or -1), keeping p
 * digits: 9.99e4 + 1 -> 1.00e5, 1.00e5 - 1 -> 9.99e4.  False if that
 * would reach zero. */
static bool step_dec(struct dec *dc, int dir)
{
    int i = dc->n - 1;

    if (dir > 0) {
        while (i >= 0 && dc->d[i] == '9')
            dc->d[i--] = '0';
        if (i < 0) {
            dc->d[0] = '1';
            dc->exp++;
        } else {
            dc->d[i]++;
        }
        return true;
    }
    while (i >= 0 && dc->d[i] == '0')
        dc->d[i--] = '9';
    if (i < 0)
        return false;
    dc->d[i]--;
    if (dc->d[0] == '0') {
        if (dc->n == 1)
            return false;
        /* 0.99 -> 9.99: every digit was 0 but the first (which was 1), so
         * all the others are already 9 now. */
        dc->d[0] = '9';
        dc->exp--;
    }
    return true;
}

/* The double nearest to *dc. */
static double dec_value(const struct dec *dc)
{
    char tmp[64];

    snprintf(tmp, sizeof tmp, "%c.%se%d", dc->d[0], dc->d + 1, dc->exp);
    return aur__json_strtod(tmp);
}

/* Shortest round-tripping digits of a > 0, trailing zeros removed. */
static void shortest_dec(double a, struct dec *out)
{
    struct dec c, nb;
    double v;
    int p;

    for (p = 1; p <= MAX_DIGITS; p++) {
        if (!nearest_dec(a, p, &c))
            break;
        v = dec_value(&c);
        if (v == a)
            goto found;
        /* Rounding is monotonic, so v < a means c < a: the neighbour to
         * try is the next p-digit decimal above c, else the one below. */
        nb = c;
        if (step_dec(&nb, v < a ? 1 : -1) && dec_value(&nb) == a) {
            c = nb;
            goto found;
        }
    }
    /* 17 digits always round-trip; only a printf failure gets here. */
    nearest_dec(a, MAX_DIGITS, &c);
found:
    while (c.n > 1 && c.d[c.n - 1] == '0')
        c.d[--c.n] = '\0';
    *out = c;
}

int aur__json_repr_double(double d, char *buf, size_t size)
{
    struct dec c;
    char *o = buf, *end = buf + size;
    int i;

    if (!isfinite(d) || size < AUR__JSON_REPR_SIZE)
        return -1;
    if (signbit(d))
        *o++ = '-';
    if (d == 0) {
        c.d[0] = '0';
        c.d[1] = '\0';
        c.n = 1;
        c.exp = 0;
    } else {
        shortest_dec(fabs(d), &c);
    }
    if (c.exp < -4 || c.exp >= 16) {
        *o++ = c.d[0];
        if (c.n > 1) {
            *o++ = '.';
            memcpy(o, c.d + 1, (size_t)c.n - 1);
            o += c.n - 1;
        }
        o += snprintf(o, (size_t)(end - o), "e%c%02d", c.exp < 0 ? '-' : '+',
                      c.exp < 0 ? -c.exp : c.exp);
    } else if (c.exp < 0) {
        *o++ = '0';
        *o++ = '.';
        for (i = -1; i > c.exp; i--)
            *o++ = '0';
        memcpy(o, c.d, (size_t)c.n);
        o += c.n;
    } else {
        /* Integer part: exp + 1 digits, padded with zeros past the
         * significant ones; then the rest, or ".0". */
        for (i = 0; i <= c.exp; i++)
            *o++ = i < c.n ? c.d[i] : '0';
        *o++ = '.';
        if (c.n > c.exp + 1) {
            memcpy(o, c.d + c.exp + 1, (size_t)(c.n - c.exp - 1));
            o += c.n - c.exp - 1;
        } else {
            *o++ = '0';
        }
    }
    *o = '\0';
    return (int)(o - buf);
}

bool aur__json_big_digits(struct json_object *v, const char **digits)
{
    const char *s, *q;

    if (!json_object_is_type(v, json_type_double))
        return false;
    s = json_object_get_userdata(v);
    if (!s)
        return false;
    q = s + (*s == '-');
    if (*q < '1' || *q > '9')
        return false;
    while (*q >= '0' && *q <= '9')
        q++;
    if (*q != '\0')
        return false;
    *digits = s;
    return true;
}
