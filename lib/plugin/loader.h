/*
 * loader.h - dlopen, validate and initialise plugins
 * (docs/writing-plugins.md §2-§4).
 *
 * Ownership: struct aur__plugin is caller storage; aur__plugin_open fills it
 * and aur__plugin_release undoes it.  Threads: owner thread only (startup
 * and teardown).
 */
#ifndef AUR_LOADER_H
#define AUR_LOADER_H

#include "aur_setup.h"

struct aur__plugin {
    char *name; /* desc.name, copied */
    char *path; /* the file that was loaded */
    void *dl;   /* dlopen handle */
    /* Descriptor and ops copied into zeroed storage: a plugin built
     * against an older header reads NULL for hooks it never knew. */
    struct aur_plugin_desc desc;
    union {
        struct aur_transport_ops t;
        struct aur_extension_ops e;
    } ops;
    void *state;          /* from init */
    struct aur_self *self; /* borrowed, given to init */
    bool inited;
};

/*
 * dlopen(path, RTLD_NOW|RTLD_LOCAL), call aur_plugin_entry(AUR_ABI_VERSION)
 * and validate: the symbol exists ("not an aurora-mcp plugin"), magic,
 * major == ours, minor <= ours, struct_size >= the 1.0 minimum, a known
 * kind, a name of [a-z0-9-]+, ops present with a sane struct_size, and the
 * mandatory hooks (transports: open, send, close; extensions: at least
 * one hook; methods listed => on_notify).  Copies desc and ops.  On
 * failure AUR_E_PLUGIN naming the file and the reason, dlclose'd, *p
 * zeroed.
 */
int aur__plugin_open(const char *path, struct aur__plugin *p,
                     struct aur_error *err);

/* Call init.  On failure AUR_E_PLUGIN "<name>: init failed: <msg>"; fini
 * is then never called. */
int aur__plugin_init(struct aur__plugin *p, const struct aur_host *host,
                     struct aur_self *self, const struct aur_cfg *cfg,
                     struct aur_error *err);

/* fini if inited (never dlclose after a successful init: live code may
 * own threads), else dlclose.  Frees names; *p zeroed. */
void aur__plugin_release(struct aur__plugin *p);

/*
 * The deployed plugin set, loaded in order from dir/<name>.so.  Rejects a
 * duplicate descriptor name ("duplicate plugin name").  Opens all, then
 * inits all in order; on any failure releases what was done, in reverse.
 * make_self is called once per plugin to create its tag.
 */
struct aur__plugin_set {
    struct aur__plugin *v;
    size_t n;
};
int aur__plugins_load(const char *dir, char *const *names, size_t n,
                      const struct aur_host *host,
                      struct aur_self *(*make_self)(void *ud, const char *name),
                      void *ud,
                      const struct aur_cfg *(*section)(void *ud,
                                                       const char *name),
                      struct aur__plugin_set *out, struct aur_error *err);
/* Release in reverse order. */
void aur__plugins_release(struct aur__plugin_set *set);

/* {"name","version","summary","kind":"transport"|"extension",
 *  "abi":{"major","minor"},"struct_size","path", ops details: transports
 *  "caps":[...], extensions "cap_key","methods":[...],"hooks":[...]}.
 *  New reference (transfer). */
struct json_object *aur__plugin_describe(const struct aur__plugin *p);

#endif
