/*
 * config.h - the frozen configuration of one config directory
 * (host.ini, apps.d/NAME.ini, agents.ini).  Private to the core.
 *
 * Ownership: aur__config_load allocates the whole tree; aur__config_free
 * releases it.  After load nothing mutates it, so any thread may read it.
 */
#ifndef AUR_CONFIG_H
#define AUR_CONFIG_H

#include "aur_setup.h"

/* One key = value line of an ini section. */
struct aur__kv {
    char *key;
    char *value; /* trimmed */
    int line;
};

struct aur__config_diag;

/* A frozen ini section: the opaque struct aur_cfg of the ABI. */
struct aur_cfg {
    char *file;    /* path as shown in errors */
    char *section; /* section name without brackets */
    struct aur__kv *kv;
    size_t n;
    int line; /* of the [header]; 0 = none (a section the core made) */
    /* Set only while the loader runs a transport's check on this
     * section (one thread, before any App starts): where cfg_fail
     * records the place of the error.  NULL otherwise. */
    struct aur__config_diag *diag;
};

/*
 * What the loader knows of one transport, made by the engine from a
 * loaded transport plugin (aur_transport_ops, ABI 1.4): the config
 * module names no transport itself.  All borrowed from the plugin.
 */
struct aur__transport_def {
    const char *name;           /* the plugin's name: always a word */
    const char *const *words;   /* more `transport =` words, or NULL */
    const char *section;        /* the App file's section it reads */
    const struct aur_cfg_key *keys; /* NULL-key ended; NULL = any key */
    uint32_t caps;              /* AUR_TCAP_* */
    int (*check)(void *state, const struct aur_cfg *endpoint, int active,
                 struct aur_error *err);
    void *state;
};
enum aur__event_mode {
    AUR__EV_DISABLED = 0,
    AUR__EV_WORLD = 1,
    AUR__EV_LEGACY = 2,
};

/*
 * What one App may make the host spend, beyond the frame and JSON depth
 * bounds of the transports (docs/budgets.md).  [mcp] in host.ini sets the
 * defaults; the same keys in an App's [app] section override them for
 * that App.
 */
struct aur__budgets {
    int64_t notify_rate;  /* max_notifications_per_second */
    int64_t notify_burst; /* notification_burst */
    int64_t schema_bytes; /* max_schema_bytes (canonical JSON, per schema) */
    int64_t schema_depth; /* max_schema_depth */
    int64_t desc_bytes;   /* max_description_bytes */
    int64_t result_bytes; /* max_result_bytes */
    int64_t app_memory;   /* max_app_memory_bytes */
    int64_t queued_bytes; /* max_queued_bytes */
    int64_t in_flight;    /* max_in_flight: calls sent and not yet ended */
};

struct aur__app_cfg {
    char *file; /* the ini file, as shown in errors */
    char *package;
    bool enabled;
    const struct aur__transport_def *transport; /* never NULL once loaded */
    double timeout_s;
    int64_t timeout_ms; /* ceil(timeout_s * 1000), >= 1 */
    enum aur__event_mode event_mode;
    struct aur__budgets budgets; /* [mcp] defaults + [app] overrides */
    /*
     * The section handed to the transport (check, open, preflight): its
     * keys as written plus "package", "timeout_ms" and "config_dir".
     */
    struct aur_cfg endpoint;
};

struct aur__agent_cfg {
    char *id; /* from [agent <id>] */
    char **tools;
    int *tool_lines;
    size_t ntools;
};

struct aur__config {
    char *dir; /* realpath of the config directory */
    char *host_file;
    /* [host] */
    char **plugins; /* deployed plugin set, in order */
    size_t nplugins;
    char *plugin_dir; /* NULL = build/install default */
    char *journal;    /* absolute path, or a postgresql:// URI */
    char *journal_password_env; /* the variable with its password, or NULL */
    int64_t journal_wait_ms;    /* PostgreSQL: wait for it this long */
    char *log_file;   /* absolute path or NULL */
    int log_level;    /* enum aur_log_level */
    /* [mcp] */
    bool mcp_enabled;
    int start_concurrency; /* Apps started at once, default 16 */
    int max_pages;             /* default 1024 */
    int max_tools;             /* default 10000 */
    int max_relist;            /* re-pagings after a change, default 3 */
    int record_calls; /* 0 off, 1 on (outcome), 2 with_data (+ args, content) */
    struct aur__budgets budgets; /* defaults for every App */
    /* per-plugin sections of host.ini, e.g. [transport-stdio] */
    struct aur_cfg *plugin_sections;
    size_t nplugin_sections;
    /* apps.d, in config order (file names in byte order) */
    struct aur__app_cfg *apps;
    size_t napps;
    /* agents.ini, may be empty */
    struct aur__agent_cfg *agents;
    size_t nagents;
    char *agents_file; /* NULL when absent */
};

/* Where a config error points.  Filled on AUR_E_CONFIG. */
struct aur__config_diag {
    char file[512];
    int line; /* 0 = the whole file */
    char key[64];
};

/*
 * Load and validate dir in two steps, because the transports an App file
 * may name are known only once host.ini's plugins are loaded:
 * aur__config_load_host reads host.ini alone (*out has no Apps and no
 * agents yet), aur__config_load_apps reads apps.d and agents.ini into it,
 * checking each App's transport section against defs[0..ndefs) (and the
 * transport's own check).  aur__config_load does both.  On failure
 * returns AUR_E_CONFIG (or AUR_E_NOMEM) with err->msg =
 * "<file>:<line>: <key>: <what>" and *diag (optional) filled; load_host
 * and load then allocate nothing, load_apps leaves c as it was given
 * (free it).  Every check that needs no running App is done here.
 */
int aur__config_load_host(const char *dir, struct aur__config **out,
                          struct aur__config_diag *diag,
                          struct aur_error *err);
int aur__config_load_apps(struct aur__config *c,
                          const struct aur__transport_def *defs,
                          size_t ndefs, struct aur__config_diag *diag,
                          struct aur_error *err);
int aur__config_load(const char *dir, const struct aur__transport_def *defs,
                     size_t ndefs, struct aur__config **out,
                     struct aur__config_diag *diag, struct aur_error *err);
void aur__config_free(struct aur__config *cfg);

/* *d as a transport plugin of that name, ops and state describes it
 * (ops borrowed: copied into host storage by the loader; a plugin from
 * before ABI 1.4 reads its section by its own name and takes any key). */
void aur__transport_def_init(struct aur__transport_def *d, const char *name,
                             const struct aur_transport_ops *ops,
                             void *state);

/* Does d take `transport = w` (its plugin name or one of its words)? */
bool aur__transport_takes(const struct aur__transport_def *d, const char *w);
/* Is name in host.ini's plugins? */
bool aur__config_has_plugin(const struct aur__config *c, const char *name);

/* The word a def is known by (its first word, else its name). */
const char *aur__transport_word(const struct aur__transport_def *d);

/* The section of host.ini named name, or an empty static section. */
const struct aur_cfg *aur__config_plugin_section(const struct aur__config *c,
                                                 const char *name);

/* aur_cfg accessors (the host vtable's cfg_* entries). */
const char *aur__cfg_str(const struct aur_cfg *cfg, const char *key,
                         const char *dflt);
size_t aur__cfg_count(const struct aur_cfg *cfg, const char *key);
const char *aur__cfg_str_at(const struct aur_cfg *cfg, const char *key,
                            size_t i);
int aur__cfg_int(const struct aur_cfg *cfg, const char *key, int64_t dflt,
                 int64_t *out, struct aur_error *err);
int aur__cfg_bool(const struct aur_cfg *cfg, const char *key, int dflt,
                  int *out, struct aur_error *err);
/* cfg_fail and cfg_line of the host vtable (ABI 1.4). */
int aur__cfg_fail_at(const struct aur_cfg *cfg, const char *key, size_t i,
                     struct aur_error *err, const char *fmt, ...)
    AUR_PRINTF(5, 6);
int aur__cfg_line(const struct aur_cfg *cfg, const char *key, size_t i);
/* cfg_path of the host vtable (ABI 1.4, config_cfg.c). */
char *aur__cfg_path(const struct aur_cfg *cfg, const char *key, size_t i,
                    unsigned flags, struct aur_error *err);
/* Every cfg_* member of a host vtable: the one place that lists them
 * (the engine's vtable, the config tests' and fuzzers' hosts). */
void aur__cfg_services(struct aur_host *h);
/* The keys of cfg against keys (NULL-key ended; NULL = any): unknown,
 * repeated, missing; AUR_E_CONFIG naming file, line and key. */
int aur__cfg_keys_check(const struct aur_cfg *cfg,
                        const struct aur_cfg_key *keys, struct aur_error *err);

const char *aur__event_mode_word(enum aur__event_mode m);

#endif
