/*
 * doctor.c - `aurora-mcp doctor -c DIR [--json]`: start every enabled App
 * alone, each in a host of its own under its own deadline, side by side,
 * and report per App how far it got (negotiated version, tools) or why it
 * failed (the phase, the error with the exit status or signal and the end
 * of the server's stderr).  One broken App does not hide the others, as
 * it does in a real start (where the first failure cancels the rest).
 *
 * Nothing reaches the World: each host writes to a writer that keeps
 * nothing.  A table on a terminal, JSON otherwise (or with --json).  Exit
 * 0 when every enabled App started, 1 when one did not, 2 on a config
 * error.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_AT_ONCE 16 /* hosts starting at once */

struct row {
    const char *package; /* borrowed from the status document */
    bool active;
    struct json_object *checks; /* aur_mcp_app_checks_jsonc (owned) */
    bool ok;
    char version[32];
    size_t tools;
    char phase[32];
    char error[512];
    long ms;
};

struct doctor {
    const char *dir;
    struct row *rows;
    size_t n, next;
    size_t active, done; /* (mu) for the progress lines */
    bool progress;       /* a person watches stderr */
    pthread_mutex_t mu;
};

static int keep_nothing(void *ud, const struct aur_commit *c,
                        struct aur_error *err)
{
    (void)ud;
    (void)c;
    (void)err;
    return AUR_OK;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The App of r, alone: every other App left out; its preflight checks
 * first. */
static void check_one(const char *dir, struct row *r)
{
    static const struct aur_world_writer none = {
        .struct_size = sizeof none, .append = keep_nothing};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct json_object *st, *apps;
    long t0 = now_ms();

    memset(&serr, 0, sizeof serr);
    if (aur_mcp_create(dir, NULL, &h, &serr, &err) != AUR_OK) {
        snprintf(r->phase, sizeof r->phase, "config");
        snprintf(r->error, sizeof r->error, "%s", serr.message);
        return;
    }
    r->checks = aur_mcp_app_checks_jsonc(h, r->package);
    st = aur_mcp_status_jsonc(h, 0);
    json_object_object_get_ex(st, "apps", &apps);
    for (size_t i = 0; i < json_object_array_length(apps); i++) {
        const char *p = json_object_get_string(json_object_object_get(
            json_object_array_get_idx(apps, i), "package"));
        if (strcmp(p, r->package) != 0)
            aur_mcp_skip_app(h, p, 1, &err);
    }
    json_object_put(st);
    aur_mcp_set_world_writer(h, &none, &err);
    if (aur_mcp_start(h, &serr, &err) == AUR_OK) {
        struct json_object *a;
        r->ok = true;
        r->tools = aur_mcp_tool_count(h);
        st = aur_mcp_status_jsonc(h, 0);
        json_object_object_get_ex(st, "apps", &apps);
        for (size_t i = 0; i < json_object_array_length(apps); i++) {
            a = json_object_array_get_idx(apps, i);
            if (strcmp(json_object_get_string(
                           json_object_object_get(a, "package")),
                       r->package) == 0)
                snprintf(r->version, sizeof r->version, "%s",
                         json_object_get_string(json_object_object_get(
                             a, "negotiated_version")));
        }
        json_object_put(st);
    } else {
        snprintf(r->phase, sizeof r->phase, "%s", serr.phase);
        snprintf(r->error, sizeof r->error, "%s", serr.message);
    }
    aur_mcp_shutdown(h);
    aur_mcp_destroy(h);
    r->ms = now_ms() - t0;
}

static void *worker(void *arg)
{
    struct doctor *d = arg;
    for (;;) {
        size_t i;
        pthread_mutex_lock(&d->mu);
        while (d->next < d->n && !d->rows[d->next].active)
            d->next++;
        i = d->next++;
        pthread_mutex_unlock(&d->mu);
        if (i >= d->n)
            return NULL;
        check_one(d->dir, &d->rows[i]);
        pthread_mutex_lock(&d->mu);
        d->done++;
        if (d->progress)
            fprintf(stderr, "doctor: [%zu/%zu] %s %s (%.1f s)\n", d->done,
                    d->active, d->rows[i].package,
                    d->rows[i].ok ? "ok" : "FAILED",
                    (double)d->rows[i].ms / 1000.0);
        pthread_mutex_unlock(&d->mu);
    }
}

static void print_table(const struct row *rows, size_t n)
{
    printf("%-32s %-7s %-11s %6s %8s  %s\n", "APP", "RESULT", "VERSION",
           "TOOLS", "TIME", "DETAIL");
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        char tools[24] = "-", time[24] = "-";
        if (r->ok)
            snprintf(tools, sizeof tools, "%zu", r->tools);
        if (r->active)
            snprintf(time, sizeof time, "%.1f s", (double)r->ms / 1000.0);
        printf("%-32s %-7s %-11s %6s %8s  %s%s%s\n", r->package,
               !r->active ? "off" : r->ok ? "ok" : "FAILED",
               r->ok ? r->version : "-", tools, time, r->phase,
               r->phase[0] ? ": " : "",
               !r->active ? "disabled (or [mcp] enabled = false)"
                          : r->error);
        /* What a preflight check found, under its App. */
        for (size_t k = 0; r->checks && k < json_object_array_length(r->checks);
             k++) {
            struct json_object *c = json_object_array_get_idx(r->checks, k);
            if (!json_object_get_boolean(json_object_object_get(c, "ok")))
                printf("%-32s %-7s %s: %s\n", "", "!",
                       json_object_get_string(json_object_object_get(c, "check")),
                       json_object_get_string(
                           json_object_object_get(c, "problem")));
        }
    }
}

static struct json_object *report_json(const struct row *rows, size_t n,
                                       bool healthy)
{
    struct json_object *o = json_object_new_object(), *a = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        struct json_object *x = json_object_new_object();
        json_object_object_add(x, "package", json_object_new_string(r->package));
        json_object_object_add(
            x, "result",
            json_object_new_string(!r->active ? "disabled"
                                   : r->ok    ? "ok"
                                              : "failed"));
        json_object_object_add(x, "negotiated_version",
                               r->ok ? json_object_new_string(r->version)
                                     : NULL);
        json_object_object_add(x, "tools",
                               r->ok ? json_object_new_int64((int64_t)r->tools)
                                     : NULL);
        json_object_object_add(x, "phase",
                               r->phase[0] ? json_object_new_string(r->phase)
                                           : NULL);
        json_object_object_add(x, "error",
                               r->error[0] ? json_object_new_string(r->error)
                                           : NULL);
        json_object_object_add(x, "ms",
                               r->active ? json_object_new_int64(r->ms) : NULL);
        json_object_object_add(x, "checks", json_object_get(r->checks));
        json_object_array_add(a, x);
    }
    json_object_object_add(o, "healthy", json_object_new_boolean(healthy));
    json_object_object_add(o, "apps", a);
    return o;
}

int cli_doctor(const char *dir, bool json)
{
    struct doctor d = {.dir = dir, .mu = PTHREAD_MUTEX_INITIALIZER};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_error err;
    struct aur_mcp *h = NULL;
    struct json_object *st, *apps;
    pthread_t th[MAX_AT_ONCE];
    size_t nth = 0, active = 0;
    bool healthy = true;

    memset(&serr, 0, sizeof serr);
    if (aur_mcp_create(dir, NULL, &h, &serr, &err) != AUR_OK) {
        cli_print_startup_error(&serr);
        return EXIT_USAGE;
    }
    st = aur_mcp_status_jsonc(h, 0);
    json_object_object_get_ex(st, "apps", &apps);
    d.n = json_object_array_length(apps);
    d.rows = calloc(d.n + 1, sizeof *d.rows);
    if (!d.rows) {
        json_object_put(st);
        aur_mcp_destroy(h);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < d.n; i++) {
        struct json_object *a = json_object_array_get_idx(apps, i);
        d.rows[i].package =
            json_object_get_string(json_object_object_get(a, "package"));
        d.rows[i].active =
            json_object_get_boolean(json_object_object_get(a, "active"));
        active += d.rows[i].active;
    }
    json = json || !cli_table();
    d.active = active;
    d.progress = !json && isatty(STDERR_FILENO);
    if (d.progress)
        fprintf(stderr, "doctor: starting %zu App%s, each alone (up to its "
                        "timeout_seconds)...\n",
                active, active == 1 ? "" : "s");
    for (; nth < MAX_AT_ONCE && nth < active; nth++)
        if (pthread_create(&th[nth], NULL, worker, &d) != 0)
            break;
    if (nth == 0)
        worker(&d);
    for (size_t i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    for (size_t i = 0; i < d.n; i++)
        healthy = healthy && (!d.rows[i].active || d.rows[i].ok);
    if (json) {
        struct json_object *o = report_json(d.rows, d.n, healthy);
        cli_print_json(o);
        json_object_put(o);
    } else {
        print_table(d.rows, d.n);
        fflush(stdout);
    }
    for (size_t i = 0; i < d.n; i++)
        json_object_put(d.rows[i].checks);
    free(d.rows);
    json_object_put(st);
    aur_mcp_destroy(h);
    return healthy ? EXIT_OK : EXIT_RUNTIME;
}
