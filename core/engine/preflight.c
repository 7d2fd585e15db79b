/*
 * preflight.c - what can be checked of an App without starting it
 * (aur_mcp_app_checks, for `aurora-mcp doctor`): its command found and
 * executable, each whitelisted variable set (never its value), its
 * server's host resolved and its port answering a TCP connection.  TLS
 * and everything above it is for the real start to show.
 */
#include "aur_setup.h"

#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONNECT_MS 3000 /* per address tried */

static struct json_object *check(const char *what, const char *problem)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "check", json_object_new_string(what));
    json_object_object_add(o, "ok", json_object_new_boolean(!problem));
    json_object_object_add(o, "problem",
                           problem ? json_object_new_string(problem) : NULL);
    return o;
}

/* The command as execvp would find it: a path, or the first executable
 * file of that name on PATH.  NULL, or why not. */
static const char *command_problem(const char *cmd, char *why, size_t size)
{
    const char *path = getenv("PATH");
    struct stat st;

    if (strchr(cmd, '/')) {
        if (stat(cmd, &st) != 0)
            snprintf(why, size, "%s: %s", cmd, strerror(errno));
        else if (!S_ISREG(st.st_mode) || access(cmd, X_OK) != 0)
            snprintf(why, size, "%s is not an executable file", cmd);
        else
            return NULL;
        return why;
    }
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char full[4096];
        snprintf(full, sizeof full, "%.*s/%s", (int)(n ? n : 1),
                 n ? p : ".", cmd);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
            access(full, X_OK) == 0)
            return NULL;
        p += n + (end ? 1 : 0);
        if (!end)
            break;
    }
    snprintf(why, size, "%s is not found on PATH", cmd);
    return why;
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
static const char *url_problem(const char *url, char *why, size_t size)
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

struct json_object *aur_mcp_app_checks(struct aur_mcp *h, const char *package)
{
    const struct aur__app_cfg *a = NULL;
    struct json_object *list;
    char why[512];

    for (size_t i = 0; h && package && i < h->napps && !a; i++)
        if (strcmp(h->apps[i].cfg->package, package) == 0)
            a = h->apps[i].cfg;
    if (!a)
        return NULL;
    list = json_object_new_array();
    if (a->transport == AUR__T_STDIO) {
        json_object_array_add(list,
                              check("command",
                                    command_problem(a->command, why,
                                                    sizeof why)));
        for (size_t i = 0; i < a->nenv; i++) {
            char what[160];
            snprintf(what, sizeof what, "env %s", a->env[i]);
            json_object_array_add(
                list, check(what, getenv(a->env[i]) ? NULL
                                                     : "not set in this "
                                                       "environment"));
        }
    } else {
        if (a->auth_env) {
            char what[160];
            snprintf(what, sizeof what, "auth_env %s", a->auth_env);
            json_object_array_add(
                list, check(what, getenv(a->auth_env)
                                      ? NULL
                                      : "not set in this environment"));
        }
        json_object_array_add(list, check("server reachable (TCP)",
                                          url_problem(a->url, why,
                                                      sizeof why)));
    }
    return list;
}
