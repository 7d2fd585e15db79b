/*
 * loader.c - dlopen, validate, copy and initialise plugins
 * (docs/writing-plugins.md §2-§4, §6).
 *
 * The descriptor and ops table live in the plugin's memory and may come
 * from a plugin built against an older or newer header, or be garbage.
 * Every field is therefore read only after the size that covers it has
 * been validated, and everything the core uses later is copied into
 * zeroed host storage of the host's own layout.
 */
#include "aur_setup.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config.h"
#include "loader.h"

#define NAME_MAX_LEN 64
/* A methods list longer than this is treated as unterminated. */
#define METHODS_MAX 256
#define METHOD_MAX_LEN 256

/* The 1.0 minimum of each ops table: everything up to the last member
 * that 1.0 made mandatory (transports) or meaningful (extensions). */
#define TRANSPORT_OPS_MIN                                                    \
    (offsetof(struct aur_transport_ops, close) +                             \
     sizeof(((struct aur_transport_ops *)0)->close))
#define EXTENSION_OPS_MIN                                                    \
    (offsetof(struct aur_extension_ops, methods) +                           \
     sizeof(((struct aur_extension_ops *)0)->methods))

/* ------------------------------------------------------------------ */
/* Validation helpers                                                 */
/* ------------------------------------------------------------------ */

static bool valid_plugin_name(const char *s)
{
    size_t n;
    if (!s)
        return false;
    n = strnlen(s, NAME_MAX_LEN + 1);
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

/* Number of methods, or -1 if the list is unterminated, too long or holds
 * an empty or oversized name. */
static int count_methods(const char *const *m)
{
    if (!m)
        return 0;
    for (int n = 0; n < METHODS_MAX; n++) {
        size_t len;
        if (!m[n])
            return n;
        len = strnlen(m[n], METHOD_MAX_LEN + 1);
        if (len == 0 || len > METHOD_MAX_LEN)
            return -1;
    }
    return -1;
}

static int check_transport(const char *path, struct aur__plugin *p,
                           struct aur_error *err)
{
    const struct aur_transport_ops *t = &p->ops.t;
    const char *missing = !t->open ? "open"
                          : !t->send ? "send"
                          : !t->close ? "close"
                                      : NULL;
    if (missing)
        return aur_fail(err, AUR_E_PLUGIN, 0, "%s: missing mandatory hook %s",
                        path, missing);
    return AUR_OK;
}

static int check_extension(const char *path, struct aur__plugin *p,
                           struct aur_error *err)
{
    const struct aur_extension_ops *e = &p->ops.e;
    int nmethods = count_methods(e->methods);
    bool any = e->declare_caps || e->accept_server || e->validate_tool ||
               e->resolve_scope || e->classify || e->on_notify ||
               e->end_session;
    if (!any)
        return aur_fail(err, AUR_E_PLUGIN, 0, "%s: extension has no hooks",
                        path);
    if (nmethods < 0)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: methods list is unterminated or holds a bad "
                        "name",
                        path);
    if (nmethods > 0 && !e->on_notify)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: lists methods but has no on_notify", path);
    return AUR_OK;
}

/* Copy the ops table the descriptor points at, honouring its struct_size
 * in both directions. */
static int copy_ops(const char *path, struct aur__plugin *p,
                    struct aur_error *err)
{
    const void *ops = p->desc.ops;
    size_t have, min, host;
    uint32_t size;

    if (!ops)
        return aur_fail(err, AUR_E_PLUGIN, 0, "%s: no ops table", path);
    /* struct_size is the first member of both ops structs. */
    memcpy(&size, ops, sizeof size);
    if (p->desc.kind == AUR_KIND_TRANSPORT) {
        min = TRANSPORT_OPS_MIN;
        host = sizeof p->ops.t;
    } else {
        min = EXTENSION_OPS_MIN;
        host = sizeof p->ops.e;
    }
    if (size < min)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: ops table too short (%u bytes, need at least "
                        "%zu)",
                        path, (unsigned)size, min);
    have = size < host ? size : host;
    memset(&p->ops, 0, sizeof p->ops);
    memcpy(&p->ops, ops, have);
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* One plugin                                                         */
/* ------------------------------------------------------------------ */

/* Check the descriptor field by field; each read is covered by a check
 * that the plugin claims the bytes exist. */
static int validate_desc(const char *path, const struct aur_plugin_desc *d,
                         struct aur__plugin *p, struct aur_error *err)
{
    uint32_t ver, size;
    size_t have;

    if (d->magic != AUR_PLUGIN_MAGIC)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: not an aurora-mcp plugin (bad magic 0x%08x)",
                        path, (unsigned)d->magic);
    ver = d->abi_version;
    if (AUR_ABI_MAJOR_OF(ver) != AUR_ABI_MAJOR)
        return aur_fail(err, AUR_E_PLUGIN, 0, "%s: ABI major %u, host has %u",
                        path, (unsigned)AUR_ABI_MAJOR_OF(ver),
                        (unsigned)AUR_ABI_MAJOR);
    if (AUR_ABI_MINOR_OF(ver) > AUR_ABI_MINOR)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: needs host ABI %u.%u, host has %u.%u", path,
                        (unsigned)AUR_ABI_MAJOR_OF(ver),
                        (unsigned)AUR_ABI_MINOR_OF(ver),
                        (unsigned)AUR_ABI_MAJOR, (unsigned)AUR_ABI_MINOR);
    size = d->struct_size;
    if (size < AUR_PLUGIN_DESC_MIN_SIZE)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: descriptor too short (%u bytes, need at least "
                        "%zu)",
                        path, (unsigned)size,
                        (size_t)AUR_PLUGIN_DESC_MIN_SIZE);
    /* A larger descriptor is from a newer header of our major whose
     * declared minor we already accepted: its tail is for a host that
     * knows it, so ignore it. */
    have = size < sizeof p->desc ? size : sizeof p->desc;
    memcpy(&p->desc, d, have);

    if (p->desc.kind != AUR_KIND_TRANSPORT &&
        p->desc.kind != AUR_KIND_EXTENSION)
        return aur_fail(err, AUR_E_PLUGIN, 0, "%s: unknown kind %u", path,
                        (unsigned)p->desc.kind);
    if (!p->desc.name)
        return aur_fail(err, AUR_E_PLUGIN, 0, "%s: plugin has no name",
                        path);
    if (!valid_plugin_name(p->desc.name))
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: bad plugin name \"%.*s\" (want [a-z0-9-]+, at "
                        "most %d characters)",
                        path, NAME_MAX_LEN, p->desc.name, NAME_MAX_LEN);
    if (!p->desc.init)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "%s: missing mandatory hook init", path);
    return AUR_OK;
}

/*
 * Like sshd's StrictModes: a plugin runs as the host, so neither the file
 * nor the directory it lies in may be writable by anyone else (group or
 * other), nor owned by another user than root or us.  Symlinks are
 * followed (an installed plugin may be one); what they lead to is judged.
 */
static int check_modes(const char *path, struct aur_error *err)
{
    char *real = realpath(path, NULL), *slash;
    struct stat st;
    int rc = AUR_OK;

    if (!real)
        return aur_fail(err, AUR_E_PLUGIN, errno, "%s: cannot load: %s", path,
                        strerror(errno));
    for (int step = 0; step < 2 && rc == AUR_OK; step++) {
        if (stat(real, &st) != 0)
            rc = aur_fail(err, AUR_E_PLUGIN, errno, "%s: cannot load: %s",
                          path, strerror(errno));
        else if (st.st_mode & (S_IWGRP | S_IWOTH))
            rc = aur_fail(err, AUR_E_PLUGIN, 0,
                          "%s: refused: %s %s is writable by %s", path,
                          step ? "its directory" : "the file", real,
                          st.st_mode & S_IWOTH ? "others" : "its group");
        else if (st.st_uid != 0 && st.st_uid != geteuid())
            rc = aur_fail(err, AUR_E_PLUGIN, 0,
                          "%s: refused: %s %s belongs to another user", path,
                          step ? "its directory" : "the file", real);
        if ((slash = strrchr(real, '/')))
            *(slash == real ? slash + 1 : slash) = '\0';
    }
    free(real);
    return rc;
}

int aur__plugin_open(const char *path, struct aur__plugin *p,
                     struct aur_error *err)
{
    const struct aur_plugin_desc *d;
    aur_entry_fn *entry;
    void *sym;
    int rc;

    memset(p, 0, sizeof *p);
    if (!path || !*path)
        return aur_fail(err, AUR_E_INVAL, 0, "plugin path is empty");
    if ((rc = check_modes(path, err)) != AUR_OK)
        return rc;
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        const char *why = dlerror();
        rc = aur_fail(err, AUR_E_PLUGIN, 0, "%s: cannot load: %s", path,
                      why ? why : "unknown error");
        goto out;
    }
    (void)dlerror();
    sym = dlsym(p->dl, AUR_ENTRY_SYMBOL);
    if (!sym) {
        rc = aur_fail(err, AUR_E_PLUGIN, 0,
                      "%s: not an aurora-mcp plugin (no " AUR_ENTRY_SYMBOL
                      ")",
                      path);
        goto out;
    }
    /* POSIX guarantees a dlsym'd function pointer round-trips through
     * void *; memcpy keeps ISO C quiet about the conversion. */
    memcpy(&entry, &sym, sizeof entry);
    d = entry(AUR_ABI_VERSION);
    if (!d) {
        rc = aur_fail(err, AUR_E_PLUGIN, 0,
                      "%s: not an aurora-mcp plugin (" AUR_ENTRY_SYMBOL
                      " returned NULL)",
                      path);
        goto out;
    }
    rc = validate_desc(path, d, p, err);
    if (rc == AUR_OK)
        rc = copy_ops(path, p, err);
    if (rc == AUR_OK)
        rc = p->desc.kind == AUR_KIND_TRANSPORT ? check_transport(path, p, err)
                                                : check_extension(path, p, err);
    if (rc != AUR_OK)
        goto out;
    p->name = strdup(p->desc.name);
    p->path = strdup(path);
    if (!p->name || !p->path)
        rc = aur_fail(err, AUR_E_NOMEM, 0, "%s: out of memory", path);
out:
    if (rc != AUR_OK) {
        free(p->name);
        free(p->path);
        if (p->dl)
            dlclose(p->dl);
        memset(p, 0, sizeof *p);
    }
    return rc;
}

int aur__plugin_init(struct aur__plugin *p, const struct aur_host *host,
                     struct aur_self *self, const struct aur_cfg *cfg,
                     struct aur_error *err)
{
    struct aur_error perr;
    void *state = NULL;
    int rc;

    if (!p || !p->dl || !p->desc.init)
        return aur_fail(err, AUR_E_INVAL, 0, "plugin not open");
    if (p->inited)
        return aur_fail(err, AUR_E_STATE, 0, "%s: already initialised",
                        p->name);
    /* Its host.ini section against the keys it declares (ABI 1.4): a
     * misspelt setting is an error naming its line, not a default. */
    rc = aur__cfg_keys_check(cfg, p->desc.settings, err);
    if (rc != AUR_OK)
        return rc;
    aur_error_clear(&perr);
    rc = p->desc.init(host, self, cfg, &state, &perr);
    if (rc != AUR_OK) {
        /* The message is the plugin's: make sure it ends in the buffer. */
        perr.msg[sizeof perr.msg - 1] = '\0';
        return aur_fail(err, AUR_E_PLUGIN, rc, "%s: init failed: %s",
                        p->name, perr.msg[0] ? perr.msg : aur_strerror(rc));
    }
    p->state = state;
    p->self = self;
    p->inited = true;
    return AUR_OK;
}

void aur__plugin_release(struct aur__plugin *p)
{
    if (!p)
        return;
    if (p->inited) {
        if (p->desc.fini)
            p->desc.fini(p->state);
        /* Deliberately no dlclose: an initialised plugin may have started
         * threads, registered TLS destructors or atexit handlers, or
         * handed out function pointers (to libcurl, json-c userdata...)
         * that outlive fini.  Unmapping its code would turn any of those
         * into a jump into freed memory; keeping it resident costs only
         * the mapping (docs/writing-plugins.md §4). */
    } else if (p->dl) {
        /* Never initialised: none of its code has run except the entry,
         * so unloading is safe. */
        dlclose(p->dl);
    }
    free(p->name);
    free(p->path);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ */
/* The deployed set                                                   */
/* ------------------------------------------------------------------ */

/* A plugins= entry must name a file directly inside dir. */
static bool valid_file_name(const char *s)
{
    return s && *s && !strchr(s, '/') && !strstr(s, "..") &&
           strlen(s) <= 255;
}

static void release_reverse(struct aur__plugin *v, size_t n)
{
    while (n > 0)
        aur__plugin_release(&v[--n]);
}

/* Open every file; a later file reusing an earlier descriptor name is
 * rejected here, before the file-name check, so two copies of one plugin
 * are reported as what they are. */
static int open_all(const char *dir, char *const *names, size_t n,
                    struct aur__plugin *v, size_t *opened,
                    struct aur_error *err)
{
    for (size_t i = 0; i < n; i++) {
        char *path = NULL;
        int rc;

        if (!valid_file_name(names[i]))
            return aur_fail(err, AUR_E_PLUGIN, 0,
                            "bad plugin name \"%s\" in plugins (must be a "
                            "file name in %s)",
                            names[i] ? names[i] : "", dir);
        if (asprintf(&path, "%s/%s.so", dir, names[i]) < 0)
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        rc = aur__plugin_open(path, &v[i], err);
        free(path);
        if (rc != AUR_OK)
            return rc;
        *opened = i + 1;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(v[j].name, v[i].name) == 0)
                return aur_fail(err, AUR_E_PLUGIN, 0,
                                "duplicate plugin name %s (%s, %s)",
                                v[i].name, v[j].path, v[i].path);
        }
    }
    return AUR_OK;
}

/* The name in plugins= is the name config refers to (transport =,
 * event_mode), so it must be the descriptor's. */
static int check_file_names(char *const *names, size_t n,
                            const struct aur__plugin *v,
                            struct aur_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], v[i].name) != 0)
            return aur_fail(err, AUR_E_PLUGIN, 0,
                            "%s: file %s.so declares name %s", v[i].path,
                            names[i], v[i].name);
    }
    return AUR_OK;
}

int aur__plugins_load(const char *dir, char *const *names, size_t n,
                      const struct aur_host *host,
                      struct aur_self *(*make_self)(void *ud, const char *name),
                      void *ud,
                      const struct aur_cfg *(*section)(void *ud,
                                                       const char *name),
                      struct aur__plugin_set *out, struct aur_error *err)
{
    struct aur__plugin *v;
    size_t opened = 0;
    int rc;

    out->v = NULL;
    out->n = 0;
    if (n == 0)
        return AUR_OK;
    if (!dir || !names)
        return aur_fail(err, AUR_E_INVAL, 0, "no plugin directory or names");
    v = calloc(n, sizeof *v);
    if (!v)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    rc = open_all(dir, names, n, v, &opened, err);
    if (rc == AUR_OK)
        rc = check_file_names(names, n, v, err);
    /* Init only once every file is known good, in plugins= order. */
    for (size_t i = 0; rc == AUR_OK && i < n; i++) {
        struct aur_self *self = make_self ? make_self(ud, v[i].name) : NULL;
        const struct aur_cfg *cfg = section ? section(ud, v[i].name) : NULL;
        rc = aur__plugin_init(&v[i], host, self, cfg, err);
    }
    if (rc != AUR_OK) {
        /* Reverse order: later plugins may depend on earlier ones. */
        release_reverse(v, opened);
        free(v);
        return rc;
    }
    out->v = v;
    out->n = n;
    return AUR_OK;
}

void aur__plugins_release(struct aur__plugin_set *set)
{
    if (!set)
        return;
    release_reverse(set->v, set->n);
    free(set->v);
    set->v = NULL;
    set->n = 0;
}

/* ------------------------------------------------------------------ */
/* Describe                                                           */
/* ------------------------------------------------------------------ */

static struct json_object *str_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

static void add_if(struct json_object *arr, bool cond, const char *word)
{
    if (cond)
        json_object_array_add(arr, json_object_new_string(word));
}

static void describe_transport(const struct aur_transport_ops *t,
                               struct json_object *o)
{
    static const char *const cap_words[] = {"server_push", "session",
                                            "resumable", "child_process",
                                            "stream"};
    struct json_object *caps = json_object_new_array();
    struct json_object *hooks = json_object_new_array();

    for (size_t i = 0; i < 32; i++) {
        char other[16];
        if (!(t->caps & (1u << i)))
            continue;
        if (i < AUR__ARRAY_LEN(cap_words)) {
            add_if(caps, true, cap_words[i]);
        } else {
            /* A bit from a newer minor: show it rather than hide it. */
            snprintf(other, sizeof other, "bit%zu", i);
            add_if(caps, true, other);
        }
    }
    add_if(hooks, t->open != NULL, "open");
    add_if(hooks, t->send != NULL, "send");
    add_if(hooks, t->close != NULL, "close");
    add_if(hooks, t->set_protocol != NULL, "set_protocol");
    add_if(hooks, t->cancel != NULL, "cancel");
    add_if(hooks, t->reopen != NULL, "reopen");
    add_if(hooks, t->send_text != NULL, "send_text");
    add_if(hooks, t->listen != NULL, "listen");
    add_if(hooks, t->check != NULL, "check");
    add_if(hooks, t->preflight != NULL, "preflight");
    if (t->section)
        json_object_object_add(o, "section",
                               json_object_new_string(t->section));
    if (t->words) {
        struct json_object *w = json_object_new_array();
        for (const char *const *p = t->words; *p; p++)
            add_if(w, true, *p);
        json_object_object_add(o, "words", w);
    }
    json_object_object_add(o, "caps", caps);
    json_object_object_add(o, "hooks", hooks);
}

static void describe_extension(const struct aur_extension_ops *e,
                               struct json_object *o)
{
    struct json_object *methods = json_object_new_array();
    struct json_object *hooks = json_object_new_array();
    int n = count_methods(e->methods);

    /* open() validated the list, so n >= 0 here. */
    for (int i = 0; i < n; i++)
        add_if(methods, true, e->methods[i]);
    add_if(hooks, e->declare_caps != NULL, "declare_caps");
    add_if(hooks, e->accept_server != NULL, "accept_server");
    add_if(hooks, e->validate_tool != NULL, "validate_tool");
    add_if(hooks, e->resolve_scope != NULL, "resolve_scope");
    add_if(hooks, e->classify != NULL, "classify");
    add_if(hooks, e->on_notify != NULL, "on_notify");
    add_if(hooks, e->end_session != NULL, "end_session");
    json_object_object_add(o, "cap_key", str_or_null(e->cap_key));
    json_object_object_add(o, "methods", methods);
    json_object_object_add(o, "hooks", hooks);
}

struct json_object *aur__plugin_describe(const struct aur__plugin *p)
{
    struct json_object *o, *abi;
    bool transport;

    if (!p || !p->name)
        return NULL;
    transport = p->desc.kind == AUR_KIND_TRANSPORT;
    o = json_object_new_object();
    abi = json_object_new_object();
    if (!o || !abi) {
        json_object_put(o);
        json_object_put(abi);
        return NULL;
    }
    json_object_object_add(o, "name", json_object_new_string(p->name));
    json_object_object_add(o, "version", str_or_null(p->desc.version));
    json_object_object_add(o, "summary", str_or_null(p->desc.summary));
    json_object_object_add(o, "kind",
                           json_object_new_string(transport ? "transport"
                                                            : "extension"));
    json_object_object_add(
        abi, "major",
        json_object_new_int64(AUR_ABI_MAJOR_OF(p->desc.abi_version)));
    json_object_object_add(
        abi, "minor",
        json_object_new_int64(AUR_ABI_MINOR_OF(p->desc.abi_version)));
    json_object_object_add(o, "abi", abi);
    json_object_object_add(o, "struct_size",
                           json_object_new_int64(p->desc.struct_size));
    json_object_object_add(o, "path", str_or_null(p->path));
    if (transport)
        describe_transport(&p->ops.t, o);
    else
        describe_extension(&p->ops.e, o);
    return o;
}
