/*
 * we_status.h - a world-events counter of the first App as the status
 * shows it, for the suites and the perturbation runner alike.  Header
 * only and free of Check (it also runs on watch threads, where a Check
 * assertion must not).  Thread-safe as aur_mcp_status is (aur_host.h:
 * also while the host starts).
 */
#ifndef AUR_TEST_WE_STATUS_H
#define AUR_TEST_WE_STATUS_H

#include <aurora/aur_host_jsonc.h>
#include <json-c/json.h>
#include <stdint.h>

/* Counter key of org.aurorabot/world-events for apps[0], or -1 while the
 * status shows none (no session yet, or no status). */
static inline int64_t aur_test_we_count(struct aur_mcp *h, const char *key)
{
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *xs, *we, *v;
    int64_t n = -1;
    if (json_object_object_get_ex(st, "apps", &apps) &&
        json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                                  "extension_status", &xs) &&
        json_object_object_get_ex(xs, "org.aurorabot/world-events", &we) &&
        json_object_object_get_ex(we, key, &v))
        n = json_object_get_int64(v);
    json_object_put(st);
    return n;
}

#endif
