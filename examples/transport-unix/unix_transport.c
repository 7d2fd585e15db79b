/*
 * unix_transport.c - transport-unix: MCP over a Unix domain socket, an
 * example third-party transport built out of tree against the installed
 * <aurora/aur_plugin.h> only (pkg-config aurora-mcp-plugin).
 *
 * The App is a server already listening on a socket; each connection is
 * one MCP session.  Framing is exactly MCP stdio's: one compact JSON-RPC
 * object per line, "\n" after each, no newline inside.
 *
 * An App file chooses it with `transport = unix` (or `transport-unix`):
 *
 *   [unix]
 *   path = run/app.sock       ; required; relative = against the config dir
 *   connect_timeout_ms = 2000 ; optional, 1..600000 (default 5000); the
 *                             ; App's own startup deadline bounds it too
 *
 * Plugin settings, [transport-unix] in host.ini (optional):
 *   max_line_bytes   default 4194304 (1024 .. 1073741824).  A longer
 *                    inbound line ends the connection as limit_exceeded.
 *
 * Threads: open, send, send_text, reopen and close from any thread, send
 * concurrently (one write token, still honouring each sender's deadline);
 * every sink call comes from the connection's one reader thread.
 */
#define _POSIX_C_SOURCE 200809L
#include <aurora/aur_plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define DEFAULT_CONNECT_MS 5000
#define PREFLIGHT_MS 2000 /* doctor: "a few seconds at most" */
#define SUN_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path))

/* One per plugin instance: no globals, init may run more than once. */
struct unix_state {
    const struct aur_host *host;
    struct aur_self *self;
    size_t max_line;
};

struct aur_conn {
    struct unix_state *st;
    struct aur_sink sink;    /* copied: zero past the host's struct_size */
    char package[128];       /* tags log lines */
    struct sockaddr_un addr; /* resolved once, at open */
    int64_t connect_ms;
    int fd;                  /* -1 after a failed reopen */
    pthread_t reader;        /* running while fd >= 0 */
    atomic_bool quiet;       /* this socket is being stopped by us: its
                              * reader owes nobody an on_closed */
    pthread_mutex_t mu;      /* guards writing, closing */
    pthread_cond_t cv;       /* on CLOCK_MONOTONIC */
    bool writing;            /* the write token is taken */
    bool closing;            /* close() started */
    bool broken;             /* (token) half a line went out: framing is
                              * lost, or no socket at all */
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */
/* ------------------------------------------------------------------ */

static int ms_to_poll(int64_t ms)
{
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Blank = absent, empty, or only spaces and tabs. */
static bool blank(const char *s)
{
    return !s || s[strspn(s, " \t")] == '\0';
}

/* The socket address of the endpoint's path.  An absolute path is taken
 * as written (sockets often live in /run); a relative one goes through
 * the host's rule for paths in an App file (cfg_path: relative to the
 * config directory, no ".."), so it reads like every other transport's.
 * Errors name the key's line, as cfg_fail does. */
static int endpoint_addr(const struct aur_host *h, const struct aur_cfg *ep,
                         struct sockaddr_un *sa, struct aur_error *err)
{
    const char *path = h->cfg_str(ep, "path", NULL);
    char *full;
    size_t n;

    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (blank(path))
        return h->cfg_fail(ep, "path", SIZE_MAX, err, "is blank");
    full = path[0] == '/' ? strdup(path)
                          : h->cfg_path(ep, "path", SIZE_MAX, 0, err);
    if (!full)
        return path[0] == '/'
                   ? aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory")
                   : err->code;
    n = strlen(full) + 1; /* with the NUL */
    if (n > SUN_PATH_MAX) {
        free(full);
        return h->cfg_fail(ep, "path", SIZE_MAX, err,
                           "the socket path is %zu bytes with its NUL "
                           "(after reading it against the config "
                           "directory); at most %zu fit",
                           n, SUN_PATH_MAX);
    }
    memcpy(sa->sun_path, full, n);
    free(full);
    return AUR_OK;
}

/* One non-blocking connect attempt loop, bounded by dl.  A Unix socket
 * connects at once, is refused, or says EAGAIN when the server's backlog
 * is full: only that one is worth retrying.  Returns the fd (blocking
 * again, close-on-exec) or -1 with errno set. */
static int connect_until(const struct aur_host *h,
                         const struct sockaddr_un *sa, aur_deadline dl)
{
    int e;

    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        0);

        if (fd < 0)
            return -1;
        if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0) {
            /* The reader blocks in recv; writers pass MSG_DONTWAIT. */
            int fl = fcntl(fd, F_GETFL);
            if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
                return fd;
        }
        e = errno;
        close(fd);
        if (e != EAGAIN && e != EINTR)
            break;
        if (aur_remaining_ms(h, dl) == 0) {
            e = ETIMEDOUT;
            break;
        }
        poll(NULL, 0, 20); /* backlog full: try again shortly */
    }
    errno = e;
    return -1;
}

/* ------------------------------------------------------------------ */
/* init / fini, check, preflight                                      */
/* ------------------------------------------------------------------ */

static int unix_init(const struct aur_host *host, struct aur_self *self,
                     const struct aur_cfg *cfg, void **state,
                     struct aur_error *err)
{
    struct unix_state *st;
    int64_t max_line;
    int rc;

    /* The descriptor already asks for a 1.4 host; this guards a host that
     * claims 1.4 with a short vtable. */
    if (!AUR_HAS(host, cfg_fail) || !AUR_HAS(host, cfg_path) || !host->log || !host->now_ms ||
        !host->cfg_str || !host->cfg_int || !host->json_parse)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "transport-unix needs a host with cfg_fail and "
                        "cfg_path (ABI 1.4)");
    rc = host->cfg_int(cfg, "max_line_bytes", 4194304, &max_line, err);
    if (rc != AUR_OK)
        return rc;
    if (max_line < 1024 || max_line > 1073741824)
        return aur_fail(err, AUR_E_CONFIG, 0, "[transport-unix] "
                        "max_line_bytes must be between 1024 and 1073741824");
    st = calloc(1, sizeof *st);
    if (!st)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    st->host = host;
    st->self = self;
    st->max_line = (size_t)max_line;
    *state = st;
    return AUR_OK;
}

static void unix_fini(void *state)
{
    free(state);
}

/* connect_timeout_ms, or the default when absent; err names its place. */
static int connect_ms(const struct aur_host *h, const struct aur_cfg *ep,
                      int64_t *ms, struct aur_error *err)
{
    int rc = h->cfg_int(ep, "connect_timeout_ms", DEFAULT_CONNECT_MS, ms,
                        err);

    if (rc == AUR_OK && (*ms < 1 || *ms > 600000))
        rc = h->cfg_fail(ep, "connect_timeout_ms", SIZE_MAX, err,
                         "must be between 1 and 600000");
    return rc;
}

/* At host creation, for every App using this transport.  The text always;
 * this machine (the socket exists) only for an App that will start. */
static int unix_check(void *state, const struct aur_cfg *ep, int active,
                      struct aur_error *err)
{
    const struct aur_host *h = ((struct unix_state *)state)->host;
    struct sockaddr_un sa;
    struct stat sb;
    int64_t ms;
    int rc = connect_ms(h, ep, &ms, err);

    if (rc != AUR_OK)
        return rc;
    if ((rc = endpoint_addr(h, ep, &sa, err)) != AUR_OK)
        return rc;
    if (!active)
        return AUR_OK;
    if (stat(sa.sun_path, &sb) != 0)
        return h->cfg_fail(ep, "path", SIZE_MAX, err, "%s: %s", sa.sun_path,
                           strerror(errno));
    if (!S_ISSOCK(sb.st_mode))
        return h->cfg_fail(ep, "path", SIZE_MAX, err, "%s: not a socket",
                           sa.sun_path);
    return AUR_OK;
}

/* doctor: one bounded connect, closed at once (the server sees a session
 * that ends before its first message). */
static void unix_preflight(void *state, const struct aur_cfg *ep,
                           void (*report)(void *ctx, const char *check,
                                          const char *problem),
                           void *ctx)
{
    static const char check[] = "socket accepts connections";
    const struct aur_host *h = ((struct unix_state *)state)->host;
    struct sockaddr_un sa;
    struct aur_error e;
    char why[AUR_ERR_MSG_SIZE];
    int fd;

    if (endpoint_addr(h, ep, &sa, &e) != AUR_OK) {
        report(ctx, check, e.msg);
        return;
    }
    fd = connect_until(h, &sa, aur_deadline_in(h, PREFLIGHT_MS));
    if (fd >= 0) {
        close(fd);
        report(ctx, check, NULL);
        return;
    }
    snprintf(why, sizeof why, "%s: %s", sa.sun_path, strerror(errno));
    report(ctx, check, why);
}

/* ------------------------------------------------------------------ */
/* The reader: lines in, sink calls out                               */
/* ------------------------------------------------------------------ */

static void deliver(struct aur_conn *c, const char *buf, size_t len)
{
    const struct aur_host *h = c->st->host;
    struct json_object *msg = NULL;
    struct aur_error e;
    int rc;

    if (len > 0 && buf[len - 1] == '\r') /* tolerate CRLF senders */
        len--;
    if (len == 0)
        return;
    aur_error_clear(&e);
    if (AUR_HAS(&c->sink, on_text)) {
        /* The host parses with its own strictness and budgets. */
        rc = c->sink.on_text(c->sink.ctx, buf, len, NULL, NULL, &e);
    } else {
        rc = h->json_parse(buf, len, &msg, &e);
        if (rc == AUR_OK && !json_object_is_type(msg, json_type_object)) {
            json_object_put(msg);
            rc = AUR_E_PROTOCOL;
        }
        if (rc == AUR_OK)
            c->sink.on_message(c->sink.ctx, msg); /* (transfer) */
    }
    /* The line may hold anything the server sent: log its size only. */
    if (rc != AUR_OK)
        h->log(c->st->self, AUR_LOG_WARN, "%s: dropped a frame (%zu bytes): "
               "%s", c->package, len, aur_rc_word(rc));
}

static void *reader_main(void *arg)
{
    struct aur_conn *c = arg;
    size_t max = c->st->max_line, cap = 65536, used = 0, scanned = 0;
    char *buf = malloc(cap);
    struct aur_error why;
    bool failed = false;

    aur_error_clear(&why);
    if (!buf) {
        aur_fail(&why, AUR_E_NOMEM, ENOMEM, "%s: out of memory", c->package);
        failed = true;
    }
    while (!failed) {
        ssize_t n;
        size_t start = 0;
        char *nl;

        if (used == cap) { /* room for at most max bytes plus one */
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                aur_fail(&why, AUR_E_NOMEM, ENOMEM, "%s: out of memory",
                         c->package);
                failed = true;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        n = recv(c->fd, buf + used, cap - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            break; /* EOF: the server ended the session, or close() */
        if (n < 0) {
            aur_fail(&why, AUR_E_IO, errno, "%s: socket read failed: %s",
                     c->package, strerror(errno));
            failed = true;
            break;
        }
        used += (size_t)n;
        while ((nl = memchr(buf + scanned, '\n', used - scanned))) {
            deliver(c, buf + start, (size_t)(nl - (buf + start)));
            start = scanned = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + start, used - start);
        used -= start;
        scanned = used;
        if (used > max) {
            /* No newline within the budget: framing cannot be trusted
             * any more, so the connection ends (the server sees EOF). */
            aur_fail(&why, AUR_E_LIMIT, 0, "%s: a line from the server is "
                     "over max_line_bytes (%zu)", c->package, max);
            shutdown(c->fd, SHUT_RDWR);
            failed = true;
        }
    }
    free(buf);
    /* Once, and not when close() or reopen() ended it. */
    if (!atomic_load(&c->quiet))
        c->sink.on_closed(c->sink.ctx, failed ? &why : NULL);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* open / send / close                                                */
/* ------------------------------------------------------------------ */

static void conn_free(struct aur_conn *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Connect (bounded by connect_timeout_ms and dl) and start the reader. */
static int conn_start(struct aur_conn *c, aur_deadline dl,
                      struct aur_error *err)
{
    const struct aur_host *h = c->st->host;
    aur_deadline cdl = aur_deadline_in(h, c->connect_ms);
    int rc;

    c->fd = connect_until(h, &c->addr, cdl < dl ? cdl : dl);
    if (c->fd < 0) {
        int e = errno;
        return aur_fail(err, e == ETIMEDOUT ? AUR_E_TIMEOUT : AUR_E_IO, e,
                        "%s: cannot connect to %s: %s", c->package,
                        c->addr.sun_path, strerror(e));
    }
    atomic_store(&c->quiet, false);
    c->broken = false;
    if ((rc = pthread_create(&c->reader, NULL, reader_main, c)) != 0) {
        close(c->fd);
        c->fd = -1;
        return aur_fail(err, AUR_E_NOMEM, rc, "cannot start a thread");
    }
    h->log(c->st->self, AUR_LOG_DEBUG, "%s: connected to %s", c->package,
           c->addr.sun_path);
    return AUR_OK;
}

/* shutdown wakes the reader's recv with EOF; after the join no sink call
 * of this socket can follow. */
static void conn_stop(struct aur_conn *c)
{
    if (c->fd < 0)
        return;
    atomic_store(&c->quiet, true);
    shutdown(c->fd, SHUT_RDWR);
    pthread_join(c->reader, NULL);
    close(c->fd);
}

static int unix_open(void *state, const struct aur_cfg *ep,
                     const struct aur_sink *sink, aur_deadline dl,
                     struct aur_conn **out, uint32_t *out_caps,
                     struct aur_error *err)
{
    struct unix_state *st = state;
    const struct aur_host *h = st->host;
    pthread_condattr_t ca;
    struct aur_conn *c;
    int rc;

    if (!sink || !sink->on_message || !sink->on_closed || !out)
        return aur_fail(err, AUR_E_INVAL, 0, "open: sink and out required");
    if (!(c = calloc(1, sizeof *c)))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    c->st = st;
    memcpy(&c->sink, sink, sink->struct_size < sizeof c->sink
                               ? sink->struct_size : sizeof c->sink);
    snprintf(c->package, sizeof c->package, "%s",
             h->cfg_str(ep, "package", "unix-app"));
    /* check already ran on this endpoint; these keep open honest if it
     * is called without one (an embedder's own host). */
    if ((rc = connect_ms(h, ep, &c->connect_ms, err)) != AUR_OK) {
        free(c);
        return rc;
    }
    if ((rc = endpoint_addr(h, ep, &c->addr, err)) != AUR_OK) {
        free(c);
        return rc;
    }
    atomic_init(&c->quiet, false);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    rc = pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        pthread_mutex_destroy(&c->mu);
        free(c);
        return aur_fail(err, AUR_E_NOMEM, rc, "cannot create a cond");
    }
    if ((rc = conn_start(c, dl, err)) != AUR_OK) {
        conn_free(c);
        return rc;
    }
    *out = c;
    if (out_caps)
        *out_caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_STREAM;
    return AUR_OK;
}

/* Wait for the write token until dl (a monotonic wait converted from the
 * host's clock by the time remaining, so no clock is assumed). */
static bool token_wait(struct aur_conn *c, aur_deadline dl)
{
    int64_t rem = aur_remaining_ms(c->st->host, dl);
    struct timespec ts;

    if (rem == INT64_MAX)
        return pthread_cond_wait(&c->cv, &c->mu) == 0;
    if (rem == 0)
        return false;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += rem / 1000;
    ts.tv_nsec += (rem % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT;
}

/* Write buf and "\n" whole before dl.  *done counts the bytes that left. */
static int write_line(struct aur_conn *c, const char *buf, size_t len,
                      aur_deadline dl, size_t *done, int *eno)
{
    while (*done < len + 1) {
        struct iovec iov[2];
        struct msghdr mh = {.msg_iov = iov};
        ssize_t n;

        if (*done < len)
            iov[mh.msg_iovlen++] = (struct iovec){(char *)buf + *done,
                                                  len - *done};
        iov[mh.msg_iovlen++] = (struct iovec){(char *)"\n", 1};
        /* MSG_NOSIGNAL: a gone server is EPIPE here, not a SIGPIPE that
         * would kill the host. */
        n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            *done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = c->fd, .events = POLLOUT};
            int64_t rem = aur_remaining_ms(c->st->host, dl);
            if (rem == 0) {
                *eno = ETIMEDOUT;
                return AUR_E_TIMEOUT;
            }
            poll(&p, 1, ms_to_poll(rem));
            continue; /* an error shows on the next sendmsg */
        }
        *eno = n < 0 ? errno : EIO;
        return *eno == EPIPE || *eno == ECONNRESET ? AUR_E_CLOSED : AUR_E_IO;
    }
    return AUR_OK;
}

/* Take the write token before dl; NOT_SENT when it cannot be had. */
static int token_take(struct aur_conn *c, aur_deadline dl,
                      struct aur_error *err)
{
    int rc = AUR_OK;

    pthread_mutex_lock(&c->mu);
    while (c->writing && token_wait(c, dl))
        ;
    if (c->writing)
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_TIMEOUT, "%s: another send "
                      "held the socket past the deadline", c->package);
    else if (c->closing)
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED, "%s: connection is "
                      "closing", c->package);
    else
        c->writing = true;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void token_give(struct aur_conn *c)
{
    pthread_mutex_lock(&c->mu);
    c->writing = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static int unix_send_text(struct aur_conn *c, const char *s, size_t len,
                          aur_deadline dl, struct aur_error *err)
{
    const char *why;
    size_t done = 0;
    int rc, eno = 0;

    if (!c || !s)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_INVAL, "send: no message");
    if ((rc = token_take(c, dl, err)) != AUR_OK)
        return rc;
    if (c->broken) { /* read and written only under the token */
        token_give(c);
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED, "%s: framing lost "
                        "by an earlier partial write", c->package);
    }
    rc = write_line(c, s, len, dl, &done, &eno);
    if (rc != AUR_OK && done > 0)
        c->broken = true; /* half a line is in the stream */
    token_give(c);
    if (rc == AUR_OK)
        return AUR_OK;
    why = rc == AUR_E_TIMEOUT ? "the server did not read before the deadline"
                              : strerror(eno);
    /* Only a write that put no byte in the socket is "not sent"; after a
     * partial one the server may still read a message out of it. */
    if (done == 0)
        return aur_fail(err, AUR_E_NOT_SENT, eno, "%s: not sent: %s",
                        c->package, why);
    return aur_fail(err, rc, eno, "%s: %s after %zu of %zu bytes; the "
                    "message may have reached the server", c->package, why,
                    done, len + 1);
}

static int unix_send(struct aur_conn *c, struct json_object *msg,
                     aur_deadline dl, struct aur_error *err)
{
    const char *s;
    size_t len = 0;

    if (!c || !msg)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_INVAL, "send: no message");
    /* PLAIN: one line; json-c escapes every newline inside strings. */
    s = json_object_to_json_string_length(
        msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!s)
        return aur_fail(err, AUR_E_NOT_SENT, ENOMEM, "%s: cannot serialise",
                        c->package);
    return unix_send_text(c, s, len, dl, err);
}

/* Synchronous.  dl is not needed: nothing here waits on the server.  The
 * token wait only covers a sender still finishing as close is called (the
 * contract forbids a concurrent send). */
static void unix_close(struct aur_conn *c, aur_deadline dl)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    while (c->writing && token_wait(c, dl))
        ;
    pthread_mutex_unlock(&c->mu);
    conn_stop(c);
    conn_free(c);
}

/* A new session from scratch (the era probe's fallback after a legacy
 * server left server/discover unanswered): the old socket goes quietly,
 * a new one connects to the same path. */
static int unix_reopen(struct aur_conn *c, aur_deadline dl,
                       struct aur_error *err)
{
    int rc;

    if (!c)
        return aur_fail(err, AUR_E_INVAL, 0, "reopen: no connection");
    if ((rc = token_take(c, dl, err)) != AUR_OK)
        return rc;
    conn_stop(c);
    rc = conn_start(c, dl, err);
    if (rc != AUR_OK)
        c->broken = true; /* no socket (fd -1), no reader: later sends are
                           * NOT_SENT, close has nothing to stop */
    token_give(c);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Descriptor                                                         */
/* ------------------------------------------------------------------ */

static const char *const unix_words[] = {"unix", NULL};

static const struct aur_cfg_key unix_keys[] = {
    {.key = "path", .required = 1},
    {.key = "connect_timeout_ms"},
    {.key = NULL},
};

static const struct aur_transport_ops unix_ops = {
    .struct_size = sizeof unix_ops,
    .caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_STREAM,
    .open = unix_open,
    .send = unix_send,
    .close = unix_close,
    .reopen = unix_reopen,
    .send_text = unix_send_text,
    .words = unix_words,
    .section = "unix",
    .keys = unix_keys,
    .check = unix_check,
    .preflight = unix_preflight,
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    static const struct aur_plugin_desc desc = {
        /* words/section/keys/check are 1.4: an older host would not know
         * how to configure this transport, so it must refuse it. */
        AUR_DESC_HEADER_MIN(AUR_KIND_TRANSPORT, 4),
        .name = "transport-unix",
        .version = "1.0.0",
        .summary = "MCP over a Unix domain socket (JSON lines)",
        .init = unix_init,
        .fini = unix_fini,
        .ops = &unix_ops,
    };
    (void)host_abi;
    return &desc;
}
