/*
 * aur-perturb - runs the timing-perturbation property scenarios over many
 * seeds (docs/timing-perturbation.md).
 *
 *   aur-perturb SCENARIO[,SCENARIO...]|all [--seeds A[:B]] [--jobs J]
 *               [--max-us U] [--timeout S] [--repeat N] [--baseline]
 *               [--keep] [-v]
 *   aur-perturb --one SCENARIO SEED [--keep]
 *
 * Every seed runs in a process of its own (`--one`, exec'd from here) so
 * that the host reads its own AUR_PERTURB_SEED (= the seed; with
 * --baseline the variable is removed instead: the unperturbed sanity run)
 * and AUR_PERTURB_MAX_US; J runs go at once.  The seed also chooses the
 * scenario's parameters, so a seed replays the same parameters and the
 * same perturbation stream (the interleaving may still differ: --repeat
 * runs every seed N times).  A run that
 * crashes, or outlives --timeout (then it is killed), is a violation like
 * a broken invariant.  Prints every violation with its replay command, a
 * table per scenario, and exits 1 if there was any violation, crash or
 * hang, 2 on usage errors.
 */
#define _GNU_SOURCE 1
#include "perturb.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char *name;
    void (*fn)(struct pt_run *);
} scenarios[] = {
    {"startup", pt_scen_startup},
    {"change", pt_scen_change},
    {"events", pt_scen_events},
    {"kill", pt_scen_kill},
};
#define NSCEN (sizeof scenarios / sizeof *scenarios)

/* ------------------------------------------------------------------ */
/* One run (the child)                                                */
/* ------------------------------------------------------------------ */

static int run_one(const char *scenario, uint64_t seed, bool keep)
{
    struct pt_run r = {0};
    r.scenario = scenario;
    r.seed = seed;
    r.rng = seed * 0x9e3779b97f4a7c15ull ^ 0x5eed;
    r.keep = keep;
    signal(SIGPIPE, SIG_IGN); /* as the CLI does: a dead App is no signal */
    for (size_t i = 0; i < NSCEN; i++) {
        if (strcmp(scenarios[i].name, scenario) == 0) {
            scenarios[i].fn(&r);
            if (!r.decided)
                printf("RESULT violation no-verdict\tthe scenario ended "
                       "without a verdict\n");
            fflush(stdout);
            pt_cleanup(&r);
            free(r.dir);
            return 0;
        }
    }
    fprintf(stderr, "aur-perturb: unknown scenario %s\n", scenario);
    return 2;
}

/* ------------------------------------------------------------------ */
/* The runner                                                         */
/* ------------------------------------------------------------------ */

struct tally {
    char kind[12];
    char cat[96];
    unsigned n;
    char seeds[160]; /* the first few */
};

struct stats {
    const char *scenario;
    unsigned runs, ok, allowed, violations, crashes, hangs;
    int64_t ms_total, ms_max;
    struct tally t[128];
    size_t nt;
};

static void tally(struct stats *st, const char *kind, const char *cat,
                  uint64_t seed)
{
    struct tally *t = NULL;
    for (size_t i = 0; i < st->nt && !t; i++)
        if (strcmp(st->t[i].kind, kind) == 0 && strcmp(st->t[i].cat, cat) == 0)
            t = &st->t[i];
    if (!t) {
        if (st->nt == sizeof st->t / sizeof *st->t)
            t = &st->t[st->nt - 1]; /* the table is full: lump together */
        else {
            t = &st->t[st->nt++];
            snprintf(t->kind, sizeof t->kind, "%s", kind);
            snprintf(t->cat, sizeof t->cat, "%s", cat);
        }
    }
    t->n++;
    size_t l = strlen(t->seeds);
    if (l < sizeof t->seeds - 24)
        snprintf(t->seeds + l, sizeof t->seeds - l, "%s%llu", l ? " " : "",
                 (unsigned long long)seed);
    else if (!strstr(t->seeds, "..."))
        snprintf(t->seeds + l, sizeof t->seeds - l, " ...");
}

struct slot {
    pid_t pid;
    uint64_t seed;
    int out_fd;
    char err_path[64];
    int64_t started;
    bool killed;
    struct stats *st;
};

static struct {
    const char *self;
    unsigned jobs;
    unsigned max_us;
    int timeout_s;
    unsigned repeat;
    bool baseline, keep, verbose;
} O = {.jobs = 2, .max_us = 2000, .timeout_s = 180, .repeat = 1};

static void launch(struct slot *s, struct stats *st, uint64_t seed)
{
    int pfd[2];
    char sbuf[32];
    int efd;
    snprintf(s->err_path, sizeof s->err_path, "/tmp/aur-pt-err-XXXXXX");
    efd = mkstemp(s->err_path);
    if (efd < 0 || pipe(pfd) < 0) {
        perror("aur-perturb: launch");
        exit(2);
    }
    snprintf(sbuf, sizeof sbuf, "%llu", (unsigned long long)seed);
    s->pid = fork();
    if (s->pid < 0) {
        perror("aur-perturb: fork");
        exit(2);
    }
    if (s->pid == 0) {
        char mus[32];
        const char *argv[8];
        int n = 0;
        dup2(pfd[1], STDOUT_FILENO);
        dup2(efd, STDERR_FILENO);
        close(pfd[0]);
        close(pfd[1]);
        close(efd);
        setpgid(0, 0); /* a hung run is killed with everything it made */
        if (O.baseline) {
            unsetenv("AUR_PERTURB_SEED");
            unsetenv("AUR_PERTURB_MAX_US");
        } else {
            snprintf(mus, sizeof mus, "%u", O.max_us);
            setenv("AUR_PERTURB_SEED", sbuf, 1);
            setenv("AUR_PERTURB_MAX_US", mus, 1);
        }
        argv[n++] = O.self;
        argv[n++] = "--one";
        argv[n++] = st->scenario;
        argv[n++] = sbuf;
        if (O.keep)
            argv[n++] = "--keep";
        argv[n] = NULL;
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    setpgid(s->pid, s->pid);
    close(pfd[1]);
    close(efd);
    s->out_fd = pfd[0];
    s->seed = seed;
    s->st = st;
    s->started = pt_now_ms();
    s->killed = false;
    /* the result line is tiny; never block on it */
    fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
}

static void print_tail(const char *path, int lines)
{
    char *text = pt_slurp(path);
    if (!text)
        return;
    size_t len = strlen(text);
    const char *p = text + len;
    int seen = 0;
    while (p > text && seen <= lines)
        if (*--p == '\n')
            seen++;
    fprintf(stderr, "  --- last lines of the run's stderr ---\n%s%s", p,
            len && text[len - 1] != '\n' ? "\n" : "");
    free(text);
}

static void replay_hint(const struct slot *s)
{
    char extra[64] = "";
    if (O.baseline)
        snprintf(extra, sizeof extra, " --baseline");
    else if (O.max_us != 2000)
        snprintf(extra, sizeof extra, " --max-us %u", O.max_us);
    /* a seed replays its parameters and perturbation stream, not always
     * its interleaving: repeat it; --one ... --keep keeps a run's files */
    fprintf(stderr, "  replay: %s %s --seeds %llu --repeat 20%s -v\n", O.self,
            s->st->scenario, (unsigned long long)s->seed, extra);
}

static void finish(struct slot *s, int wstatus)
{
    char buf[4096];
    ssize_t n = read(s->out_fd, buf, sizeof buf - 1);
    int64_t took = pt_now_ms() - s->started;
    struct stats *st = s->st;
    char kind[16] = "", cat[96] = "", *line, *tab;
    buf[n > 0 ? n : 0] = '\0';
    close(s->out_fd);
    st->runs++;
    st->ms_total += took;
    if (took > st->ms_max)
        st->ms_max = took;
    line = strstr(buf, "RESULT ");
    if (line && sscanf(line, "RESULT %15s %95[^\t\n]", kind, cat) == 2) {
        tab = strchr(line, '\t');
        if (tab)
            tab++;
    } else {
        tab = NULL;
    }
    bool clean_exit = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
    if (s->killed) {
        st->hangs++;
        tally(st, "violation", "hang (killed at the timeout)", s->seed);
        fprintf(stderr, "VIOLATION %s seed %llu: hang: no end after %d s%s%s\n",
                st->scenario, (unsigned long long)s->seed, O.timeout_s,
                line ? "; it had already said: " : "", line ? line : "");
        print_tail(s->err_path, 30);
        replay_hint(s);
    } else if (!clean_exit || !line) {
        char why[64];
        st->crashes++;
        if (WIFSIGNALED(wstatus))
            snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(wstatus));
        else
            snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(wstatus));
        tally(st, "violation", "crash", s->seed);
        fprintf(stderr, "VIOLATION %s seed %llu: crash: %s%s%s\n",
                st->scenario, (unsigned long long)s->seed, why,
                line ? "; it had said: " : "", line ? line : "");
        print_tail(s->err_path, 40);
        replay_hint(s);
    } else {
        tally(st, kind, cat, s->seed);
        if (strcmp(kind, "ok") == 0)
            st->ok++;
        else if (strcmp(kind, "allowed") == 0)
            st->allowed++;
        else {
            st->violations++;
            fprintf(stderr, "VIOLATION %s seed %llu: %s: %s", st->scenario,
                    (unsigned long long)s->seed, cat, tab ? tab : "\n");
            replay_hint(s);
        }
        if (O.verbose)
            fprintf(stderr, "%s seed %llu (%lld ms): %s %s: %s",
                    st->scenario, (unsigned long long)s->seed,
                    (long long)took, kind, cat, tab ? tab : "\n");
    }
    unlink(s->err_path);
    s->pid = 0;
}

static void run_seeds(struct stats *sts, size_t nst, uint64_t from,
                      uint64_t to)
{
    struct slot slots[64] = {{0}};
    unsigned active = 0;
    size_t next_st = 0;
    uint64_t next_seed = from;
    unsigned next_rep = 0;

    /* scenarios interleave seed by seed so a slow one shares the cores */
    for (;;) {
        while (active < O.jobs && next_seed <= to) {
            for (unsigned i = 0; i < O.jobs; i++) {
                if (slots[i].pid == 0) {
                    launch(&slots[i], &sts[next_st], next_seed);
                    active++;
                    break;
                }
            }
            if (++next_st == nst) {
                next_st = 0;
                if (++next_rep == O.repeat) {
                    next_rep = 0;
                    next_seed++;
                }
            }
        }
        if (active == 0)
            break;
        int wstatus;
        pid_t pid = waitpid(-1, &wstatus, WNOHANG);
        if (pid > 0) {
            for (unsigned i = 0; i < O.jobs; i++)
                if (slots[i].pid == pid) {
                    kill(-pid, SIGKILL); /* anything the run left behind */
                    finish(&slots[i], wstatus);
                    active--;
                }
            continue;
        }
        for (unsigned i = 0; i < O.jobs; i++) {
            struct slot *s = &slots[i];
            if (s->pid && !s->killed &&
                pt_now_ms() - s->started > (int64_t)O.timeout_s * 1000) {
                s->killed = true;
                kill(-s->pid, SIGKILL);
            }
        }
        pt_sleep_ms(5);
    }
}

static void report(const struct stats *st, uint64_t from, uint64_t to,
                   int64_t wall_ms)
{
    unsigned bad = st->violations + st->crashes + st->hangs;
    printf("\nscenario %-8s seeds %llu..%llu%s: %u runs, %u ok, %u allowed "
           "failures, %u VIOLATIONS (%u crashes, %u hangs); run mean %lld "
           "ms, max %lld ms; wall %.1f s\n",
           st->scenario, (unsigned long long)from, (unsigned long long)to,
           O.baseline ? " (baseline, unperturbed)" : "", st->runs, st->ok,
           st->allowed, bad, st->crashes, st->hangs,
           st->runs ? (long long)(st->ms_total / st->runs) : 0,
           (long long)st->ms_max, wall_ms / 1000.0);
    for (int pass = 0; pass < 3; pass++) {
        const char *want = pass == 0 ? "violation" : pass == 1 ? "allowed" : "ok";
        for (size_t i = 0; i < st->nt; i++)
            if (strcmp(st->t[i].kind, want) == 0)
                printf("  %-9s %-46s %6u   seeds %s\n", st->t[i].kind,
                       st->t[i].cat, st->t[i].n, st->t[i].seeds);
    }
    fflush(stdout);
}

/* Whether the libaurora-mcp this program runs with has the perturbation
 * compiled in (it then reads AUR_PERTURB_SEED): without it every
 * "perturbed" run would silently be a baseline run. */
static bool perturbation_compiled_in(char *lib, size_t size)
{
    Dl_info info;
    FILE *f;
    char *buf = NULL;
    long n;
    bool found = false;
    snprintf(lib, size, "libaurora-mcp");
    if (!dladdr((void *)aur_mcp_create, &info) || !info.dli_fname)
        return false;
    snprintf(lib, size, "%s", info.dli_fname);
    if (!(f = fopen(info.dli_fname, "rb")))
        return false;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n)
        found = memmem(buf, (size_t)n, "AUR_PERTURB_SEED", 16) != NULL;
    free(buf);
    fclose(f);
    return found;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: aur-perturb SCENARIO[,SCENARIO...]|all [--seeds A[:B]] "
            "[--jobs J]\n"
            "                   [--max-us U] [--timeout S] [--repeat N] "
            "[--baseline] [--keep] [-v]\n"
            "       aur-perturb --one SCENARIO SEED [--keep]\n"
            "scenarios: startup change events kill\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct stats sts[NSCEN];
    size_t nst = 0;
    uint64_t from = 1, to = 1;
    const char *which;

    if (argc >= 4 && strcmp(argv[1], "--one") == 0)
        return run_one(argv[2], strtoull(argv[3], NULL, 10),
                       argc > 4 && strcmp(argv[4], "--keep") == 0);
    if (argc < 2 || argv[1][0] == '-')
        return usage();
    O.self = argv[0];
    which = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--baseline") == 0)
            O.baseline = true;
        else if (strcmp(a, "--keep") == 0)
            O.keep = true;
        else if (strcmp(a, "-v") == 0)
            O.verbose = true;
        else if (!v)
            return usage();
        else if (strcmp(a, "--seeds") == 0) {
            char *colon;
            from = strtoull(v, &colon, 10);
            to = *colon == ':' ? strtoull(colon + 1, NULL, 10) : from;
            i++;
        } else if (strcmp(a, "--jobs") == 0) {
            O.jobs = (unsigned)atoi(v);
            i++;
        } else if (strcmp(a, "--max-us") == 0) {
            O.max_us = (unsigned)atoi(v);
            i++;
        } else if (strcmp(a, "--timeout") == 0) {
            O.timeout_s = atoi(v);
            i++;
        } else if (strcmp(a, "--repeat") == 0) {
            O.repeat = (unsigned)atoi(v);
            i++;
        } else
            return usage();
    }
    if (from == 0 || to < from || O.jobs < 1 || O.jobs > 64 ||
        O.max_us < 1 || O.max_us > 999999 || O.timeout_s < 1 ||
        O.repeat < 1)
        return usage(); /* seed 0 means "off" to AUR_PERTURB_SEED */
    for (size_t i = 0; i < NSCEN; i++) {
        size_t l = strlen(scenarios[i].name);
        const char *p = strstr(which, scenarios[i].name);
        bool listed = strcmp(which, "all") == 0 ||
                      (p && (p == which || p[-1] == ',') &&
                       (p[l] == '\0' || p[l] == ','));
        if (listed) {
            memset(&sts[nst], 0, sizeof sts[nst]);
            sts[nst++].scenario = scenarios[i].name;
        }
    }
    if (nst == 0)
        return usage();
    char lib[512];
    if (!O.baseline && !perturbation_compiled_in(lib, sizeof lib)) {
        fprintf(stderr,
                "aur-perturb: %s has no perturbation points compiled in "
                "(configure with -DAUR_PERTURB=ON): refusing to call "
                "unperturbed runs perturbed\n",
                lib);
        return 2;
    }
    int64_t t0 = pt_now_ms();
    run_seeds(sts, nst, from, to);
    int64_t wall = pt_now_ms() - t0;
    unsigned bad = 0;
    for (size_t i = 0; i < nst; i++) {
        report(&sts[i], from, to, wall);
        bad += sts[i].violations + sts[i].crashes + sts[i].hangs;
    }
    printf("\n%s: %u violation(s) in %.1f s (%u jobs, AUR_PERTURB_MAX_US "
           "%u)\n",
           bad ? "FAILED" : "passed", bad, wall / 1000.0, O.jobs, O.max_us);
    return bad ? 1 : 0;
}
