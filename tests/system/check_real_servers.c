/*
 * check_real_servers.c - the host against real MCP servers published on
 * npm (tests/peers/node_modules, pinned in tests/peers/package.json):
 * @modelcontextprotocol/server-filesystem, -memory and -everything, all
 * run as `node <bin script>` over stdio.  Needs `npm ci` in tests/peers.
 *
 * These servers are built on SDK v1 and speak a legacy revision.  None
 * negotiates tool-contract, so isError maps to unknown, and any non-text
 * block must come back as an explicit failed naming the block type.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host_jsonc.h>
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/harness.h"

#define PKG_FS "io.modelcontextprotocol.server-filesystem"
#define PKG_MEM "io.modelcontextprotocol.server-memory"
#define PKG_ALL "io.modelcontextprotocol.server-everything"
#define FS(t) "aur.mcp." PKG_FS "." t
#define MEM(t) "aur.mcp." PKG_MEM "." t
#define ALL(t) "aur.mcp." PKG_ALL "." t

/* A 1x1 PNG, so read_media_file returns an image block. */
static const unsigned char png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d,
    0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
    0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

/* dir is unique per test and passed as an argument to every server, so
 * h_procs_with(dir) finds exactly this test's node processes. */
static char *dir, *files;

static void setup(void)
{
    static const char *const pkgs[] = {"server-filesystem", "server-memory",
                                       "server-everything"};
    for (size_t i = 0; i < 3; i++) {
        char *rel;
        ck_assert(asprintf(&rel, "@modelcontextprotocol/%s/package.json",
                           pkgs[i]) > 0);
        h_need_peers(rel);
        free(rel);
    }
    dir = h_mkconfig(NULL, NULL);
    ck_assert(asprintf(&files, "%s/files", dir) > 0);
    h_write(dir, "files/hello.txt", "hello from aurora\n");
    h_write(dir, "files/sub/note.md", "# note\n");
    h_write(dir, "outside.txt", "not for the server\n");
    char *pngpath;
    ck_assert(asprintf(&pngpath, "%s/pixel.png", files) > 0);
    FILE *f = fopen(pngpath, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(png, 1, sizeof png, f), sizeof png);
    fclose(f);
    free(pngpath);
}

static void teardown(void)
{
    h_rmtree(dir);
    free(dir);
    free(files);
}

/* The package's bin script, from its package.json "bin" (a string or a
 * one-entry object), as an absolute path. */
static char *bin_script(const char *pkg)
{
    char *rel, *pj, *out;
    struct json_object *doc, *bin;
    const char *script = NULL;
    ck_assert(asprintf(&rel,
                       "tests/peers/node_modules/@modelcontextprotocol/%s",
                       pkg) > 0);
    char *root = h_src(rel);
    ck_assert(asprintf(&pj, "%s/package.json", root) > 0);
    doc = json_object_from_file(pj);
    ck_assert_ptr_nonnull(doc);
    ck_assert(json_object_object_get_ex(doc, "bin", &bin));
    if (json_object_is_type(bin, json_type_string)) {
        script = json_object_get_string(bin);
    } else {
        ck_assert(json_object_is_type(bin, json_type_object));
        ck_assert_int_eq(json_object_object_length(bin), 1);
        json_object_object_foreach(bin, k, v) {
            (void)k;
            script = json_object_get_string(v);
        }
    }
    ck_assert_ptr_nonnull(script);
    ck_assert(asprintf(&out, "%s/%s", root, script) > 0);
    ck_assert_msg(access(out, R_OK) == 0, "no bin script %s", out);
    json_object_put(doc);
    free(pj);
    free(root);
    free(rel);
    return out;
}

/* Write apps.d/<file> by hand: h_add_app has no way to add [stdio] env
 * lines.  env_line is a whole "env = NAME" line or NULL. */
static void write_app(const char *file, const char *package,
                      const char *const *args, const char *env_line)
{
    char *text = NULL, *rel;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f,
            "[app]\npackage = %s\nenabled = true\ntransport = stdio\n"
            "timeout_seconds = 30\n\n[stdio]\ncommand = node\n",
            package);
    for (size_t i = 0; args[i]; i++)
        fprintf(f, "arg = %s\n", args[i]);
    fprintf(f, "working_dir = .\n%s\n", env_line ? env_line : "");
    fclose(f);
    ck_assert(asprintf(&rel, "apps.d/%s", file) > 0);
    h_write(dir, rel, text);
    free(rel);
    free(text);
}

static struct aur_mcp *start(void)
{
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int rc = h_start(dir, &h, &serr);
    ck_assert_msg(rc == AUR_OK, "start: %s %s %s", serr.app, serr.phase,
                  serr.message);
    /* one server process, and the marker really finds it */
    ck_assert_int_eq(h_procs_with(dir), 1);
    return h;
}

static void assert_legacy_version(struct aur_mcp *h)
{
    struct json_object *st = aur_mcp_status_jsonc(h, 0), *apps, *v = NULL;
    ck_assert(json_object_object_get_ex(st, "apps", &apps));
    ck_assert_uint_eq(json_object_array_length(apps), 1);
    json_object_object_get_ex(json_object_array_get_idx(apps, 0),
                              "negotiated_version", &v);
    ck_assert_ptr_nonnull(v);
    const char *ver = json_object_get_string(v);
    ck_assert_msg(!strcmp(ver, "2025-11-25") || !strcmp(ver, "2025-06-18") ||
                      !strcmp(ver, "2025-03-26") || !strcmp(ver, "2024-11-05"),
                  "negotiated %s", ver);
    /* pinned servers speak the newest legacy revision we offer */
    ck_assert_str_eq(ver, "2025-11-25");
    json_object_put(st);
}

/* Every frozen tool belongs to package, its id is aur.mcp.<package>.<raw>
 * with the raw name verbatim, and the raw names are exactly want (sorted
 * by id, so by raw name). */
static void assert_catalog(struct aur_mcp *h, const char *package,
                           const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    ck_assert_uint_eq(aur_mcp_tool_count(h), n);
    for (size_t i = 0; i < n; i++) {
        const struct aur_tool_info *t = aur_mcp_tool_at(h, i);
        char *id;
        ck_assert_ptr_nonnull(t);
        ck_assert_str_eq(t->app, package);
        ck_assert_str_eq(t->raw_name, want[i]);
        ck_assert(asprintf(&id, "aur.mcp.%s.%s", package, want[i]) > 0);
        ck_assert_str_eq(t->id, id);
        free(id);
    }
}

/* A non-text block: unknown (the call ran; its result cannot be handed
 * on), whatever text blocks came with it, and the message ends with the
 * distinct non-text types (after the last ": "), so "image" is told from
 * "image, resource" without pinning prose. */
static void expect_non_text(struct aur_mcp *h, const char *tool,
                            const char *args, const char *types)
{
    char *c;
    enum aur_call_status s = h_call(h, tool, args, &c);
    ck_assert_msg(s == AUR_CALL_UNKNOWN, "%s: %s (%s)", tool,
                  aur_call_status_word(s), c);
    const char *tail = NULL;
    for (const char *p = strstr(c, ": "); p; p = strstr(p + 1, ": "))
        tail = p + 2;
    ck_assert_msg(tail != NULL, "%s: %s", tool, c);
    ck_assert_str_eq(tail, types);
    free(c);
}

static void finish(struct aur_mcp *h)
{
    ck_assert(!aur_mcp_restart_required(h));
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_procs_with(dir), 0);
}

START_TEST(filesystem_discovery_and_reads)
{
    static const char *const want[] = {
        "create_directory", "directory_tree",  "edit_file",
        "get_file_info",    "list_allowed_directories",
        "list_directory",   "list_directory_with_sizes",
        "move_file",        "read_file",       "read_media_file",
        "read_multiple_files", "read_text_file", "search_files",
        "write_file",       NULL};
    char *script = bin_script("server-filesystem"), *args_json, *c;
    const char *args[] = {script, files, NULL};
    write_app("fs.ini", PKG_FS, args, NULL);
    struct aur_mcp *h = start();
    assert_legacy_version(h);
    assert_catalog(h, PKG_FS, want);

    /* read_text_file has an outputSchema and answers structuredContent
     * {"content": text}, which wins over the text block
     * (docs/protocol.md, Calls). */
    ck_assert(asprintf(&args_json, "{\"path\":\"%s/hello.txt\"}", files) > 0);
    h_expect(h, FS("read_text_file"), args_json, AUR_CALL_SUCCEEDED,
             "{\"content\":\"hello from aurora\\n\"}");
    h_expect(h, FS("read_file"), args_json, AUR_CALL_SUCCEEDED,
             "{\"content\":\"hello from aurora\\n\"}");
    /* a text file through read_media_file is an embedded resource */
    expect_non_text(h, FS("read_media_file"), args_json, "resource");
    free(args_json);

    ck_assert(asprintf(&args_json, "{\"path\":\"%s/pixel.png\"}", files) > 0);
    /* image block plus structuredContent: the image check comes first */
    expect_non_text(h, FS("read_media_file"), args_json, "image");
    free(args_json);

    /* outside the allowed directory (a sibling of it): isError, no tool
     * contract -> unknown, content = the server's error text */
    ck_assert(asprintf(&args_json, "{\"path\":\"%s/outside.txt\"}", dir) > 0);
    ck_assert_int_eq(h_call(h, FS("read_text_file"), args_json, &c),
                     AUR_CALL_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(c, "Access denied"));
    ck_assert_ptr_nonnull(strstr(c, "outside.txt"));
    ck_assert_ptr_null(strstr(c, "not for the server"));
    free(c);
    free(args_json);

    ck_assert(asprintf(&args_json, "{\"path\":\"%s\"}", files) > 0);
    ck_assert_int_eq(h_call(h, FS("list_directory"), args_json, &c),
                     AUR_CALL_SUCCEEDED);
    ck_assert_ptr_nonnull(strstr(c, "[FILE] hello.txt"));
    ck_assert_ptr_nonnull(strstr(c, "[DIR] sub"));
    free(c);
    free(args_json);

    /* a write really happens, and only inside the allowed directory */
    ck_assert(asprintf(&args_json,
                       "{\"path\":\"%s/new.txt\",\"content\":\"written\"}",
                       files) > 0);
    h_expect(h, FS("write_file"), args_json, AUR_CALL_SUCCEEDED, NULL);
    free(args_json);
    char *np;
    ck_assert(asprintf(&np, "%s/new.txt", files) > 0);
    char *got = h_slurp(np);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, "written");
    free(got);
    free(np);

    finish(h);
    free(script);
}
END_TEST

START_TEST(memory_create_then_read_graph)
{
    static const char *const want[] = {
        "add_observations", "create_entities", "create_relations",
        "delete_entities",  "delete_observations", "delete_relations",
        "open_nodes",       "read_graph",      "search_nodes", NULL};
    char *script = bin_script("server-memory"), *mem;
    /* the server ignores argv; dir is only the process marker */
    const char *args[] = {script, dir, NULL};
    ck_assert(asprintf(&mem, "%s/memory.jsonl", files) > 0);
    ck_assert_int_eq(setenv("MEMORY_FILE_PATH", mem, 1), 0);
    write_app("mem.ini", PKG_MEM, args, "env = MEMORY_FILE_PATH");
    struct aur_mcp *h = start();
    assert_legacy_version(h);
    assert_catalog(h, PKG_MEM, want);

    h_expect(h, MEM("create_entities"),
             "{\"entities\":[{\"name\":\"Aurora Test Entity\","
             "\"entityType\":\"probe\",\"observations\":[\"made by C\"]}]}",
             AUR_CALL_SUCCEEDED,
             "{\"entities\":[{\"entityType\":\"probe\","
             "\"name\":\"Aurora Test Entity\","
             "\"observations\":[\"made by C\"]}]}");
    h_expect(h, MEM("read_graph"), "{}", AUR_CALL_SUCCEEDED,
             "{\"entities\":[{\"entityType\":\"probe\","
             "\"name\":\"Aurora Test Entity\","
             "\"observations\":[\"made by C\"]}],\"relations\":[]}");
    /* the whitelisted env var reached the child: the graph is stored in
     * our temp dir, not next to the package */
    char *stored = h_slurp(mem);
    ck_assert_ptr_nonnull(stored);
    ck_assert_ptr_nonnull(strstr(stored, "Aurora Test Entity"));
    free(stored);
    finish(h);
    free(mem);
    free(script);
}
END_TEST

START_TEST(everything_content_types)
{
    static const char *const want[] = {
        "echo", "get-annotated-message", "get-env", "get-resource-links",
        "get-resource-reference", "get-structured-content", "get-sum",
        "get-tiny-image", "gzip-file-as-resource", "simulate-research-query",
        "toggle-simulated-logging", "toggle-subscriber-updates",
        "trigger-long-running-operation", NULL};
    char *script = bin_script("server-everything"), *c;
    /* argv[2] picks the transport; later arguments are ignored, so dir
     * rides along as the process marker */
    const char *args[] = {script, "stdio", dir, NULL};
    /* a host variable that is not whitelisted must not reach the child */
    ck_assert_int_eq(setenv("AUR_RS_NOT_WHITELISTED", "leak-marker", 1), 0);
    write_app("all.ini", PKG_ALL, args, NULL);
    struct aur_mcp *h = start();
    assert_legacy_version(h);
    assert_catalog(h, PKG_ALL, want);

    h_expect(h, ALL("echo"), "{\"message\":\"hi there\"}", AUR_CALL_SUCCEEDED,
             "Echo: hi there");
    h_expect(h, ALL("get-sum"), "{\"a\":2,\"b\":40}", AUR_CALL_SUCCEEDED,
             "The sum of 2 and 40 is 42.");
    /* text + image + text: unknown, never the text alone */
    expect_non_text(h, ALL("get-tiny-image"), "{}", "image");
    h_expect(h, ALL("get-structured-content"), "{\"location\":\"Chicago\"}",
             AUR_CALL_SUCCEEDED,
             "{\"conditions\":\"Light rain / drizzle\",\"humidity\":82,"
             "\"temperature\":36}");
    /* content annotations on a text block do not matter ... */
    h_expect(h, ALL("get-annotated-message"), "{\"messageType\":\"success\"}",
             AUR_CALL_SUCCEEDED, "Operation completed successfully");
    /* ... an annotated image does */
    expect_non_text(h, ALL("get-annotated-message"),
                    "{\"messageType\":\"error\",\"includeImage\":true}",
                    "image");
    expect_non_text(h, ALL("get-resource-links"), "{\"count\":2}",
                    "resource_link");
    expect_non_text(h, ALL("get-resource-reference"), "{}", "resource");
    expect_non_text(h, ALL("get-resource-reference"),
                    "{\"resourceType\":\"Blob\"}", "resource");

    /* A task-only tool (execution.taskSupport "required") is refused
     * before it is sent: the host speaks no tasks, so sending could only
     * end unknown.  The server never sees it. */
    ck_assert_int_eq(h_call(h, ALL("simulate-research-query"),
                            "{\"topic\":\"x\"}", &c),
                     AUR_CALL_FAILED);
    ck_assert_ptr_nonnull(strstr(c, "taskSupport"));
    ck_assert_ptr_nonnull(strstr(c, "not sent"));
    free(c);
    /* SDK v1's McpServer wraps its own rejections (-32602 bad arguments)
     * into isError results, so without a tool contract they are unknown,
     * not failed */
    ck_assert_int_eq(h_call(h, ALL("echo"), "{}", &c), AUR_CALL_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(c, "Input validation error"));
    free(c);

    ck_assert_int_eq(h_call(h, ALL("get-env"), "{}", &c), AUR_CALL_SUCCEEDED);
    ck_assert_ptr_nonnull(strstr(c, "\"PATH\""));
    ck_assert_ptr_null(strstr(c, "AUR_RS_NOT_WHITELISTED"));
    ck_assert_ptr_null(strstr(c, "leak-marker"));
    free(c);

    finish(h);
    free(script);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("real_servers");
    TCase *tc = tcase_create("npm");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, filesystem_discovery_and_reads);
    tcase_add_test(tc, memory_create_then_read_graph);
    tcase_add_test(tc, everything_content_types);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return aur_check_main(suite(), NULL);
}
