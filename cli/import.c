/*
 * import.c - `aurora-mcp import FILE [-o DIR]`: the MCP server list other
 * hosts keep as JSON ("mcpServers" of Claude Desktop, Claude Code, Cursor,
 * Windsurf, Cline; "servers" of VS Code's mcp.json, or "mcp"."servers" of
 * its settings.json) into DIR/apps.d/<name>.ini, plus a host.ini when DIR
 * has none.
 *
 * Nothing secret is written: an "env" entry becomes a whitelisted name
 * (its value is never read into a file or printed) and an Authorization
 * bearer header becomes auth_env; the summary on stdout lists the
 * variables to export.  What the ini files cannot say is listed, never
 * dropped in silence: a server that cannot work without it is not
 * written; a setting it can do without is written without it and listed.
 * All files are checked before the first is written, and none is ever
 * overwritten.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE_BYTES (4 * 1024 * 1024)
#define MAX_SERVERS 4096

struct imp {
    const char *file;       /* FILE, for messages */
    struct json_object *out; /* the summary (owned) */
    struct json_object *export, *skipped, *notes, *written;
};

static void note(struct json_object *list, const char *key, const char *who,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void note(struct json_object *list, const char *key, const char *who,
                 const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    struct json_object *o = json_object_new_object();
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_object_object_add(o, key, json_object_new_string(who));
    json_object_object_add(o, "why", json_object_new_string(buf));
    json_object_array_add(list, o);
}

/* A value an ini line keeps exactly: no control bytes, no blank at either
 * end (trimmed), no ';' after a blank (a comment), not empty. */
static const char *ini_problem(const char *v)
{
    size_t n = strlen(v);
    if (n == 0)
        return "is empty";
    if (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t')
        return "starts or ends with a blank";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f)
            return "holds a control character";
        if (c == ';' && i > 0 && (v[i - 1] == ' ' || v[i - 1] == '\t'))
            return "holds \" ;\", which starts a comment in an ini file";
    }
    return NULL;
}

/* name -> a package segment [a-z][a-z0-9_-]*, at most 48 bytes. */
static void segment_of(const char *name, char *seg, size_t size)
{
    size_t o = 0;
    for (const char *p = name; *p && o + 1 < size && o < 48; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-'))
            c = '-';
        if (c == '-' && o > 0 && seg[o - 1] == '-')
            continue;
        if (o == 0 && !(c >= 'a' && c <= 'z')) {
            if (c == '-')
                continue;
            seg[o++] = 'x';
        }
        seg[o++] = c;
    }
    while (o > 0 && seg[o - 1] == '-')
        o--;
    if (o == 0)
        o = (size_t)snprintf(seg, size, "server");
    seg[o] = '\0';
}

/* One server as ini text into *text (malloc'd), or NULL when it cannot
 * be written (listed in skipped).  pkg: the App's package. */
static char *server_ini(struct imp *m, const char *name, const char *pkg,
                        struct json_object *spec)
{
    struct json_object *v, *cmd = NULL, *url = NULL, *type = NULL;
    const char *t, *why = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f;

    if (!json_object_is_type(spec, json_type_object)) {
        note(m->skipped, "server", name, "not a JSON object");
        return NULL;
    }
    json_object_object_get_ex(spec, "command", &cmd);
    json_object_object_get_ex(spec, "url", &url);
    if (!json_object_object_get_ex(spec, "type", &type))
        json_object_object_get_ex(spec, "transport", &type);
    t = type ? json_object_get_string(type) : cmd ? "stdio" : "http";
    if (strcmp(t, "sse") == 0) {
        note(m->skipped, "server", name,
             "type \"sse\" is the old HTTP+SSE transport; aurora-mcp speaks "
             "Streamable HTTP (if the server has it too, set \"type\": "
             "\"http\" and its /mcp URL)");
        return NULL;
    }
    bool stdio = strcmp(t, "stdio") == 0;
    if (!stdio && strcmp(t, "http") && strcmp(t, "streamable-http") &&
        strcmp(t, "streamableHttp")) {
        note(m->skipped, "server", name, "unknown type \"%.64s\"", t);
        return NULL;
    }
    if (stdio ? !json_object_is_type(cmd, json_type_string)
              : !json_object_is_type(url, json_type_string)) {
        note(m->skipped, "server", name, "no %s string",
             stdio ? "\"command\"" : "\"url\"");
        return NULL;
    }
    if (!(f = open_memstream(&text, &len)))
        return NULL;
    /* Names and paths go into a comment only when they cannot break the
     * line (a newline in a server's name would start a new ini line). */
    fprintf(f, "; imported from %s, server \"%s\"\n[app]\npackage = %s\n",
            ini_problem(m->file) ? "a file" : m->file,
            ini_problem(name) ? "(name with control characters)" : name, pkg);
    v = NULL;
    json_object_object_get_ex(spec, "disabled", &v);
    fprintf(f, "enabled = %s\ntransport = %s\ntimeout_seconds = 30\n",
            json_object_get_boolean(v) ? "false" : "true",
            stdio ? "stdio" : "streamable_http");
    if (stdio) {
        const char *c = json_object_get_string(cmd);
        if ((why = ini_problem(c))) {
            note(m->skipped, "server", name, "its command %s", why);
            goto fail;
        }
        if (strchr(c, '/') && c[0] != '/')
            note(m->notes, "app", pkg,
                 "command %s is relative: it now means a path under the "
                 "config directory",
                 c);
        fprintf(f, "[stdio]\ncommand = %s\n", c);
        if (json_object_object_get_ex(spec, "args", &v)) {
            size_t n = json_object_is_type(v, json_type_array)
                           ? json_object_array_length(v)
                           : 0;
            if (!json_object_is_type(v, json_type_array)) {
                note(m->skipped, "server", name, "\"args\" is not an array");
                goto fail;
            }
            for (size_t i = 0; i < n; i++) {
                struct json_object *a = json_object_array_get_idx(v, i);
                const char *s = json_object_get_string(a);
                if (!json_object_is_type(a, json_type_string) ||
                    (why = ini_problem(s))) {
                    note(m->skipped, "server", name, "argument %zu %s", i + 1,
                         json_object_is_type(a, json_type_string)
                             ? why
                             : "is not a string");
                    goto fail;
                }
                fprintf(f, "arg = %s\n", s);
            }
        }
        fputs("working_dir = .\n", f);
        if (json_object_object_get_ex(spec, "cwd", &v))
            note(m->notes, "app", pkg,
                 "\"cwd\" is not carried over: the server starts in the "
                 "config directory (set working_dir to a directory inside "
                 "it)");
        if (json_object_object_get_ex(spec, "env", &v) &&
            json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, k, val) {
                const char *refused = aur_env_refused(k);
                struct json_object *e;
                if (refused) {
                    note(m->notes, "app", pkg, "env %.64s left out: %s", k,
                         refused);
                    continue;
                }
                fprintf(f, "env = %s\n", k);
                e = json_object_new_object();
                json_object_object_add(e, "app", json_object_new_string(pkg));
                json_object_object_add(e, "variable",
                                       json_object_new_string(k));
                /* The value is a secret or a reference: say where it is,
                 * never what. */
                json_object_object_add(
                    e, "set_from",
                    json_object_new_string(
                        json_object_is_type(val, json_type_string) &&
                                strncmp(json_object_get_string(val), "${", 2) ==
                                    0
                            ? json_object_get_string(val)
                            : "the value in the imported file"));
                json_object_array_add(m->export, e);
            }
        }
        if (json_object_object_get_ex(spec, "envFile", &v))
            note(m->notes, "app", pkg,
                 "\"envFile\" is not read: export its variables and list "
                 "them with env =");
    } else {
        const char *u = json_object_get_string(url);
        if (strncmp(u, "https://", 8) != 0 || (why = ini_problem(u))) {
            note(m->skipped, "server", name,
                 "its url %s", why ? why : "is not https://");
            goto fail;
        }
        fprintf(f, "[http]\nurl = %s\n", u);
        if (json_object_object_get_ex(spec, "headers", &v) &&
            json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, k, val) {
                const char *hv = json_object_get_string(val);
                if (strcasecmp(k, "Authorization") == 0 &&
                    strncasecmp(hv, "Bearer ", 7) == 0) {
                    char var[80], seg[64];
                    struct json_object *e = json_object_new_object();
                    segment_of(name, seg, sizeof seg);
                    for (char *p = seg; *p; p++)
                        *p = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z'
                                                          ? *p - 'a' + 'A'
                                                          : *p);
                    snprintf(var, sizeof var, "%s_TOKEN", seg);
                    fprintf(f, "auth_env = %s\n", var);
                    json_object_object_add(e, "app",
                                           json_object_new_string(pkg));
                    json_object_object_add(e, "variable",
                                           json_object_new_string(var));
                    json_object_object_add(
                        e, "set_from",
                        json_object_new_string("the bearer token of its "
                                               "Authorization header"));
                    json_object_array_add(m->export, e);
                } else {
                    note(m->notes, "app", pkg,
                         "header %.64s left out: only an Authorization "
                         "bearer token can be sent (auth_env)",
                         k);
                }
            }
        }
    }
    json_object_object_foreach(spec, key, val) {
        static const char *const known[] = {
            "command", "args", "env",  "cwd",     "url",      "headers",
            "type",    "transport", "disabled", "envFile"};
        bool k = false;
        (void)val;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            k = k || strcmp(key, known[i]) == 0;
        if (!k)
            note(m->notes, "app", pkg, "\"%.64s\" has no equivalent; ignored",
                 key);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
fail:
    fclose(f);
    free(text);
    return NULL;
}

/* seg is the file name of one of paths[0..k) ("<dir>/apps.d/<seg>.ini"). */
static bool taken(char **paths, size_t k, const char *seg)
{
    size_t n = strlen(seg);
    for (size_t i = 0; i < k; i++) {
        const char *f = strrchr(paths[i], '/') + 1;
        if (strncmp(f, seg, n) == 0 && strcmp(f + n, ".ini") == 0)
            return true;
    }
    return false;
}

static struct json_object *servers_of(struct json_object *top)
{
    struct json_object *v, *mcp;
    if (json_object_object_get_ex(top, "mcpServers", &v) ||
        json_object_object_get_ex(top, "servers", &v) ||
        (json_object_object_get_ex(top, "mcp", &mcp) &&
         json_object_object_get_ex(mcp, "servers", &v)))
        return json_object_is_type(v, json_type_object) ? v : NULL;
    return NULL;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    fputs("aurora-mcp: import: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

static char *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char *buf = NULL;
    ssize_t n;

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size <= MAX_FILE_BYTES && (buf = malloc((size_t)st.st_size + 1))) {
        n = read(fd, buf, (size_t)st.st_size);
        if (n != st.st_size) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
            *len = (size_t)n;
        }
    } else {
        errno = EFBIG;
    }
    close(fd);
    return buf;
}

static int write_new(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    size_t n = strlen(text);
    if (fd < 0)
        return -1;
    if (write(fd, text, n) != (ssize_t)n) {
        close(fd);
        unlink(path);
        return -1;
    }
    return close(fd);
}

int cli_import(const char *file, const char *dir)
{
    struct imp m = {.file = file};
    struct json_object *top = NULL, *servers;
    struct aur_error err;
    char *buf, path[4096], seg[72], pkg[88];
    char **texts = NULL, **paths = NULL;
    size_t len = 0, n = 0, k = 0;
    int rc = EXIT_OK;

    if (!(buf = slurp(file, &len)))
        return fail("cannot read %s: %s", file,
                    errno == EFBIG ? "not a file of at most 4 MiB"
                                   : strerror(errno));
    if (aur_json_parse(buf, len, &top, &err) != AUR_OK) {
        free(buf);
        return fail("%s: %s", file, err.msg);
    }
    free(buf);
    if (!(servers = servers_of(top))) {
        json_object_put(top);
        return fail("%s: no \"mcpServers\", \"servers\" or \"mcp\".\"servers\" "
                    "object",
                    file);
    }
    n = (size_t)json_object_object_length(servers);
    if (n > MAX_SERVERS) {
        json_object_put(top);
        return fail("%s: more than %d servers", file, MAX_SERVERS);
    }
    m.out = json_object_new_object();
    m.written = json_object_new_array();
    m.export = json_object_new_array();
    m.skipped = json_object_new_array();
    m.notes = json_object_new_array();
    texts = calloc(n + 1, sizeof *texts);
    paths = calloc(n + 1, sizeof *paths);
    if (!texts || !paths) {
        rc = fail("out of memory");
        goto out;
    }
    snprintf(path, sizeof path, "%s/apps.d", dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        rc = fail("cannot create %s: %s", dir, strerror(errno));
        goto out;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        rc = fail("cannot create %s: %s", path, strerror(errno));
        goto out;
    }
    /* Everything is decided, and every target checked, before the first
     * file is written. */
    json_object_object_foreach(servers, name, spec) {
        segment_of(name, seg, sizeof seg);
        /* Two names may clean up to the same one: number the later. */
        size_t base = strlen(seg);
        for (unsigned dup = 2; taken(paths, k, seg) && dup < 10000; dup++)
            snprintf(seg + base, sizeof seg - base, "-%u", dup);
        snprintf(pkg, sizeof pkg, "local.%s", seg);
        char *text = server_ini(&m, name, pkg, spec);
        if (!text)
            continue;
        if (asprintf(&paths[k], "%s/apps.d/%s.ini", dir, seg) < 0) {
            free(text);
            rc = EXIT_RUNTIME;
            goto out;
        }
        texts[k++] = text;
        if (access(paths[k - 1], F_OK) == 0) {
            rc = fail("%s exists; nothing was written (remove it, or "
                      "import into another directory with -o)",
                      paths[k - 1]);
            goto out;
        }
    }
    snprintf(path, sizeof path, "%s/host.ini", dir);
    bool host = access(path, F_OK) != 0;
    if (host && write_new(path, "; written by aurora-mcp import\n[host]\n"
                                "plugins = transport-stdio transport-http\n"
                                "journal = data/world.sqlite3\n"
                                "[mcp]\nenabled = true\n") != 0) {
        rc = fail("cannot write %s: %s", path, strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < k; i++) {
        if (write_new(paths[i], texts[i]) != 0) {
            rc = fail("cannot write %s: %s; nothing was written", paths[i],
                      strerror(errno));
            /* All or nothing: what this run wrote goes again. */
            while (i-- > 0)
                unlink(paths[i]);
            if (host)
                unlink(path);
            goto out;
        }
        json_object_array_add(m.written,
                              json_object_new_string(paths[i] + strlen(dir) + 1));
    }
    json_object_object_add(m.out, "host_ini_written",
                           json_object_new_boolean(host));
    json_object_object_add(m.out, "written", json_object_get(m.written));
    json_object_object_add(m.out, "export", json_object_get(m.export));
    json_object_object_add(m.out, "not_imported", json_object_get(m.skipped));
    json_object_object_add(m.out, "notes", json_object_get(m.notes));
    cli_print_json(m.out);
    if (json_object_array_length(m.skipped))
        rc = EXIT_RUNTIME; /* something is missing: say so by the status too */
out:
    for (size_t i = 0; i < n; i++) {
        free(texts ? texts[i] : NULL);
        free(paths ? paths[i] : NULL);
    }
    free(texts);
    free(paths);
    json_object_put(m.written);
    json_object_put(m.export);
    json_object_put(m.skipped);
    json_object_put(m.notes);
    json_object_put(m.out);
    json_object_put(top);
    return rc;
}
