/*
 * names_suggest.c - the public helpers for people who write configs: "did
 * you mean" (the closest of a set of names to a word that names none of
 * them: a misspelt key, section, command, tool id) and why an environment
 * variable is denied.  Pure; thread-safe.
 *
 * Written here rather than taken from a library: Debian has no small C
 * library for it, and a banded edit distance is forty lines.
 */
#include "aur_setup.h"

#include <aurora/aur_host.h>

#include "names.h"

#include <string.h>

#define MAX_LEN 256 /* longer words and names are never suggested */
#define FAR 1000

/* The typo budget: one edit for a short word, up to three for a long one. */
static size_t budget(size_t len)
{
    return len <= 4 ? 1 : len <= 12 ? 2 : 3;
}

/*
 * Edit distance of a and b (insert, delete, substitute, and a swap of two
 * neighbours), or a number over k when it is over k.  Only the band
 * |i - j| <= k of the table is filled: the rest is over k anyway.
 */
static size_t distance(const char *a, size_t n, const char *b, size_t m,
                       size_t k)
{
    size_t rows[3][MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

    if ((n > m ? n - m : m - n) > k)
        return k + 1;
    for (size_t j = 0; j <= m; j++)
        prev[j] = j <= k ? j : FAR;
    for (size_t i = 1; i <= n; i++) {
        size_t lo = i > k ? i - k : 1, hi = i + k < m ? i + k : m;
        size_t best = FAR;
        for (size_t j = 0; j <= m; j++)
            cur[j] = FAR;
        cur[0] = i <= k ? i : FAR;
        for (size_t j = lo; j <= hi; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t d = prev[j - 1] + cost;
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d > FAR ? FAR : d;
            if (cur[j] < best)
                best = cur[j];
        }
        if (best > k)
            return k + 1;
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

const char *aur_suggest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t wl = word ? strlen(word) : 0, best_d = 0;
    bool tie = false;

    if (wl == 0 || wl > MAX_LEN)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t nl = names[i] ? strlen(names[i]) : 0, k, d;
        if (nl == 0 || nl > MAX_LEN || strcmp(word, names[i]) == 0)
            continue;
        k = budget(wl < nl ? wl : nl);
        if (best && best_d < k)
            k = best_d;
        d = distance(word, wl, names[i], nl, k);
        if (d > k)
            continue;
        if (best && d == best_d) {
            tie = tie || strcmp(best, names[i]) != 0;
            continue;
        }
        best = names[i];
        best_d = d;
        tie = false;
    }
    /* Two names equally close: naming one would be a guess. */
    return tie ? NULL : best;
}

/* Beside the suggestions because both serve people writing configs. */
const char *aur_env_refused(const char *name)
{
    const struct aur__env_deny *d;
    if (!name || !aur__valid_env_name(name))
        return "not an environment variable name [A-Za-z_][A-Za-z0-9_]*";
    d = aur__env_deny_row(name);
    return d ? d->why : NULL;
}
