/*
 * http_url.c - URL rules for the configured url and every redirect hop
 * (docs/transports.md, [http]), origins, and header value encoding.
 *
 * Parsing uses libcurl's URL API (CURLU) so that what we check is exactly
 * what curl will connect to.  A URL is accepted iff its scheme is https
 * (any case), it names a host, and it carries no userinfo and no
 * fragment; query and port are allowed.  The origin is
 * "https://<lower-case host>:<port>" with the default port filled in, so
 * https://H/x and https://h:443/y share one origin.
 *
 * Reasons written to err never quote the URL: it may carry secrets in
 * its userinfo or query.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool http_visible_ascii(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7E)
            return false;
    return true;
}

static bool has_part(CURLU *u, CURLUPart part)
{
    char *v = NULL;
    CURLUcode uc = curl_url_get(u, part, &v, 0);
    bool r = uc == CURLUE_OK && v != NULL;
    curl_free(v);
    return r;
}

/* u holds a parsed URL: apply the rules and fill the outputs. */
static int check_parsed(CURLU *u, char **out_url,
                        char origin[HTTP_ORIGIN_SIZE], struct aur_error *err)
{
    char *scheme = NULL, *host = NULL, *port = NULL, *full = NULL;
    int rc = AUR_E_INVAL;

    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        strcasecmp(scheme, "https") != 0) {
        aur_fail(err, rc, 0, "not an https URL");
        goto out;
    }
    if (has_part(u, CURLUPART_USER) || has_part(u, CURLUPART_PASSWORD) ||
        has_part(u, CURLUPART_OPTIONS)) {
        aur_fail(err, rc, 0, "URL carries credentials (userinfo)");
        goto out;
    }
    if (has_part(u, CURLUPART_FRAGMENT)) {
        aur_fail(err, rc, 0, "URL carries a fragment");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host ||
        !*host) {
        aur_fail(err, rc, 0, "URL has no host");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
            CURLUE_OK ||
        !port) {
        aur_fail(err, rc, 0, "URL has no usable port");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK || !full) {
        aur_fail(err, rc, 0, "URL cannot be rebuilt");
        goto out;
    }
    for (char *h = host; *h; h++)
        *h = (char)tolower((unsigned char)*h);
    if ((size_t)snprintf(origin, HTTP_ORIGIN_SIZE, "https://%s:%s", host,
                         port) >= HTTP_ORIGIN_SIZE) {
        aur_fail(err, rc, 0, "URL host is too long");
        goto out;
    }
    *out_url = strdup(full);
    rc = *out_url ? AUR_OK : aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(full);
    return rc;
}

/* Control bytes and spaces are never part of a URL we accept; curl would
 * otherwise percent-encode or trim some of them silently.  Nor is an
 * empty authority ("https:///x"), which curl would read leniently. */
static bool clean_text(const char *s)
{
    const char *a = strstr(s, "://");
    if (a && a[3] == '/')
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s == 0x7F)
            return false;
    return true;
}

/*
 * curl does not always print what it would read back: "https://%33/"
 * prints as "https://3/", which it then reads as the IPv4 address
 * 0.0.0.3.  The origin must be that of the URL curl is really given (the
 * canonical one), so re-read the canonical form until it is a fixed
 * point (a few passes; a URL that never settles is refused).
 */
static int settle(int rc, char **out_url, char origin[HTTP_ORIGIN_SIZE],
                  struct aur_error *err)
{
    if (rc != AUR_OK)
        return rc; /* *out_url was never set */
    for (int pass = 0; rc == AUR_OK && pass < 3; pass++) {
        CURLU *u = curl_url();
        char *again = NULL;
        bool same;

        if (!u) {
            rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
            break;
        }
        if (curl_url_set(u, CURLUPART_URL, *out_url,
                         CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
            rc = aur_fail(err, AUR_E_INVAL, 0, "URL cannot be rebuilt");
        else
            rc = check_parsed(u, &again, origin, err);
        curl_url_cleanup(u);
        if (rc != AUR_OK)
            break;
        same = strcmp(again, *out_url) == 0;
        free(*out_url);
        *out_url = again;
        if (same)
            return AUR_OK;
    }
    if (rc == AUR_OK)
        rc = aur_fail(err, AUR_E_INVAL, 0, "URL cannot be rebuilt");
    free(*out_url);
    *out_url = NULL;
    return rc;
}

int http_url_check(const char *url, char **out_url,
                   char origin[HTTP_ORIGIN_SIZE], struct aur_error *err)
{
    CURLU *u;
    int rc;

    if (!url || !*url || !clean_text(url))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "URL is empty, has no host, or has spaces or "
                        "control characters");
    u = curl_url();
    if (!u)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) !=
        CURLUE_OK)
        rc = aur_fail(err, AUR_E_INVAL, 0, "URL does not parse");
    else
        rc = settle(check_parsed(u, out_url, origin, err), out_url, origin,
                    err);
    curl_url_cleanup(u);
    return rc;
}

int http_url_redirect(const char *base, const char *location, char **out_url,
                      char origin[HTTP_ORIGIN_SIZE], struct aur_error *err)
{
    CURLU *u;
    int rc;

    if (!location || !*location || !clean_text(location))
        return aur_fail(err, AUR_E_INVAL, 0, "redirect Location is empty or "
                                            "has spaces or control "
                                            "characters");
    u = curl_url();
    if (!u)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    /* Setting a URL onto a handle holding base resolves it relatively. */
    if (curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_URL, location, CURLU_NON_SUPPORT_SCHEME) !=
            CURLUE_OK)
        rc = aur_fail(err, AUR_E_INVAL, 0, "redirect Location does not parse");
    else
        rc = settle(check_parsed(u, out_url, origin, err), out_url, origin,
                    err);
    curl_url_cleanup(u);
    if (rc != AUR_OK && err) {
        /* err->msg cannot be both the format argument and the target. */
        char why[AUR_ERR_MSG_SIZE];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = aur_fail(err, rc, 0, "redirect refused: %.200s", why);
    }
    return rc;
}

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64_wrap(const unsigned char *s, size_t n)
{
    size_t out_len = 9 + (n + 2) / 3 * 4 + 2 + 1;
    char *o = malloc(out_len), *p;

    if (!o)
        return NULL;
    memcpy(o, "=?base64?", 9);
    p = o + 9;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        *p++ = B64[(v >> 18) & 63];
        *p++ = B64[(v >> 12) & 63];
        *p++ = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        *p++ = i + 2 < n ? B64[v & 63] : '=';
    }
    memcpy(p, "?=", 3);
    return o;
}

char *http_header_value(const char *v, size_t len)
{
    const unsigned char *s = (const unsigned char *)v;
    bool plain = len > 0;
    char *o;

    for (size_t i = 0; plain && i < len; i++) {
        bool ws = s[i] == ' ' || s[i] == '\t';
        if (ws && (i == 0 || i + 1 == len))
            plain = false;
        else if (!ws && (s[i] < 0x21 || s[i] > 0x7E))
            plain = false;
    }
    /* A value that already looks encoded must be encoded again, or the
     * server would decode it. */
    if (plain && len >= 11 && memcmp(v, "=?base64?", 9) == 0 &&
        memcmp(v + len - 2, "?=", 2) == 0)
        plain = false;
    if (!plain && len > 0)
        return base64_wrap(s, len);
    o = malloc(len + 1);
    if (o) {
        memcpy(o, v, len);
        o[len] = '\0';
    }
    return o;
}

/*
 * The written form a configured url must have, checked when the host is
 * created (http_check): stricter than what curl accepts (ASCII host
 * characters, no empty port, percent-escapes well formed), so that what a
 * person wrote is what is connected to.  fuzz_url holds the two together:
 * whatever this accepts, http_url_check accepts with the origin the text
 * names.
 */
static bool hexdig(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

static bool host_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* RFC 3986 pchar plus '/' and '?', with '%' checked by the caller. */
static bool path_char(int c)
{
    return host_char(c) || c == '~' || (c && strchr("!$&'()*+,;=:@/?", c));
}

const char *http_url_problem(const char *url)
{
    const char *p, *auth, *aend, *host_end;

    for (p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return "must not contain blanks, control or non-ASCII "
                   "characters";
    if (strncasecmp(url, "https://", 8) != 0)
        return "must be an https:// URL";
    if (strchr(url, '#'))
        return "must not contain a fragment (#...)";
    auth = url + 8;
    aend = auth + strcspn(auth, "/?");
    if (memchr(auth, '@', (size_t)(aend - auth)))
        return "must not contain userinfo (user@ or user:password@)";
    if (*auth == '[') {
        host_end = memchr(auth, ']', (size_t)(aend - auth));
        if (!host_end || host_end == auth + 1)
            return "has a malformed IPv6 host";
        for (p = auth + 1; p < host_end; p++)
            if (!hexdig((unsigned char)*p) && *p != ':' && *p != '.')
                return "has a malformed IPv6 host";
        {
            /* The literal itself must parse, as curl will insist later. */
            char lit[64];
            struct in6_addr a6;
            size_t ln = (size_t)(host_end - auth - 1);
            if (ln >= sizeof lit)
                return "has a malformed IPv6 host";
            memcpy(lit, auth + 1, ln);
            lit[ln] = '\0';
            if (inet_pton(AF_INET6, lit, &a6) != 1)
                return "has a malformed IPv6 host";
        }
        host_end++;
    } else {
        for (host_end = auth; host_end < aend && *host_end != ':'; host_end++)
            if (!host_char((unsigned char)*host_end))
                return "has a bad character in the host";
        if (host_end == auth)
            return "has no host";
        if (host_end - auth > 253) /* the DNS limit */
            return "has a host name longer than 253 characters";
    }
    if (host_end < aend) {
        long port = 0;
        if (*host_end != ':' || host_end + 1 == aend || aend - host_end > 6)
            return "has a bad port";
        for (p = host_end + 1; p < aend; p++) {
            if (*p < '0' || *p > '9')
                return "has a bad port";
            port = port * 10 + (*p - '0');
        }
        if (port < 1 || port > 65535)
            return "has a bad port";
    }
    for (p = aend; *p; p++) {
        if (*p == '%') {
            if (!hexdig((unsigned char)p[1]) || !hexdig((unsigned char)p[2]))
                return "has a bad percent-escape";
            p += 2;
        } else if (!path_char((unsigned char)*p)) {
            return "has a character that must be percent-encoded";
        }
    }
    return NULL;
}