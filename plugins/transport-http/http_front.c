/*
 * http_front.c - transport-http.so, the plugin the host loads: its
 * descriptor, its [transport-http] settings, its [http] keys, and
 * forwarders to the backend (transport-http-libcurl.so, http_plugin.c).
 *
 * Why two modules: transport-http is in the default plugin set, and
 * libcurl brings OpenSSL and a dozen other libraries with it (about 8
 * MiB of RSS and 10 ms of relocations, docs/benchmarks.md) into every
 * process, HTTP App or not.  So this module links none of them; the
 * first check, preflight or open of an App's [http] section loads the
 * backend from the directory this module was loaded from, once per
 * process, and it stays loaded.  A backend that cannot be loaded fails
 * that operation with AUR_E_PLUGIN naming the file; Apps of other
 * transports never notice.
 *
 * Threads: the backend is loaded under pthread_once; afterwards `be` is
 * only read.  A connection exists only if the backend's open made it, so
 * the per-connection forwarders use `be` without a check.
 */
#define _GNU_SOURCE
#include "http_front.h"

#include "cfg_range.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t be_once = PTHREAD_ONCE_INIT;
static const struct aur_transport_ops *be;
static char be_why[4096 + 512]; /* a path and dlerror() */

static void be_load(void)
{
    Dl_info self;
    const char *slash;
    char path[4096];
    void *dl;
    http_backend_entry_fn *entry;

    if (!dladdr((void *)be_load, &self) || !self.dli_fname ||
        !(slash = strrchr(self.dli_fname, '/'))) {
        snprintf(be_why, sizeof be_why,
                 "cannot tell where transport-http.so was loaded from");
        return;
    }
    if (snprintf(path, sizeof path, "%.*s/%s", (int)(slash - self.dli_fname),
                 self.dli_fname, HTTP_BACKEND_FILE) >= (int)sizeof path) {
        snprintf(be_why, sizeof be_why, "plugin directory path too long");
        return;
    }
    if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        snprintf(be_why, sizeof be_why, "cannot load %s: %s", path,
                 dlerror());
        return;
    }
    /* POSIX: a dlsym'd function pointer round-trips through void *. */
    *(void **)&entry = dlsym(dl, HTTP_BACKEND_ENTRY);
    if (!entry) {
        /* Left loaded, like the backend: whatever it pulled in (libcurl,
         * OpenSSL) may have set process-wide state on load. */
        snprintf(be_why, sizeof be_why, "%s has no %s", path,
                 HTTP_BACKEND_ENTRY);
        return;
    }
    if (!(be = entry()))
        snprintf(be_why, sizeof be_why, "%s: curl_global_init failed", path);
}

static const struct aur_transport_ops *backend(struct aur_error *err)
{
    pthread_once(&be_once, be_load);
    if (!be)
        aur_fail(err, AUR_E_PLUGIN, 0, "transport-http: %s", be_why);
    return be;
}

/* This plugin's host.ini section, in its errors. */
static const char SEC[] = "transport-http";

static int http_init(const struct aur_host *host, struct aur_self *self,
                     const struct aur_cfg *cfg, void **state,
                     struct aur_error *err)
{
    struct http_state *st;
    int64_t body, event, workers, queued;
    int rc;

    if (!AUR_HAS(host, json_parse) || !AUR_HAS(host, cfg_fail) ||
        !AUR_HAS(host, cfg_path) || !host->log || !host->now_ms ||
        !host->cfg_int || !host->cfg_str)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "transport-http needs a host of ABI 1.4 "
                        "(json_parse, cfg_fail)");
    if ((rc = aur__cfg_range(host, cfg, SEC, "max_body_bytes", 16777216,
                             1024, 1073741824, &body, err)) != AUR_OK ||
        (rc = aur__cfg_range(host, cfg, SEC, "max_event_bytes", 16777216,
                             1024, 1073741824, &event, err)) != AUR_OK ||
        (rc = aur__cfg_range(host, cfg, SEC, "max_concurrent", 8, 1, 64,
                             &workers, err)) != AUR_OK ||
        (rc = aur__cfg_range(host, cfg, SEC, "max_queued", 1024, 1, 65536,
                             &queued, err)) != AUR_OK)
        return rc;
    st = calloc(1, sizeof *st);
    if (!st)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    st->host = host;
    st->self = self;
    st->max_body = (size_t)body;
    st->max_event = (size_t)event;
    st->max_workers = (int)workers;
    st->max_queued = (size_t)queued;
    *state = st;
    return AUR_OK;
}

static void http_fini(void *state)
{
    free(state);
}

static int f_open(void *state, const struct aur_cfg *ep,
                  const struct aur_sink *sink, aur_deadline dl,
                  struct aur_conn **out, uint32_t *out_caps,
                  struct aur_error *err)
{
    const struct aur_transport_ops *b = backend(err);
    return b ? b->open(state, ep, sink, dl, out, out_caps, err)
             : AUR_E_PLUGIN;
}

static int f_check(void *state, const struct aur_cfg *ep, int active,
                   struct aur_error *err)
{
    const struct aur_transport_ops *b = backend(err);
    return b ? b->check(state, ep, active, err) : AUR_E_PLUGIN;
}

static void f_preflight(void *state, const struct aur_cfg *ep,
                        void (*report)(void *ctx, const char *check,
                                       const char *problem),
                        void *ctx)
{
    struct aur_error err;
    const struct aur_transport_ops *b = backend(&err);
    if (b)
        b->preflight(state, ep, report, ctx);
    else
        report(ctx, "backend", err.msg);
}

static int f_send(struct aur_conn *c, struct json_object *msg,
                  aur_deadline dl, struct aur_error *err)
{
    return be->send(c, msg, dl, err);
}

static void f_close(struct aur_conn *c, aur_deadline dl)
{
    be->close(c, dl);
}

static void f_stop(struct aur_conn *c, aur_deadline dl)
{
    be->stop(c, dl);
}

static int f_set_protocol(struct aur_conn *c,
                          const struct aur_protocol_info *info,
                          struct aur_error *err)
{
    return be->set_protocol(c, info, err);
}

static void f_cancel(struct aur_conn *c, struct json_object *id)
{
    be->cancel(c, id);
}

static int f_listen(struct aur_conn *c, aur_deadline dl,
                    struct aur_error *err)
{
    return be->listen(c, dl, err);
}

/* [transport-http] in host.ini (http_plugin.c's header says what each
 * means). */
static const struct aur_cfg_key http_settings[] = {
    {"max_body_bytes", 0, 0},
    {"max_event_bytes", 0, 0},
    {"max_concurrent", 0, 0},
    {"max_queued", 0, 0},
    {NULL, 0, 0},
};

static const struct aur_transport_ops OPS = {
    .struct_size = sizeof(struct aur_transport_ops),
    .caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_SESSION,
    .open = f_open,
    .send = f_send,
    .close = f_close,
    .set_protocol = f_set_protocol,
    .cancel = f_cancel,
    .listen = f_listen,
    .words = http_words,
    .section = "http",
    .keys = http_keys,
    .check = f_check,
    .preflight = f_preflight,
    .stop = f_stop, /* ABI 1.5: a 1.4 host copies less and never calls it */
};

static const struct aur_plugin_desc DESC = {
    /* 1.4: the host checks [http] through check and hands config_dir
     * for ca_file. */
    AUR_DESC_HEADER_MIN(AUR_KIND_TRANSPORT, 4),
    .name = "transport-http",
    .version = "1.0.0",
    .summary = "MCP Streamable HTTP over libcurl (https only)",
    .init = http_init,
    .settings = http_settings,
    .fini = http_fini,
    .ops = &OPS,
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    if (AUR_ABI_MAJOR_OF(host_abi) != AUR_ABI_MAJOR)
        return NULL;
    return &DESC;
}
