/*
 * aur_perturb.h - seeded timing perturbation for test builds.
 *
 * Races hide on a quiet machine.  A build configured with
 * -DAUR_PERTURB=ON compiles every AUR_PERTURB("point") below into a
 * possible delay: when the environment variable AUR_PERTURB_SEED holds a
 * non-zero number, each point draws from a per-thread generator seeded by
 * (seed, thread ordinal, point) and, one time in four, yields the CPU or
 * sleeps up to AUR_PERTURB_MAX_US microseconds (default 2000).  The
 * points sit at every thread hand-off and I/O boundary: sink delivery,
 * dispatch, page handling, activation, freeze, write and close.  Without
 * the option the macro is nothing, so release code pays nothing; without
 * the variable a perturb build behaves like any other.
 *
 * Header-only on purpose: the core and every plugin include it without
 * linking each other.  Each shared object keeps its own generator state,
 * which is all a perturbation needs.  Thread-safe.
 */
#ifndef AUR_PERTURB_H
#define AUR_PERTURB_H

#if defined(AUR_PERTURB_BUILD) && AUR_PERTURB_BUILD

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* 0 = not read yet, 1 = off, else the seed (never 0 or 1 once on). */
static uint64_t aur__perturb_seed_v;
static int64_t aur__perturb_max_us = -1;
static unsigned aur__perturb_threads;
static _Thread_local uint64_t aur__perturb_state;

static inline uint64_t aur__perturb_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t aur__perturb_seed(void)
{
    uint64_t s = __atomic_load_n(&aur__perturb_seed_v, __ATOMIC_ACQUIRE);
    if (s == 0) {
        const char *e = getenv("AUR_PERTURB_SEED");
        const char *m = getenv("AUR_PERTURB_MAX_US");
        uint64_t v = e ? strtoull(e, NULL, 10) : 0;
        int64_t max = m ? strtoll(m, NULL, 10) : 2000;
        __atomic_store_n(&aur__perturb_max_us, max > 0 ? max : 2000,
                         __ATOMIC_RELAXED);
        s = v ? aur__perturb_mix(v) | 2 : 1;
        __atomic_store_n(&aur__perturb_seed_v, s, __ATOMIC_RELEASE);
    }
    return s;
}

static inline void aur__perturb_at(const char *point)
{
    uint64_t seed = aur__perturb_seed(), h = 1469598103934665603ull, r;
    if (seed == 1)
        return;
    if (aur__perturb_state == 0) {
        unsigned t = __atomic_add_fetch(&aur__perturb_threads, 1,
                                        __ATOMIC_RELAXED);
        aur__perturb_state = aur__perturb_mix(seed + t) | 1;
    }
    for (const char *p = point; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    /* xorshift64*, salted by the point so each point has its own rhythm */
    aur__perturb_state ^= aur__perturb_state >> 12;
    aur__perturb_state ^= aur__perturb_state << 25;
    aur__perturb_state ^= aur__perturb_state >> 27;
    r = aur__perturb_mix((aur__perturb_state * 2685821657736338717ull) ^ h);
    if ((r & 3) != 0)
        return;
    if ((r >> 2) & 1) {
        sched_yield();
        return;
    }
    int64_t max = __atomic_load_n(&aur__perturb_max_us, __ATOMIC_RELAXED);
    int64_t us = (int64_t)((r >> 8) % (uint64_t)max);
    struct timespec ts = {0, (long)us * 1000L};
    nanosleep(&ts, NULL);
}

#define AUR_PERTURB(point) aur__perturb_at(point)

#else
#define AUR_PERTURB(point) ((void)0)
#endif

#endif /* AUR_PERTURB_H */
