/*
 * transports.c - the real transport plugins of this build, loaded the way
 * the host loads them, for suites that test the config loader alone
 * (check_config, check_oom, fuzz replays): the loader needs to know the
 * transports an App file may name, and their own checks are part of
 * what a config promises.  Only the services a check uses are real
 * (cfg_*); the rest are present so init accepts the table.
 */
#define _GNU_SOURCE
#include "support/transports.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
{
    (void)self, (void)level, (void)fmt;
}

static int64_t t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int t_parse(const char *buf, size_t len, struct json_object **out,
                   struct aur_error *err)
{
    (void)buf, (void)len, (void)out;
    return aur_fail(err, AUR_E_INVAL, 0, "not in a config test");
}

static struct aur_host host = {
    .struct_size = sizeof host,
    .abi_version = AUR_ABI_VERSION,
    .log = t_log,
    .now_ms = t_now,
    .json_parse = t_parse,
};

static struct aur__transport_def defs[2];
static size_t ndefs;

const struct aur__transport_def *test_transports(size_t *n)
{
    static const char *const names[] = {"transport-stdio", "transport-http"};
    static const struct aur_cfg empty;

    aur__cfg_services(&host);
    for (size_t i = 0; ndefs == 0 && i < 2; i++) {
        char path[4096];
        const struct aur_plugin_desc *d;
        aur_entry_fn *entry;
        struct aur_error err;
        void *dl, *state = NULL, *sym;

        snprintf(path, sizeof path, "%s/plugins/%s.so", AUR_TEST_BIN_DIR,
                 names[i]);
        if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) ||
            !(sym = dlsym(dl, AUR_ENTRY_SYMBOL))) {
            fprintf(stderr, "test_transports: %s: %s\n", path, dlerror());
            abort();
        }
        memcpy(&entry, &sym, sizeof entry);
        d = entry(AUR_ABI_VERSION);
        if (!d || d->init(&host, NULL, &empty, &state, &err) != AUR_OK) {
            fprintf(stderr, "test_transports: %s: init failed\n", path);
            abort();
        }
        /* Never unloaded: the defs point into the plugin. */
        aur__transport_def_init(&defs[i], d->name, d->ops, state);
    }
    ndefs = 2;
    *n = ndefs;
    return defs;
}
