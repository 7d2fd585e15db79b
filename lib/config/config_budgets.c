/*
 * config_budgets.c - the per-App budget keys: their defaults, ranges and
 * parsing, shared by [mcp] in host.ini (the defaults for every App) and an
 * App's [app] (its own).
 */
#include "aur_setup.h"

#include "config_int.h"

/*
 * The per-App budgets (docs/budgets.md has the reasons for each default).
 * The notification budget is a token bucket: notification_burst messages
 * at once, max_notifications_per_second on average after that.
 */
static const struct budget_key {
    const char *key;
    int64_t lo, hi, dflt;
    size_t off;
} budget_keys[] = {
    {"max_notifications_per_second", 1, 1000000, 1000,
     offsetof(struct aur__budgets, notify_rate)},
    {"notification_burst", 1, 100000000, 250000,
     offsetof(struct aur__budgets, notify_burst)},
    {"max_schema_bytes", 16, 1073741824, 1048576,
     offsetof(struct aur__budgets, schema_bytes)},
    {"max_schema_depth", 1, 128, 64,
     offsetof(struct aur__budgets, schema_depth)},
    {"max_description_bytes", 1, 1073741824, 65536,
     offsetof(struct aur__budgets, desc_bytes)},
    {"max_result_bytes", 1, 1073741824, 4194304,
     offsetof(struct aur__budgets, result_bytes)},
    /* With the 16 MiB frame buffer, 160 + 32 MiB keep one App under
     * 256 MiB of peak RSS whatever it sends (docs/budgets.md). */
    {"max_app_memory_bytes", 1048576, 68719476736LL, 167772160,
     offsetof(struct aur__budgets, app_memory)},
    {"max_queued_bytes", 65536, 68719476736LL, 33554432,
     offsetof(struct aur__budgets, queued_bytes)},
    /* serve's worker count: one App can take every worker, no more. */
    {"max_in_flight", 1, 65536, 64, offsetof(struct aur__budgets, in_flight)},
};

void aur__budgets_default(struct aur__budgets *b)
{
    for (size_t i = 0; i < AUR__ARRAY_LEN(budget_keys); i++)
        *(int64_t *)((char *)b + budget_keys[i].off) = budget_keys[i].dflt;
}

int aur__budgets_parse(struct aur__cfg_ctx *ctx, const char *file,
                       const struct aur__ini_sec *sec, struct aur__budgets *b)
{
    for (size_t i = 0; sec && i < AUR__ARRAY_LEN(budget_keys); i++) {
        const struct budget_key *bk = &budget_keys[i];
        const struct aur__kv *kv = aur__sec_kv(sec, bk->key);
        int64_t v;
        if (!kv)
            continue;
        if (!aur__parse_int(kv->value, bk->lo, bk->hi, &v))
            return aur__cfg_fail(ctx, file, kv->line, kv->key,
                                 "must be an integer in %lld..%lld",
                                 (long long)bk->lo, (long long)bk->hi);
        *(int64_t *)((char *)b + bk->off) = v;
    }
    return AUR_OK;
}
