/*
 * perturb.h - the timing-perturbation property tests (aur-perturb):
 * shared by the seed runner (perturb_main.c), the run helpers
 * (perturb_util.c) and the four scenarios (perturb_scen_*.c).
 *
 * One run = one scenario with one seed, in its own process (the seed of
 * AUR_PERTURB_SEED is read once per process), bounded by the runner's
 * timeout.  A run ends by printing exactly one result line on stdout:
 *
 *     RESULT <ok|allowed|violation> <category>\t<detail>
 *
 * ok = the product kept its promise on the happy path; allowed = a
 * failure the scenario really injected, in the way the invariant permits;
 * violation = a broken promise (a product bug: report it, never loosen
 * the check).  Not thread-safe: the run process is single-threaded apart
 * from the host's own threads and a pt_start_watched watcher, which calls
 * none of these helpers.
 */
#ifndef AUR_PERTURB_TESTS_H
#define AUR_PERTURB_TESTS_H

#include <aurora/aur_host_jsonc.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_run {
    const char *scenario;
    uint64_t seed;
    uint64_t rng;  /* scenario parameters, derived from the seed only */
    char *dir;     /* the run's config directory under /tmp */
    bool keep;     /* keep dir (--keep) */
    bool decided;  /* a result was printed */
};

/* ---- results (perturb_util.c); each prints the RESULT line once ---- */
void pt_ok(struct pt_run *r, const char *cat, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pt_allowed(struct pt_run *r, const char *cat, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pt_violation(struct pt_run *r, const char *cat, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- scenario parameters: a splitmix64 stream of the seed ---- */
uint64_t pt_rand(struct pt_run *r);
unsigned pt_below(struct pt_run *r, unsigned n); /* 0..n-1 (0 if n == 0) */
bool pt_chance(struct pt_run *r, unsigned percent);

/* ---- config directories ---- */
/* A new /tmp/aur-pt-XXXXXX with host.ini: plugins, the build's plugin
 * dir, journal data/world.sqlite3, log_level error; mcp = the [mcp]
 * lines (without the header). */
void pt_mkconfig(struct pt_run *r, const char *plugins, const char *mcp);
/* apps.d/<file>: [app] package, timeout_seconds, extra lines; [stdio]
 * command and args (NULL-terminated). */
void pt_add_app(struct pt_run *r, const char *file, const char *package,
                double timeout_s, const char *app_extra, const char *command,
                const char *const *args);
/* dir/name (malloc'd). */
char *pt_path(struct pt_run *r, const char *name);
/* Build-tree paths (malloc'd): bin/aur-perturb-server, ... */
char *pt_bin(const char *rel);
/* The whole file or NULL (malloc'd). */
char *pt_slurp(const char *path);
/* rm -rf the run directory unless kept. */
void pt_cleanup(struct pt_run *r);

/* ---- the host ---- */
/* aur_mcp_create (must succeed: a config error is the test's bug and
 * exits 3) then aur_mcp_start; returns start's rc.  *ms = its duration. */
int pt_start(struct pt_run *r, struct aur_mcp **h,
             struct aur_startup_error *serr, int64_t *ms);
/* pt_start with watch(h, done, ud) running on a thread of its own from
 * before aur_mcp_start until it returned (*done turns true then; watch
 * must return soon after): a status reader during the start. */
int pt_start_watched(struct pt_run *r, struct aur_mcp **h,
                     struct aur_startup_error *serr, int64_t *ms,
                     void (*watch)(struct aur_mcp *h, const bool *done,
                                   void *ud),
                     void *ud);
int64_t pt_now_ms(void);
void pt_sleep_ms(unsigned ms);
/* Live (non-zombie) processes whose command line contains marker. */
int pt_procs_with(const char *marker);
/* After destroy: the run's Apps are all gone (waits up to 3 s for the
 * kernel to finish them); a violation otherwise. */
bool pt_no_leftovers(struct pt_run *r);

/* One call with aur_mcp_call_start_jsonc (batched: inside
 * aur_mcp_batch_begin/end, its request held until the end), waited for
 * (30 s at most: a violation after that) into out (clear it); the number
 * of times its callback ran, to check after the host is destroyed. */
void pt_call_started(struct pt_run *r, struct aur_mcp *h, const char *tool,
                     struct json_object *args, bool batched,
                     struct aur_tool_output *out);
int pt_call_started_times(void);

/* Journal lines (JSON text) with seq > after and (scope NULL = all). */
typedef void pt_line_fn(void *ud, const char *line);
void pt_journal(struct pt_run *r, int64_t after, const char *scope,
                pt_line_fn *fn, void *ud);

/* ---- the scenarios (perturb_scen_*.c) ---- */
void pt_scen_startup(struct pt_run *r);
void pt_scen_change(struct pt_run *r);
void pt_scen_events(struct pt_run *r);
void pt_scen_kill(struct pt_run *r);

#endif
