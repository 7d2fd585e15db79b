/*
 * config_int.h - shared between the config_*.c files only.
 *
 * The loader works in two stages: config_ini.c turns one file into a
 * struct aur__ini (sections with their keys, values trimmed, line numbers
 * kept), and config.c / config_app.c / config_agents.c validate that
 * document and move what they keep into struct aur__config.
 *
 * Ownership: an aur__ini owns every string in it; a validator that keeps a
 * string takes it by setting the document's pointer to NULL, so
 * aur__ini_free releases only what was not taken.  Single-threaded: one
 * load runs on one thread.
 */
#ifndef AUR_CONFIG_INT_H
#define AUR_CONFIG_INT_H

#include "aur_setup.h"

#include "config.h"
#include "path_rule.h" /* aur__path_join */

/* One [section] of a file. */
struct aur__ini_sec {
    struct aur_cfg cfg; /* cfg.file is shared with the doc: not owned */
    size_t cap;         /* allocated entries of cfg.kv */
    int line;           /* line of the [header] */
};

struct aur__ini {
    char *file; /* the name shown in errors, e.g. "apps.d/clock.ini" */
    struct aur__ini_sec *secs;
    size_t nsecs, cap;
};

/* What a load is working on: where errors go. */
struct aur__cfg_ctx {
    const char *dir; /* realpath of the config directory */
    struct aur__config_diag *diag;
    struct aur_error *err;
};

/*
 * Record a config error "<file>:<line>: <key>: <what>" (the line is left
 * out when 0, the key when NULL or empty) in ctx->err and ctx->diag.
 * Returns AUR_E_CONFIG.
 */
int aur__cfg_fail(struct aur__cfg_ctx *ctx, const char *file, int line,
                  const char *key, const char *fmt, ...) AUR_PRINTF(5, 6);
/* Record AUR_E_NOMEM (diag gets the file only). */
int aur__cfg_nomem(struct aur__cfg_ctx *ctx, const char *file);

/*
 * Parse <ctx->dir>/<rel> into *out.  rel is also the name used in errors.
 * Syntax errors, duplicate section headers, keys outside a section and
 * control characters are reported here.  With missing_ok a missing file
 * gives AUR_DECLINE and *out = NULL.
 */
int aur__ini_load(struct aur__cfg_ctx *ctx, const char *rel, bool missing_ok,
                  struct aur__ini **out);
void aur__ini_free(struct aur__ini *ini);

/* The section named name, or NULL. */
struct aur__ini_sec *aur__ini_find(struct aur__ini *ini, const char *name);

/* A copy of key and value (klen, vlen bytes; taken as they are) added to
 * sec, read on line.  AUR_OK or AUR_E_NOMEM (sec unchanged). */
int aur__ini_add(struct aur__ini_sec *sec, const char *key, size_t klen,
                 const char *value, size_t vlen, int line);

/* Release the strings and the kv array of cfg (not cfg itself). */
void aur__cfg_release(struct aur_cfg *cfg);

/*
 * Per-section key rules.  Each key of sec must be listed in keys; a key
 * listed with repeat == false may appear once.  Every required key must be
 * present.  On error names the offending line and key.
 */
int aur__check_keys(struct aur__cfg_ctx *ctx, const struct aur_cfg *cfg,
                    const struct aur_cfg_key *rules, size_t nrules);

/* The last kv of key in sec, or NULL. */
struct aur__kv *aur__sec_kv(const struct aur__ini_sec *sec, const char *key);

/* Strict decimal integer in [lo, hi] (optional leading '-'). */
bool aur__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);


/* The budget keys, allowed in [mcp] (the defaults) and in an App's [app]
 * (its override): for the key-rule tables of both sections. */
#define AUR__BUDGET_KEY_RULES                                                 \
    {"max_notifications_per_second", false, false},                           \
        {"notification_burst", false, false},                                 \
        {"max_schema_bytes", false, false},                                   \
        {"max_schema_depth", false, false},                                   \
        {"max_description_bytes", false, false},                              \
        {"max_result_bytes", false, false},                                   \
        {"max_app_memory_bytes", false, false},                               \
        {"max_queued_bytes", false, false},                                   \
        {"max_in_flight", false, false}

/*
 * The budget values (struct aur__budgets, config.c): set *b to the built-in
 * defaults, or read the keys present in sec (file names it in errors) over
 * what *b holds.  A value out of range is a config error naming the line
 * and the key.
 */
void aur__budgets_default(struct aur__budgets *b);
int aur__budgets_parse(struct aur__cfg_ctx *ctx, const char *file,
                       const struct aur__ini_sec *sec,
                       struct aur__budgets *b);

/* apps.d (config_app.c) and agents.ini (config_agents.c). */
int aur__config_apps_dir(struct aur__cfg_ctx *ctx, struct aur__config *c,
                         const struct aur__transport_def *defs, size_t ndefs);
int aur__config_load_agents(struct aur__cfg_ctx *ctx, struct aur__config *c);
void aur__app_cfg_release(struct aur__app_cfg *app);
void aur__agent_cfg_release(struct aur__agent_cfg *agent);

#endif
