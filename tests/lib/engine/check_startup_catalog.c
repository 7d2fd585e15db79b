/*
 * check_startup_catalog.c - the catalog a startup reads: pagination,
 * changes during startup (one pass, every pass, batched ones), names and
 * schemas that fail, frames that are dropped.  Part of check_startup.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_startup.h"
#include "support/harness.h"

START_TEST(pagination_1000_tools)
{
    const char *opts[] = {"--era", "modern", "--tools", "1000", "--page-size",
                          "7", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    /* 143 pages: a deadline a slow run needs met stretches. */
    add_fixture("a.ini", "org.test.many", (double)h_slack(10000) / 1000,
                opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 1000);
    ck_assert_int_eq(h_count_lines(logpath, "tools/list"), 143);
    /* sorted by id */
    for (size_t i = 1; i < aur_mcp_tool_count(h); i++)
        ck_assert(strcmp(aur_mcp_tool_at(h, i - 1)->id,
                         aur_mcp_tool_at(h, i)->id) < 0);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(change_during_startup_repages)
{
    const char *opts[] = {"--era", "modern", "--tools", "20", "--page-size",
                          "5", "--change-during-list", "2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.change", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 20);
    /* The stale pass was abandoned and a clean one read all 4 pages. */
    ck_assert_int_ge(h_count_lines(logpath, "tools/list"), 2 + 4);
    struct json_object *a = h_app_status(h);
    ck_assert(!json_object_get_boolean(json_object_object_get(a, "restart_required")));
    json_object_put(a);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(change_always_fails)
{
    const char *opts[] = {"--era", "modern", "--tools", "10", "--page-size",
                          "5", "--change-always", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.change", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_E_CHANGED);
    ck_assert_str_eq(serr.phase, "tools/list");
    ck_assert_ptr_nonnull(strstr(serr.message, "changed"));
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}
END_TEST

/* Every pass both changes and fails on its own (a duplicate name): the
 * budget's end names the failure too, which "changed 4 times" alone hid. */
START_TEST(change_always_names_the_last_failure)
{
    const char *opts[] = {"--era", "legacy", "--tool-name", "a",
                          "--tool-name", "a", "--notify-before-list",
                          "notifications/tools/list_changed", "{}", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.change", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_E_CHANGED);
    ck_assert_str_eq(serr.phase, "tools/list");
    ck_assert_msg(strstr(serr.message, "changed") &&
                      strstr(serr.message, "duplicate"),
                  "%s", serr.message);
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(legacy_change_during_startup_repages)
{
    const char *opts[] = {"--era", "legacy", "--tools", "9", "--page-size",
                          "3", "--change-during-list", "1", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.change", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 9);
    aur_mcp_destroy(h);
}
END_TEST

/* Whether the frozen catalog has this tool id. */
static bool has_tool(struct aur_mcp *h, const char *id)
{
    for (size_t i = 0; i < aur_mcp_tool_count(h); i++)
        if (strcmp(aur_mcp_tool_at(h, i)->id, id) == 0)
            return true;
    return false;
}

/* A legacy server's catalog changes between pages and it says so in a
 * one-element JSON-RPC batch (docs/protocol.md, Batches).  version: what
 * initialize answers. */
static void batch_change_during_listing(const char *version)
{
    const char *opts[] = {"--era", "legacy", "--legacy-version", version,
                          "--tools", "2", "--page-size", "1", "--gen-tool",
                          "--batch-change-at", "1", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.batch", 5, opts);
    ck_assert_msg(start(&h, &serr) == AUR_OK, "%s: %s", serr.phase,
                  serr.message);
    ck_assert_str_eq(h_negotiated_version(h), version);
    /* The stale pass was dropped; a clean one froze the new catalog. */
    ck_assert_int_ge(h_count_lines(logpath, "tools/list "), 1 + 3);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 3);
    ck_assert(has_tool(h, "aur.mcp.org.test.batch.gen2"));
    ck_assert(!has_tool(h, "aur.mcp.org.test.batch.gen1"));
    struct json_object *a = h_app_status(h);
    ck_assert(!json_object_get_boolean(
        json_object_object_get(a, "restart_required")));
    json_object_put(a);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}

/* 2025-03-26 allows batches: the change inside one is taken. */
START_TEST(legacy_batch_list_changed_repages)
{
    batch_change_during_listing("2025-03-26");
}
END_TEST

/* 2025-06-18 removed batches: the array is refused as a malformed frame,
 * but as a possible change, so the stale catalog is not frozen. */
START_TEST(refused_batch_during_listing_repages)
{
    batch_change_during_listing("2025-06-18");
}
END_TEST

static void expect_list_failure(const char *const *opts, const char *needle)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.bad", 5, opts);
    ck_assert_int_ne(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(serr.code, "startup_failed");
    ck_assert_str_eq(serr.phase, "tools/list");
    ck_assert_str_eq(serr.app, "org.test.bad");
    ck_assert_msg(strstr(serr.message, needle), "message: %s", serr.message);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(logpath), 0);
}

START_TEST(dotted_name_fails)
{
    const char *opts[] = {"--tool-name", "bad.name", NULL};
    expect_list_failure(opts, "bad.name");
}
END_TEST

START_TEST(spaced_name_fails)
{
    const char *opts[] = {"--tool-name", "two words", NULL};
    expect_list_failure(opts, "org.test.bad/two words");
}
END_TEST

START_TEST(digit_first_name_fails)
{
    const char *opts[] = {"--tool-name", "1st", NULL};
    expect_list_failure(opts, "1st");
}
END_TEST

START_TEST(duplicate_name_fails)
{
    const char *opts[] = {"--tool-name", "same", "--tool-name", "same", NULL};
    expect_list_failure(opts, "duplicate tool name: same");
}
END_TEST

START_TEST(non_object_schema_fails)
{
    const char *opts[] = {"--bad-schema", NULL};
    expect_list_failure(opts, "aur.mcp.org.test.bad.bad_schema");
}
END_TEST

START_TEST(capital_name_kept_verbatim)
{
    const char *opts[] = {"--tool-name", "Screenshot", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.caps", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_str_eq(aur_mcp_tool_at(h, 0)->id,
                     "aur.mcp.org.test.caps.Screenshot");
    ck_assert_str_eq(aur_mcp_tool_at(h, 0)->raw_name, "Screenshot");
    aur_mcp_destroy(h);
}
END_TEST

START_TEST(garbage_frames_are_dropped)
{
    const char *opts[] = {"--era", "modern", "--garbage", "--tools", "2", NULL};
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    add_fixture("a.ini", "org.test.garbage", 5, opts);
    ck_assert_int_eq(start(&h, &serr), AUR_OK);
    ck_assert_uint_eq(aur_mcp_tool_count(h), 2);
    aur_mcp_destroy(h);
}
END_TEST

void startup_catalog_tests(TCase *tc)
{
    tcase_add_test(tc, pagination_1000_tools);
    tcase_add_test(tc, change_during_startup_repages);
    tcase_add_test(tc, change_always_fails);
    tcase_add_test(tc, change_always_names_the_last_failure);
    tcase_add_test(tc, legacy_change_during_startup_repages);
    tcase_add_test(tc, legacy_batch_list_changed_repages);
    tcase_add_test(tc, refused_batch_during_listing_repages);
    tcase_add_test(tc, dotted_name_fails);
    tcase_add_test(tc, spaced_name_fails);
    tcase_add_test(tc, digit_first_name_fails);
    tcase_add_test(tc, duplicate_name_fails);
    tcase_add_test(tc, non_object_schema_fails);
    tcase_add_test(tc, capital_name_kept_verbatim);
    tcase_add_test(tc, garbage_frames_are_dropped);
}
