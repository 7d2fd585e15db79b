/*
 * cfg_range.c - see cfg_range.h.
 */
#include "cfg_range.h"

#include <stdint.h>

int aur__cfg_range(const struct aur_host *h, const struct aur_cfg *cfg,
                   const char *section, const char *key, int64_t dflt,
                   int64_t lo, int64_t hi, int64_t *out,
                   struct aur_error *err)
{
    int rc = h->cfg_int(cfg, key, dflt, out, err);

    if (rc != AUR_OK)
        return rc;
    if (*out < lo || *out > hi)
        return h->cfg_fail(cfg, key, SIZE_MAX, err,
                           "must be between %lld and %lld in [%s]",
                           (long long)lo, (long long)hi, section);
    return AUR_OK;
}
