/*
 * check_transport_http_oom.c - what the plugin does when libcurl cannot
 * grow a header list.  Part of check_transport_http.
 *
 * No allocator wrap reaches it (tests/support/oom_wrap.h wraps only code
 * linked in statically; this allocation is libcurl's, under a module
 * loaded with dlopen).  So this binary exports curl_slist_append and
 * curl_slist_free_all (tests/http/curl_wrap.list): a dlopen'd module
 * finds the executable's exported symbols first, and every call of the
 * plugin comes here and goes on to libcurl's own.
 */
#define _GNU_SOURCE
#include "http/http_host.h"
#include "http_int.h"

#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void http_oom_tests(Suite *s);

static pthread_mutex_t wrap_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *fail_prefix; /* (wrap_mu) the next line so begun fails */
static struct curl_slist *failed_on; /* (wrap_mu) the list it was for */
static bool failed_freed;            /* (wrap_mu) freed since */

/* libcurl's own function: the plugin loaded it, so it is in memory. */
static void *real(const char *name)
{
    void *h = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;

    if (!f) {
        fprintf(stderr, "check_transport_http_oom: no libcurl %s\n", name);
        abort();
    }
    dlclose(h);
    return f;
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    struct curl_slist *(*fn)(struct curl_slist *, const char *);
    bool fail;

    /* POSIX: a dlsym'd function pointer round-trips through void *. */
    *(void **)&fn = real("curl_slist_append");

    pthread_mutex_lock(&wrap_mu);
    fail = fail_prefix && strncmp(s, fail_prefix, strlen(fail_prefix)) == 0;
    if (fail) {
        fail_prefix = NULL;
        failed_on = l;
    }
    pthread_mutex_unlock(&wrap_mu);
    return fail ? NULL : fn(l, s);
}

void curl_slist_free_all(struct curl_slist *l)
{
    void (*fn)(struct curl_slist *);

    *(void **)&fn = real("curl_slist_free_all");
    pthread_mutex_lock(&wrap_mu);
    if (l && l == failed_on)
        failed_freed = true;
    pthread_mutex_unlock(&wrap_mu);
    fn(l);
}

/* The legacy GET stream's header list cannot take the session: the GET
 * is not started, and the list built so far is freed, not dropped. */
START_TEST(get_session_header_oom)
{
    struct aur_conn *c = legacy_initialized("/legacy");
    struct aur_error err;
    bool freed;

    ck_assert(fx_wait("rpc=notifications/initialized", 3000));
    pthread_mutex_lock(&wrap_mu);
    fail_prefix = "Mcp-Session-Id:";
    pthread_mutex_unlock(&wrap_mu);
    set_proto(c, 0, "2025-11-25");
    for (int i = 0; i < 100 && !log_has("legacy GET stream not started");
         i++)
        sleep_ms(30);
    ck_assert(log_has("legacy GET stream not started"));
    ck_assert_int_eq(OPS->listen(c, t_now() + 1000, &err), AUR_E_IO);
    pthread_mutex_lock(&wrap_mu);
    ck_assert_ptr_nonnull(failed_on); /* the session line was refused */
    freed = failed_freed;
    pthread_mutex_unlock(&wrap_mu);
    ck_assert_msg(freed, "the GET's header list leaked");
    OPS->close(c, t_now() + 2000);
    ck_assert_int_eq(fx_count("method=GET"), 0);
}
END_TEST

void http_oom_tests(Suite *s)
{
    TCase *t = tcase_create("oom");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 30);
    tcase_add_test(t, get_session_header_oom);
    suite_add_tcase(s, t);
}
