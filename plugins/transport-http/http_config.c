/*
 * http_config.c - the [http] section of an App file, as this transport
 * owns it (ABI 1.4; its keys are in http_keys.c): the check of its
 * values when the host is created, and the checks `aurora-mcp doctor`
 * runs without starting it.  Part of the backend: url rules need libcurl.
 *
 * Rules (docs/transports.md): url is https, written strictly
 * (http_url_problem); auth_env names a variable holding a bearer token,
 * set and non-empty for an App that starts (never its value in an error
 * or a log); ca_file is relative to the config directory (the host's
 * cfg_path), and a regular file for an App that starts.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include "env_rule.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONNECT_MS 3000 /* per address tried by preflight */

int http_check(void *state, const struct aur_cfg *ep, int active,
               struct aur_error *err)
{
    const struct aur_host *h = ((struct http_state *)state)->host;
    const char *v, *why;
    struct stat st;
    char *ca;

    if ((why = http_url_problem(h->cfg_str(ep, "url", ""))))
        return h->cfg_fail(ep, "url", SIZE_MAX, err, "%s", why);
    if ((v = h->cfg_str(ep, "auth_env", NULL))) {
        const char *tok = getenv(v);
        if (!aur__valid_env_name(v))
            return h->cfg_fail(ep, "auth_env", SIZE_MAX, err,
                               "must be an environment variable name "
                               "[A-Za-z_][A-Za-z0-9_]*");
        if (active && (!tok || !*tok))
            return h->cfg_fail(ep, "auth_env", SIZE_MAX, err,
                               "environment variable %s is %s", v,
                               tok ? "empty" : "not set");
    }
    if (!h->cfg_str(ep, "ca_file", NULL))
        return AUR_OK;
    /* Links followed wherever they lead: a linked system bundle. */
    if (!(ca = h->cfg_path(ep, "ca_file", SIZE_MAX, 0, err)))
        return err->code;
    if (active && (stat(ca, &st) != 0 || !S_ISREG(st.st_mode))) {
        free(ca);
        return h->cfg_fail(ep, "ca_file", SIZE_MAX, err,
                           "%s is not a readable regular file",
                           h->cfg_str(ep, "ca_file", ""));
    }
    free(ca);
    return AUR_OK;
}

/* One connect with a timeout; 0 or an errno. */
static int try_connect(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
                                       SOCK_CLOEXEC,
                    ai->ai_protocol);
    int e = 0;
    socklen_t len = sizeof e;

    if (fd < 0)
        return errno;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (errno != EINPROGRESS)
            e = errno;
        else if (poll(&p, 1, CONNECT_MS) != 1)
            e = ETIMEDOUT;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
            e = errno;
    }
    close(fd);
    return e;
}

/* https://host[:port]/... -> host and port (443). */
static const char *reach_problem(const char *url, char *why, size_t size)
{
    char host[256], port[8] = "443";
    const char *h = url + strlen("https://"), *end;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int e = ECONNREFUSED, g;

    if (*h == '[') { /* [v6]:port */
        end = strchr(h, ']');
        if (!end)
            return "the URL's host cannot be read";
        snprintf(host, sizeof host, "%.*s", (int)(end - h - 1), h + 1);
        end++;
    } else {
        end = h + strcspn(h, ":/?#");
        snprintf(host, sizeof host, "%.*s", (int)(end - h), h);
    }
    if (*end == ':')
        snprintf(port, sizeof port, "%.*s", (int)strcspn(end + 1, "/?#"),
                 end + 1);
    if ((g = getaddrinfo(host, port, &hints, &res)) != 0) {
        snprintf(why, size, "%s does not resolve: %s", host, gai_strerror(g));
        return why;
    }
    for (struct addrinfo *ai = res; ai && e; ai = ai->ai_next)
        e = try_connect(ai);
    freeaddrinfo(res);
    if (!e)
        return NULL;
    snprintf(why, size, "%s port %s does not answer: %s", host, port,
             strerror(e));
    return why;
}

void http_preflight(void *state, const struct aur_cfg *ep,
                    void (*report)(void *ctx, const char *check,
                                   const char *problem),
                    void *ctx)
{
    const struct aur_host *h = ((struct http_state *)state)->host;
    const char *auth = h->cfg_str(ep, "auth_env", NULL);
    char why[512];

    if (auth) {
        char what[160];
        snprintf(what, sizeof what, "auth_env %s", auth);
        report(ctx, what, getenv(auth) ? NULL : "not set in this environment");
    }
    report(ctx, "server reachable (TCP)",
           reach_problem(h->cfg_str(ep, "url", ""), why, sizeof why));
}
