/*
 * config_ini.c - one ini file into a struct aur__ini, through inih.
 *
 * Debian's inih 55 is built without INI_HANDLER_LINENO, with
 * INI_ALLOW_MULTILINE (an indented line continues the previous key),
 * a 200-byte stack line buffer and 50-byte section names.  None of that
 * suits us, and its switches are process globals we must not flip, so we
 * feed inih through ini_parse_stream with our own reader, which:
 *   - counts lines (the handler reads the current line from it);
 *   - strips leading blanks, so no line is ever a continuation line;
 *   - parses [section] headers itself (full length, blank-trimmed) and
 *     hands inih a short stand-in header;
 *   - hands a line too long for inih's buffer over as a marker key, and
 *     the handler then splits the stashed line itself with inih's rules
 *     (first '=' or ':', ';' after a blank starts a comment);
 *   - rejects control characters and invalid UTF-8.
 * inih still does the key = value split and the inline comments.
 */
#include "aur_setup.h"

#include <fcntl.h>
#include <ini.h>
#include <sys/stat.h>
#include <unistd.h>

#include <aurora/aur_host.h>

#include "config_int.h"
#include "grow.h"
#include "names.h"

#define MAX_FILE_BYTES (1024 * 1024)
#define LONG_MARK "\x01"

struct rd {
    struct aur__cfg_ctx *ctx;
    struct aur__ini *ini;
    const char *buf;
    size_t len, pos;
    int line;
    const char *longline; /* pending over-long key line, not terminated */
    size_t longlen;
    int rc; /* our first error, AUR_OK if none */
    int err_line;
};

static int rd_fail(struct rd *r, const char *key, const char *what)
{
    if (r->rc == AUR_OK) {
        r->rc = aur__cfg_fail(r->ctx, r->ini->file, r->line, key, "%s",
                              what);
        r->err_line = r->line;
    }
    return r->rc;
}

static bool blank(int c) { return c == ' ' || c == '\t'; }

/* *s, *n without leading blanks and trailing blanks or CR. */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && blank((unsigned char)**s))
        ++*s, --*n;
    while (*n > 0 && (blank((unsigned char)(*s)[*n - 1]) ||
                      (*s)[*n - 1] == '\r'))
        --*n;
}

static char *dup_trimmed(const char *s, size_t n)
{
    trim(&s, &n);
    return strndup(s, n);
}

static int add_section(struct rd *r, const char *name, size_t n)
{
    struct aur__ini *ini = r->ini;
    struct aur__ini_sec *secs, *sec;
    char *nm = dup_trimmed(name, n);
    size_t i;

    if (!nm)
        return r->rc = aur__cfg_nomem(r->ctx, ini->file);
    if (*nm == '\0') {
        free(nm);
        return rd_fail(r, "[]", "empty section name");
    }
    for (i = 0; i < ini->nsecs; i++) {
        if (strcmp(ini->secs[i].cfg.section, nm) == 0) {
            char key[64];
            snprintf(key, sizeof key, "[%.60s]", nm);
            r->rc = aur__cfg_fail(r->ctx, ini->file, r->line, key,
                                  "section repeated (first on line %d)",
                                  ini->secs[i].line);
            r->err_line = r->line;
            free(nm);
            return r->rc;
        }
    }
    secs = aur__grow(ini->secs, &ini->cap, ini->nsecs + 1, sizeof *secs, 8,
                     SIZE_MAX);
    if (!secs) {
        free(nm);
        return r->rc = aur__cfg_nomem(r->ctx, ini->file);
    }
    ini->secs = secs;
    sec = &secs[ini->nsecs++];
    memset(sec, 0, sizeof *sec);
    sec->cfg.file = ini->file;
    sec->cfg.section = nm;
    sec->line = r->line;
    sec->cfg.line = r->line;
    return AUR_OK;
}

static int add_kv(struct rd *r, const char *key, size_t klen,
                  const char *val, size_t vlen)
{
    if (klen == 0)
        return rd_fail(r, NULL, "empty key name");
    if (r->ini->nsecs == 0) {
        char name[64];
        trim(&key, &klen);
        snprintf(name, sizeof name, "%.*s", (int)(klen < 63 ? klen : 63), key);
        return rd_fail(r, name, "key outside any [section]");
    }
    trim(&key, &klen);
    trim(&val, &vlen);
    if (aur__ini_add(&r->ini->secs[r->ini->nsecs - 1], key, klen, val, vlen,
                     r->line) != AUR_OK)
        return r->rc = aur__cfg_nomem(r->ctx, r->ini->file);
    return AUR_OK;
}

int aur__ini_add(struct aur__ini_sec *sec, const char *key, size_t klen,
                 const char *value, size_t vlen, int line)
{
    struct aur__kv *kv = aur__grow(sec->cfg.kv, &sec->cap, sec->cfg.n + 1,
                                   sizeof *kv, 8, SIZE_MAX);

    if (!kv)
        return AUR_E_NOMEM;
    sec->cfg.kv = kv;
    kv = &kv[sec->cfg.n];
    kv->key = strndup(key, klen);
    kv->value = strndup(value, vlen);
    kv->line = line;
    if (!kv->key || !kv->value) {
        free(kv->key);
        free(kv->value);
        return AUR_E_NOMEM;
    }
    sec->cfg.n++;
    return AUR_OK;
}

/* inih's rule: ';' starts an inline comment only after a blank. */
static size_t comment_at(const char *s, size_t n, bool was_blank)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (was_blank && s[i] == ';')
            return i;
        was_blank = blank((unsigned char)s[i]);
    }
    return n;
}

/* Split an over-long "key = value" line the way inih would. */
static int split_long(struct rd *r)
{
    const char *s = r->longline;
    size_t n = r->longlen, cut = comment_at(s, n, false), i;

    for (i = 0; i < cut; i++)
        if (s[i] == '=' || s[i] == ':')
            break;
    if (i == cut)
        return rd_fail(r, NULL, "expected key = value");
    s += i + 1;
    n -= i + 1;
    return add_kv(r, r->longline, i, s, comment_at(s, n, false));
}

static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
    struct rd *r = user;

    (void)section; /* ours is exact; inih's is a stand-in */
    if (r->rc != AUR_OK)
        return 0;
    if (strcmp(name, LONG_MARK) == 0 && r->longline)
        return split_long(r) == AUR_OK;
    return add_kv(r, name, strlen(name), value, strlen(value)) == AUR_OK;
}

static bool control_free(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 && c != '\t' && !(c == '\r' && i + 1 == n))
            return false;
    }
    return true;
}

/*
 * The key of a raw "key = value" line (inih's split: the first '=' or
 * ':'), blank-trimmed, into out; "" when the line is a comment or a
 * header, has no separator, or its key is not clean text itself.  For
 * errors found before the line is split: a control character or bad
 * UTF-8 in a value still names its key.
 */
static void raw_key(const char *s, size_t n, char *out, size_t outn)
{
    size_t i, k;

    *out = '\0';
    while (n > 0 && blank((unsigned char)*s))
        s++, n--;
    if (n == 0 || *s == ';' || *s == '#' || *s == '[')
        return;
    for (i = 0; i < n && s[i] != '=' && s[i] != ':'; i++)
        ;
    if (i == n)
        return;
    for (k = i; k > 0 && blank((unsigned char)s[k - 1]); k--)
        ;
    if (k == 0 || !control_free(s, k) || aur__utf8_len(s, k) < 0)
        return;
    snprintf(out, outn, "%.*s", (int)k, s);
}

static char *reader(char *str, int num, void *stream)
{
    struct rd *r = stream;
    const char *s, *eol;
    char key[64];
    size_t n;

    if (r->rc != AUR_OK || r->pos >= r->len || num < 8)
        return NULL;
    s = r->buf + r->pos;
    eol = memchr(s, '\n', r->len - r->pos);
    n = eol ? (size_t)(eol - s) : r->len - r->pos;
    r->pos += n + (eol ? 1 : 0);
    r->line++;
    r->longline = NULL;
    if (!control_free(s, n)) {
        raw_key(s, n, key, sizeof key);
        rd_fail(r, key, "control character in line");
        return NULL;
    }
    if (aur__utf8_len(s, n) < 0) {
        raw_key(s, n, key, sizeof key);
        rd_fail(r, key, "line is not valid UTF-8");
        return NULL;
    }
    while (n > 0 && blank((unsigned char)*s))
        s++, n--;
    if (n == 0 || *s == ';' || *s == '#' || *s == '\r') {
        strcpy(str, "\n");
    } else if (*s == '[') {
        const char *close = memchr(s, ']', n);
        size_t rest;
        if (!close) {
            rd_fail(r, NULL, "unterminated [section] header");
            return NULL;
        }
        rest = n - (size_t)(close + 1 - s);
        for (eol = close + 1; rest > 0 && (blank(*eol) || *eol == '\r');
             eol++, rest--)
            ;
        if (rest > 0 && *eol != ';' && *eol != '#') {
            char *nm = dup_trimmed(s + 1, (size_t)(close - s - 1));
            snprintf(key, sizeof key, "[%.60s]", nm ? nm : "");
            free(nm);
            rd_fail(r, key, "text after [section] header");
            return NULL;
        }
        if (add_section(r, s + 1, (size_t)(close - s - 1)) != AUR_OK)
            return NULL;
        strcpy(str, "[s]\n");
    } else if (n + 2 <= (size_t)num - 1) {
        memcpy(str, s, n);
        str[n] = '\n';
        str[n + 1] = '\0';
    } else {
        r->longline = s;
        r->longlen = n;
        strcpy(str, LONG_MARK "=\n");
    }
    return str;
}

static int read_file(struct aur__cfg_ctx *ctx, const char *path,
                     const char *rel, bool missing_ok, char **buf,
                     size_t *len)
{
    struct stat st;
    int fd, rc = AUR_OK;
    size_t got = 0;
    char *b = NULL;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && missing_ok)
            return AUR_DECLINE;
        return aur__cfg_fail(ctx, rel, 0, NULL, "cannot open: %s",
                             strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = aur__cfg_fail(ctx, rel, 0, NULL, "not a regular file");
        goto out;
    }
    if (st.st_size > MAX_FILE_BYTES) {
        rc = aur__cfg_fail(ctx, rel, 0, NULL, "larger than %d bytes",
                           MAX_FILE_BYTES);
        goto out;
    }
    b = malloc((size_t)st.st_size + 1);
    if (!b) {
        rc = aur__cfg_nomem(ctx, rel);
        goto out;
    }
    /* Bounded by the size fstat saw: a file growing meanwhile is cut. */
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, b + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = aur__cfg_fail(ctx, rel, 0, NULL, "read failed: %s",
                               strerror(errno));
            goto out;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    b[got] = '\0';
    *buf = b;
    *len = got;
    b = NULL;
out:
    free(b);
    close(fd);
    return rc;
}

int aur__ini_load(struct aur__cfg_ctx *ctx, const char *rel, bool missing_ok,
                  struct aur__ini **out)
{
    struct aur__ini *ini = NULL;
    struct rd r;
    char *path = NULL, *buf = NULL;
    size_t len = 0;
    int rc, prc;

    *out = NULL;
    path = aur__path_join(ctx->dir, rel);
    ini = calloc(1, sizeof *ini);
    if (!path || !ini || !(ini->file = strdup(rel))) {
        rc = aur__cfg_nomem(ctx, rel);
        goto out;
    }
    rc = read_file(ctx, path, rel, missing_ok, &buf, &len);
    if (rc != AUR_OK)
        goto out;

    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.ini = ini;
    r.buf = buf;
    r.len = len;
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        r.pos = 3;
    prc = ini_parse_stream(reader, &r, handler, &r);
    if (prc > 0 && (r.rc == AUR_OK || prc < r.err_line)) {
        rc = aur__cfg_fail(ctx, rel, prc, NULL, "expected key = value");
    } else if (r.rc != AUR_OK) {
        rc = r.rc;
    } else if (prc < 0) {
        rc = aur__cfg_nomem(ctx, rel);
    }
out:
    free(path);
    free(buf);
    if (rc == AUR_OK)
        *out = ini;
    else
        aur__ini_free(ini);
    return rc;
}

void aur__cfg_release(struct aur_cfg *cfg)
{
    size_t i;

    for (i = 0; i < cfg->n; i++) {
        free(cfg->kv[i].key);
        free(cfg->kv[i].value);
    }
    free(cfg->kv);
    free(cfg->section);
    cfg->kv = NULL;
    cfg->section = NULL;
    cfg->n = 0;
}

void aur__ini_free(struct aur__ini *ini)
{
    size_t i;

    if (!ini)
        return;
    for (i = 0; i < ini->nsecs; i++)
        aur__cfg_release(&ini->secs[i].cfg);
    free(ini->secs);
    free(ini->file);
    free(ini);
}

struct aur__ini_sec *aur__ini_find(struct aur__ini *ini, const char *name)
{
    size_t i;

    for (i = 0; ini && i < ini->nsecs; i++)
        if (strcmp(ini->secs[i].cfg.section, name) == 0)
            return &ini->secs[i];
    return NULL;
}

struct aur__kv *aur__sec_kv(const struct aur__ini_sec *sec, const char *key)
{
    size_t i;

    for (i = sec ? sec->cfg.n : 0; i > 0; i--)
        if (strcmp(sec->cfg.kv[i - 1].key, key) == 0)
            return &sec->cfg.kv[i - 1];
    return NULL;
}
