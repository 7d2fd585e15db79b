/*
 * grow.h - growable arrays and byte buffers with a ceiling, for the core,
 * the CLI and every plugin: one doubling rule, one overflow check, one
 * place that turns "this peer sends too much" into EFBIG.  Compiled into
 * each binary that uses it, never exported.  Thread rules: none of its
 * own (the caller owns the array or buffer and its lock).
 */
#ifndef AURX_GROW_H
#define AURX_GROW_H

#include <stddef.h>

/*
 * The array p (*cap elements of elem bytes each; p may be NULL when *cap
 * is 0) grown to hold at least need elements: capacities double from
 * first and never exceed max.  Returns the array (p itself when it is
 * already big enough) and stores its capacity in *cap.  Returns NULL
 * with errno EFBIG when need > max (or max elements do not fit in
 * memory's size), ENOMEM when realloc fails; p and *cap are then
 * unchanged and p still owned by the caller.
 */
void *aur__grow(void *p, size_t *cap, size_t need, size_t elem, size_t first,
                size_t max);

/* Text being built: p[0..n) and a NUL at p[n] once anything was put
 * (p NULL before).  Zero-initialised is empty; the owner frees p. */
struct aur__buf {
    char *p;
    size_t n, cap;
};

/* Append n bytes of s (may be NULL when n is 0), keeping the buffer at
 * most max bytes (the NUL not counted).  0, or EFBIG / ENOMEM with the
 * buffer unchanged. */
int aur__buf_put(struct aur__buf *b, const void *s, size_t n, size_t max);

#endif
