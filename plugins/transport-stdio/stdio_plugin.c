/*
 * stdio_plugin.c - transport-stdio: JSON-RPC over a child's stdin/stdout
 * (docs/protocol.md, Framing; the environment: docs/containment.md).
 *
 * Plugin settings, [transport-stdio] in host.ini (all optional):
 *   max_line_bytes     default 16777216 (1024 .. 1073741824).  A stdout
 *                      line longer than this loses framing: on_closed
 *                      with AUR_E_LIMIT and stdout is no longer read.
 *   stderr_line_bytes  default 4096 (64 .. 1048576).  Longer stderr lines
 *                      are logged cut, with " [truncated]".
 *   term_grace_ms      default 2000 (0 .. 600000).  Shutdown waits this
 *                      long after closing stdin before SIGTERM, and again
 *                      before SIGKILL; both waits end at the close
 *                      deadline, except that SIGTERM always gets 200 ms.
 *   containment        auto (default) | cgroup | process: how an App and
 *                      everything it starts are kept within its
 *                      connection and the host (stdio_contain.c).
 *
 * Endpoint keys (the App's [stdio] section, stdio_config.c, plus the
 *   host's): command (required; PATH lookup with the host's PATH, as
 *   execvp, or a path read against config_dir), arg (repeatable),
 *   working_dir (relative to config_dir), env (repeatable variable names
 *   the child may inherit), package (tags log lines).  timeout_ms is not
 *   used: every call carries its own deadline.
 *
 * The child gets HOME LOGNAME PATH SHELL TERM USER (when set and not
 * starting with "()") plus the whitelisted names that are set; it runs in
 * its own process group, which close() kills as a whole.  Child stderr
 * goes to the host log at info, one line per line, tagged with the
 * package.  Malformed stdout frames and non-objects are dropped and logged
 * by size only.
 *
 * Threads: open/send/close/reopen from any thread, send concurrently
 * (serialised by a write token that still honours each sender's deadline);
 * sink calls come from the child's I/O thread (stdio_io.c).  SIGPIPE's
 * disposition is the embedding program's: send blocks the signal on its
 * own thread unless the process ignores it (lib/aurx/nosigpipe.h).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "aur_perturb.h"

#include "cfg_range.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#define SERIALISE_FLAGS                                                      \
    (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ------------------------------------------------------------------ */
/* init / fini                                                        */
/* ------------------------------------------------------------------ */

/* This plugin's host.ini section, in its errors. */
static const char SEC[] = "transport-stdio";

static int stdio_init(const struct aur_host *host, struct aur_self *self,
                      const struct aur_cfg *cfg, void **state,
                      struct aur_error *err)
{
    struct stdio_state *st;
    int64_t max_line, err_line, grace;
    int rc;

    if (!AUR_HAS(host, json_parse) || !AUR_HAS(host, cfg_fail) ||
        !AUR_HAS(host, cfg_line) || !AUR_HAS(host, cfg_path) ||
        !host->log || !host->now_ms ||
        !host->cfg_int || !host->cfg_str || !host->cfg_count ||
        !host->cfg_str_at)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "transport-stdio needs a host of ABI 1.4 "
                        "(json_parse, cfg_fail)");
    rc = aur__cfg_range(host, cfg, SEC, "max_line_bytes", 16777216, 1024,
                        1073741824, &max_line, err);
    if (rc == AUR_OK)
        rc = aur__cfg_range(host, cfg, SEC, "stderr_line_bytes", 4096, 64,
                            1048576, &err_line, err);
    if (rc == AUR_OK)
        rc = aur__cfg_range(host, cfg, SEC, "term_grace_ms", 2000, 0, 600000,
                            &grace, err);
    if (rc != AUR_OK)
        return rc;
    st = calloc(1, sizeof *st);
    if (!st)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    rc = stdio_spawner_create(&st->spawner, host, cfg, err); /* containment */
    if (rc != AUR_OK) {
        free(st);
        return rc;
    }
    pthread_mutex_init(&st->warm_mu, NULL);
    st->host = host;
    st->self = self;
    st->before_write_wait = stdio_cork_others;
    st->max_line = (size_t)max_line;
    st->stderr_line = (size_t)err_line;
    st->term_grace_ms = grace;
    *state = st;
    return AUR_OK;
}

/* Every connection is closed by now, so no spawn is in progress. */
static void stdio_fini(void *state)
{
    struct stdio_state *st = state;

    stdio_warm_fini(st); /* a prepared start no open took */
    stdio_spawner_destroy(st->spawner);
    pthread_mutex_destroy(&st->warm_mu);
    free(st);
}

/* ------------------------------------------------------------------ */
/* Connections                                                        */
/* ------------------------------------------------------------------ */

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void conn_free(struct aur_conn *c)
{
    free(c->package);
    free(c->command);
    free(c->cwd);
    strv_free(c->argv);
    strv_free(c->env_names);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* argv, environment whitelist and working_dir from the endpoint (its
 * values were checked when the host was created: stdio_check). */
static int conn_parse(struct aur_conn *c, const struct aur_cfg *ep,
                      struct aur_error *err)
{
    const struct aur_host *h = c->st->host;
    size_t na = h->cfg_count(ep, "arg"), ne = h->cfg_count(ep, "env");
    struct stat sb;
    int rc;

    c->package = strdup(h->cfg_str(ep, "package", "stdio-app"));
    if (!c->package)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    rc = stdio_paths(h, ep, &c->command, &c->cwd, err);
    if (rc != AUR_OK)
        return rc;
    if (!*c->command)
        return aur_fail(err, AUR_E_CONFIG, 0, "%s: [stdio] command is "
                        "missing", c->package);
    /* Checked at creation; it may have gone since. */
    if (c->cwd && (stat(c->cwd, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return aur_fail(err, AUR_E_SPAWN, errno, "%s: cannot start '%s': "
                        "working_dir '%s' is not a directory", c->package,
                        c->command, c->cwd);
    c->argv = calloc(na + 2, sizeof *c->argv);
    c->env_names = calloc(ne + 1, sizeof *c->env_names);
    if (!c->argv || !c->env_names)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    if (!(c->argv[0] = strdup(c->command)))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; i < na; i++) {
        const char *a = h->cfg_str_at(ep, "arg", i);
        if (!(c->argv[i + 1] = strdup(a ? a : "")))
            return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < ne; i++) {
        const char *n = h->cfg_str_at(ep, "env", i);
        bool dup = false;
        for (size_t j = 0; j < c->n_env && !dup; j++)
            dup = strcmp(c->env_names[j], n) == 0;
        if (dup)
            continue;
        if (!(c->env_names[c->n_env] = strdup(n)))
            return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        c->n_env++;
    }
    return AUR_OK;
}

static int stdio_open(void *state, const struct aur_cfg *endpoint,
                      const struct aur_sink *sink, aur_deadline dl,
                      struct aur_conn **out, uint32_t *out_caps,
                      struct aur_error *err)
{
    struct stdio_state *st = state;
    struct aur_conn *c;
    size_t n;
    int rc;

    if (!sink || !sink->on_message || !sink->on_closed || !out)
        return aur_fail(err, AUR_E_INVAL, 0, "open: sink and out required");
    c = calloc(1, sizeof *c);
    if (!c)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    c->st = st;
    c->endpoint = endpoint;
    n = sink->struct_size < sizeof c->sink ? sink->struct_size
                                           : sizeof c->sink;
    memcpy(&c->sink, sink, n);
    pthread_mutex_init(&c->mu, NULL);
    if (aur__mono_cond_init(&c->cv) != 0) {
        pthread_mutex_destroy(&c->mu);
        free(c);
        return aur_fail(err, AUR_E_NOMEM, 0, "cannot create a cond");
    }
    rc = conn_parse(c, endpoint, err);
    if (rc == AUR_OK) {
        rc = stdio_child_start(c, &c->child, dl, err);
    } else { /* a start prepared for it goes with the failed open */
        struct stdio_warm w;
        if (stdio_warm_take(st, endpoint, &w))
            stdio_warm_undo(&w);
    }
    if (rc != AUR_OK) {
        conn_free(c);
        return rc;
    }
    st->host->log(st->self, AUR_LOG_DEBUG, "%s: started '%s' (pid %d)",
                  c->package, c->command, (int)c->child->pid);
    *out = c;
    if (out_caps)
        *out_caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_CHILD_PROCESS |
                    AUR_TCAP_STREAM;
    (void)dl; /* spawning does not block */
    return AUR_OK;
}

/* Request s (a send's) counts as unsent while its send waits for the
 * token: the host has it in its table already, so an answer to it
 * before its bytes can leave can only be forged (stdio_ids.c).  false:
 * not marked (no integer id, or no room to remember it). */
static bool unsent_mark(struct stdio_child *ch, const char *s, size_t len,
                        int64_t *id)
{
    bool call, marked;

    if (!ch || !s || !stdio_request_id(s, len, id, &call))
        return false;
    pthread_mutex_lock(&ch->mu);
    marked = stdio_unsent_add(ch, *id);
    pthread_mutex_unlock(&ch->mu);
    return marked;
}

static void unsent_unmark(struct stdio_child *ch, int64_t id)
{
    pthread_mutex_lock(&ch->mu);
    stdio_unsent_remove(ch, id);
    pthread_mutex_unlock(&ch->mu);
}

/* Take the write token before dl, for a send of s (NULL: not a send).
 * Only a send that has to wait marks s unsent (so an uncontended send
 * costs the reader nothing); the mark goes with the wait, and holding s
 * marks it again, writing it hands it on. */
static int token_take(struct aur_conn *c, const char *s, size_t len,
                      aur_deadline dl, struct aur_error *err)
{
    const struct aur_host *h = c->st->host;
    struct stdio_child *ch = s ? c->child : NULL; /* no reopen in a send */
    bool marked = false;
    int64_t id = 0;
    int rc = AUR_OK;

    pthread_mutex_lock(&c->mu);
    if (c->writing) {
        pthread_mutex_unlock(&c->mu);
        marked = unsent_mark(ch, s, len, &id);
        stdio_cork_others(c); /* nothing of ours waits with it */
        pthread_mutex_lock(&c->mu);
    }
    while (c->writing && stdio_cond_wait(h, &c->cv, &c->mu, dl))
        ;
    if (c->writing)
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_TIMEOUT, "%s: another send "
                      "held stdin past the deadline", c->package);
    else if (c->closing)
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED,
                      "%s: connection is closing", c->package);
    else
        c->writing = true;
    pthread_mutex_unlock(&c->mu);
    if (marked)
        unsent_unmark(ch, id);
    return rc;
}

static void token_give(struct aur_conn *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->stop_pending) {
        /* A stop came during the write: stdin is free now.  Still with
         * the token, so close (which waits for it) cannot free the child
         * under us. */
        aur_deadline dl = c->stop_dl;
        c->stop_pending = false;
        pthread_mutex_unlock(&c->mu);
        if (c->child)
            stdio_child_begin_stop(c->child, dl);
        pthread_mutex_lock(&c->mu);
    }
    /* For an uncork that waits for the token (stdio_cork). */
    c->held_any = c->held.n > 0;
    c->held_dl = c->held.dl;
    c->writing = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The connections this thread corks (ABI 1.6): a few at a time; one
 * more is simply not corked, and its requests are written as sent. */
#define CORKS 16
static __thread struct aur_conn *corked[CORKS];
static __thread size_t n_corked;

static bool corked_here(const struct aur_conn *c)
{
    for (size_t i = 0; i < n_corked; i++)
        if (corked[i] == c)
            return true;
    return false;
}

/* Off this thread's list (whether it was on it), before anything held is
 * written: the ends of what is written run callbacks, which may uncork
 * c on this thread, and must then find nothing to wait for. */
static bool uncork_here(const struct aur_conn *c)
{
    for (size_t i = 0; i < n_corked; i++)
        if (corked[i] == c) {
            corked[i] = corked[--n_corked];
            return true;
        }
    return false;
}

/* Write (or end) what is held, with the token, and say so at once to an
 * uncork that waits for the token: nothing is left for it to do. */
static void flush_held(struct aur_conn *c, bool closing)
{
    if (!c->held.n)
        return;
    stdio_held_flush(c->child, &c->held, closing);
    pthread_mutex_lock(&c->mu);
    c->held_any = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static int stdio_send_text(struct aur_conn *c, const char *s, size_t len,
                           aur_deadline dl, struct aur_error *err)
{
    struct stdio_child *ch;
    int rc;

    if (!c || !s)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_INVAL, "send: no message");
    rc = token_take(c, s, len, dl, err);
    if (rc != AUR_OK)
        return rc;
    ch = c->child;
    if (ch && corked_here(c) &&
        stdio_held_add(ch, &c->held, s, len, dl) == AUR_OK) {
        token_give(c);
        return AUR_OK; /* written when this thread uncorks */
    }
    if (!ch) {
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED, "%s: no App process",
                      c->package);
    } else {
        if (c->held.n)
            (void)uncork_here(c);
        flush_held(c, false); /* in the order sent */
        rc = stdio_child_write(ch, s, len, dl, err);
    }
    token_give(c);
    /* The child cannot change under us: reopen and close are never
     * concurrent with a send. */
    if (rc == AUR_OK)
        stdio_child_assist(ch, s, len, dl);
    return rc;
}

/* AUR_CORK_TRY (not corked here meanwhile): write what is held if the
 * token is free and the pipe surely has room (true); otherwise leave it
 * all for the uncork.  A token that someone holds needs no wait either:
 * that writer takes what is held. */
static bool try_held(struct aur_conn *c)
{
    bool mine, fits;

    pthread_mutex_lock(&c->mu);
    mine = c->held_any && !c->writing && !c->closing;
    if (mine)
        c->writing = true;
    pthread_mutex_unlock(&c->mu);
    if (!mine)
        return false;
    AUR_PERTURB("stdio.cork_try");
    fits = c->child && stdio_held_fits(c->child, &c->held);
    if (fits)
        flush_held(c, false);
    token_give(c);
    return fits;
}

void stdio_cork_others(const struct aur_conn *c)
{
    static __thread bool trying; /* a TRY's flush never waits: no nesting */
    struct aur_conn *list[CORKS];
    size_t n = 0;

    if (trying || n_corked == 0)
        return;
    for (size_t i = 0; i < n_corked; i++)
        if (corked[i] != c)
            list[n++] = corked[i];
    /* From a copy.  Off the list for its flush, as for a TRY (the ends
     * it reports run callbacks on this thread), then corked again,
     * whether it wrote or not: the batch goes on holding its requests. */
    trying = true;
    for (size_t i = 0; i < n; i++) {
        if (!corked_here(list[i]))
            continue; /* uncorked meanwhile, by an end run in a flush */
        (void)uncork_here(list[i]);
        (void)try_held(list[i]);
        if (n_corked < CORKS)
            corked[n_corked++] = list[i];
    }
    trying = false;
}

/* ABI 1.6: hold this thread's requests until it uncorks, then write them
 * in one go (stdio_held_flush). */
static void stdio_cork(struct aur_conn *c, int on)
{
    if (!c)
        return;
    if (on == AUR_CORK_ON) {
        if (!corked_here(c) && n_corked < CORKS)
            corked[n_corked++] = c;
        return;
    }
    if (!uncork_here(c))
        return; /* not corked by this thread: nothing of its to write */
    if (on == AUR_CORK_TRY) {
        if (!try_held(c))
            corked[n_corked++] = c; /* for the uncork */
        return;
    }
    /* The token even while closing, so what is held ends here either way:
     * written, or reported not sent.  Nothing held: a send since wrote it
     * (every write begins with what is held), nothing to wait for.  A send
     * that keeps the token past the held requests' deadline leaves them to
     * whoever writes next or to close (not sent); by then their calls
     * have ended unknown, which stays true either way. */
    pthread_mutex_lock(&c->mu);
    if (c->held_any && c->writing) { /* it may wait: not with the others' */
        pthread_mutex_unlock(&c->mu);
        stdio_cork_others(c);
        pthread_mutex_lock(&c->mu);
    }
    while (c->held_any && c->writing &&
           stdio_cond_wait(c->st->host, &c->cv, &c->mu, c->held_dl))
        ;
    bool mine = c->held_any && !c->writing, closing = c->closing;
    if (mine)
        c->writing = true;
    pthread_mutex_unlock(&c->mu);
    if (!mine)
        return;
    AUR_PERTURB("stdio.uncork");
    if (c->child)
        flush_held(c, closing);
    token_give(c);
}

static int stdio_send(struct aur_conn *c, struct json_object *msg,
                      aur_deadline dl, struct aur_error *err)
{
    size_t len = 0;
    const char *s;

    if (!c || !msg)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_INVAL, "send: no message");
    /* Compact: one line, no raw newline can appear (json-c escapes). */
    s = json_object_to_json_string_length(msg, SERIALISE_FLAGS, &len);
    if (!s)
        return aur_fail(err, AUR_E_NOT_SENT, ENOMEM, "%s: cannot serialise",
                        c->package);
    return stdio_send_text(c, s, len, dl, err);
}

/* ABI 1.5: end the App without waiting; stdio_close finishes. */
static void stdio_stop(struct aur_conn *c, aur_deadline dl)
{
    bool now;

    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    now = !c->writing;
    if (!now) {
        c->stop_pending = true;
        c->stop_dl = dl;
    }
    pthread_mutex_unlock(&c->mu);
    if (now && c->child)
        stdio_child_begin_stop(c->child, dl);
}

static void stdio_close(struct aur_conn *c, aur_deadline dl)
{
    const struct aur_host *h;

    if (!c)
        return;
    h = c->st->host;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    /* The contract forbids a concurrent send; this only covers a sender
     * still finishing as close is called. */
    while (c->writing && stdio_cond_wait(h, &c->cv, &c->mu, dl))
        ;
    pthread_mutex_unlock(&c->mu);
    if (c->child) {
        /* Held past an uncork that never came (the contract says it
         * comes first): none of it was written. */
        flush_held(c, true);
        stdio_child_stop(c->child, dl);
    }
    c->child = NULL;
    stdio_held_free(&c->held);
    conn_free(c);
}

static int stdio_reopen(struct aur_conn *c, aur_deadline dl,
                        struct aur_error *err)
{
    struct stdio_child *old;
    int rc;

    if (!c)
        return aur_fail(err, AUR_E_INVAL, 0, "reopen: no connection");
    rc = token_take(c, NULL, 0, dl, err);
    if (rc != AUR_OK)
        return rc;
    old = c->child;
    c->child = NULL;
    if (old)
        stdio_child_stop(old, dl); /* retired first: no on_closed */
    rc = stdio_child_start(c, &c->child, dl, err);
    if (rc == AUR_OK)
        c->st->host->log(c->st->self, AUR_LOG_INFO,
                         "%s: App process restarted (pid %d)", c->package,
                         (int)c->child->pid);
    token_give(c);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Descriptor                                                         */
/* ------------------------------------------------------------------ */

/* [transport-stdio] in host.ini (see the top of this file). */
static const struct aur_cfg_key stdio_settings[] = {
    {"max_line_bytes", 0, 0},
    {"stderr_line_bytes", 0, 0},
    {"term_grace_ms", 0, 0},
    {"containment", 0, 0},
    {NULL, 0, 0},
};

static const struct aur_transport_ops stdio_ops = {
    .struct_size = sizeof stdio_ops,
    .caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_CHILD_PROCESS | AUR_TCAP_STREAM,
    .open = stdio_open,
    .send = stdio_send,
    .close = stdio_close,
    .reopen = stdio_reopen,
    .stop = stdio_stop,
    .send_text = stdio_send_text,
    .cork = stdio_cork,
    .words = stdio_words,
    .section = "stdio",
    .keys = stdio_keys,
    .check = stdio_check,
    .preflight = stdio_preflight,
    .prepare = stdio_prepare,
    .unprepare = stdio_unprepare,
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi);

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    static const struct aur_plugin_desc desc = {
        /* 1.4: the host hands config_dir and checks [stdio] through
         * stdio_check; an older host would pass paths unresolved. */
        AUR_DESC_HEADER_MIN(AUR_KIND_TRANSPORT, 4),
        .name = "transport-stdio",
        .version = "1.0.0",
        .summary = "JSON-RPC over a child process's stdin/stdout",
        .init = stdio_init,
        .settings = stdio_settings,
        .fini = stdio_fini,
        .ops = &stdio_ops,
    };
    (void)host_abi; /* the loader refuses a host older than 1.4 */
    return &desc;
}
