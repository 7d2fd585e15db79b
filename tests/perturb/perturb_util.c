/*
 * perturb_util.c - results, parameters, config directories, the host and
 * the journal for one perturbation run (see perturb.h).
 */
#define _GNU_SOURCE 1
#include "perturb.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include <json-c/json.h>

/* ------------------------------------------------------------------ */
/* Results                                                            */
/* ------------------------------------------------------------------ */

static void result(struct pt_run *r, const char *kind, const char *cat,
                   const char *fmt, va_list ap)
{
    char detail[2048];
    if (r->decided)
        return; /* the first verdict of a run is its verdict */
    r->decided = true;
    vsnprintf(detail, sizeof detail, fmt, ap);
    for (char *p = detail; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    printf("RESULT %s %s\t%s\n", kind, cat, detail);
    fflush(stdout);
}

void pt_ok(struct pt_run *r, const char *cat, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    result(r, "ok", cat, fmt, ap);
    va_end(ap);
}

void pt_allowed(struct pt_run *r, const char *cat, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    result(r, "allowed", cat, fmt, ap);
    va_end(ap);
}

void pt_violation(struct pt_run *r, const char *cat, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    result(r, "violation", cat, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Parameters                                                         */
/* ------------------------------------------------------------------ */

uint64_t pt_rand(struct pt_run *r)
{
    uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

unsigned pt_below(struct pt_run *r, unsigned n)
{
    return n ? (unsigned)(pt_rand(r) % n) : 0;
}

bool pt_chance(struct pt_run *r, unsigned percent)
{
    return pt_below(r, 100) < percent;
}

/* ------------------------------------------------------------------ */
/* Files                                                              */
/* ------------------------------------------------------------------ */

static void die_setup(const char *what)
{
    fprintf(stderr, "aur-perturb: setup failed: %s: %s\n", what,
            strerror(errno));
    exit(3);
}

static void mkdirs(const char *path)
{
    char *p = strdup(path);
    if (!p)
        die_setup("strdup");
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    }
    mkdir(p, 0755);
    free(p);
}

static void write_file(const char *dir, const char *rel, const char *text)
{
    char *path, *slash;
    FILE *f;
    if (asprintf(&path, "%s/%s", dir, rel) < 0)
        die_setup("asprintf");
    slash = strrchr(path, '/');
    *slash = '\0';
    mkdirs(path);
    *slash = '/';
    if (!(f = fopen(path, "w")))
        die_setup(path);
    fputs(text, f);
    fclose(f);
    free(path);
}

char *pt_path(struct pt_run *r, const char *name)
{
    char *p;
    if (asprintf(&p, "%s/%s", r->dir, name) < 0)
        die_setup("asprintf");
    return p;
}

char *pt_bin(const char *rel)
{
    char *p;
    if (asprintf(&p, "%s/%s", AUR_PT_BIN_DIR, rel) < 0)
        die_setup("asprintf");
    return p;
}

void pt_mkconfig(struct pt_run *r, const char *plugins, const char *mcp)
{
    char tmpl[] = "/tmp/aur-pt-XXXXXX", *text;
    if (!mkdtemp(tmpl))
        die_setup("mkdtemp");
    r->dir = strdup(tmpl);
    if (asprintf(&text,
                 "[host]\n"
                 "plugins = %s\n"
                 "plugin_dir = %s/plugins\n"
                 "journal = data/world.sqlite3\n"
                 "log_level = error\n"
                 "[mcp]\n"
                 "enabled = true\n"
                 "%s\n",
                 plugins, AUR_PT_BIN_DIR, mcp ? mcp : "") < 0)
        die_setup("asprintf");
    write_file(r->dir, "host.ini", text);
    free(text);
}

void pt_add_app(struct pt_run *r, const char *file, const char *package,
                double timeout_s, const char *app_extra, const char *command,
                const char *const *args)
{
    size_t len = 0;
    char *text = NULL, *rel;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        die_setup("open_memstream");
    fprintf(f,
            "[app]\npackage = %s\nenabled = true\ntransport = stdio\n"
            "timeout_seconds = %g\n%s\n[stdio]\ncommand = %s\n",
            package, timeout_s, app_extra ? app_extra : "", command);
    for (size_t i = 0; args && args[i]; i++)
        fprintf(f, "arg = %s\n", args[i]);
    fprintf(f, "working_dir = .\n");
    fclose(f);
    if (asprintf(&rel, "apps.d/%s", file) < 0)
        die_setup("asprintf");
    write_file(r->dir, rel, text);
    free(rel);
    free(text);
}

char *pt_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL, chunk[4096];
    size_t len = 0, n;
    FILE *m;
    if (!f)
        return NULL;
    if (!(m = open_memstream(&buf, &len)))
        die_setup("open_memstream");
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(m);
    fclose(f);
    return buf;
}

void pt_cleanup(struct pt_run *r)
{
    char *cmd;
    if (!r->dir)
        return;
    if (r->keep) {
        fprintf(stderr, "aur-perturb: kept %s\n", r->dir);
        return;
    }
    if (strncmp(r->dir, "/tmp/aur-pt-", 12) == 0 &&
        asprintf(&cmd, "rm -rf '%s'", r->dir) > 0) {
        if (system(cmd) != 0) {
            /* best effort */
        }
        free(cmd);
    }
}

/* ------------------------------------------------------------------ */
/* Host and processes                                                 */
/* ------------------------------------------------------------------ */

int64_t pt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void pt_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

struct watcher {
    struct aur_mcp *h;
    bool done; /* (atomic) */
    void (*watch)(struct aur_mcp *h, const bool *done, void *ud);
    void *ud;
};

static void *watcher_main(void *arg)
{
    struct watcher *w = arg;
    w->watch(w->h, &w->done, w->ud);
    return NULL;
}

int pt_start_watched(struct pt_run *r, struct aur_mcp **h,
                     struct aur_startup_error *serr, int64_t *ms,
                     void (*watch)(struct aur_mcp *h, const bool *done,
                                   void *ud),
                     void *ud)
{
    struct watcher w = {.watch = watch, .ud = ud};
    struct aur_error err;
    pthread_t t;
    int64_t t0;
    int rc;
    memset(serr, 0, sizeof *serr);
    *h = NULL;
    rc = aur_mcp_create(r->dir, NULL, h, serr, &err);
    if (rc != AUR_OK) {
        fprintf(stderr, "aur-perturb: config rejected: %s %s\n", serr->message,
                err.msg);
        exit(3);
    }
    w.h = *h;
    if (watch && pthread_create(&t, NULL, watcher_main, &w) != 0)
        exit(3);
    t0 = pt_now_ms();
    rc = aur_mcp_start(*h, serr, &err);
    *ms = pt_now_ms() - t0;
    if (watch) {
        __atomic_store_n(&w.done, true, __ATOMIC_RELEASE);
        pthread_join(t, NULL);
    }
    return rc;
}

int pt_start(struct pt_run *r, struct aur_mcp **h,
             struct aur_startup_error *serr, int64_t *ms)
{
    return pt_start_watched(r, h, serr, ms, NULL, NULL);
}

int pt_procs_with(const char *marker)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char path[300], buf[8192], st[512];
        FILE *f;
        size_t got;
        if (e->d_name[0] < '0' || e->d_name[0] > '9' ||
            atoi(e->d_name) == getpid())
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        got = fread(st, 1, sizeof st - 1, f);
        fclose(f);
        st[got] = '\0';
        char *rp = strrchr(st, ')');
        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
            continue; /* a zombie is its parent's to reap */
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < got; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[got] = '\0';
        if (strstr(buf, marker))
            n++;
    }
    closedir(d);
    return n;
}

bool pt_no_leftovers(struct pt_run *r)
{
    int n = 0;
    /* SIGKILL is asynchronous: give the kernel a moment */
    for (int i = 0; i < 150 && (n = pt_procs_with(r->dir)) > 0; i++)
        pt_sleep_ms(20);
    if (n > 0) {
        pt_violation(r, "leaked-process",
                     "%d App process(es) still alive after aur_mcp_destroy",
                     n);
        return false;
    }
    return true;
}

struct jctx {
    pt_line_fn *fn;
    void *ud;
};

static void jline(void *ud, const char *line)
{
    struct jctx *c = ud;
    c->fn(c->ud, line);
}

void pt_journal(struct pt_run *r, int64_t after, const char *scope,
                pt_line_fn *fn, void *ud)
{
    struct aur_error err;
    struct jctx c = {fn, ud};
    int rc = aur_journal_dump(r->dir, after, scope, jline, &c, &err);
    if (rc != AUR_OK)
        pt_violation(r, "journal-unreadable", "aur_journal_dump: %s %s",
                     aur_rc_word(rc), err.msg);
}

/* The outcome of the one aur_mcp_call_start of a run (each run is a
 * process of its own), and how often its callback ran. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int times;
    enum aur_call_status status;
    char *content;
} started = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};

static void started_done(void *ud, const struct aur_tool_output *o)
{
    (void)ud;
    pthread_mutex_lock(&started.mu);
    if (started.times++ == 0) {
        started.status = o->status;
        started.content = strdup(o->content ? o->content : "");
    }
    pthread_cond_broadcast(&started.cv);
    pthread_mutex_unlock(&started.mu);
}

void pt_call_started(struct pt_run *r, struct aur_mcp *h, const char *tool,
                     struct json_object *args, bool batched,
                     struct aur_tool_output *out)
{
    struct aur_error err;
    int64_t until = pt_now_ms() + 30000;
    int rc;

    if (batched)
        aur_mcp_batch_begin(h);
    rc = aur_mcp_call_start_jsonc(h, tool, args, -1, started_done, NULL, &err);
    if (batched)
        aur_mcp_batch_end(h);

    out->status = AUR_CALL_FAILED;
    if (rc != AUR_OK) {
        pt_violation(r, "call-start-refused", "aur_mcp_call_start: %s: %s",
                     aur_rc_word(rc), err.msg);
        out->content = strdup("refused");
        return;
    }
    pthread_mutex_lock(&started.mu);
    while (started.times == 0 && pt_now_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&started.cv, &started.mu, &ts);
    }
    if (started.times == 0) {
        pthread_mutex_unlock(&started.mu);
        pt_violation(r, "call-start-no-outcome",
                     "no outcome 30 s after aur_mcp_call_start");
        out->content = strdup("no outcome");
        return;
    }
    out->status = started.status;
    out->content = started.content;
    started.content = NULL;
    pthread_mutex_unlock(&started.mu);
}

int pt_call_started_times(void)
{
    pthread_mutex_lock(&started.mu);
    int n = started.times;
    pthread_mutex_unlock(&started.mu);
    return n;
}
