/*
 * check_oom.c - allocation failure, swept.
 *
 * The core's own allocations (in the config loader, the grammars and the
 * canonical JSON writer, linked into this binary) go through wrappers
 * (support/oom_wrap.h) that fail from the Nth call on.  For N = 0, 1, 2, ... each run must end in AUR_E_NOMEM (the
 * out_of_memory code, named in the README) with nothing half-built, until
 * N is large enough for the run to succeed.  Leaks on any failure path
 * show up under the ASan build (LeakSanitizer), which runs this suite too.
 * Allocations inside json-c, inih and libc are not wrapped.
 */
#define _GNU_SOURCE
#include "aur_setup.h"

#include "config.h"
#include "support/transports.h"
#include "jsonx.h"

#include "support/check_main.h"
#include "support/oom_wrap.h"
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SWEEP 20000

static char dir[] = "/tmp/aur-test-oom-XXXXXX";

static void put(const char *rel, const char *text)
{
    char p[512];
    FILE *f;

    snprintf(p, sizeof p, "%s/%s", dir, rel);
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

static void sub(const char *rel)
{
    char p[512];

    snprintf(p, sizeof p, "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(p, 0755), 0);
}

/* A config that touches every part of the loader: plugins and their
 * sections, both transports, repeated keys, budgets, agents. */
static void write_config(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sub("apps.d");
    sub("srv");
    put("host.ini", "[host]\n"
                    "plugins = transport-stdio transport-http "
                    "ext-world-events\n"
                    "journal = data/world.sqlite3\n"
                    "log_level = debug\nlog_file = logs/h.log\n"
                    "[mcp]\nenabled = true\nmax_tools = 500\n"
                    "start_concurrency = 4\n"
                    "[transport-stdio]\nterm_grace_ms = 100\n");
    put("apps.d/a.ini", "[app]\npackage = org.example.clock\n"
                        "enabled = true\ntransport = stdio\n"
                        "timeout_seconds = 30\n"
                        "event_mode = world_events\n"
                        "[stdio]\ncommand = node\narg = server.mjs\n"
                        "arg = --flag\nworking_dir = srv\n"
                        "env = CLOCK_TOKEN\nenv = OTHER_VAR\n");
    put("apps.d/b.ini", "[app]\npackage = org.example.web\nenabled = true\n"
                        "transport = streamable_http\n"
                        "timeout_seconds = 5\n"
                        "[http]\nurl = https://mcp.example.com:8443/mcp\n");
    put("apps.d/c.ini", "[app]\npackage = org.example.off\n"
                        "enabled = false\ntransport = stdio\n"
                        "timeout_seconds = 1\n"
                        "[stdio]\ncommand = x\nworking_dir = srv\n");
    put("agents.ini", "[agent root]\ntools = aur.mcp.org.example.*\n"
                      "tools = !aur.mcp.org.example.web.x\n"
                      "[agent helper]\ntools = aur.mcp.**\n");
}

static void remove_config(void)
{
    const char *files[] = {"host.ini", "apps.d/a.ini", "apps.d/b.ini",
                           "apps.d/c.ini", "agents.ini"};
    char p[512];

    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/apps.d", dir);
    rmdir(p);
    snprintf(p, sizeof p, "%s/srv", dir);
    rmdir(p);
    rmdir(dir);
}

START_TEST(config_load_every_failure_is_nomem)
{
    long n, nomem = 0;
    size_t nt;
    /* Loaded before the sweep: the plugins' own allocations are not
     * wrapped, only the core's. */
    const struct aur__transport_def *t = test_transports(&nt);

    write_config();
    for (n = oom_first(); n < MAX_SWEEP; n++) {
        struct aur__config *c = (struct aur__config *)&c;
        struct aur_error err;
        int rc;

        oom_arm(n);
        rc = aur__config_load(dir, t, nt, &c, NULL, &err);
        if (oom_disarm() == 0) {
            /* Enough allocations this time: a full, correct load. */
            ck_assert_msg(rc == AUR_OK, "n=%ld: %s", n, err.msg);
            ck_assert_ptr_nonnull(c);
            aur__config_free(c);
            break;
        }
        ck_assert_msg(rc == AUR_E_NOMEM, "allocation %ld failed, rc %d: %s",
                      n, rc, err.msg);
        ck_assert_int_eq(err.code, AUR_E_NOMEM);
        ck_assert_ptr_null(c);
        nomem++;
    }
    ck_assert_int_lt(n, MAX_SWEEP);
    ck_assert_int_gt(nomem, 20); /* the sweep really reached the loader */
    remove_config();
}
END_TEST

START_TEST(canonical_json_every_failure_is_nomem)
{
    struct json_object *v = json_tokener_parse(
        "{\"z\":[1,2.5,\"\\u00e9\\n\",{\"b\":null,\"a\":true}],"
        "\"a\":{\"deep\":{\"er\":[[[\"x\"]]]}},\"n\":-0.0,"
        "\"big\":12345678901234567890}");
    long n, nomem = 0;

    ck_assert_ptr_nonnull(v);
    for (n = oom_first(); n < MAX_SWEEP; n++) {
        struct aur_error err;
        char *out = (char *)&out;
        size_t len = 7;
        int rc;

        oom_arm(n);
        rc = aur__json_canonical(v, &out, &len, &err);
        if (oom_disarm() == 0) {
            ck_assert_int_eq(rc, AUR_OK);
            ck_assert_uint_eq(len, strlen(out));
            free(out);
            break;
        }
        ck_assert_msg(rc == AUR_E_NOMEM, "allocation %ld failed, rc %d", n,
                      rc);
        ck_assert_int_eq(err.code, AUR_E_NOMEM);
        nomem++;
    }
    ck_assert_int_lt(n, MAX_SWEEP);
    ck_assert_int_ge(nomem, 1);
    json_object_put(v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("oom");
    TCase *t = tcase_create("sweep");

    tcase_set_timeout(t, 120);
    tcase_add_test(t, config_load_every_failure_is_nomem);
    tcase_add_test(t, canonical_json_every_failure_is_nomem);
    suite_add_tcase(s, t);
    return aur_check_main(s, NULL);
}
