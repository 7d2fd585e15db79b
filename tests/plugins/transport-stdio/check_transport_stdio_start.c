/*
 * check_transport_stdio_start.c - how transport-stdio fails to start an
 * App, and starts it under pressure: a command, directory or key that is
 * wrong fails the open cleanly (nothing leaked, no secret in the error),
 * a bad plugin setting fails init, the descriptor and its only export,
 * and 400 starts while other host threads come and go.  Same binary and
 * test host as check_transport_stdio.c.
 */
#define _GNU_SOURCE
#include "fixtures/stdio_host.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Suite *stdio_start_suite(void);

/* Starts while other threads of the host come and go.  The supervisor
 * is a fork of a multi-threaded process: a lock another thread held at
 * the fork (a sanitizer runtime's thread registry, taken on every thread
 * start and exit) stays held in it forever, so anything in it that takes
 * one hangs the start until the deadline.  Under ASan, prctl(PR_SET_NAME)
 * did, about once in two hundred starts. */
static atomic_bool churn_stop;

static void *churn_nop(void *arg)
{
    return arg;
}

static void *churn(void *arg)
{
    while (!atomic_load(&churn_stop)) {
        pthread_t t;
        if (pthread_create(&t, NULL, churn_nop, NULL) == 0)
            pthread_join(t, NULL);
    }
    return arg;
}

START_TEST(test_spawn_under_thread_churn)
{
    enum { STARTS = 400 };
    pthread_t th[2];
    int hung = 0; /* 1 + the start that failed */

    up();
    ep_child("echo", NULL);
    EP.v[0] = "/bin/cat"; /* the cheapest App that waits for EOF */
    EP.v[1] = "-";
    atomic_store(&churn_stop, false);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, churn, NULL), 0);
    for (int i = 0; i < STARTS; i++) {
        struct aur_conn *c = NULL;
        struct aur_error err;
        uint32_t caps;
        int rc = OPS->open(ST, &EP, &SINK, t_now() + 5000, &c, &caps, &err);
        if (rc != AUR_OK) {
            hung = i + 1;
            fprintf(stderr, "start %d: %s\n", i, err.msg);
            break;
        }
        OPS->close(c, t_now() + 3000);
    }
    atomic_store(&churn_stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_msg(hung == 0, "start %d of %d failed", hung - 1, STARTS);
}
END_TEST

START_TEST(test_spawn_failure)
{
    struct aur_error err;

    setenv("AUR_CANARY", "secret-xyz", 1);
    up();
    ep_child("echo", NULL);
    EP.v[0] = "/nonexistent/aur-no-such-binary";
    cfg_add(&EP, "env", "AUR_CANARY");
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/aur-no-such-binary"));
    ck_assert_ptr_null(strstr(err.msg, "secret-xyz"));

    EP.v[0] = "aur-no-such-command-on-path";
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);
    ck_assert_ptr_nonnull(strstr(err.msg, "aur-no-such-command-on-path"));

    ep_child("echo", NULL);
    EP.v[2] = "/nonexistent-aur-dir";
    ck_assert_int_eq(open_fails(&err), AUR_E_SPAWN);

    EP.v[2] = "relative/dir";
    ck_assert_int_eq(open_fails(&err), AUR_E_CONFIG);

    EP.v[2] = "/tmp";
    EP.k[0] = "no-command";
    ck_assert_int_eq(open_fails(&err), AUR_E_CONFIG);

    sleep_ms(200);
    ck_assert_int_eq(R.messages, 0);
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

START_TEST(test_bad_plugin_config)
{
    static const char *bad[][2] = {
        {"max_line_bytes", "abc"},   {"max_line_bytes", "10"},
        {"stderr_line_bytes", "10"}, {"term_grace_ms", "-1"},
        {"containment", "none"},     {"containment", "Auto"},
    };
    struct aur_error err;
    void *st = NULL;

    D = load();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct aur_cfg pc = {0};
        cfg_add(&pc, bad[i][0], bad[i][1]);
        ck_assert_int_eq(D->init(&H, NULL, &pc, &st, &err), AUR_E_CONFIG);
        ck_assert_ptr_nonnull(strstr(err.msg, bad[i][0]));
    }
    ck_assert_int_eq(D->init(&H, NULL, NULL, &st, &err), AUR_OK);
    D->fini(st);
}
END_TEST

START_TEST(test_descriptor_and_exports)
{
    char line[512], name[256], type;
    int n = 0, found = 0;
    FILE *p;

    D = load();
    ck_assert_uint_eq(D->magic, AUR_PLUGIN_MAGIC);
    ck_assert_uint_eq(D->kind, AUR_KIND_TRANSPORT);
    ck_assert_str_eq(D->name, "transport-stdio");
    OPS = D->ops;
    ck_assert_uint_eq(OPS->struct_size, sizeof *OPS);
    ck_assert_uint_eq(OPS->caps,
                      AUR_TCAP_SERVER_PUSH | AUR_TCAP_CHILD_PROCESS |
                          AUR_TCAP_STREAM);
    ck_assert_ptr_nonnull(OPS->reopen);
    ck_assert_ptr_null(OPS->cancel);

    if (system("command -v nm >/dev/null 2>&1") != 0)
        return; /* no binutils: the descriptor checks above still ran */
    p = popen("nm -D --defined-only '" PLUGIN_SO "'", "r");
    ck_assert_ptr_nonnull(p);
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "%*s %c %255s", &type, name) != 2)
            continue;
        n++;
        found += strcmp(name, "aur_plugin_entry") == 0;
        ck_assert_msg(strcmp(name, "aur_plugin_entry") == 0,
                      "unexpected export %s", name);
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(found, 1);
}
END_TEST

Suite *stdio_start_suite(void)
{
    Suite *s = suite_create("transport_stdio_start");
    TCase *t = stdio_tcase(s, "start");

    tcase_set_timeout(t, 60); /* 400 starts under ASan take about 16 s */
    tcase_add_test(t, test_spawn_failure);
    tcase_add_test(t, test_spawn_under_thread_churn);
    tcase_add_test(t, test_bad_plugin_config);
    tcase_add_test(t, test_descriptor_and_exports);
    return s;
}
