/*
 * oom_wrap.h - allocation failure on demand, for the sweeps in
 * check_oom and check_oom_host.
 *
 * A binary that links oom_wrap.c with -Wl,--wrap for malloc, calloc,
 * realloc, strdup, strndup, vasprintf and asprintf (OOM_WRAP_LINK_OPTIONS in
 * tests/cmake) has every such call made by the code linked into it
 * statically (the core, the harness) pass through here: oom_arm(n) lets
 * n more succeed, then every later one fails until oom_disarm().
 * Shared objects (json-c, SQLite, libc itself, the dlopen'd plugins)
 * allocate unwrapped.  Threads: the counters are atomic; arm and disarm
 * from the test's thread.  AUR_OOM_TRACE=1 in the environment prints a
 * backtrace of the first failed allocation of each arm to stderr, and
 * AUR_OOM_FROM=N starts a sweep at N (oom_first).
 */
#ifndef AUR_TEST_OOM_WRAP_H
#define AUR_TEST_OOM_WRAP_H

/* Allow n more allocations, then fail every one (n >= 0). */
void oom_arm(long n);
/* Where a sweep starts: AUR_OOM_FROM, else 0. */
long oom_first(void);
/* Stop failing; returns how many allocations failed since oom_arm. */
long oom_disarm(void);

#endif
