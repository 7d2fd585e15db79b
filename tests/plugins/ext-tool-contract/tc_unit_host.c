/*
 * tc_unit_host.c - the test host of check_ext_tool_contract's unit half
 * (tc_unit_host.h).
 */
#include "aur_setup.h"

#include "tc_unit_host.h"

#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aurora/aur_host.h>
#include <json-c/json.h>

#include "jsonx.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
char log_buf[8192];

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
    AUR_PRINTF(3, 4);
static void t_log(struct aur_self *self, int level, const char *fmt, ...)
{
    va_list ap;
    size_t n;
    (void)self;
    (void)level;
    pthread_mutex_lock(&log_mu);
    n = strlen(log_buf);
    va_start(ap, fmt);
    if (n + 2 < sizeof log_buf) {
        vsnprintf(log_buf + n, sizeof log_buf - n - 1, fmt, ap);
        strcat(log_buf, "\n");
    }
    va_end(ap);
    pthread_mutex_unlock(&log_mu);
}

static int64_t t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *t_cfg_str(const struct aur_cfg *c, const char *k,
                             const char *d)
{
    (void)c;
    (void)k;
    return d;
}

static size_t t_cfg_count(const struct aur_cfg *c, const char *k)
{
    (void)c;
    (void)k;
    return 0;
}

static const char *t_cfg_str_at(const struct aur_cfg *c, const char *k,
                                size_t i)
{
    (void)c;
    (void)k;
    (void)i;
    return NULL;
}

static int t_cfg_int(const struct aur_cfg *c, const char *k, int64_t d,
                     int64_t *out, struct aur_error *err)
{
    (void)c;
    (void)k;
    (void)err;
    *out = d;
    return AUR_OK;
}

static int t_cfg_bool(const struct aur_cfg *c, const char *k, int d, int *out,
                      struct aur_error *err)
{
    (void)c;
    (void)k;
    (void)err;
    *out = d;
    return AUR_OK;
}

static int t_world_write(struct aur_self *self, const struct aur_commit *c,
                         struct aur_error *err)
{
    (void)self;
    (void)c;
    return aur_fail(err, AUR_E_STATE, 0, "no world in this test");
}

static int t_json_parse(const char *buf, size_t len, struct json_object **out,
                        struct aur_error *err)
{
    return aur__json_parse(buf, len, 128, out, err);
}

const struct aur_host H = {
    .struct_size = sizeof(struct aur_host),
    .abi_version = AUR_ABI_VERSION,
    .log = t_log,
    .now_ms = t_now,
    .cfg_str = t_cfg_str,
    .cfg_count = t_cfg_count,
    .cfg_str_at = t_cfg_str_at,
    .cfg_int = t_cfg_int,
    .cfg_bool = t_cfg_bool,
    .world_write = t_world_write,
    .json_parse = t_json_parse,
    .json_integer_text = aur__json_integer_text,
};

int self_tag;
static void *dl;
const struct aur_plugin_desc *D;
const struct aur_extension_ops *OPS;
void *ST;

const struct aur_app_info APP = {
    sizeof(struct aur_app_info), PKG, "stdio", "disabled", "2026-07-28", 1,
    (struct aur_self *)&self_tag,
};

const struct aur_tool_ref REF = {sizeof(struct aur_tool_ref), TOOL_ID,
                                        "send"};

/* Parse with the host's strict parser; NULL text = NULL. */
struct json_object *J(const char *text)
{
    struct json_object *v = NULL;
    struct aur_error err;
    if (!text)
        return NULL;
    ck_assert_msg(aur__json_parse(text, strlen(text), 128, &v, &err) == AUR_OK,
                  "bad fixture JSON %s: %s", text, err.msg);
    return v;
}

/* Compact text of v, in a static buffer (test thread only). */
const char *T(struct json_object *v)
{
    static char buf[4096];
    char *s = aur__json_compact(v);
    snprintf(buf, sizeof buf, "%s", s ? s : "(null)");
    free(s);
    return buf;
}

static void up(void)
{
    struct aur_error err;
    aur_entry_fn *entry;
    dl = dlopen(TC_SO, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl != NULL, "dlopen %s: %s", TC_SO, dlerror());
    *(void **)&entry = dlsym(dl, AUR_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    D = entry(AUR_ABI_VERSION);
    ck_assert_ptr_nonnull(D);
    OPS = D->ops;
    ck_assert_int_eq(D->init(&H, (struct aur_self *)&self_tag, NULL, &ST,
                             &err),
                     AUR_OK);
}

static void down(void)
{
    if (D && ST)
        D->fini(ST);
    ST = NULL;
    D = NULL;
    OPS = NULL;
    if (dl)
        dlclose(dl);
    dl = NULL;
}

/* A session for a server that negotiated the contract. */
void *session_up(void)
{
    struct json_object *caps =
        J("{\"extensions\":{\"" KEY "\":{\"version\":1}}}");
    struct aur_error err;
    void *s = NULL;
    ck_assert_int_eq(OPS->accept_server(ST, &APP, caps, &s, &err), AUR_OK);
    ck_assert_ptr_nonnull(s);
    json_object_put(caps);
    return s;
}

struct json_object *default_scopes(void)
{
    return J("{\"observe\":[\"aurora:mcp:" PKG "\"],\"publish\":[\"aurora:mcp:"
             PKG "\"]}");
}

/* A tool with this inputSchema.properties (NULL = absent) and this value
 * under _meta[KEY] (NULL = no _meta at all). */
struct json_object *tool(const char *props, const char *contract)
{
    char buf[8192];
    size_t o = (size_t)snprintf(buf, sizeof buf,
                                "{\"name\":\"send\",\"inputSchema\":{\"type\":"
                                "\"object\"");
    if (props)
        o += (size_t)snprintf(buf + o, sizeof buf - o, ",\"properties\":%s",
                              props);
    o += (size_t)snprintf(buf + o, sizeof buf - o, "}");
    if (contract)
        o += (size_t)snprintf(buf + o, sizeof buf - o,
                              ",\"_meta\":{\"" KEY "\":%s}", contract);
    ck_assert_uint_lt(o + 2, sizeof buf);
    snprintf(buf + o, sizeof buf - o, "}");
    return J(buf);
}

/* validate_tool on a fresh session; returns rc, fills scopes text. */
int validate(void *s, const char *props, const char *contract,
                    char *scopes_out, size_t size, struct aur_error *err)
{
    struct json_object *tj = tool(props, contract), *sc = default_scopes();
    int rc;
    aur_error_clear(err);
    rc = OPS->validate_tool(ST, s, &REF, tj, sc, err);
    if (scopes_out && snprintf(scopes_out, size, "%s", T(sc)) >= (int)size)
        ck_abort_msg("scopes text longer than %zu bytes", size);
    json_object_put(tj);
    json_object_put(sc);
    return rc;
}

void setup(void)
{
    log_buf[0] = '\0';
    up();
}

void teardown(void)
{
    down();
}
