/*
 * grow.c - see grow.h.
 */
#include "grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *aur__grow(void *p, size_t *cap, size_t need, size_t elem, size_t first,
                size_t max)
{
    size_t c;
    void *g;

    if (need <= *cap)
        return p;
    if (max > SIZE_MAX / elem)
        max = SIZE_MAX / elem;
    if (need > max) {
        errno = EFBIG;
        return NULL;
    }
    c = *cap ? *cap : first ? first : 1;
    if (c > max)
        c = max;
    while (c < need)
        c = c > max / 2 ? max : c * 2;
    g = realloc(p, c * elem);
    if (!g) {
        errno = ENOMEM;
        return NULL;
    }
    *cap = c;
    return g;
}

int aur__buf_put(struct aur__buf *b, const void *s, size_t n, size_t max)
{
    char *g;

    if (max == SIZE_MAX)
        max = SIZE_MAX - 1; /* room for the NUL */
    /* Documents are written a few bytes at a time: most puts fit. */
    if (b->p && n && n < b->cap - b->n && n <= max - b->n) {
        memcpy(b->p + b->n, s, n);
        b->n += n;
        b->p[b->n] = '\0';
        return 0;
    }
    if (n > max - b->n)
        return EFBIG;
    g = aur__grow(b->p, &b->cap, b->n + n + 1, 1, 64, max + 1);
    if (!g)
        return errno;
    b->p = g;
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}
