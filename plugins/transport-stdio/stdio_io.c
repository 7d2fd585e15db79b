/*
 * stdio_io.c - the per-child I/O thread.
 *
 * One thread per child polls its stdout, stderr, pidfd and stop pipe, so
 * stdout and stderr are always drained (a full pipe would wedge the App)
 * and the thread can always be told to stop, even when an escaped
 * grandchild keeps the pipes open.  on_closed is decided here, once.
 * A caller waiting for the reply to a lone tools/call may read stdout
 * itself for a moment ("assist", below), so the reply needs no hand-off
 * between threads.
 */
#define _GNU_SOURCE
#include "grow.h"
#include "stdio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "aur_perturb.h"

#define CHUNK (64 * 1024)
/* A shrunken line buffer is kept up to this size between frames. */
#define KEEP_LINE_CAP (1024 * 1024)
/* Without a pidfd the exit is noticed by polling at this period. */
#define EXIT_POLL_MS 50
#define MAX_WAIT_MS (24 * 3600 * 1000LL)

/* ------------------------------------------------------------------ */
/* Monotonic waits                                                    */
/* ------------------------------------------------------------------ */

bool stdio_cond_wait(const struct aur_host *h, pthread_cond_t *cv,
                     pthread_mutex_t *mu, int64_t until_ms)
{
    int64_t rem = until_ms - h->now_ms();
    struct timespec ts;

    if (rem <= 0)
        return false;
    if (rem > MAX_WAIT_MS) /* callers loop; keeps tv_sec sane */
        rem = MAX_WAIT_MS;
    aur__mono_deadline(&ts, rem);
    pthread_cond_timedwait(cv, mu, &ts);
    return true;
}

/* ------------------------------------------------------------------ */
/* Sink calls: never after retirement, counted so stop can wait them   */
/* ------------------------------------------------------------------ */

static bool sink_enter(struct stdio_child *ch, bool closing_call)
{
    bool ok;

    pthread_mutex_lock(&ch->mu);
    ok = !ch->retired && !ch->reported;
    if (ok) {
        ch->busy++;
        if (closing_call)
            ch->reported = true;
    }
    pthread_mutex_unlock(&ch->mu);
    return ok;
}

static void sink_leave(struct stdio_child *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->busy--;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

static void deliver(struct stdio_child *ch, struct json_object *msg)
{
    struct aur_conn *c = ch->conn;

    if (!sink_enter(ch, false)) {
        json_object_put(msg);
        return;
    }
    c->sink.on_message(c->sink.ctx, msg);
    sink_leave(ch);
}

void stdio_request_ended(struct stdio_child *ch, int64_t id,
                         const struct aur_request_end *end)
{
    struct aur_conn *c = ch->conn;
    struct json_object *jid;

    if (!sink_enter(ch, false))
        return;
    /* Without memory for the id the call ends at its deadline, unknown:
     * never a wrong "not sent". */
    if ((jid = json_object_new_int64(id))) {
        c->sink.on_request_end(c->sink.ctx, jid, end);
        json_object_put(jid);
    }
    sink_leave(ch);
}

/* why == NULL: clean end. */
static void report_closed(struct stdio_child *ch, const struct aur_error *why)
{
    struct aur_conn *c = ch->conn;

    if (!sink_enter(ch, true)) {
        /* Retired or already reported: remember it all the same so the
         * thread stops deciding. */
        pthread_mutex_lock(&ch->mu);
        ch->reported = true;
        pthread_mutex_unlock(&ch->mu);
        return;
    }
    c->sink.on_closed(c->sink.ctx, why);
    sink_leave(ch);
}

static void set_flag(struct stdio_child *ch, bool *flag);

/* What the exited child left in its stderr pipe, without waiting: a
 * grandchild may hold the pipe open.  At most 64 KiB. */
static void drain_stderr(struct stdio_child *ch)
{
    char chunk[4096];
    struct pollfd p = {.fd = ch->err_fd, .events = POLLIN};

    for (int i = 0; i < 16 && !ch->err_done; i++) {
        if (poll(&p, 1, 0) <= 0 || !p.revents)
            return;
        if (stdio_stderr_read(ch, chunk, sizeof chunk))
            set_flag(ch, &ch->err_done);
    }
}

static void report_exit(struct stdio_child *ch)
{
    struct aur_error e;
    const char *pkg = ch->conn->package;
    char how[64];

    aur_error_clear(&e);
    if (ch->exit_code == CLD_EXITED && ch->exit_status == 0) {
        report_closed(ch, NULL);
        return;
    }
    if (ch->exit_code == CLD_EXITED)
        snprintf(how, sizeof how, "exited with status %d", ch->exit_status);
    else if (ch->exit_code != CLD_KILLED && ch->exit_code != CLD_DUMPED)
        snprintf(how, sizeof how, "exited");
    else
        snprintf(how, sizeof how, "killed by signal %d (%s)",
                 ch->exit_status, sigabbrev_np(ch->exit_status)
                                      ? sigabbrev_np(ch->exit_status)
                                      : "?");
    /* Why a server died is mostly in its last stderr lines. */
    drain_stderr(ch);
    stdio_stderr_flush(ch);
    pthread_mutex_lock(&ch->mu);
    snprintf(ch->exit_why, sizeof ch->exit_why, "App process %s%s%s%s", how,
             ch->etail_len ? "; its stderr ended: \"" : "", ch->etail,
             ch->etail_len ? "\"" : "");
    aur_fail(&e, AUR_E_CLOSED,
             ch->exit_code == CLD_EXITED || ch->exit_code == CLD_KILLED ||
                     ch->exit_code == CLD_DUMPED
                 ? ch->exit_status
                 : 0,
             "%s: %s", pkg, ch->exit_why);
    pthread_cond_broadcast(&ch->cv); /* a writer may wait for it */
    pthread_mutex_unlock(&ch->mu);
    report_closed(ch, &e);
}

static void set_flag(struct stdio_child *ch, bool *flag)
{
    pthread_mutex_lock(&ch->mu);
    *flag = true;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

/* ------------------------------------------------------------------ */
/* stdout: newline-delimited JSON                                     */
/* ------------------------------------------------------------------ */

static void limit_exceeded(struct stdio_child *ch)
{
    struct aur_error e;

    aur_fail(&e, AUR_E_LIMIT, 0, "%s: message exceeds max_line_bytes (%zu)",
             ch->conn->package, ch->conn->st->max_line);
    set_flag(ch, &ch->out_done);
    report_closed(ch, &e);
}

/* A frame that may answer a request not yet written (stdio_ids.c): the
 * server cannot have read that request, so the frame is a guess or a
 * mistake, and the host must not end the call by it (the request is
 * still written later).  Dropped, counted, said once per App process. */
static void drop_unsent_answer(struct stdio_child *ch, size_t len)
{
    const struct stdio_state *st = ch->conn->st;
    uint64_t n;

    pthread_mutex_lock(&ch->mu);
    n = ++ch->dropped;
    pthread_mutex_unlock(&ch->mu);
    st->host->log(st->self, n == 1 ? AUR_LOG_WARN : AUR_LOG_DEBUG,
                  "%s: dropped a response (%zu bytes, %llu so far) naming a "
                  "request not yet written to the App",
                  ch->conn->package, len, (unsigned long long)n);
}

/* One complete line (without its LF).  false: framing is lost. */
static bool frame(struct stdio_child *ch, const char *buf, size_t len)
{
    const struct stdio_state *st = ch->conn->st;
    const struct aur_sink *sink = &ch->conn->sink;
    struct json_object *msg = NULL;
    struct aur_error e;
    int rc;

    if (len > 0 && buf[len - 1] == '\r')
        len--;
    if (len == 0)
        return true;
    if (len > st->max_line) {
        limit_exceeded(ch);
        return false;
    }
    AUR_PERTURB("stdio.frame");
    /* Only while requests are held unwritten (a batch): it parses. */
    if (__atomic_load_n(&ch->n_unsent, __ATOMIC_RELAXED) &&
        stdio_answers_unsent(ch, buf, len)) {
        drop_unsent_answer(ch, len);
        return true;
    }
    if (sink->on_text) {
        /* The host parses (or reads a call's reply without a tree). */
        if (!sink_enter(ch, false))
            return true;
        rc = sink->on_text(sink->ctx, buf, len, stdio_response_seen, ch, &e);
        sink_leave(ch);
    } else {
        rc = st->host->json_parse(buf, len, &msg, &e);
        if (rc == AUR_OK && !json_object_is_type(msg, json_type_object))
            rc = AUR_E_PROTOCOL;
        if (rc == AUR_OK) {
            if (__atomic_load_n(&ch->n_ids, __ATOMIC_RELAXED))
                stdio_note_response(ch, msg);
            deliver(ch, msg);
        } else {
            json_object_put(msg);
        }
    }
    /* The content may be anything the App printed: never log it.  A
     * frame over the memory budget, or lost for want of memory, is named
     * as such (the error names the key and the App). */
    if (rc != AUR_OK && stdio_warn_take(ch)) {
        if (rc == AUR_E_LIMIT || rc == AUR_E_NOMEM)
            st->host->log(st->self, AUR_LOG_WARN,
                          "%s: dropped a frame (%zu bytes): %s",
                          ch->conn->package, len, e.msg);
        else
            st->host->log(st->self, AUR_LOG_WARN,
                          "%s: dropped malformed frame (%zu bytes)",
                          ch->conn->package, len);
    }
    return true;
}

static bool line_append(struct stdio_child *ch, const char *p, size_t n)
{
    size_t need = ch->line_len + n;
    size_t max = ch->conn->st->max_line + 1; /* room for a CR */
    char *nb = aur__grow(ch->line, &ch->line_cap, need, 1, CHUNK, max);

    if (!nb)
        return false;
    ch->line = nb;
    memcpy(ch->line + ch->line_len, p, n);
    ch->line_len = need;
    return true;
}

static void line_reset(struct stdio_child *ch)
{
    ch->line_len = 0;
    if (ch->line_cap > KEEP_LINE_CAP) {
        /* One huge frame must not pin megabytes for the connection. */
        free(ch->line);
        ch->line = NULL;
        ch->line_cap = 0;
    }
}

void stdio_stdout_bytes(struct stdio_child *ch, const char *p, size_t n)
{
    const char *end = p + n;
    size_t max = ch->conn->st->max_line + 1;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t seg = (size_t)((nl ? nl : end) - p);
        bool ok;

        if (ch->line_len + seg > max) {
            limit_exceeded(ch);
            return;
        }
        if (nl && ch->line_len == 0) {
            ok = frame(ch, p, seg); /* whole line in the chunk: no copy */
        } else if (!line_append(ch, p, seg)) {
            struct aur_error e;
            aur_fail(&e, AUR_E_NOMEM, 0, "%s: no memory for a frame",
                     ch->conn->package);
            set_flag(ch, &ch->out_done);
            report_closed(ch, &e);
            return;
        } else if (nl) {
            ok = frame(ch, ch->line, ch->line_len);
            line_reset(ch);
        } else {
            ok = true;
        }
        if (!ok)
            return;
        p += seg + (nl ? 1 : 0);
    }
}

static void read_stdout(struct stdio_child *ch, char *chunk)
{
    ssize_t n = read(ch->out_fd, chunk, CHUNK);

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n > 0) {
        stdio_stdout_bytes(ch, chunk, (size_t)n);
        return;
    }
    /* EOF (or a read error, which ends the stream the same way).  A
     * final unterminated line is still a frame. */
    if (ch->line_len > 0 && frame(ch, ch->line, ch->line_len))
        line_reset(ch);
    set_flag(ch, &ch->out_done);
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */
/* ------------------------------------------------------------------ */

/* Peek without reaping: the zombie keeps the pid and process group id
 * reserved until stdio_child_stop has signalled the group. */
static void check_exit(struct stdio_child *ch)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)ch->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno != ECHILD)
            return;
        /* Reaped behind our back (a host with SIGCHLD set to SIG_IGN):
         * gone, status unknown.  Without this a readable pidfd would spin
         * the loop. */
        si.si_code = 0;
        si.si_status = -1;
    } else if (si.si_pid != ch->pid) {
        return;
    }
    pthread_mutex_lock(&ch->mu);
    ch->exit_code = si.si_code;
    ch->exit_status = si.si_status;
    ch->exited = true;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

/* Exit and stdout EOF normally come together; either alone waits
 * STDIO_LINGER_MS for the other before on_closed.  Returns the poll timeout. */
static int decide(struct stdio_child *ch, int64_t *linger_until)
{
    const struct aur_host *h = ch->conn->st->host;
    bool reported, out_done;
    int64_t now;

    pthread_mutex_lock(&ch->mu);
    reported = ch->reported;
    out_done = ch->out_done;
    pthread_mutex_unlock(&ch->mu);
    if (reported || (!ch->exited && !out_done)) {
        *linger_until = -1;
        return -1;
    }
    if (ch->exited && out_done) {
        report_exit(ch);
        return -1;
    }
    now = h->now_ms();
    if (*linger_until < 0)
        *linger_until = now + STDIO_LINGER_MS;
    if (now >= *linger_until) {
        if (ch->exited)
            report_exit(ch);
        else
            report_closed(ch, NULL); /* it closed stdout: clean EOF */
        *linger_until = -1;
        return -1;
    }
    return (int)(*linger_until - now);
}

void *stdio_io_main(void *arg)
{
    struct stdio_child *ch = arg;
    const struct aur_host *h = ch->conn->st->host;
    int64_t linger_until = -1;
    int timeout = -1, kick[2] = {-1, -1};
    char *chunk = malloc(CHUNK);

    if (!chunk) {
        struct aur_error e;
        aur_fail(&e, AUR_E_NOMEM, 0, "%s: no memory for the reader",
                 ch->conn->package);
        report_closed(ch, &e);
        return NULL;
    }
    /* Without the kick pipe no caller reads stdout (no assist). */
    if (pipe2(kick, O_CLOEXEC | O_NONBLOCK) == 0) {
        pthread_mutex_lock(&ch->mu);
        ch->kick_w1 = kick[1] + 1;
        pthread_mutex_unlock(&ch->mu);
    }
    for (;;) {
        struct pollfd p[5];
        int n = 0, io = -1, ie = -1, ip = -1, ik = -1, t = timeout;
        bool out_done, park;

        pthread_mutex_lock(&ch->mu);
        out_done = ch->out_done;
        park = ch->out_owner == 2 ||
               (ch->park_until > 0 && h->now_ms() < ch->park_until);
        ch->io_parked = park && !out_done;
        pthread_mutex_unlock(&ch->mu);

        p[n++] = (struct pollfd){.fd = ch->stop_r, .events = POLLIN};
        if (!out_done && !park) {
            io = n;
            p[n++] = (struct pollfd){.fd = ch->out_fd, .events = POLLIN};
        } else if (!out_done) {
            /* Parked: a caller reads stdout; look again soon, or when
             * kicked. */
            ik = n;
            p[n++] = (struct pollfd){.fd = kick[0], .events = POLLIN};
            if (t < 0 || t > STDIO_PARK_MS)
                t = STDIO_PARK_MS;
        }
        if (!ch->err_done) {
            ie = n;
            p[n++] = (struct pollfd){.fd = ch->err_fd, .events = POLLIN};
        }
        if (!ch->exited && ch->pidfd >= 0) {
            ip = n;
            p[n++] = (struct pollfd){.fd = ch->pidfd, .events = POLLIN};
        } else if (!ch->exited && (t < 0 || t > EXIT_POLL_MS)) {
            t = EXIT_POLL_MS;
        }
        if (poll(p, (nfds_t)n, t) < 0 && errno != EINTR)
            break; /* cannot happen with valid fds; stop will join us */
        if (p[0].revents)
            break;
        if (ik >= 0 && p[ik].revents) {
            char drain[64];
            while (read(kick[0], drain, sizeof drain) > 0)
                ;
        }
        if (!ch->exited && (ip < 0 || p[ip].revents))
            check_exit(ch);
        if (io >= 0 && p[io].revents) {
            bool mine;

            pthread_mutex_lock(&ch->mu);
            mine = ch->out_owner == 0;
            if (mine)
                ch->out_owner = 1;
            pthread_mutex_unlock(&ch->mu);
            /* Not mine: a caller took stdout meanwhile; park next time. */
            if (mine) {
                read_stdout(ch, chunk);
                pthread_mutex_lock(&ch->mu);
                ch->out_owner = 0;
                pthread_mutex_unlock(&ch->mu);
            }
        }
        if (ie >= 0 && p[ie].revents && stdio_stderr_read(ch, chunk, CHUNK))
            set_flag(ch, &ch->err_done);
        timeout = decide(ch, &linger_until);
    }
    /* Stopped before stderr ended: still say what was held back. */
    stdio_log_held_back(ch);
    pthread_mutex_lock(&ch->mu);
    ch->kick_w1 = 0;
    ch->io_parked = false;
    free(ch->ids);
    ch->ids = NULL;
    __atomic_store_n(&ch->n_ids, 0, __ATOMIC_RELAXED);
    ch->cap_ids = 0;
    free(ch->unsent);
    ch->unsent = NULL;
    __atomic_store_n(&ch->n_unsent, 0, __ATOMIC_RELAXED);
    ch->cap_unsent = 0;
    pthread_mutex_unlock(&ch->mu);
    if (kick[0] >= 0) {
        close(kick[0]);
        close(kick[1]);
    }
    free(chunk);
    return NULL;
}

