/*
 * bench_events.c - throughput of ext-world-events into the real SQLite
 * journal: N valid events (distinct ids) through the plugin's on_notify,
 * as the core's dispatch thread would deliver them, then N more with the
 * same ids (the duplicate path).  Prints events/s for both.
 *
 * Usage: bench_events [N] [PLUGIN.so]   (N default 100000)
 * Not a test: run it by hand.  Scratch files live under /tmp and are
 * removed afterwards.
 */
#include "aur_setup.h"

#include "journal.h"

#include <dlfcn.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct aur__journal *journal;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void hlog(struct aur_self *self, int level, const char *fmt, ...)
    AUR_PRINTF(3, 4);
static void hlog(struct aur_self *self, int level, const char *fmt, ...)
{
    (void)self;
    if (level <= AUR_LOG_WARN) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

static int hwrite(struct aur_self *self, const struct aur_commit *c,
                  struct aur_error *err)
{
    (void)self;
    return aur__journal_append(journal, c, NULL, NULL, err);
}

static int hint(struct json_object *v, char *buf, size_t size)
{
    if (!json_object_is_type(v, json_type_int))
        return AUR_E_INVAL;
    snprintf(buf, size, "%lld", (long long)json_object_get_int64(v));
    return AUR_OK;
}

static const struct aur_host host = {
    .struct_size = sizeof host,
    .abi_version = AUR_ABI_VERSION,
    .log = hlog,
    .now_ms = now_ms,
    .world_write = hwrite,
    .json_integer_text = hint,
};

static struct json_object *event(long i)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"event_id\":\"ev-%ld\",\"scope\":\"qq:group:%ld\","
             "\"kind\":\"qq.message.group\",\"occurred_at\":"
             "\"2026-05-01T12:00:00.%06ld+08:00\",\"summary\":\"message %ld\","
             "\"data\":{\"n\":%ld,\"text\":\"hello\"}}",
             i, i % 16, i % 1000000, i, i);
    return json_tokener_parse(buf);
}

/* Push n events; returns the number that failed. */
static long push(const struct aur_extension_ops *ops, void *st, void *sess,
                 long n, double *secs)
{
    long bad = 0;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        struct json_object *p = event(i);
        struct aur_error err;
        aur_error_clear(&err);
        if (ops->on_notify(st, sess, "notifications/org.aurorabot/"
                           "world-events/event", p, 1, &err) != AUR_OK)
            bad++;
        json_object_put(p);
    }
    *secs = now_s() - t0;
    return bad;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    const char *so = argc > 2 ? argv[2] : AUR_BENCH_PLUGIN;
    char dir[] = "/tmp/aur-bench-XXXXXX", path[256];
    struct aur_error err;
    void *st = NULL, *sess = NULL;
    double t1, t2;
    int rc = 1;

    if (n <= 0 || !mkdtemp(dir))
        return 2;
    snprintf(path, sizeof path, "%s/world.sqlite3", dir);
    if (aur__journal_open(path, &journal, &err) != AUR_OK) {
        fprintf(stderr, "journal: %s\n", err.msg);
        return 1;
    }
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    aur_entry_fn *entry = dl ? (aur_entry_fn *)dlsym(dl, AUR_ENTRY_SYMBOL)
                             : NULL;
    if (!entry) {
        fprintf(stderr, "cannot load %s\n", so);
        goto out;
    }
    const struct aur_plugin_desc *d = entry(AUR_ABI_VERSION);
    const struct aur_extension_ops *ops = d->ops;
    struct json_object *caps = json_tokener_parse(
        "{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":1}}}");
    struct aur_app_info app = {
        .struct_size = sizeof app, .package = "org.bench.events",
        .transport = "stdio", .event_mode = "world_events",
        .version = "2026-07-28", .modern = 1, .self = NULL};
    if (d->init(&host, NULL, NULL, &st, &err) != AUR_OK ||
        ops->accept_server(st, &app, caps, &sess, &err) != AUR_OK) {
        fprintf(stderr, "plugin: %s\n", err.msg);
        json_object_put(caps);
        goto out;
    }
    json_object_put(caps);

    long bad1 = push(ops, st, sess, n, &t1);
    long bad2 = push(ops, st, sess, n, &t2);
    int64_t count = aur__journal_count(journal);
    printf("new events:       %ld in %.3f s = %.0f events/s (%ld failed)\n",
           n, t1, (double)n / t1, bad1);
    printf("duplicate events: %ld in %.3f s = %.0f events/s (%ld failed)\n",
           n, t2, (double)n / t2, bad2);
    printf("journal commits:  %lld\n", (long long)count);
    rc = bad1 || bad2 || count != n;
    ops->end_session(st, sess);
    d->fini(st);
out:
    if (dl)
        dlclose(dl);
    aur__journal_close(journal);
    char f[300];
    const char *sufs[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < AUR__ARRAY_LEN(sufs); i++) {
        snprintf(f, sizeof f, "%s%s", path, sufs[i]);
        unlink(f);
    }
    rmdir(dir);
    return rc;
}
