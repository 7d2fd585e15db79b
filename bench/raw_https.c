/*
 * raw_https.c - the HTTPS floor client: the least work a client can do
 * against a Streamable HTTP server over TLS with keep-alive.  One libcurl
 * easy handle (so one connection, reused), pre-serialised JSON-RPC bodies
 * and pre-built header lists; it never parses JSON (the only look inside
 * an answer is a substring search for "result" and the HTTP status).
 *
 * The modern revision (2026-07-28): every POST carries Content-Type,
 * Accept: application/json, text/event-stream, MCP-Protocol-Version and
 * Mcp-Method (plus Mcp-Name on tools/call), and every request's params
 * carry the _meta envelope (protocol version, client capabilities, client
 * info), as docs/protocol.md says the host sends.  Startup is one
 * server/discover POST (TLS handshake included); then N sequential
 * tools/call of TOOL on the same connection.
 *
 * Prints one JSON line, like raw_floor:
 *   {"client":"raw-https","start_ms":..,"calls":N,"call_ms":..,
 *    "cpu_ms":..,"rss_kib":..,"child_rss_kib":-1,"connects":C}
 * connects is how many connections libcurl opened (1 when keep-alive
 * held).  cpu_ms/rss_kib are this process.
 *
 * Usage: raw_https [-c CA_FILE] [-n N] [-t TOOL] URL
 * Not a test: bench/run.sh runs it.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define VERSION "2026-07-28"
#define ENV "{\"io.modelcontextprotocol/protocolVersion\":\"" VERSION "\"," \
    "\"io.modelcontextprotocol/clientCapabilities\":{}," \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"raw-https\"," \
    "\"version\":\"0\"}}"

static long connects; /* new connections over all transfers */

struct answer {
    char *buf;
    size_t len, cap;
};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "raw_https: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    exit(1);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct answer *a = ud;
    size_t len = size * n;

    if (a->cap - a->len < len + 1) {
        size_t cap = (a->cap ? a->cap : 4096);
        char *nb;

        while (cap - a->len < len + 1)
            cap *= 2;
        nb = realloc(a->buf, cap);
        if (!nb)
            return 0;
        a->buf = nb;
        a->cap = cap;
    }
    memcpy(a->buf + a->len, p, len);
    a->len += len;
    a->buf[a->len] = '\0';
    return len;
}

static struct curl_slist *headers(const char *method, const char *name)
{
    char line[512];
    struct curl_slist *l = NULL, *t;
    static const char version[] = "MCP-Protocol-Version: " VERSION;
    const char *fixed[] = { "Content-Type: application/json",
                            "Accept: application/json, text/event-stream",
                            version, "Expect:" };

    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        if (!(t = curl_slist_append(l, fixed[i])))
            die("out of memory", NULL);
        l = t;
    }
    snprintf(line, sizeof line, "Mcp-Method: %s", method);
    if (!(t = curl_slist_append(l, line)))
        die("out of memory", NULL);
    l = t;
    if (name) {
        snprintf(line, sizeof line, "Mcp-Name: %s", name);
        if (!(t = curl_slist_append(l, line)))
            die("out of memory", NULL);
        l = t;
    }
    return l;
}

/* One POST; the answer must be HTTP 200 with a "result" in it. */
static void post(CURL *h, struct curl_slist *hdr, const char *body,
                 struct answer *a)
{
    CURLcode rc;
    long status = 0;

    a->len = 0;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    rc = curl_easy_perform(h);
    if (rc != CURLE_OK)
        die("request failed", curl_easy_strerror(rc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    {
        long c = 0;

        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &c);
        connects += c;
    }
    if (status != 200 || !a->buf || !strstr(a->buf, "\"result\""))
        die("unexpected answer", a->buf ? a->buf : "(empty)");
}

int main(int argc, char **argv)
{
    const char *ca = NULL, *tool = "t0000", *url;
    long n = 0;
    struct answer a = { 0 };
    struct curl_slist *h_disc, *h_call;
    char **bodies, disc[1024];
    struct rusage ru;
    double t0, t1, t2;
    CURL *h;
    int opt;

    while ((opt = getopt(argc, argv, "c:n:t:")) != -1) {
        switch (opt) {
        case 'c': ca = optarg; break;
        case 'n': n = strtol(optarg, NULL, 10); break;
        case 't': tool = optarg; break;
        default: goto usage;
        }
    }
    if (optind != argc - 1 || n < 0)
        goto usage;
    url = argv[optind];
    if (strlen(tool) > 200)
        goto usage;

    /* Everything serialised before the clock starts. */
    snprintf(disc, sizeof disc, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
             "\"server/discover\",\"params\":{\"_meta\":" ENV "}}");
    bodies = calloc((size_t)n + 1, sizeof *bodies);
    if (!bodies)
        die("out of memory", NULL);
    for (long i = 0; i < n; i++) {
        char line[1024];
        int len = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":"
                           "%ld,\"method\":\"tools/call\",\"params\":{"
                           "\"_meta\":" ENV ",\"name\":\"%s\","
                           "\"arguments\":{}}}", 1000000 + i, tool);
        if (len < 0 || (size_t)len >= sizeof line ||
            !(bodies[i] = strdup(line)))
            die("cannot build call bodies", NULL);
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        die("curl_global_init failed", NULL);
    h = curl_easy_init();
    if (!h)
        die("curl_easy_init failed", NULL);
    h_disc = headers("server/discover", NULL);
    h_call = headers("tools/call", tool);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    if (ca)
        curl_easy_setopt(h, CURLOPT_CAINFO, ca);

    t0 = now_ms();
    post(h, h_disc, disc, &a);
    t1 = now_ms();
    for (long i = 0; i < n; i++)
        post(h, h_call, bodies[i], &a);
    t2 = now_ms();
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"client\":\"raw-https\",\"start_ms\":%.3f,\"calls\":%ld,"
           "\"call_ms\":%.3f,\"cpu_ms\":%.3f,\"rss_kib\":%ld,"
           "\"child_rss_kib\":-1,\"connects\":%ld}\n", t1 - t0, n, t2 - t1,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3,
           ru.ru_maxrss, connects);
    curl_slist_free_all(h_disc);
    curl_slist_free_all(h_call);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    for (long i = 0; i < n; i++)
        free(bodies[i]);
    free(bodies);
    free(a.buf);
    return 0;
usage:
    fprintf(stderr, "usage: raw_https [-c CA_FILE] [-n N] [-t TOOL] URL\n");
    return 2;
}
