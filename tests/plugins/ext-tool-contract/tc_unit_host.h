/*
 * tc_unit_host.h - the test host of check_ext_tool_contract's unit half:
 * ext-tool-contract.so dlopened and driven through its hooks, with the
 * core's own JSON services (strict parser, exact big integers).  All of
 * it belongs to the test thread (Check forks each test).
 */
#ifndef AUR_TEST_TC_UNIT_HOST_H
#define AUR_TEST_TC_UNIT_HOST_H

#include <aurora/aur_plugin.h>
#include <check.h>
#include <json-c/json.h>
#include <stddef.h>

#define TC_SO AUR_TEST_BIN_DIR "/plugins/ext-tool-contract.so"
#define KEY "org.aurorabot/tool-contract"
#define PKG "org.test.tc"
#define TOOL_ID "aur.mcp." PKG ".send"
/* The App default scope list, as text. */
#define DFLT "[\"aurora:mcp:" PKG "\"]"
#define PROPS "{\"group_id\":{},\"user_id\":{},\"x\":{},\"y\":{}}"

extern char log_buf[8192];  /* what the plugin logged, this test */
extern const struct aur_host H;
extern int self_tag;
/* The loaded plugin and its state (borrowed for the test). */
extern const struct aur_plugin_desc *D;
extern const struct aur_extension_ops *OPS;
extern void *ST;
extern const struct aur_app_info APP;  /* App PKG, modern, stdio */
extern const struct aur_tool_ref REF;  /* TOOL_ID, raw name "send" */

/* Parse with the host's strict parser; NULL text = NULL (transfer). */
struct json_object *J(const char *text);
/* Compact text of v, in a static buffer (test thread only). */
const char *T(struct json_object *v);
/* A session for a server that negotiated the contract. */
void *session_up(void);
/* {"observe":["aurora:mcp:PKG"],"publish":[...]} (transfer). */
struct json_object *default_scopes(void);
/* A tool with this inputSchema.properties (NULL = absent) and this value
 * of _meta[KEY] (NULL = absent) (transfer). */
struct json_object *tool(const char *props, const char *contract);
/* validate_tool on session s; returns rc, fills the scopes text. */
int validate(void *s, const char *props, const char *contract,
             char *scopes_out, size_t size, struct aur_error *err);
/* Check fixtures: load and init the plugin; fini and unload it. */
void setup(void);
void teardown(void);

/* check_ext_tool_contract_render.c: the rendering tests into tc. */
void tc_render_tests(TCase *tc);

#endif
