/*
 * bench_host.c - aurora-mcp through the C embedding API: create a host from
 * a config directory, start it (connect, negotiate, discover, freeze), then
 * run N calls of one tool, sequentially (-k 1) or with K threads in flight.
 * Prints one JSON line on stdout:
 *   {"client":"capi","tools":T,"start_ms":..,"calls":N,"failed":F,
 *    "call_ms":..,"cpu_ms":..,"rss_kib":..}
 * cpu_ms and rss_kib are this process only (getrusage RUSAGE_SELF), taken
 * after the calls and before shutdown, so they include the catalog held.
 *
 * Usage: bench_host -c DIR [-t TOOL_ID] [-n N] [-k K]
 * Not a test: bench/run.sh runs it.
 */
#define _POSIX_C_SOURCE 200809L
#include <aurora/aur_host_jsonc.h>

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

struct run {
    struct aur_mcp *host;
    const char *tool;
    long n;
    atomic_long next;
    atomic_long failed;
};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *worker(void *arg)
{
    struct run *r = arg;

    /* Each iteration claims one call number, so the loop is bounded by n. */
    while (atomic_fetch_add(&r->next, 1) < r->n) {
        struct aur_tool_output out = {.struct_size = sizeof out};

        aur_mcp_call_jsonc(r->host, r->tool, NULL, -1, &out);
        if (out.status != AUR_CALL_SUCCEEDED)
            atomic_fetch_add(&r->failed, 1);
        aur_tool_output_clear(&out);
    }
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_host -c DIR [-t TOOL_ID] [-n N] [-k K]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    struct run r = { .tool = NULL, .n = 0 };
    long k = 1;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err = { 0 };
    pthread_t th[MAX_THREADS];
    struct rusage ru;
    double t0, t1, t2;
    int opt, rc = 1;

    while ((opt = getopt(argc, argv, "c:t:n:k:")) != -1) {
        switch (opt) {
        case 'c': dir = optarg; break;
        case 't': r.tool = optarg; break;
        case 'n': r.n = strtol(optarg, NULL, 10); break;
        case 'k': k = strtol(optarg, NULL, 10); break;
        default: return usage();
        }
    }
    if (!dir || r.n < 0 || k < 1 || k > MAX_THREADS || (r.n && !r.tool))
        return usage();

    t0 = now_ms();
    if (aur_mcp_create(dir, NULL, &r.host, &serr, &err) != AUR_OK ||
        aur_mcp_start(r.host, &serr, &err) != AUR_OK) {
        fprintf(stderr, "bench_host: start: %s %s %s: %s\n", serr.code,
                serr.app, serr.phase, serr.message);
        goto out;
    }
    t1 = now_ms();
    for (long i = 0; i < k; i++)
        if (pthread_create(&th[i], NULL, worker, &r) != 0) {
            fprintf(stderr, "bench_host: pthread_create failed\n");
            /* Let the started threads drain the counter, then stop. */
            k = i;
            break;
        }
    for (long i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    t2 = now_ms();
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"client\":\"capi\",\"tools\":%zu,\"start_ms\":%.3f,"
           "\"calls\":%ld,\"failed\":%ld,\"call_ms\":%.3f,\"cpu_ms\":%.3f,"
           "\"rss_kib\":%ld}\n",
           aur_mcp_tool_count(r.host), t1 - t0, r.n,
           (long)atomic_load(&r.failed), t2 - t1,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3,
           ru.ru_maxrss);
    rc = atomic_load(&r.failed) ? 1 : 0;
out:
    aur_mcp_destroy(r.host);
    return rc;
}
