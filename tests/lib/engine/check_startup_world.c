/*
 * check_startup_world.c - what a startup leaves beyond its Apps: the
 * agents.ini references checked against the frozen catalog, lifecycle
 * commits in config order (failed ones too), a runtime's own world
 * writer, and the master switch.  Part of check_startup.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>
#include <check.h>
#include <json-c/json.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_startup.h"
#include "support/harness.h"

START_TEST(agents_exact_reference_must_exist)
{
    const char *opts[] = {"--era", "modern", "--tools", "2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.agents", 5, opts);
    h_write(dir, "agents.ini",
            "[agent root]\n"
            "tools = aur.mcp.org.test.agents.*\n"
            "tools = !aur.mcp.org.test.agents.t0001\n"
            "tools = aur.mcp.org.test.nothing.*\n"
            "tools = aur.mcp.org.test.agents.missing\n");
    ck_assert_int_eq(start(&h, &serr), AUR_E_AGENTS);
    ck_assert_str_eq(serr.phase, "agents");
    ck_assert_ptr_nonnull(strstr(serr.message, "aur.mcp.org.test.agents.missing"));
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

START_TEST(agents_patterns_pass)
{
    const char *opts[] = {"--era", "modern", "--tools", "2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.agents", 5, opts);
    h_write(dir, "agents.ini",
            "[agent root]\n"
            "tools = aur.mcp.**\n"
            "tools = aur.mcp.org.test.agents.t000?\n"
            "tools = aur.mcp.org.test.agents.t0001\n"
            "tools = !aur.mcp.org.test.absent.tool\n");
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
}
END_TEST

struct lines {
    int n;
    char kinds[16][64];
    char ids[16][200];
};

static void collect(void *ud, const char *line)
{
    struct lines *l = ud;
    struct json_object *o = json_tokener_parse(line);
    if (l->n < 16 && o) {
        snprintf(l->kinds[l->n], sizeof l->kinds[0], "%s",
                 h_str(o, "kind"));
        snprintf(l->ids[l->n], sizeof l->ids[0], "%s", h_str(o, "commit_id"));
        l->n++;
    }
    json_object_put(o);
}

START_TEST(lifecycle_commits_in_config_order)
{
    const char *opts[] = {"--era", "modern", "--tools", "1", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h;
    struct lines l = {0};
    add_fixture("a.ini", "org.test.one", 5, opts);
    add_fixture("b.ini", "org.test.two", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, collect, &l, &err), AUR_OK);
    ck_assert_int_eq(l.n, 6);
    ck_assert_str_eq(l.kinds[0], "mcp.app.starting");
    ck_assert_str_eq(l.kinds[1], "mcp.app.ready");
    ck_assert_str_eq(l.kinds[2], "mcp.app.starting");
    ck_assert_str_eq(l.kinds[3], "mcp.app.ready");
    ck_assert_str_eq(l.kinds[4], "mcp.catalog.frozen");
    ck_assert_str_eq(l.kinds[5], "mcp.catalog.frozen");
    ck_assert_ptr_nonnull(strstr(l.ids[0], ":org.test.one:starting"));
    ck_assert_ptr_nonnull(strstr(l.ids[2], ":org.test.two:starting"));
    ck_assert_ptr_nonnull(strstr(l.ids[5], ":org.test.two:catalog-frozen"));
    /* scope filter */
    struct lines s = {0};
    ck_assert_int_eq(aur_journal_dump(dir, 0, "aurora:mcp:org.test.two",
                                      collect, &s, &err),
                     AUR_OK);
    ck_assert_int_eq(s.n, 3);
}
END_TEST

START_TEST(failed_startup_writes_failed_commit)
{
    const char *opts[] = {"--tool-name", "bad.name", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h;
    struct lines l = {0};
    add_fixture("a.ini", "org.test.bad", 5, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, collect, &l, &err), AUR_OK);
    ck_assert_int_eq(l.n, 2);
    ck_assert_str_eq(l.kinds[0], "mcp.app.starting");
    ck_assert_str_eq(l.kinds[1], "mcp.app.failed");
}
END_TEST

static int count_in(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The startup commits are one transaction: a storage failure at the
 * last of them (a trigger fails the second App's "ready") loses all
 * four, never the first three alone, and each is logged as not written.
 * The frozen commits are a transaction of their own and are written; a
 * lifecycle commit that fails never fails the start. */
START_TEST(startup_commits_are_written_whole_or_not_at_all)
{
    const char *opts[] = {"--era", "modern", "--tools", "1", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h;
    struct lines l = {0};
    char *db, *log, *hostlog;
    sqlite3 *sq;

    remake_config("log_file = host.log", NULL); /* a host log to read */
    add_fixture("a.ini", "org.test.one", 5, opts);
    add_fixture("b.ini", "org.test.two", 5, opts);
    /* the schema from a first run, then the trigger */
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
    ck_assert(asprintf(&db, "%s/data/world.sqlite3", dir) > 0);
    ck_assert_int_eq(sqlite3_open(db, &sq), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(sq,
                     "CREATE TRIGGER boom BEFORE INSERT ON world_commits "
                     "WHEN NEW.kind = 'mcp.app.ready' AND "
                     "NEW.source = 'mcp:org.test.two' "
                     "BEGIN SELECT RAISE(FAIL, 'boom'); END",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(sq);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
    ck_assert_int_eq(aur_journal_dump(dir, 0, NULL, collect, &l, &err), AUR_OK);
    /* the first run's six, then only the second run's frozen two */
    ck_assert_int_eq(l.n, 8);
    ck_assert_str_eq(l.kinds[6], "mcp.catalog.frozen");
    ck_assert_str_eq(l.kinds[7], "mcp.catalog.frozen");
    ck_assert_ptr_nonnull(strstr(l.ids[7], ":org.test.two:catalog-frozen"));
    ck_assert(asprintf(&hostlog, "%s/host.log", dir) > 0);
    log = h_slurp(hostlog);
    ck_assert_ptr_nonnull(log);
    ck_assert_int_eq(count_in(log, "not written"), 4);
    ck_assert_int_eq(count_in(log, "lifecycle commit mcp.app.starting "
                                   "not written"),
                     2);
    free(log);
    free(hostlog);
    free(db);
}
END_TEST

struct recorded {
    int n;
    char kinds[8][64];
};

static int record_commit(void *ud, const struct aur_commit *c,
                         struct aur_error *err)
{
    struct recorded *r = ud;
    (void)err;
    if (r->n < 8)
        snprintf(r->kinds[r->n++], sizeof r->kinds[0], "%s", c->kind);
    return AUR_OK;
}

START_TEST(runtime_brings_its_own_world_writer)
{
    const char *opts[] = {"--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct recorded r = {0};
    struct aur_world_writer w = {sizeof w, &r, record_commit};
    char *journal;
    add_fixture("a.ini", "org.test.writer", 5, opts);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    ck_assert_int_eq(aur_mcp_set_world_writer(h, &w, &err), AUR_OK);
    ck_assert_int_eq(aur_mcp_start(h, &serr, &err), AUR_OK);
    ck_assert_int_eq(aur_mcp_set_world_writer(h, &w, &err), AUR_E_STATE);
    aur_mcp_destroy(h);
    ck_assert_int_eq(r.n, 3);
    ck_assert_str_eq(r.kinds[0], "mcp.app.starting");
    ck_assert_str_eq(r.kinds[1], "mcp.app.ready");
    ck_assert_str_eq(r.kinds[2], "mcp.catalog.frozen");
    /* the SQLite journal named in host.ini was never created */
    ck_assert(asprintf(&journal, "%s/data/world.sqlite3", dir) > 0);
    ck_assert_ptr_null(h_slurp(journal));
    free(journal);
}
END_TEST

/* Between the freeze and the registry, the App dies: startup fails as
 * the App's disconnect (phase activate, with its failed commit), not as
 * agents.ini naming a tool the registry left out because the App's state
 * had moved (it said "references an unregistered tool"). */
struct killer {
    struct recorded r;
    int lost; /* (atomic) the host logged the lost connection */
};

static int kill_at_ready(void *ud, const struct aur_commit *c,
                         struct aur_error *err)
{
    struct killer *k = ud;
    if (strcmp(c->kind, "mcp.app.ready") == 0) {
        ck_assert_int_eq(h_signal_procs_with(logpath, SIGKILL), 1);
        H_WAIT_UNTIL(__atomic_load_n(&k->lost, __ATOMIC_ACQUIRE), 10000, 5);
    }
    return record_commit(&k->r, c, err);
}

static void note_lost(void *ud, int level, const char *line, size_t len)
{
    struct killer *k = ud;
    (void)level;
    (void)len;
    if (strstr(line, "connection lost"))
        __atomic_store_n(&k->lost, 1, __ATOMIC_RELEASE);
}

START_TEST(app_lost_after_freeze_fails_activate)
{
    const char *opts[] = {"--era", "modern", "--tools", "2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct killer k = {0};
    struct aur_world_writer w = {sizeof w, &k, kill_at_ready};
    char *hl = h_debug_host(dir);
    add_fixture("a.ini", "org.test.lost", 10, opts);
    h_write(dir, "agents.ini",
            "[agent root]\ntools = aur.mcp.org.test.lost.t0001\n");
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, &serr, &err), AUR_OK);
    aur_mcp_set_log(h, note_lost, &k);
    ck_assert_int_eq(aur_mcp_set_world_writer(h, &w, &err), AUR_OK);
    ck_assert_int_ne(aur_mcp_start(h, &serr, &err), AUR_OK);
    ck_assert_msg(k.lost, "the host never saw the App go");
    ck_assert_msg(strcmp(serr.phase, "activate") == 0,
                  "phase %s: %s", serr.phase, serr.message);
    ck_assert_str_eq(serr.app, "org.test.lost");
    ck_assert_msg(strstr(serr.message, "signal 9"), "%s", serr.message);
    ck_assert_int_eq(k.r.n, 3);
    ck_assert_str_eq(k.r.kinds[0], "mcp.app.starting");
    ck_assert_str_eq(k.r.kinds[1], "mcp.app.ready");
    ck_assert_str_eq(k.r.kinds[2], "mcp.app.failed");
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
    free(hl);
}
END_TEST

START_TEST(master_switch_off_starts_nothing)
{
    const char *opts[] = {"--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    remake_config(NULL, "enabled = false");
    add_fixture("a.ini", "org.test.off", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 0);
    struct json_object *a = h_app_status(h);
    ck_assert_str_eq(h_str(a, "state"), "disabled");
    json_object_put(a);
    ck_assert_ptr_null(h_slurp(logpath));
    aur_mcp_destroy(h);
}
END_TEST

/* The journal readies its first write while the Apps start (SQLite: an
 * emptied WAL is restarted, its header synced, off the start's path):
 * the WAL has a frame before the App has read a single request, so
 * before any lifecycle commit could have been written. */
struct start_job {
    struct aur_mcp *h;
    int rc;
};

static void *start_on_thread(void *arg)
{
    struct start_job *job = arg;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    job->rc = start(&job->h, &serr);
    return NULL;
}

START_TEST(journal_primed_while_apps_start)
{
    const char *fast[] = {"--era", "modern", NULL};
    const char *slow[] = {"--era", "modern", "--start-delay-ms", "3000",
                          NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct start_job job = {NULL, -1};
    struct stat sb;
    pthread_t th;
    char *wal;
    int lines;

    ck_assert(asprintf(&wal, "%s/data/world.sqlite3-wal", dir) > 0);
    add_fixture("a.ini", "org.test.prime", 10, fast);
    ck_assert_int_eq(start(&job.h, &serr), AUR_OK);
    aur_mcp_destroy(job.h); /* the journal's close empties its WAL */
    ck_assert_int_eq(stat(wal, &sb), 0);
    ck_assert_int_eq(sb.st_size, 0);
    unlink(logpath);
    add_fixture("a.ini", "org.test.prime", 10, slow);
    ck_assert_int_eq(pthread_create(&th, NULL, start_on_thread, &job), 0);
    H_WAIT_UNTIL(stat(wal, &sb) == 0 && sb.st_size > 0, 10000, 5);
    ck_assert_msg(sb.st_size > 0, "the WAL stayed empty");
    /* read after the WAL: no request had reached the App before it */
    lines = h_count_lines(logpath, "");
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, AUR_OK);
    aur_mcp_destroy(job.h);
    ck_assert_msg(lines <= 0, "the WAL's first frame came after %d requests",
                  lines);
    free(wal);
}
END_TEST

/* The threads of this process other than the calling one: each must
 * block these signals (SigBlk in /proc/self/task/<tid>/status).  How many
 * were checked. */
static int threads_block_signals(void)
{
    static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2,
                               SIGPIPE, SIGALRM, SIGTERM, SIGCHLD};
    long self = (long)gettid();
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL) {
        long tid = atol(de->d_name);
        char path[96], line[256], comm[64] = "?";
        unsigned long long blk = 0;
        bool found = false;
        FILE *f;

        if (tid <= 0 || tid == self)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
        if (!(f = fopen(path, "r")))
            continue; /* it ended */
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "Name:", 5) == 0)
                sscanf(line + 5, " %63s", comm);
            if (sscanf(line, "SigBlk: %llx", &blk) == 1)
                found = true;
        }
        fclose(f);
        if (!found)
            continue;
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            ck_assert_msg(blk & (1ull << (sigs[i] - 1)),
                          "thread %ld (%s) does not block signal %d "
                          "(SigBlk %llx)", tid, comm, sigs[i], blk);
        n++;
    }
    closedir(d);
    return n;
}

static void call_done(void *ud, const struct aur_tool_output *out)
{
    (void)out;
    __atomic_store_n((int *)ud, 1, __ATOMIC_RELEASE);
}

/* Signals are the embedding program's: every thread the library and its
 * plugins start blocks them all, whatever the mask of the thread that
 * called the API, so the embedder's handlers (a runtime's SIGINT, a
 * server's SIGTERM) never run on a thread of ours.  Started here from a
 * thread that blocks nothing; the threads left running (the spawner, the
 * App's I/O thread, the journal's) are checked, before and after a call
 * (which starts the call machinery's threads). */
START_TEST(library_threads_block_signals)
{
    const char *args[] = {"--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    sigset_t none;

    sigemptyset(&none);
    ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &none, NULL), 0);
    add_fixture("a.ini", "org.test.sig", 10, args);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_int_ge(threads_block_signals(), 2);
    ck_assert_uint_gt(aur_mcp_tool_count(h), 0);
    const char *tool = aur_mcp_tool_at(h, 0)->id;
    struct aur_tool_output out = {.struct_size = sizeof out};
    struct aur_error err;
    int done = 0;
    ck_assert_int_eq(aur_mcp_call(h, tool, NULL, 0, -1, &out), AUR_OK);
    ck_assert_int_eq(out.status, AUR_CALL_SUCCEEDED);
    aur_tool_output_clear(&out);
    ck_assert_int_eq(aur_mcp_call_async(h, tool, NULL, 0, -1, call_done,
                                        &done, &err),
                     AUR_OK);
    H_WAIT_UNTIL(__atomic_load_n(&done, __ATOMIC_ACQUIRE), 10000, 5);
    ck_assert_int_eq(__atomic_load_n(&done, __ATOMIC_ACQUIRE), 1);
    /* the async call's thread, the call machinery's */
    ck_assert_int_ge(threads_block_signals(), 3);
    aur_mcp_destroy(h);
}
END_TEST

/* A process that is there and not a zombie. */
static bool alive(long pid)
{
    char path[64], line[512], *p;
    bool on = false;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return false;
    if (fgets(line, sizeof line, f) && (p = strrchr(line, ')')))
        on = p[2] != 'Z' && p[2] != 'X';
    fclose(f);
    return on;
}

/* The pid in "<pkg>: supervisor <pid> started ahead of the App's open"
 * of log, or 0. */
static long started_ahead(const char *log, const char *pkg)
{
    char want[160];
    const char *at;

    snprintf(want, sizeof want, "%s: supervisor ", pkg);
    for (at = strstr(log, want); at; at = strstr(at + 1, want)) {
        char *end;
        long pid = strtol(at + strlen(want), &end, 10);
        if (pid > 0 && strncmp(end, " started ahead of the App's open",
                               strlen(" started ahead of the App's "
                                      "open")) == 0)
            return pid;
    }
    return 0;
}

/* The first App's supervisor starts before the journal opens (the
 * prepare hook) and is the one its App runs under; the second App's
 * start is not prepared. */
START_TEST(first_app_supervisor_started_ahead)
{
    const char *fast[] = {"--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    char *hl = h_debug_host(dir), *log, used[160];
    long sup;

    add_fixture("1-a.ini", "org.test.first", 10, fast);
    add_fixture("2-b.ini", "org.test.second", 10, fast);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    aur_mcp_destroy(h);
    log = h_slurp(hl);
    ck_assert_ptr_nonnull(log);
    sup = started_ahead(log, "org.test.first");
    ck_assert_msg(sup > 0, "no supervisor started ahead:\n%s", log);
    snprintf(used, sizeof used, "org.test.first: supervisor %ld, App cgroup",
             sup);
    ck_assert_msg(strstr(log, used), "the App did not use it:\n%s", log);
    ck_assert_int_eq(started_ahead(log, "org.test.second"), 0);
    free(log);
    free(hl);
}
END_TEST

/* A journal that cannot open fails the start after the first App's
 * supervisor was started: that App never ran, and nothing is left, as
 * soon as the start returns (unprepare), not only once the handle is
 * destroyed. */
START_TEST(journal_failure_after_prepare_runs_no_app)
{
    const char *fast[] = {"--era", "modern", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h = NULL;
    char *hl = h_debug_host(dir), *log, *db;
    struct stat sb;
    long sup;

    ck_assert(asprintf(&db, "%s/data/world.sqlite3", dir) > 0);
    h_write(dir, "data/keep", "");
    ck_assert_int_eq(mkdir(db, 0700), 0); /* a directory: no database */
    add_fixture("a.ini", "org.test.first", 10, fast);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_int_eq(serr.rc, AUR_E_JOURNAL);
    log = h_slurp(hl);
    ck_assert_ptr_nonnull(log);
    sup = started_ahead(log, "org.test.first");
    ck_assert_msg(sup > 0, "no supervisor started ahead:\n%s", log);
    ck_assert_msg(!alive(sup), "supervisor %ld outlived the failed start",
                  sup);
    aur_mcp_destroy(h);
    ck_assert_msg(stat(logpath, &sb) != 0, "the App ran");
    ck_assert_msg(!alive(sup), "supervisor %ld left running", sup);
    free(log);
    free(db);
    free(hl);
}
END_TEST

void startup_world_tests(TCase *tc)
{
    tcase_add_test(tc, agents_exact_reference_must_exist);
    tcase_add_test(tc, agents_patterns_pass);
    tcase_add_test(tc, lifecycle_commits_in_config_order);
    tcase_add_test(tc, failed_startup_writes_failed_commit);
    tcase_add_test(tc, startup_commits_are_written_whole_or_not_at_all);
    tcase_add_test(tc, master_switch_off_starts_nothing);
    tcase_add_test(tc, runtime_brings_its_own_world_writer);
    tcase_add_test(tc, app_lost_after_freeze_fails_activate);
    tcase_add_test(tc, journal_primed_while_apps_start);
    tcase_add_test(tc, library_threads_block_signals);
    tcase_add_test(tc, first_app_supervisor_started_ahead);
    tcase_add_test(tc, journal_failure_after_prepare_runs_no_app);
}
