/*
 * oom_wrap.c - the link-time allocation wrappers (see oom_wrap.h).
 * Persistent failure (every call after the n-th fails) is the harder
 * case: the code that handles one failure must not need memory itself.
 */
#define _GNU_SOURCE
#include "support/oom_wrap.h"

#include <errno.h>
#include <execinfo.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* < 0: never fail; otherwise the number of calls that still succeed. */
static long budget = -1;
static long failures;

static bool grant(void)
{
    long b = __atomic_load_n(&budget, __ATOMIC_ACQUIRE);

    while (b > 0 && !__atomic_compare_exchange_n(&budget, &b, b - 1, false,
                                                 __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
        ;
    if (b != 0)
        return true;
    /* AUR_OOM_TRACE=1: where the first failure of each arm happened. */
    if (__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED) == 1 &&
        getenv("AUR_OOM_TRACE")) {
        void *pc[32];
        backtrace_symbols_fd(pc, backtrace(pc, 32), 2);
    }
    errno = ENOMEM; /* as the real ones do */
    return false;
}

void oom_arm(long n)
{
    __atomic_store_n(&failures, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&budget, n, __ATOMIC_RELEASE);
}

long oom_first(void)
{
    const char *v = getenv("AUR_OOM_FROM");

    return v ? strtol(v, NULL, 10) : 0;
}

long oom_disarm(void)
{
    __atomic_store_n(&budget, -1, __ATOMIC_RELEASE);
    return __atomic_load_n(&failures, __ATOMIC_ACQUIRE);
}

/* __wrap_NAME: NAME itself while allowed, else fail (what it returns
 * then). */
#define WRAP(ret, name, params, args, fail)                                  \
    ret __real_##name params;                                                \
    ret __wrap_##name params;                                                \
    ret __wrap_##name params { return grant() ? __real_##name args : fail; }
WRAP(void *, malloc, (size_t n), (n), NULL)
WRAP(void *, calloc, (size_t n, size_t m), (n, m), NULL)
WRAP(void *, realloc, (void *p, size_t n), (p, n), NULL)
WRAP(char *, strdup, (const char *s), (s), NULL)
WRAP(char *, strndup, (const char *s, size_t n), (s, n), NULL)
/* As glibc documents: *out is undefined on failure; ours leaves it. */
WRAP(int, vasprintf, (char **out, const char *fmt, va_list ap),
     (out, fmt, ap), -1)
int __wrap_asprintf(char **out, const char *fmt, ...);
int __wrap_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = __wrap_vasprintf(out, fmt, ap);
    va_end(ap);
    return n;
}

/* json-c's constructors and adders, as called from the code linked in
 * here: the trees the core builds fail like its own allocations. */
WRAP(struct json_object *, json_object_new_object, (void), (), NULL)
WRAP(struct json_object *, json_object_new_array, (void), (), NULL)
WRAP(struct json_object *, json_object_new_array_ext, (int n), (n),
     NULL)
WRAP(struct json_object *, json_object_new_string, (const char *s),
     (s), NULL)
WRAP(struct json_object *, json_object_new_string_len,
     (const char *s, int n), (s, n), NULL)
WRAP(struct json_object *, json_object_new_int, (int32_t v), (v), NULL)
WRAP(struct json_object *, json_object_new_int64, (int64_t v), (v),
     NULL)
WRAP(struct json_object *, json_object_new_uint64, (uint64_t v), (v),
     NULL)
WRAP(struct json_object *, json_object_new_boolean, (json_bool v), (v),
     NULL)
WRAP(struct json_object *, json_object_new_double, (double v), (v),
     NULL)
WRAP(struct json_object *, json_object_new_double_s,
     (double v, const char *s), (v, s), NULL)
WRAP(int, json_object_object_add,
     (struct json_object *o, const char *k, struct json_object *v),
     (o, k, v), -1)
WRAP(int, json_object_object_add_ex,
     (struct json_object *o, const char *k, struct json_object *v,
            unsigned opts),
     (o, k, v, opts), -1)
WRAP(int, json_object_array_add,
     (struct json_object *a, struct json_object *v), (a, v), -1)
WRAP(int, json_object_deep_copy,
     (struct json_object *s, struct json_object **d,
            json_c_shallow_copy_fn *fn),
     (s, d, fn), -1)
