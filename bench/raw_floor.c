/*
 * raw_floor.c - the floor client: the least work a client can do on the
 * wire.  It spawns the server(s), writes pre-serialised JSON-RPC lines and
 * counts replies by line ends; it never parses JSON (the only look inside a
 * line is a substring search for the tools/list "nextCursor").
 *
 * MCP mode (default): A copies of CMD are spawned and handshaken
 * concurrently with the modern revision: server/discover, then
 * subscriptions/listen (its ack is one notification line), then tools/list
 * pages until a page without nextCursor.  Then N tools/call of TOOL on the
 * first server, K in flight (K = 1: sequential).
 *
 * Serve mode (-s): CMD is `aurora-mcp serve -c DIR`; startup ends at the
 * ready line, then N serve "call" lines, K in flight.
 *
 * Relay mode (-r): the zero-work stand-in for `aurora-mcp serve`, the
 * floor for the serve rows.  It does the MCP startup above with CMD, prints
 * a ready line, then turns each `serve` request line on stdin into a
 * pre-serialised tools/call of TOOL to CMD and each reply line back into a
 * pre-serialised serve response on stdout.  Its only look inside a line is
 * copying the serve "id" digits, so the answers carry the right ids (CMD
 * answers in order).  Stdin EOF ends it.  Driven as `raw_floor -s -- raw_floor
 * -r -- CMD`, it costs the same pipe hop as serve and nothing else.
 *
 * Prints one JSON line:
 *   {"client":"raw"|"raw-serve","start_ms":..,"calls":N,"call_ms":..,
 *    "cpu_ms":..,"rss_kib":..,"child_rss_kib":..}
 * cpu_ms/rss_kib are this process; child_rss_kib is VmHWM of the first
 * child read from /proc before it is closed (for -s: the aurora-mcp serve
 * process itself).
 *
 * Usage: raw_floor [-s|-r] [-a APPS] [-n N] [-k K] [-t TOOL] -- CMD [ARG]...
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmhwm.h"

#define MAX_APPS 1024
#define IDLE_MS 30000 /* no byte for this long = the run failed */

#define ENV "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
    "\"io.modelcontextprotocol/clientCapabilities\":{}," \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"raw-floor\"," \
    "\"version\":\"0\"}}"

enum phase { P_DISCOVER, P_LISTEN, P_LIST, P_READY };

struct conn {
    pid_t pid;
    int in, out;         /* child's stdin (we write), stdout (we read) */
    char *buf;
    size_t len, cap;
    enum phase phase;
    unsigned next_id;
};

static struct conn conns[MAX_APPS];
static int n_apps = 1;
static int serve_mode, relay_mode;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
    fprintf(stderr, "raw_floor: %s\n", what);
    exit(1);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("write to server failed");
        p += w;
        n -= (size_t)w;
    }
}

static void spawn(struct conn *c, char **argv)
{
    int to[2], from[2];

    if (pipe(to) < 0 || pipe(from) < 0)
        die("pipe");
    c->pid = fork();
    if (c->pid < 0)
        die("fork");
    if (c->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        /* Siblings' pipe ends were opened close-on-exec below. */
        execvp(argv[0], argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    fcntl(to[1], F_SETFD, FD_CLOEXEC);
    fcntl(from[0], F_SETFD, FD_CLOEXEC);
    c->in = to[1];
    c->out = from[0];
    c->cap = 1 << 16;
    c->buf = malloc(c->cap);
    if (!c->buf)
        die("out of memory");
}

/* Read what is available; return the number of complete lines consumed,
 * and copy the last complete line's cursor test into *has_cursor. */
static int read_lines(struct conn *c, int *has_cursor, char *cursor,
                      size_t cursor_size)
{
    ssize_t r;
    int lines = 0;
    size_t start = 0;

    if (c->cap - c->len < 4096) {
        char *nb = realloc(c->buf, c->cap * 2);

        if (!nb)
            die("out of memory");
        c->buf = nb;
        c->cap *= 2;
    }
    do
        r = read(c->out, c->buf + c->len, c->cap - c->len);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        die("server closed its stdout");
    c->len += (size_t)r;
    for (size_t i = 0; i < c->len; i++) {
        if (c->buf[i] != '\n')
            continue;
        if (has_cursor) {
            /* The one look inside a line: follow tools/list pages. */
            char *p;

            c->buf[i] = '\0';
            p = strstr(c->buf + start, "\"nextCursor\":\"");
            *has_cursor = p != NULL;
            if (p) {
                size_t k = 0;

                p += strlen("\"nextCursor\":\"");
                while (p[k] && p[k] != '"' && k + 1 < cursor_size) {
                    cursor[k] = p[k];
                    k++;
                }
                cursor[k] = '\0';
            }
        }
        lines++;
        start = i + 1;
    }
    memmove(c->buf, c->buf + start, c->len - start);
    c->len -= start;
    return lines;
}

static void send_line(struct conn *c, const char *fmt, const char *arg)
{
    char line[1024];
    int n = snprintf(line, sizeof line, fmt, c->next_id++, arg);

    if (n < 0 || (size_t)n >= sizeof line)
        die("line too long");
    write_all(c->in, line, (size_t)n);
}

/* One step of a connection's handshake after a line arrived. */
static void advance(struct conn *c, int has_cursor, const char *cursor)
{
    switch (c->phase) {
    case P_DISCOVER:
        send_line(c, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":"
                  "\"subscriptions/listen\",\"params\":{\"_meta\":" ENV
                  ",\"notifications\":{\"toolsListChanged\":true}}}\n%s",
                  "");
        c->phase = P_LISTEN;
        break;
    case P_LISTEN:
        send_line(c, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":"
                  "\"tools/list\",\"params\":{\"_meta\":" ENV "}}\n%s", "");
        c->phase = P_LIST;
        break;
    case P_LIST:
        if (has_cursor)
            send_line(c, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":"
                      "\"tools/list\",\"params\":{\"_meta\":" ENV
                      ",\"cursor\":\"%s\"}}\n", cursor);
        else
            c->phase = P_READY;
        break;
    case P_READY:
        break;
    }
}

static void startup(void)
{
    struct pollfd pf[MAX_APPS];
    int ready = 0;

    if (!serve_mode)
        for (int i = 0; i < n_apps; i++)
            send_line(&conns[i], "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":"
                      "\"server/discover\",\"params\":{\"_meta\":" ENV
                      "}}\n%s", "");
    while (ready < n_apps) {
        int pr;

        for (int i = 0; i < n_apps; i++) {
            pf[i].fd = conns[i].phase == P_READY ? -1 : conns[i].out;
            pf[i].events = POLLIN;
        }
        pr = poll(pf, (nfds_t)n_apps, IDLE_MS);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            die("startup timed out");
        for (int i = 0; i < n_apps; i++) {
            struct conn *c = &conns[i];
            char cursor[256];
            int more = 0, lines;

            if (!(pf[i].revents & (POLLIN | POLLHUP)))
                continue;
            lines = read_lines(c, &more, cursor, sizeof cursor);
            if (serve_mode && lines) {
                c->phase = P_READY;
                ready++;
                continue;
            }
            /* One request is outstanding per phase: one line advances. */
            if (lines > 1)
                die("unexpected extra line during handshake");
            if (lines) {
                advance(c, more, cursor);
                ready += c->phase == P_READY;
            }
        }
    }
}

/* All N call lines, serialised before the clock starts. */
static char **build_calls(long n, const char *tool)
{
    char **v = calloc((size_t)n + 1, sizeof *v);

    if (!v)
        die("out of memory");
    for (long i = 0; i < n; i++) {
        char line[1024];
        int len;

        if (serve_mode)
            len = snprintf(line, sizeof line, "{\"id\":%ld,\"op\":\"call\","
                           "\"tool\":\"%s\",\"arguments\":{}}\n", i, tool);
        else
            len = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\","
                           "\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                           "{\"_meta\":" ENV ",\"name\":\"%s\","
                           "\"arguments\":{}}}\n", 1000000 + i, tool);
        if (len < 0 || (size_t)len >= sizeof line || !(v[i] = strdup(line)))
            die("cannot build call lines");
    }
    return v;
}

static void calls(char **lines, long n, long k)
{
    struct conn *c = &conns[0];
    long sent = 0, done = 0;

    while (done < n) {
        struct pollfd pf = { .fd = c->out, .events = POLLIN };
        int pr;

        while (sent < n && sent - done < k) {
            write_all(c->in, lines[sent], strlen(lines[sent]));
            sent++;
        }
        pr = poll(&pf, 1, IDLE_MS);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            die("calls timed out");
        done += read_lines(c, NULL, NULL, 0);
    }
}

/* The serve "id" value of a request line (digits only; the driver's ids
 * are numbers), or "null". */
static void serve_id(const char *line, char *id, size_t size)
{
    const char *p = strstr(line, "\"id\":");
    size_t k = 0;

    if (p)
        for (p += 5; *p >= '0' && *p <= '9' && k + 1 < size; p++)
            id[k++] = *p;
    if (!k)
        snprintf(id, size, "null");
    else
        id[k] = '\0';
}

/* Relay mode: stdin serve lines -> tools/call -> serve answers. */
static void relay(const char *tool)
{
    struct conn *c = &conns[0];
    char call[1024], (*fifo)[24] = NULL;
    size_t cap = 1 << 16, len = 0, fhead = 0, fn = 0, fcap = 0;
    char *in = malloc(cap);
    int call_len;
    unsigned long next = 2000000;
    bool in_open = true;

    if (!in)
        die("out of memory");
    printf("{\"ready\":true,\"tools\":0}\n");
    fflush(stdout);
    while (in_open || fn) {
        struct pollfd pf[2] = {{.fd = in_open ? 0 : -1, .events = POLLIN},
                               {.fd = c->out, .events = POLLIN}};
        int pr = poll(pf, 2, IDLE_MS);

        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            die("relay timed out");
        if (pf[0].revents) {
            ssize_t r;
            size_t start = 0;

            if (cap - len < 4096) {
                char *nb = realloc(in, cap * 2);
                if (!nb)
                    die("out of memory");
                in = nb;
                cap *= 2;
            }
            r = read(0, in + len, cap - len);
            if (r <= 0) {
                in_open = false;
                continue;
            }
            len += (size_t)r;
            for (size_t i = 0; i < len; i++) {
                if (in[i] != '\n')
                    continue;
                in[i] = '\0';
                if (fn == fcap) {
                    /* Grow the ring of ids waiting for a reply. */
                    size_t ncap = fcap ? fcap * 2 : 64;
                    char (*nf)[24] = malloc(ncap * sizeof *nf);
                    if (!nf)
                        die("out of memory");
                    for (size_t k = 0; k < fn; k++)
                        memcpy(nf[k], fifo[(fhead + k) % fcap], sizeof *nf);
                    free(fifo);
                    fifo = nf;
                    fcap = ncap;
                    fhead = 0;
                }
                serve_id(in + start, fifo[(fhead + fn) % fcap], sizeof *fifo);
                fn++;
                call_len = snprintf(call, sizeof call,
                                    "{\"jsonrpc\":\"2.0\",\"id\":%lu,"
                                    "\"method\":\"tools/call\",\"params\":"
                                    "{\"_meta\":" ENV ",\"name\":\"%s\","
                                    "\"arguments\":{}}}\n", next++, tool);
                if (call_len < 0 || (size_t)call_len >= sizeof call)
                    die("line too long");
                write_all(c->in, call, (size_t)call_len);
                start = i + 1;
            }
            memmove(in, in + start, len - start);
            len -= start;
        }
        if (pf[1].revents & (POLLIN | POLLHUP)) {
            int lines = read_lines(c, NULL, NULL, 0);
            char out[128];

            for (int i = 0; i < lines && fn; i++) {
                int n = snprintf(out, sizeof out, "{\"id\":%s,\"result\":"
                                 "{\"status\":\"succeeded\",\"content\":"
                                 "\"ok\"}}\n", fifo[fhead]);
                write_all(1, out, (size_t)n);
                fhead = (fhead + 1) % fcap;
                fn--;
            }
        }
    }
    free(in);
    free(fifo);
}

static void reap_all(void)
{
    for (int i = 0; i < n_apps; i++)
        close(conns[i].in);
    for (int i = 0; i < n_apps; i++) {
        /* Short naps: the floor's whole-process time is compared with
         * aurora-mcp's, so its own exit must not wait longer than the
         * server takes. */
        struct timespec ts = { 0, 100 * 1000 };
        int st;

        /* EOF on stdin is the shutdown signal; 5 s, then SIGKILL. */
        for (int tries = 0; tries < 50000; tries++) {
            if (waitpid(conns[i].pid, &st, WNOHANG) != 0)
                goto next;
            nanosleep(&ts, NULL);
        }
        kill(conns[i].pid, SIGKILL);
        waitpid(conns[i].pid, &st, 0);
next:
        close(conns[i].out);
        free(conns[i].buf);
    }
}

int main(int argc, char **argv)
{
    long n = 0, k = 1;
    const char *tool = "t0000";
    char **lines = NULL;
    struct rusage ru;
    double t0, t1, t2;
    long child_rss;
    int opt;

    while ((opt = getopt(argc, argv, "sra:n:k:t:")) != -1) {
        switch (opt) {
        case 's': serve_mode = 1; break;
        case 'r': relay_mode = 1; break;
        case 'a': n_apps = atoi(optarg); break;
        case 'n': n = strtol(optarg, NULL, 10); break;
        case 'k': k = strtol(optarg, NULL, 10); break;
        case 't': tool = optarg; break;
        default: goto usage;
        }
    }
    if (optind >= argc || n_apps < 1 || n_apps > MAX_APPS || n < 0 || k < 1 ||
        ((serve_mode || relay_mode) && n_apps != 1) ||
        (serve_mode && relay_mode))
        goto usage;
    signal(SIGPIPE, SIG_IGN);
    {
        /* A thousand Apps hold two descriptors each. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    if (relay_mode) {
        spawn(&conns[0], argv + optind);
        startup();
        relay(tool);
        reap_all();
        return 0;
    }
    if (n)
        lines = build_calls(n, tool);

    t0 = now_ms();
    for (int i = 0; i < n_apps; i++)
        spawn(&conns[i], argv + optind);
    startup();
    t1 = now_ms();
    if (n)
        calls(lines, n, k);
    t2 = now_ms();
    child_rss = vm_hwm_kib(conns[0].pid);
    getrusage(RUSAGE_SELF, &ru);
    reap_all();
    printf("{\"client\":\"%s\",\"start_ms\":%.3f,\"calls\":%ld,"
           "\"call_ms\":%.3f,\"cpu_ms\":%.3f,\"rss_kib\":%ld,"
           "\"child_rss_kib\":%ld}\n", serve_mode ? "raw-serve" : "raw",
           t1 - t0, n, t2 - t1,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3,
           ru.ru_maxrss, child_rss);
    for (long i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    return 0;
usage:
    fprintf(stderr, "usage: raw_floor [-s|-r] [-a APPS] [-n N] [-k K] "
            "[-t TOOL] -- CMD [ARG]...\n");
    return 2;
}
