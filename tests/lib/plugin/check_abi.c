/*
 * check_abi.c - the plugin loader against real fixture plugins
 * (tests/fixtures/plugins): every rejection rule of
 * docs/writing-plugins.md §2-§4, descriptor and ops copying, init/fini
 * order, the deployed set, describe, and the one-exported-symbol rule.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <sys/stat.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#include <json-c/json.h>

#include "loader.h"
#include "support/plugin_host.h"

/* The frozen parts of the ABI: a change here is a new major. */
_Static_assert(offsetof(struct aur_plugin_desc, magic) == 0, "magic");
_Static_assert(offsetof(struct aur_plugin_desc, abi_version) == 4, "abi");
_Static_assert(offsetof(struct aur_plugin_desc, struct_size) == 8, "size");
_Static_assert(offsetof(struct aur_plugin_desc, kind) == 12, "kind");
_Static_assert(sizeof(struct aur_error) == 272, "aur_error");
_Static_assert(offsetof(struct aur_transport_ops, struct_size) == 0, "t");
_Static_assert(offsetof(struct aur_extension_ops, struct_size) == 0, "e");

#define FX_DIR AUR_TEST_FIXTURE_PLUGIN_DIR
/* The host's ABI minor as text, so expectations follow a minor bump. */
#define ABI_STR_(x) #x
#define ABI_STR(x) ABI_STR_(x)

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

static char scratch[64];
static char trace_path[128];

static void setup_scratch(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/check_abi.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch));
    snprintf(trace_path, sizeof trace_path, "%s/trace", scratch);
    log_clear();
}

static void teardown_scratch(void)
{
    unlink(trace_path);
    rmdir(scratch);
}

static const char *fx_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s.so", FX_DIR, name);
    return buf;
}

static bool is_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i])
            return false;
    }
    return true;
}

/* Whether the object at path is mapped, without loading it. */
static bool is_loaded(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return false;
    dlclose(h);
    return true;
}

/* The fixtures' trace file is exactly want ("" when there is none). */
static void trace_is(const char *want)
{
    char buf[1024];
    FILE *f = fopen(trace_path, "r");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    ck_assert_str_eq(buf, want);
}

/* ------------------------------------------------------------------ */
/* Rejections by aur__plugin_open                                     */
/* ------------------------------------------------------------------ */

struct reject_case {
    const char *fixture;
    const char *msg; /* substring after "<path>: " */
};

static const struct reject_case rejects[] = {
    {"does_not_exist", "cannot load: "},
    {"not_a_plugin", "not an aurora-mcp plugin (no aur_plugin_entry)"},
    {"null_entry", "not an aurora-mcp plugin (aur_plugin_entry returned "
                   "NULL)"},
    {"bad_magic", "not an aurora-mcp plugin (bad magic 0xdeadbeef)"},
    {"major_mismatch", "ABI major 2, host has 1"},
    {"newer_minor", "needs host ABI 1.9, host has 1." ABI_STR(AUR_ABI_MINOR)},
    {"short_struct", "descriptor too short (8 bytes"},
    {"bad_kind", "unknown kind 7"},
    {"null_name", "plugin has no name"},
    {"bad_name", "bad plugin name \"Bad_Name\""},
    {"no_init", "missing mandatory hook init"},
    {"null_ops", "no ops table"},
    {"short_ops", "ops table too short"},
    {"missing_send", "missing mandatory hook send"},
    {"no_hooks_ext", "extension has no hooks"},
    {"methods_without_notify", "lists methods but has no on_notify"},
    {"bad_methods", "methods list is unterminated or holds a bad name"},
};

START_TEST(test_reject)
{
    const struct reject_case *c = &rejects[_i];
    char path[512];
    struct aur__plugin p;
    struct aur_error err;
    int rc;

    snprintf(path, sizeof path, "%s", fx_path(c->fixture));
    memset(&p, 0xa5, sizeof p);
    aur_error_clear(&err);
    rc = aur__plugin_open(path, &p, &err);
    ck_assert_int_eq(rc, AUR_E_PLUGIN);
    ck_assert_int_eq(err.code, AUR_E_PLUGIN);
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0 &&
                      strncmp(err.msg + strlen(path), ": ", 2) == 0,
                  "message does not start with the path: %s", err.msg);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "%s: got \"%s\"",
                  c->fixture, err.msg);
    ck_assert_msg(is_zero(&p, sizeof p), "*p not zeroed on failure");
    /* A rejected file is unloaded again. */
    ck_assert(!is_loaded(path));
}
END_TEST

START_TEST(test_empty_path)
{
    struct aur__plugin p;
    struct aur_error err;
    ck_assert_int_eq(aur__plugin_open("", &p, &err), AUR_E_INVAL);
    ck_assert(is_zero(&p, sizeof p));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Accepted descriptors and the copies                                */
/* ------------------------------------------------------------------ */

START_TEST(test_good_transport)
{
    struct aur__plugin p;
    struct aur_error err;
    struct aur_conn *conn = NULL;
    uint32_t caps = 0;

    ck_assert_int_eq(aur__plugin_open(fx_path("good_transport"), &p, &err),
                     AUR_OK);
    ck_assert_str_eq(p.name, "good-transport");
    ck_assert_str_eq(p.path, fx_path("good_transport"));
    ck_assert_ptr_nonnull(p.dl);
    ck_assert(!p.inited);
    ck_assert_uint_eq(p.desc.kind, AUR_KIND_TRANSPORT);
    ck_assert_uint_eq(p.desc.abi_version, AUR_ABI_VERSION);
    ck_assert_str_eq(p.desc.version, "1.2.3");
    ck_assert_uint_eq(p.ops.t.struct_size, sizeof p.ops.t);
    ck_assert_uint_eq(p.ops.t.caps,
                      AUR_TCAP_SERVER_PUSH | AUR_TCAP_CHILD_PROCESS);
    ck_assert(AUR_HAS(&p.ops.t, open));
    ck_assert(!AUR_HAS(&p.ops.t, set_protocol));
    /* The copied hooks are the plugin's and behave as it wrote them. */
    ck_assert_int_eq(p.ops.t.open(NULL, NULL, NULL, AUR_NO_DEADLINE, &conn,
                                  &caps, &err),
                     AUR_E_IO);
    ck_assert_ptr_null(conn);
    ck_assert_str_eq(err.msg, "fixture transport cannot connect");
    ck_assert(is_loaded(fx_path("good_transport")));
    aur__plugin_release(&p);
    ck_assert(is_zero(&p, sizeof p));
    /* Released without init: unloaded. */
    ck_assert(!is_loaded(fx_path("good_transport")));
}
END_TEST

/* Like sshd's StrictModes: a plugin file, or its directory, that others
 * can write is refused before it is loaded. */
START_TEST(test_writable_plugin_refused)
{
    char tmpl[] = "/tmp/aur-modes-XXXXXX", path[300], cmd[1024];
    struct aur__plugin p;
    struct aur_error err;

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(path, sizeof path, "%s/good_transport.so", tmpl);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fx_path("good_transport"), path);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(chmod(tmpl, 0700), 0);
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(aur__plugin_open(path, &p, &err), AUR_OK);
    aur__plugin_release(&p);

    ck_assert_int_eq(chmod(path, 0666), 0);
    ck_assert_int_eq(aur__plugin_open(path, &p, &err), AUR_E_PLUGIN);
    ck_assert_msg(strstr(err.msg, "writable by others"), "%s", err.msg);
    ck_assert(!is_loaded(path));
    ck_assert_int_eq(chmod(path, 0664), 0);
    ck_assert_int_eq(aur__plugin_open(path, &p, &err), AUR_E_PLUGIN);
    ck_assert_msg(strstr(err.msg, "writable by its group"), "%s", err.msg);

    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(chmod(tmpl, 0777), 0);
    ck_assert_int_eq(aur__plugin_open(path, &p, &err), AUR_E_PLUGIN);
    ck_assert_msg(strstr(err.msg, "its directory"), "%s", err.msg);
    ck_assert(!is_loaded(path));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_good_extension)
{
    struct aur__plugin p;
    struct aur_error err;

    ck_assert_int_eq(aur__plugin_open(fx_path("good_extension"), &p, &err),
                     AUR_OK);
    ck_assert_str_eq(p.name, "good-extension");
    ck_assert_uint_eq(p.desc.kind, AUR_KIND_EXTENSION);
    ck_assert_str_eq(p.ops.e.cap_key, "org.example/fixture");
    ck_assert_str_eq(p.ops.e.methods[0], "notifications/fixture/ping");
    ck_assert_ptr_null(p.ops.e.methods[2]);
    ck_assert_ptr_nonnull(p.ops.e.on_notify);
    ck_assert_ptr_nonnull(p.ops.e.declare_caps);
    ck_assert_ptr_null(p.ops.e.classify);
    aur__plugin_release(&p);
}
END_TEST

START_TEST(test_longer_struct)
{
    struct aur__plugin p;
    struct aur_error err;

    ck_assert_int_eq(aur__plugin_open(fx_path("longer_struct"), &p, &err),
                     AUR_OK);
    ck_assert_str_eq(p.name, "longer-struct");
    /* The declared size is kept for describe; only sizeof was copied. */
    ck_assert_uint_gt(p.desc.struct_size, sizeof p.desc);
    ck_assert_str_eq(p.desc.version, "9.0.0");
    ck_assert_ptr_nonnull(p.desc.ops);
    ck_assert_ptr_nonnull(p.ops.t.send);
    aur__plugin_release(&p);
}
END_TEST

START_TEST(test_short_ops_tail_reads_null)
{
    struct aur__plugin p;
    struct aur_error err;
    const struct aur_transport_ops *orig;

    ck_assert_int_eq(aur__plugin_open(fx_path("short_ops_tail"), &p, &err),
                     AUR_OK);
    orig = p.desc.ops;
    /* The plugin's own table has pointers beyond its struct_size ... */
    ck_assert_uint_eq(orig->struct_size,
                      offsetof(struct aur_transport_ops, set_protocol));
    ck_assert_ptr_nonnull(orig->set_protocol);
    ck_assert_ptr_nonnull(orig->cancel);
    ck_assert_ptr_nonnull(orig->reopen);
    /* ... and the host's copy does not. */
    ck_assert_ptr_nonnull(p.ops.t.close);
    ck_assert_ptr_null(p.ops.t.set_protocol);
    ck_assert_ptr_null(p.ops.t.cancel);
    ck_assert_ptr_null(p.ops.t.reopen);
    ck_assert(!AUR_HAS(&p.ops.t, set_protocol));
    aur__plugin_release(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* init, fini and release                                             */
/* ------------------------------------------------------------------ */

static struct aur_cfg trace_cfg(const char *label)
{
    struct aur_cfg c = {.n = 2,
                        .k = {"trace", "label"},
                        .v = {trace_path, label}};
    return c;
}

START_TEST(test_init_then_release_calls_fini_keeps_loaded)
{
    const char *path = fx_path("fx-init-records-a");
    struct aur_cfg cfg = trace_cfg("solo");
    struct aur_self self = {.tag = "tag-a"};
    struct aur__plugin p;
    struct aur_error err;

    ck_assert_int_eq(aur__plugin_open(path, &p, &err), AUR_OK);
    ck_assert_int_eq(aur__plugin_init(&p, &H, &self, &cfg, &err),
                     AUR_OK);
    ck_assert(p.inited);
    ck_assert_ptr_nonnull(p.state);
    ck_assert_ptr_eq(p.self, &self);
    ck_assert_str_eq(log_text(), "2 [tag-a] init solo\n");
    /* A second init is refused, not run. */
    ck_assert_int_eq(aur__plugin_init(&p, &H, &self, &cfg, &err),
                     AUR_E_STATE);
    aur__plugin_release(&p);
    trace_is("init solo\nfini solo\n");
    ck_assert(is_zero(&p, sizeof p));
    /* Never dlclose'd after a successful init. */
    ck_assert(is_loaded(path));
}
END_TEST

START_TEST(test_init_fails)
{
    const char *path = fx_path("fx-init-fails");
    struct aur__plugin p;
    struct aur_error err;

    ck_assert_int_eq(aur__plugin_open(path, &p, &err), AUR_OK);
    ck_assert_int_eq(aur__plugin_init(&p, &H, NULL, NULL, &err),
                     AUR_E_PLUGIN);
    ck_assert_int_eq(err.code, AUR_E_PLUGIN);
    ck_assert_int_eq(err.detail, AUR_E_CONFIG);
    ck_assert_str_eq(err.msg,
                     "fx-init-fails: init failed: fixture refuses key "
                     "answer=42");
    ck_assert(!p.inited);
    /* fini aborts if called; release must dlclose instead. */
    aur__plugin_release(&p);
    ck_assert(!is_loaded(path));
}
END_TEST

START_TEST(test_release_zeroed_is_noop)
{
    struct aur__plugin p;
    memset(&p, 0, sizeof p);
    aur__plugin_release(&p);
    aur__plugin_release(NULL);
    ck_assert(is_zero(&p, sizeof p));
}
END_TEST

/* ------------------------------------------------------------------ */
/* The deployed set                                                   */
/* ------------------------------------------------------------------ */

struct load_ud {
    struct aur_self selves[4];
    struct aur_cfg cfgs[4];
    const char *names[4];
    size_t nself, nsection;
};

static struct aur_self *ud_make_self(void *ud, const char *name)
{
    struct load_ud *u = ud;
    struct aur_self *s;
    ck_assert_uint_lt(u->nself, 4);
    s = &u->selves[u->nself++];
    snprintf(s->tag, sizeof s->tag, "self:%s", name);
    return s;
}

static const struct aur_cfg *ud_section(void *ud, const char *name)
{
    struct load_ud *u = ud;
    struct aur_cfg *c;
    ck_assert_uint_lt(u->nsection, 4);
    u->names[u->nsection] = name;
    c = &u->cfgs[u->nsection++];
    *c = trace_cfg(strcmp(name, "fx-init-records-a") == 0 ? "A" : "B");
    return c;
}

static int load(char *const *names, size_t n, struct load_ud *ud,
                struct aur__plugin_set *set, struct aur_error *err)
{
    memset(ud, 0, sizeof *ud);
    set->v = (void *)1; /* must be reset on failure */
    set->n = 99;
    aur_error_clear(err);
    return aur__plugins_load(FX_DIR, names, n, &H, ud_make_self, ud,
                             ud_section, set, err);
}

START_TEST(test_load_order_and_reverse_fini)
{
    char *names[] = {"fx-init-records-a", "fx-init-records-b"};
    struct aur__plugin_set set;
    struct load_ud ud;
    struct aur_error err;

    ck_assert_int_eq(load(names, 2, &ud, &set, &err), AUR_OK);
    ck_assert_uint_eq(set.n, 2);
    ck_assert_str_eq(set.v[0].name, "fx-init-records-a");
    ck_assert_str_eq(set.v[1].name, "fx-init-records-b");
    ck_assert(set.v[0].inited && set.v[1].inited);
    /* Each instance got its own self and its own section. */
    ck_assert_ptr_eq(set.v[0].self, &ud.selves[0]);
    ck_assert_ptr_eq(set.v[1].self, &ud.selves[1]);
    ck_assert_str_eq(ud.names[0], "fx-init-records-a");
    ck_assert_str_eq(ud.names[1], "fx-init-records-b");
    ck_assert_str_eq(log_text(), "2 [self:fx-init-records-a] init A\n"
                             "2 [self:fx-init-records-b] init B\n");
    aur__plugins_release(&set);
    ck_assert_ptr_null(set.v);
    ck_assert_uint_eq(set.n, 0);
    trace_is("init A\ninit B\nfini B\nfini A\n");
}
END_TEST

START_TEST(test_load_empty)
{
    struct aur__plugin_set set;
    struct load_ud ud;
    struct aur_error err;
    ck_assert_int_eq(load(NULL, 0, &ud, &set, &err), AUR_OK);
    ck_assert_ptr_null(set.v);
    ck_assert_uint_eq(set.n, 0);
    aur__plugins_release(&set);
}
END_TEST

static void assert_load_fails(char *const *names, size_t n,
                              const char *substr)
{
    struct aur__plugin_set set;
    struct load_ud ud;
    struct aur_error err;

    ck_assert_int_eq(load(names, n, &ud, &set, &err), AUR_E_PLUGIN);
    ck_assert_int_eq(err.code, AUR_E_PLUGIN);
    ck_assert_msg(strstr(err.msg, substr) != NULL, "want \"%s\", got \"%s\"",
                  substr, err.msg);
    ck_assert_ptr_null(set.v);
    ck_assert_uint_eq(set.n, 0);
}

START_TEST(test_load_duplicate_name)
{
    char *names[] = {"dup_a", "dup_b"};
    char want[1200];
    snprintf(want, sizeof want, "duplicate plugin name dup (%s/dup_a.so, "
                                "%s/dup_b.so)",
             FX_DIR, FX_DIR);
    assert_load_fails(names, 2, want);
    ck_assert(!is_loaded(fx_path("dup_a")));
    ck_assert(!is_loaded(fx_path("dup_b")));
}
END_TEST

START_TEST(test_load_name_mismatch)
{
    char *names[] = {"fx-init-records-a", "good_transport"};
    assert_load_fails(names, 2,
                      "file good_transport.so declares name good-transport");
    /* Nothing was initialised: validation of the whole set comes first. */
    trace_is("");
    ck_assert(!is_loaded(fx_path("fx-init-records-a")));
}
END_TEST

START_TEST(test_load_bad_file_names)
{
    static char *bad[] = {"../fixture-plugins/dup_a", "a/b", "", "..", NULL};
    for (size_t i = 0; i < AUR__ARRAY_LEN(bad); i++) {
        char *names[] = {"fx-init-records-a", bad[i]};
        assert_load_fails(names, 2, "bad plugin name");
    }
}
END_TEST

START_TEST(test_load_missing_file_releases_opened)
{
    char *names[] = {"fx-init-records-a", "nope"};
    assert_load_fails(names, 2, "/nope.so: cannot load: ");
    trace_is("");
    ck_assert(!is_loaded(fx_path("fx-init-records-a")));
}
END_TEST

START_TEST(test_load_init_failure_releases_reverse)
{
    char *names[] = {"fx-init-records-a", "fx-init-records-b",
                     "fx-init-fails"};
    assert_load_fails(names, 3,
                      "fx-init-fails: init failed: fixture refuses key");
    trace_is("init A\ninit B\nfini B\nfini A\n");
    /* The failed one is unloaded; the inited ones stay resident. */
    ck_assert(!is_loaded(fx_path("fx-init-fails")));
    ck_assert(is_loaded(fx_path("fx-init-records-a")));
    ck_assert(is_loaded(fx_path("fx-init-records-b")));
}
END_TEST

START_TEST(test_load_init_failure_first)
{
    char *names[] = {"fx-init-fails", "fx-init-records-a"};
    assert_load_fails(names, 2, "fx-init-fails: init failed: ");
    trace_is("");
    ck_assert(!is_loaded(fx_path("fx-init-records-a")));
}
END_TEST

/* ------------------------------------------------------------------ */
/* describe                                                           */
/* ------------------------------------------------------------------ */

static const char *jstr(struct json_object *o, const char *key)
{
    struct json_object *v;
    ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
    return json_object_to_json_string_ext(
        v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

START_TEST(test_describe_transport)
{
    struct aur__plugin p;
    struct aur_error err;
    struct json_object *o;
    char want[600];

    ck_assert_int_eq(aur__plugin_open(fx_path("good_transport"), &p, &err),
                     AUR_OK);
    o = aur__plugin_describe(&p);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(jstr(o, "name"), "\"good-transport\"");
    ck_assert_str_eq(jstr(o, "version"), "\"1.2.3\"");
    ck_assert_str_eq(jstr(o, "summary"),
                     "\"check_abi fixture: a transport that never "
                     "connects\"");
    ck_assert_str_eq(jstr(o, "kind"), "\"transport\"");
    /* AUR_DESC_HEADER stamps the ABI the fixture was built against. */
    ck_assert_str_eq(jstr(o, "abi"),
                     "{\"major\":1,\"minor\":" ABI_STR(AUR_ABI_MINOR) "}");
    snprintf(want, sizeof want, "%zu", sizeof(struct aur_plugin_desc));
    ck_assert_str_eq(jstr(o, "struct_size"), want);
    snprintf(want, sizeof want, "\"%s\"", fx_path("good_transport"));
    ck_assert_str_eq(jstr(o, "path"), want);
    ck_assert_str_eq(jstr(o, "caps"), "[\"server_push\",\"child_process\"]");
    ck_assert_str_eq(jstr(o, "hooks"), "[\"open\",\"send\",\"close\"]");
    ck_assert(!json_object_object_get_ex(o, "cap_key", NULL));
    json_object_put(o);
    aur__plugin_release(&p);
    ck_assert_ptr_null(aur__plugin_describe(&p));
}
END_TEST

START_TEST(test_describe_extension)
{
    struct aur__plugin p;
    struct aur_error err;
    struct json_object *o;

    ck_assert_int_eq(aur__plugin_open(fx_path("good_extension"), &p, &err),
                     AUR_OK);
    o = aur__plugin_describe(&p);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(jstr(o, "kind"), "\"extension\"");
    ck_assert_str_eq(jstr(o, "summary"), "null");
    ck_assert_str_eq(jstr(o, "cap_key"), "\"org.example/fixture\"");
    ck_assert_str_eq(jstr(o, "methods"),
                     "[\"notifications/fixture/ping\","
                     "\"notifications/fixture/pong\"]");
    ck_assert_str_eq(jstr(o, "hooks"), "[\"declare_caps\",\"on_notify\"]");
    ck_assert(!json_object_object_get_ex(o, "caps", NULL));
    json_object_put(o);
    aur__plugin_release(&p);
}
END_TEST

START_TEST(test_describe_longer_struct)
{
    struct aur__plugin p;
    struct aur_error err;
    struct json_object *o;
    char want[32];

    ck_assert_int_eq(aur__plugin_open(fx_path("longer_struct"), &p, &err),
                     AUR_OK);
    o = aur__plugin_describe(&p);
    snprintf(want, sizeof want, "%u", (unsigned)p.desc.struct_size);
    ck_assert_str_eq(jstr(o, "struct_size"), want);
    ck_assert_str_eq(jstr(o, "caps"), "[]");
    json_object_put(o);
    aur__plugin_release(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Exactly one exported symbol per plugin                             */
/* ------------------------------------------------------------------ */

/* Fixtures that export another name on purpose. */
static const char *const export_exempt[] = {"not_a_plugin.so"};

/* A plugin's backend, loaded by the plugin itself (transport-http's
 * libcurl half): it exports its one entry and never the plugin entry,
 * so the host cannot load it as a plugin by mistake. */
static const char *const backends[][2] = {
    {"transport-http-libcurl.so", "aur_http_backend_entry"},
    {"journal-postgresql.so", "aur_journal_pg_ops"},
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Check every .so in dir; returns how many were checked. */
static int check_exports_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int checked = 0;

    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char cmd[1200], line[512], syms[2048] = "";
        int nsyms = 0, entry = 0;
        bool exempt = false;
        const char *want = AUR_ENTRY_SYMBOL;
        FILE *f;

        if (!ends_with(de->d_name, ".so"))
            continue;
        for (size_t i = 0; i < AUR__ARRAY_LEN(export_exempt); i++)
            exempt |= strcmp(de->d_name, export_exempt[i]) == 0;
        if (exempt)
            continue;
        for (size_t i = 0; i < AUR__ARRAY_LEN(backends); i++)
            if (strcmp(de->d_name, backends[i][0]) == 0)
                want = backends[i][1];
        snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s/%s' 2>&1", dir,
                 de->d_name);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof line, f)) {
            char addr[64], type[8], name[256];
            if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
                continue;
            nsyms++;
            entry += strcmp(name, want) == 0 && strcmp(type, "T") == 0;
            if (strlen(syms) + strlen(name) + 2 < sizeof syms) {
                strcat(syms, " ");
                strcat(syms, name);
            }
        }
        ck_assert_int_eq(pclose(f), 0);
        ck_assert_msg(nsyms == 1 && entry == 1,
                      "%s/%s exports:%s (want only %s)", dir, de->d_name,
                      syms, want);
        checked++;
    }
    closedir(d);
    return checked;
}

START_TEST(test_one_exported_symbol)
{
    int fixtures = check_exports_in(FX_DIR);
    /* In-tree plugins too, whichever of them this build has made, and
     * the core's own module (the PostgreSQL journal backend). */
    check_exports_in(AUR_TEST_BIN_DIR "/plugins");
    ck_assert_int_eq(check_exports_in(AUR_TEST_BIN_DIR "/lib/aurora-mcp"), 1);
    ck_assert_int_ge(fixtures, 20);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *abi_suite(void)
{
    Suite *s = suite_create("abi");
    TCase *tc;

    tc = tcase_create("reject");
    tcase_add_checked_fixture(tc, setup_scratch, teardown_scratch);
    tcase_add_loop_test(tc, test_reject, 0, (int)AUR__ARRAY_LEN(rejects));
    tcase_add_test(tc, test_empty_path);
    suite_add_tcase(s, tc);

    tc = tcase_create("accept");
    tcase_add_checked_fixture(tc, setup_scratch, teardown_scratch);
    tcase_add_test(tc, test_good_transport);
    tcase_add_test(tc, test_writable_plugin_refused);
    tcase_add_test(tc, test_good_extension);
    tcase_add_test(tc, test_longer_struct);
    tcase_add_test(tc, test_short_ops_tail_reads_null);
    suite_add_tcase(s, tc);

    tc = tcase_create("lifecycle");
    tcase_add_checked_fixture(tc, setup_scratch, teardown_scratch);
    tcase_add_test(tc, test_init_then_release_calls_fini_keeps_loaded);
    tcase_add_test(tc, test_init_fails);
    tcase_add_test(tc, test_release_zeroed_is_noop);
    suite_add_tcase(s, tc);

    tc = tcase_create("plugin_set");
    tcase_add_checked_fixture(tc, setup_scratch, teardown_scratch);
    tcase_add_test(tc, test_load_order_and_reverse_fini);
    tcase_add_test(tc, test_load_empty);
    tcase_add_test(tc, test_load_duplicate_name);
    tcase_add_test(tc, test_load_name_mismatch);
    tcase_add_test(tc, test_load_bad_file_names);
    tcase_add_test(tc, test_load_missing_file_releases_opened);
    tcase_add_test(tc, test_load_init_failure_releases_reverse);
    tcase_add_test(tc, test_load_init_failure_first);
    suite_add_tcase(s, tc);

    tc = tcase_create("describe");
    tcase_add_test(tc, test_describe_transport);
    tcase_add_test(tc, test_describe_extension);
    tcase_add_test(tc, test_describe_longer_struct);
    suite_add_tcase(s, tc);

    tc = tcase_create("exports");
    /* One nm process per plugin (some 30): far past Check's default 4 s
     * on a loaded CI machine under ASan. */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_one_exported_symbol);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return aur_check_main(abi_suite(), NULL); }
