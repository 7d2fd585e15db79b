/*
 * driver.c - the client under test for the official MCP conformance suite
 * (@modelcontextprotocol/conformance, client scenarios), built only on the
 * embedding API <aurora/aur_host.h>.
 *
 * The suite starts a scenario server on plain http and runs this program
 * with the server URL as the last argument and the scenario name in
 * MCP_CONFORMANCE_SCENARIO (plus MCP_CONFORMANCE_CONTEXT, a JSON object,
 * for scenarios that dictate the calls).  aurora-mcp refuses plain http, so
 * the driver starts tls-proxy.mjs (a TLS-terminating proxy on 127.0.0.1
 * with the run's throwaway certificate), writes a config directory with one
 * streamable_http App at the proxy (plugins: transport-http and, as in a
 * real deployment, ext-tool-contract, so the client declares
 * org.aurorabot/tool-contract), starts the host, and then does what a
 * host does with a server: discover the tools (aur_mcp_start) and call
 * them.  Which calls is the only scenario-specific part (see plan_for).
 *
 * stdout gets one JSON line for the startup and one per call (the suite
 * keeps it as stdout.txt).  Exit status: 0 the host started and every
 * planned call succeeded, 1 otherwise, 2 usage.
 *
 * Usage: aur-conformance-driver -n NODE -s PROXY_SCRIPT -c CERT -k KEY
 *            -a CA_PEM -p PLUGIN_DIR [-t TIMEOUT_S] [-l LOG_LEVEL] URL
 *
 * Threads: main does everything; one thread only waits for SIGINT/SIGTERM
 * (the suite's timeout) and cancels the host, so the run still cleans up.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROXY_WAIT_MS 15000
#define PROXY_EXIT_MS 2000
#define MAX_CALLS 64
#define PACKAGE "org.conformance.scenario"

struct opts {
    const char *node, *proxy, *cert, *key, *ca, *plugin_dir, *url;
    const char *log_level;
    int timeout_s;
};

/* One planned tools/call: the raw tool name and its arguments (owned). */
struct call {
    char *name;
    struct json_object *args;
};

struct proxy {
    pid_t pid;
    int in; /* our end of its stdin: closing it stops the proxy */
    int port;
};

/* The host the signal thread may cancel; g_lock keeps it from cancelling
 * a host that main is destroying. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct aur_mcp *g_host;
static atomic_int g_signalled;

static void set_host(struct aur_mcp *h)
{
    pthread_mutex_lock(&g_lock);
    g_host = h;
    pthread_mutex_unlock(&g_lock);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *signal_thread(void *arg)
{
    sigset_t *set = arg;
    int sig;

    if (sigwait(set, &sig) == 0) {
        atomic_store(&g_signalled, 1);
        pthread_mutex_lock(&g_lock);
        if (g_host)
            aur_mcp_cancel(g_host);
        pthread_mutex_unlock(&g_lock);
    }
    return NULL;
}

static int write_file(const char *dir, const char *rel, const char *text)
{
    char path[4096];
    FILE *f;
    int ok;

    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (!(f = fopen(path, "w")))
        return -1;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int copy_file(const char *from, const char *dir, const char *rel)
{
    char buf[8192], path[4096];
    FILE *in, *out;
    size_t n;
    int rc = 0;

    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (!(in = fopen(from, "rb")))
        return -1;
    if (!(out = fopen(path, "wb"))) {
        fclose(in);
        return -1;
    }
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            rc = -1;
    if (ferror(in))
        rc = -1;
    fclose(in);
    if (fclose(out) != 0)
        rc = -1;
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

/* Best effort; only ever a directory this program made with mkdtemp. */
static void remove_tree(const char *dir)
{
    if (strncmp(dir, "/tmp/aur-conf-", 14) == 0)
        nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The path (with query) of an http://host[:port][/path] URL; "/" if none. */
static const char *url_path(const char *url)
{
    const char *p;

    if (strncmp(url, "http://", 7) != 0)
        return NULL;
    p = strchr(url + 7, '/');
    return p ? p : "/";
}

/* Starts the proxy with a pipe on its stdin and reads its "PORT n" line,
 * bounded by PROXY_WAIT_MS. */
static int proxy_start(const struct opts *o, struct proxy *px)
{
    int in[2], out[2];
    char buf[128];
    size_t got = 0;
    int64_t end;

    px->pid = -1;
    px->in = -1;
    px->port = 0;
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    px->pid = fork();
    if (px->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(o->node, o->node, o->proxy, "--cert", o->cert, "--key", o->key,
              "--target", o->url, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (px->pid < 0) {
        close(in[1]);
        close(out[0]);
        return -1;
    }
    px->in = in[1];
    end = now_ms() + PROXY_WAIT_MS;
    buf[0] = '\0';
    while (got < sizeof buf - 1 && !memchr(buf, '\n', got)) {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        int64_t left = end - now_ms();
        ssize_t r;

        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        r = read(out[0], buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
    }
    close(out[0]);
    if (sscanf(buf, "PORT %d", &px->port) != 1 || px->port <= 0 ||
        px->port > 65535) {
        fprintf(stderr, "driver: the proxy did not report its port\n");
        return -1;
    }
    return 0;
}

/* EOF on its stdin asks the proxy to exit; SIGKILL after PROXY_EXIT_MS. */
static void proxy_stop(struct proxy *px)
{
    int st;
    int64_t end = now_ms() + PROXY_EXIT_MS;

    if (px->in >= 0)
        close(px->in);
    px->in = -1;
    if (px->pid <= 0)
        return;
    while (waitpid(px->pid, &st, WNOHANG) == 0) {
        if (now_ms() >= end) {
            kill(px->pid, SIGKILL);
            waitpid(px->pid, &st, 0);
            break;
        }
        usleep(10000);
    }
    px->pid = -1;
}

static int write_config(const char *dir, const struct opts *o, int port)
{
    char text[8192], sub[4096];

    snprintf(sub, sizeof sub, "%s/apps.d", dir);
    if (mkdir(sub, 0700) != 0)
        return -1;
    snprintf(sub, sizeof sub, "%s/data", dir);
    if (mkdir(sub, 0700) != 0)
        return -1;
    if (copy_file(o->ca, dir, "ca.pem") != 0)
        return -1;
    snprintf(text, sizeof text,
             "[host]\n"
             "plugins    = transport-http ext-tool-contract\n"
             "plugin_dir = %s\n"
             "journal    = data/world.sqlite3\n"
             "log_level  = %s\n"
             "[mcp]\n"
             "enabled = true\n",
             o->plugin_dir, o->log_level);
    if (write_file(dir, "host.ini", text) != 0)
        return -1;
    snprintf(text, sizeof text,
             "[app]\n"
             "package         = " PACKAGE "\n"
             "enabled         = true\n"
             "transport       = streamable_http\n"
             "timeout_seconds = %d\n"
             "[http]\n"
             "url     = https://127.0.0.1:%d%s\n"
             "ca_file = ca.pem\n",
             o->timeout_s, port, url_path(o->url));
    return write_file(dir, "apps.d/server.ini", text);
}

static const struct aur_tool_info *tool_named(struct aur_mcp *h,
                                              const char *raw)
{
    size_t n = aur_mcp_tool_count(h);

    for (size_t i = 0; i < n; i++) {
        const struct aur_tool_info *t = aur_mcp_tool_at(h, i);

        if (strcmp(t->raw_name, raw) == 0)
            return t;
    }
    return NULL;
}

static int add_call(struct call *calls, size_t *n, const char *name,
                    struct json_object *args)
{
    if (*n >= MAX_CALLS || !(calls[*n].name = strdup(name))) {
        json_object_put(args);
        return -1;
    }
    calls[*n].args = args;
    (*n)++;
    return 0;
}

/* The calls MCP_CONFORMANCE_CONTEXT dictates ({"toolCalls":[{"name":..,
 * "arguments":{..}}]}); returns 1 if it named any. */
static int plan_from_context(struct call *calls, size_t *n)
{
    const char *ctx = getenv("MCP_CONFORMANCE_CONTEXT");
    struct json_object *root = NULL, *list;
    struct aur_error err;
    int found = 0;

    if (!ctx || aur_json_parse(ctx, strlen(ctx), &root, &err) != AUR_OK)
        return 0;
    if (json_object_object_get_ex(root, "toolCalls", &list) &&
        json_object_is_type(list, json_type_array)) {
        size_t len = json_object_array_length(list);

        for (size_t i = 0; i < len; i++) {
            struct json_object *c = json_object_array_get_idx(list, i);
            struct json_object *name, *args = NULL;

            if (!json_object_object_get_ex(c, "name", &name) ||
                !json_object_is_type(name, json_type_string))
                continue;
            json_object_object_get_ex(c, "arguments", &args);
            if (add_call(calls, n, json_object_get_string(name),
                         args ? json_object_get(args) : NULL) == 0)
                found = 1;
        }
    }
    json_object_put(root);
    return found;
}

/*
 * What to call, per scenario.  The default is what a host's agent might
 * do with an unknown server: call every frozen tool with {}.  The
 * exceptions are scenarios whose server checks the arguments (tools_call
 * wants two numbers; json-schema-2020-12-preservation wants the focal
 * tool's inputSchema echoed back) or serves no tools/call at all
 * (json-schema-ref-no-deref only lists).
 */
static int plan_for(struct aur_mcp *h, const char *scenario,
                    struct call *calls, size_t *n)
{
    size_t count = aur_mcp_tool_count(h);

    if (plan_from_context(calls, n))
        return 0;
    if (strcmp(scenario, "json-schema-ref-no-deref") == 0)
        return 0;
    if (strcmp(scenario, "json-schema-2020-12-preservation") == 0) {
        const struct aur_tool_info *focal =
            tool_named(h, "json_schema_2020_12_tool");
        struct json_object *args, *copy = NULL;

        if (!focal) {
            fprintf(stderr, "driver: no json_schema_2020_12_tool\n");
            return -1;
        }
        /* A deep copy: the registry's objects are shared read-only. */
        if (json_object_deep_copy(focal->input_schema, &copy, NULL) != 0)
            return -1;
        args = json_object_new_object();
        json_object_object_add(args, "schema", copy);
        return add_call(calls, n, "json_schema_echo", args);
    }
    for (size_t i = 0; i < count; i++) {
        const struct aur_tool_info *t = aur_mcp_tool_at(h, i);
        struct json_object *args = strcmp(scenario, "tools_call") == 0
                                       ? json_tokener_parse("{\"a\":2,\"b\":3}")
                                       : json_object_new_object();

        if (add_call(calls, n, t->raw_name, args) != 0)
            return -1;
    }
    return 0;
}

static void print_line(struct json_object *o)
{
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    fflush(stdout);
    json_object_put(o);
}

/* Runs one planned call; 1 if it succeeded. */
static int run_call(struct aur_mcp *h, const struct call *c)
{
    const struct aur_tool_info *t = tool_named(h, c->name);
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct json_object *line = json_object_new_object();
    int ok;

    json_object_object_add(line, "call", json_object_new_string(c->name));
    if (!t) {
        /* The host did not keep this tool (or the server never listed
         * it): nothing is sent. */
        json_object_object_add(line, "status",
                               json_object_new_string("not_in_registry"));
        print_line(line);
        return 0;
    }
    aur_mcp_call_jsonc(h, t->id, c->args, -1, &out);
    ok = out.status == AUR_CALL_SUCCEEDED;
    json_object_object_add(
        line, "status",
        json_object_new_string(aur_call_status_word(out.status)));
    json_object_object_add(line, "content",
                           json_object_new_string(out.content ? out.content
                                                              : ""));
    print_line(line);
    aur_tool_output_clear(&out);
    return ok;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: aur-conformance-driver -n NODE -s PROXY_SCRIPT -c CERT "
            "-k KEY -a CA_PEM -p PLUGIN_DIR [-t TIMEOUT_S] [-l LOG_LEVEL] "
            "URL\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = {.timeout_s = 10, .log_level = "warn"};
    struct proxy px = {.pid = -1, .in = -1};
    struct call calls[MAX_CALLS];
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err = {0};
    struct aur_mcp *h = NULL;
    const char *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
    char dir[] = "/tmp/aur-conf-XXXXXX";
    size_t ncalls = 0, ok = 0;
    sigset_t sigs;
    pthread_t sig_th;
    int opt, rc = 1, have_dir = 0;

    while ((opt = getopt(argc, argv, "n:s:c:k:a:p:t:l:")) != -1) {
        switch (opt) {
        case 'n': o.node = optarg; break;
        case 's': o.proxy = optarg; break;
        case 'c': o.cert = optarg; break;
        case 'k': o.key = optarg; break;
        case 'a': o.ca = optarg; break;
        case 'p': o.plugin_dir = optarg; break;
        case 't': o.timeout_s = atoi(optarg); break;
        case 'l': o.log_level = optarg; break;
        default: return usage();
        }
    }
    if (optind != argc - 1 || !o.node || !o.proxy || !o.cert || !o.key ||
        !o.ca || !o.plugin_dir || o.timeout_s < 1 || o.timeout_s > 300)
        return usage();
    o.url = argv[optind];
    if (!url_path(o.url)) {
        fprintf(stderr, "driver: expected an http:// URL from the suite\n");
        return 2;
    }
    if (!scenario)
        scenario = "";

    /* Before any other thread exists, so every thread inherits the mask
     * and only signal_thread ever takes these signals. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    if (pthread_create(&sig_th, NULL, signal_thread, &sigs) != 0)
        return 1;
    pthread_detach(sig_th);

    if (!mkdtemp(dir)) {
        fprintf(stderr, "driver: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    have_dir = 1;
    if (proxy_start(&o, &px) != 0)
        goto out;
    if (write_config(dir, &o, px.port) != 0) {
        fprintf(stderr, "driver: cannot write the config dir\n");
        goto out;
    }
    if (aur_mcp_create(dir, NULL, &h, &serr, &err) != AUR_OK) {
        fprintf(stderr, "driver: create: %s: %s\n", serr.code, serr.message);
        goto out;
    }
    set_host(h);
    if (atomic_load(&g_signalled))
        goto out;
    if (aur_mcp_start(h, &serr, &err) != AUR_OK) {
        struct json_object *line = json_object_new_object(), *e;

        e = json_object_new_object();
        json_object_object_add(e, "code", json_object_new_string(serr.code));
        json_object_object_add(e, "phase",
                               json_object_new_string(serr.phase));
        json_object_object_add(e, "message",
                               json_object_new_string(serr.message));
        json_object_object_add(line, "startup_error", e);
        print_line(line);
        goto out;
    }
    {
        struct json_object *line = json_object_new_object();

        json_object_object_add(line, "started", aur_mcp_status_jsonc(h, 1));
        print_line(line);
    }
    if (plan_for(h, scenario, calls, &ncalls) != 0)
        goto out;
    for (size_t i = 0; i < ncalls; i++)
        ok += (size_t)run_call(h, &calls[i]);
    rc = ok == ncalls ? 0 : 1;
out:
    for (size_t i = 0; i < ncalls; i++) {
        free(calls[i].name);
        json_object_put(calls[i].args);
    }
    set_host(NULL);
    aur_mcp_destroy(h);
    proxy_stop(&px);
    if (have_dir && !getenv("AUR_CONF_KEEP"))
        remove_tree(dir);
    return rc;
}
