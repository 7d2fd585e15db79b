/*
 * tc_int.h - private interface of ext-tool-contract
 * (docs/protocol.md, Extensions).
 *
 * tc_plugin.c owns the descriptor, negotiation, result classification and
 * the per-App session; tc_scope.c owns the scope grammar, template
 * validation (validate_tool) and rendering (resolve_scope).
 *
 * Threads: a session is written only by validate_tool, on the App's
 * startup thread, before any call can run; afterwards resolve_scope and
 * classify read it concurrently from many threads, so nothing in it
 * changes once the App is ready.  There is no mutable global state.
 */
#ifndef AUR_TC_INT_H
#define AUR_TC_INT_H

#include <aurora/aur_plugin.h>

#include <stdbool.h>
#include <stddef.h>

#define TC_KEY "org.aurorabot/tool-contract"
#define TC_MAX_SCOPE_CP 256

/* Plugin state: host services, never written after init. */
struct tc_state {
    const struct aur_host *host;
    struct aur_self *self;
};

/* The templates one direction declares (n == 0: the App default, which
 * the core pre-fills and which is never edited).  Strings owned, with
 * their byte lengths (a template may hold U+0000 until render time). */
struct tc_dir {
    size_t n;
    char **text;
    size_t *len;
};

/* One tool's contract, keyed by raw name. */
struct tc_tool {
    struct tc_tool *next; /* hash chain */
    char *raw;
    struct tc_dir dir[2]; /* observe, publish */
};

/* One negotiated App.  Owned by the plugin; freed by end_session. */
struct tc_session {
    char *package;
    struct tc_tool **bucket;
    size_t nbucket, ntools;
};

extern const char *const tc_dir_names[2]; /* "observe", "publish" */

/* The scope rule on s[0..len): non-empty, no leading/trailing Python
 * whitespace, at most 256 code points, no U+0000..U+001F, valid UTF-8. */
bool tc_valid_scope(const char *s, size_t len);

/* Session store (tc_plugin.c).  tc_session_find is safe from any thread
 * once validation is over. */
const struct tc_tool *tc_session_find(const struct tc_session *s,
                                      const char *raw);
/* Insert t (transfer), replacing and freeing an entry of the same name
 * (a catalog paged again binds its tools again). */
int tc_session_put(struct tc_session *s, struct tc_tool *t,
                   struct aur_error *err);
void tc_tool_free(struct tc_tool *t);

/* The extension hooks implemented in tc_scope.c. */
int tc_validate_tool(void *st, void *session, const struct aur_tool_ref *tool,
                     struct json_object *tool_json, struct json_object *scopes,
                     struct aur_error *err);
int tc_resolve_scope(void *st, void *session, const struct aur_tool_ref *tool,
                     struct json_object *arguments, struct json_object *scopes,
                     struct aur_error *err);

#endif /* AUR_TC_INT_H */
