/*
 * bench_events.c - throughput of ext-world-events into the real SQLite
 * journal: N valid events (distinct ids) through the plugin's on_notify,
 * as the core's dispatch thread would deliver them, then N more with the
 * same ids (the duplicate path, as after a restart: a new session).  Each
 * pass is timed until the session's end_session returned, that is until
 * every event is committed (the plugin commits in the background), and
 * the plugin's status counters are checked against N.
 *
 * Usage: bench_events [N] [PLUGIN.so] [--single] [--new-only]
 *                     [--journal TARGET] [--package P]
 *        bench_events --journal TARGET --count
 * (N default 100000.)
 * --single offers the plugin no world_write_batch (an ABI 1.0 host): one
 * transaction per event.
 * --new-only skips the duplicate pass (its line reads "skipped").
 * --journal TARGET commits into TARGET, a file path or a postgresql://
 * URI (journal.h), instead of a scratch SQLite file; TARGET is the
 * caller's and nothing of it is removed afterwards.  Several processes
 * may share it (bench/journal.sh): each then needs its own
 * --package P (default org.bench.events), since commit ids are
 * mcp:<P>:event:ev-<i>.
 * --count only opens TARGET (creating or migrating its schema), prints
 * "journal count: C" and exits: what a caller reads before and after a
 * group of writers.
 * The run fails (exit 1) unless every event of the new pass was
 * committed as new (the plugin's counter) and the journal grew by n: by
 * exactly n when it is private, by at least n when it is a --journal
 * other processes may write at the same time (bench/journal.sh checks
 * that group's exact total with --count).  The duplicate pass must count
 * n duplicates.  The "journal commits:" line says how much the journal
 * grew during the run (with others writing, their commits too).
 * Not a test: run it by hand.  Scratch files live under /tmp and are
 * removed afterwards.
 */
#include "aur_setup.h"

#include "journal.h"
#include "jsonx.h"

#include <dlfcn.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct aur__journal *journal;
static const char *package = "org.bench.events";
static long transactions; /* world_write(_batch) calls, writer thread */

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
    transactions++;
    return aur__journal_append(journal, c, NULL, NULL, err);
}

static int hint(struct json_object *v, char *buf, size_t size)
{
    if (!json_object_is_type(v, json_type_int))
        return AUR_E_INVAL;
    snprintf(buf, size, "%lld", (long long)json_object_get_int64(v));
    return AUR_OK;
}

static int hwrite_batch(struct aur_self *self,
                        const struct aur_commit *const *v, size_t n,
                        int *results, struct aur_error *err)
{
    (void)self;
    transactions++;
    return aur__journal_append_batch(journal, v, n, results, err);
}

static int hparse(const char *buf, size_t len, struct json_object **out,
                  struct aur_error *err)
{
    return aur__json_parse(buf, len, 128, out, err);
}

static struct aur_host host = {
    .struct_size = sizeof host,
    .abi_version = AUR_ABI_VERSION,
    .log = hlog,
    .now_ms = now_ms,
    .world_write = hwrite,
    .json_parse = hparse,
    .json_integer_text = hint,
    .world_write_batch = hwrite_batch,
};

/* Event i's params, parsed by the host's own parser: what the core's
 * dispatch hands on_notify (transports parse every inbound message with
 * json_parse; json-c's tokener, which this used before, is not on the
 * host's path and cost more than the plugin's validation). */
static struct json_object *event(long i)
{
    struct json_object *o = NULL;
    char buf[512];
    int len = snprintf(buf, sizeof buf,
             "{\"event_id\":\"ev-%ld\",\"scope\":\"qq:group:%ld\","
             "\"kind\":\"qq.message.group\",\"occurred_at\":"
             "\"2026-05-01T12:00:00.%06ld+08:00\",\"summary\":\"message %ld\","
             "\"data\":{\"n\":%ld,\"text\":\"hello\"}}",
             i, i % 16, i % 1000000, i, i);
    if (hparse(buf, (size_t)len, &o, NULL) != AUR_OK)
        return NULL;
    return o;
}

static int64_t count_of(const struct aur_extension_ops *ops, void *st,
                        void *sess, const char *key)
{
    struct json_object *o = json_object_new_object(), *v;
    struct aur_error err;
    int64_t n = -1;
    if (ops->status(st, sess, o, &err) == AUR_OK &&
        json_object_object_get_ex(o, key, &v))
        n = json_object_get_int64(v);
    json_object_put(o);
    return n;
}

/* One session: push n events, end it (commits what is queued), check
 * that counter `want` reached n.  Returns the number that failed. */
static long pass(const struct aur_extension_ops *ops, void *st,
                 const char *want, long n, double *secs)
{
    struct json_object *caps = json_tokener_parse(
        "{\"extensions\":{\"org.aurorabot/world-events\":{\"version\":1}}}");
    struct aur_app_info app = {
        .struct_size = sizeof app, .package = package,
        .transport = "stdio", .event_mode = "world_events",
        .version = "2026-07-28", .modern = 1, .self = NULL};
    struct aur_error err;
    void *sess = NULL;
    long bad = 0;
    double t0;

    if (ops->accept_server(st, &app, caps, &sess, &err) != AUR_OK) {
        fprintf(stderr, "plugin: %s\n", err.msg);
        json_object_put(caps);
        return n;
    }
    json_object_put(caps);
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        struct json_object *p = event(i);
        aur_error_clear(&err);
        if (ops->on_notify(st, sess, "notifications/org.aurorabot/"
                           "world-events/event", p, 1, &err) != AUR_OK)
            bad++;
        json_object_put(p);
    }
    ops->end_session(st, sess);
    *secs = now_s() - t0;
    if (count_of(ops, st, sess, want) != n - bad)
        bad = n;
    return bad;
}

int main(int argc, char **argv)
{
    long n = 100000;
    const char *so = AUR_BENCH_PLUGIN, *target = NULL;
    char dir[] = "/tmp/aur-bench-XXXXXX", path[256];
    struct aur_error err;
    void *st = NULL, *dl = NULL;
    double t1 = 0, t2 = 0;
    int rc = 1, pos = 0;
    bool new_only = false, count_only = false;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--single") == 0) {
            host.world_write_batch = NULL;
        } else if (strcmp(argv[i], "--new-only") == 0) {
            new_only = true;
        } else if (strcmp(argv[i], "--count") == 0) {
            count_only = true;
        } else if (strcmp(argv[i], "--journal") == 0 && i + 1 < argc) {
            target = argv[++i];
        } else if (strcmp(argv[i], "--package") == 0 && i + 1 < argc) {
            package = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "bench_events: unknown option %s\n", argv[i]);
            return 2;
        } else if (pos++ == 0) {
            n = strtol(argv[i], NULL, 10);
        } else {
            so = argv[i];
        }
    }
    if (n <= 0 || !*package || (count_only && !target))
        return 2;
    if (!target) {
        if (!mkdtemp(dir))
            return 2;
        snprintf(path, sizeof path, "%s/world.sqlite3", dir);
    }
    if (aur__journal_open(target ? target : path, NULL, &journal, &err) !=
        AUR_OK) {
        fprintf(stderr, "journal: %s\n", err.msg);
        goto out;
    }
    int64_t before = aur__journal_count(journal);
    if (count_only) {
        printf("journal count: %lld\n", (long long)before);
        rc = before < 0;
        goto out;
    }
    dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    aur_entry_fn *entry = dl ? (aur_entry_fn *)dlsym(dl, AUR_ENTRY_SYMBOL)
                             : NULL;
    if (!entry) {
        fprintf(stderr, "cannot load %s\n", so);
        goto out;
    }
    const struct aur_plugin_desc *d = entry(AUR_ABI_VERSION);
    const struct aur_extension_ops *ops = d->ops;
    if (d->init(&host, NULL, NULL, &st, &err) != AUR_OK) {
        fprintf(stderr, "plugin: %s\n", err.msg);
        goto out;
    }

    /* without the batch service the plugin counts repeats of its own
     * session only: a new session sees them as committed */
    long bad1 = pass(ops, st, "committed", n, &t1);
    long tx1 = transactions; /* end_session joined the writer */
    long bad2 = 0;
    if (!new_only)
        bad2 = pass(ops, st,
                    host.world_write_batch ? "duplicates" : "committed", n,
                    &t2);
    int64_t after = aur__journal_count(journal);
    int64_t grew = before < 0 || after < 0 ? -1 : after - before;
    printf("new events:       %ld in %.3f s = %.0f events/s (%ld failed)\n",
           n, t1, (double)n / t1, bad1);
    if (new_only)
        printf("duplicate events: skipped (--new-only)\n");
    else
        printf("duplicate events: %ld in %.3f s = %.0f events/s "
               "(%ld failed)\n", n, t2, (double)n / t2, bad2);
    printf("journal commits:  %lld (%s); new-event pass: %ld "
           "transactions, %.1f events each\n",
           (long long)grew,
           host.world_write_batch ? "batched" : "one transaction per event",
           tx1, (double)n / (double)(tx1 ? tx1 : 1));
    /* a private journal grows by exactly n; a shared one by n plus what
     * the others wrote meanwhile */
    rc = bad1 || bad2 || (target ? grew < n : grew != n);
    if (grew >= 0 && grew != n && (!target || grew < n))
        fprintf(stderr, "bench_events: the journal grew by %lld, not %ld\n",
                (long long)grew, n);
    d->fini(st);
out:
    if (dl)
        dlclose(dl);
    aur__journal_close(journal);
    if (!target) {
        char f[300];
        const char *sufs[] = {"", "-wal", "-shm", "-journal"};
        for (size_t i = 0; i < AUR__ARRAY_LEN(sufs); i++) {
            snprintf(f, sizeof f, "%s%s", path, sufs[i]);
            unlink(f);
        }
        rmdir(dir);
    }
    return rc;
}
