/*
 * aur_host_jsonc.h - the embedding API's calls on json-c trees, for C
 * programs that use json-c themselves (the aurora-mcp CLI does).  Each
 * is the aur_host.h call of the same name without "_jsonc", with the same
 * threads, ownership and errors, except that JSON is a json-c tree.
 * Bindings from other languages need none of this: aur_host.h passes
 * JSON as text.
 *
 * json-c reference counts are not thread-safe: a tree handed in is only
 * read while the call runs, and a tree handed out belongs to the caller
 * alone.
 */
#ifndef AURORA_AUR_HOST_JSONC_H
#define AURORA_AUR_HOST_JSONC_H

#include <aurora/aur_host.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/*
 * A builtin tool on trees: arguments borrowed; the callback fills *out:
 * content malloc'd (the library frees it); observe and publish may stay
 * NULL for the tool's defaults (none), or point at strings that outlive
 * the host (static ones); owned stays NULL.  May run on any thread,
 * concurrently.
 */
typedef void aur_builtin_jsonc_fn(void *ud, struct json_object *arguments,
                                  struct aur_tool_output *out);

/* aur_mcp_add_builtin with a tree schema (borrowed, copied; NULL =
 * {"type":"object"}) and a tree callback. */
int aur_mcp_add_builtin_jsonc(struct aur_mcp *h, const char *id,
                              const char *description,
                              struct json_object *schema,
                              aur_builtin_jsonc_fn *fn, void *ud,
                              struct aur_error *err);

/* aur_mcp_app_checks as a tree (transfer); NULL when no App has that
 * package. */
struct json_object *aur_mcp_app_checks_jsonc(struct aur_mcp *h,
                                             const char *package);

/* aur_mcp_call with arguments as a tree: borrowed and only read (NULL =
 * {}); it must be an object. */
int aur_mcp_call_jsonc(struct aur_mcp *h, const char *tool_id,
                       struct json_object *arguments, int64_t timeout_ms,
                       struct aur_tool_output *out);

/* aur_mcp_call_start with arguments as a tree: borrowed, only read, and
 * not kept after it returns (NULL = {}); it must be an object. */
int aur_mcp_call_start_jsonc(struct aur_mcp *h, const char *tool_id,
                             struct json_object *arguments,
                             int64_t timeout_ms, aur_call_done_fn *done,
                             void *ud, struct aur_error *err);

/* aur_mcp_status as a new, unshared tree (transfer). */
struct json_object *aur_mcp_status_jsonc(struct aur_mcp *h, int with_tools);

/* aur_plugin_info as a tree (transfer), or NULL with *err filled. */
struct json_object *aur_plugin_info_jsonc(const char *path,
                                          struct aur_error *err);

/* The host's strict JSON parser (exact big integers, depth 128), for
 * input that reaches tools.  *out (transfer) only on AUR_OK. */
int aur_json_parse(const char *buf, size_t len, struct json_object **out,
                   struct aur_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* AURORA_AUR_HOST_JSONC_H */
