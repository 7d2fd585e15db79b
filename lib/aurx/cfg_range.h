/*
 * cfg_range.h - a whole number from a plugin's host.ini section, within
 * bounds, for every plugin that reads one.  Compiled into each plugin
 * that uses it, never exported.  Thread-safe (as the host's cfg services).
 */
#ifndef AURX_CFG_RANGE_H
#define AURX_CFG_RANGE_H

#include <aurora/aur_plugin.h>

/* key of cfg (dflt when absent) into *out; AUR_OK, or AUR_E_CONFIG naming
 * file, line, key and section ("host.ini:7: max_queued: must be between 1
 * and 65536 in [transport-http]") when it is not a number in [lo, hi].
 * Needs the host's cfg_int and cfg_fail (ABI 1.4). */
int aur__cfg_range(const struct aur_host *h, const struct aur_cfg *cfg,
                   const char *section, const char *key, int64_t dflt,
                   int64_t lo, int64_t hi, int64_t *out,
                   struct aur_error *err);

#endif
