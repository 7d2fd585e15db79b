/*
 * stdio_int.h - private to transport-stdio (never installed).
 *
 * Three files share these types:
 *   stdio_plugin.c  descriptor, init/fini, config, open/send/close/reopen
 *   stdio_spawn.c   child environment, spawn, termination and reaping
 *   stdio_io.c      the per-child I/O thread (framing, stderr, exit
 *                   watch, on_closed) and the stdin writer
 *
 * Each child process ("generation") has one I/O thread that polls stdout,
 * stderr, a pidfd and a stop pipe; reopen replaces the generation, the
 * connection stays.  Nothing here is global: all state hangs off
 * struct stdio_state (per plugin) and struct aur_conn (per connection).
 *
 * Every file defines _GNU_SOURCE before its first include.
 */
#ifndef AUR_STDIO_INT_H
#define AUR_STDIO_INT_H

#include <aurora/aur_plugin.h>

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

/* Settings from the [transport-stdio] section; read-only after init. */
struct stdio_state {
    const struct aur_host *host;
    struct aur_self *self;
    size_t max_line;       /* max_line_bytes: one stdout frame */
    size_t stderr_line;    /* stderr_line_bytes: one logged stderr line */
    int64_t term_grace_ms; /* each escalation step of the shutdown */
    struct stdio_spawner *spawner; /* own lock; see stdio_exec.c */
};

/*
 * One child process and its I/O thread.  Created by stdio_child_start,
 * destroyed by stdio_child_stop (which joins the thread).
 *
 * Locking: mu guards the flags marked (mu).  The I/O thread is the only
 * writer of exited/err_done, so it may read them without the lock;
 * out_done and reported may also be set by a caller reading stdout (see
 * "assist" in stdio_io.c), so everybody reads those under mu.  in_fd and
 * in_broken belong to the holder of the connection's write token.  The
 * stdout line buffer belongs to the stdout owner (out_owner).
 */
struct stdio_child {
    struct aur_conn *conn; /* owner (borrowed back pointer) */
    pid_t pid;             /* also the process group id */
    int in_fd, out_fd, err_fd; /* our pipe ends, -1 once closed */
    int pidfd;             /* -1: the I/O thread polls waitid instead */
    int stop_r, stop_w;    /* a byte on stop_w ends the I/O thread */
    pthread_t thread;
    bool in_broken; /* a write stopped mid-line: stdin framing is lost */

    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC; any flag change broadcasts */
    bool exited;       /* (mu) leader is a zombie or reaped */
    bool out_done;     /* (mu) stdout no longer read: EOF, error, limit */
    bool err_done;     /* (mu) stderr at EOF */
    bool reported;     /* (mu) on_closed was called */
    bool retired;      /* (mu) close/reopen began: no more sink calls */
    int busy;          /* (mu) sink calls in progress */
    int exit_code;     /* (mu) siginfo si_code: CLD_EXITED, CLD_KILLED.. */
    int exit_status;   /* (mu) exit status or signal number */

    /* Who reads stdout (see stdio_io.c, "assist"). */
    int out_owner;       /* (mu) 0 nobody, 1 the I/O thread, 2 a caller */
    bool io_parked;      /* (mu) the I/O thread is not polling stdout */
    int64_t park_until;  /* (mu) ... and need not before this host time */
    int kick_w1;         /* (mu) wake-up pipe of the I/O thread + 1, 0 none */
    int64_t *ids;        /* (mu) integer ids of requests awaiting a reply */
    size_t n_ids, cap_ids; /* (mu; n_ids also read atomically) */

    /* The stdout owner only. */
    char *line;
    size_t line_len, line_cap;

    /* I/O thread only. */
    char *eline; /* stderr_line bytes */
    size_t eline_len;
    bool etrunc; /* the current stderr line was cut */
};

/*
 * One App connection.  The core may call send from several threads; the
 * write token (writing, under mu) serialises them while still letting a
 * waiting sender honour its own deadline.
 */
struct aur_conn {
    struct stdio_state *st; /* borrowed */
    struct aur_sink sink;   /* copy of the host's sink (ctx and hooks) */
    char *package;          /* for log lines */
    char *command;
    char *cwd;              /* NULL: inherit the host's */
    char **argv;            /* NULL-terminated, argv[0] = command */
    char **env_names;       /* whitelisted names, deduplicated */
    size_t n_env;

    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    bool writing;      /* (mu) the write token is taken */
    bool closing;      /* (mu) close began */
    struct stdio_child *child; /* token holder only; NULL after a failed
                                  reopen */
};

/* ---- stdio_spawn.c ------------------------------------------------- */

/* Spawn the endpoint's command and start its I/O thread.  *out only on
 * AUR_OK; on failure nothing is left running and no sink call is made. */
int stdio_child_start(struct aur_conn *c, struct stdio_child **out,
                      struct aur_error *err);

/* Stop sink calls, close stdin, escalate (wait, SIGTERM, SIGKILL to the
 * process group) within dl as documented in stdio_plugin.c, reap, join
 * the I/O thread and free ch.  Bounded even when dl has passed. */
void stdio_child_stop(struct stdio_child *ch, aur_deadline dl);

/* ---- stdio_exec.c -------------------------------------------------- */

/* One fork+exec, filled by the caller; everything is borrowed and must
 * outlive stdio_spawner_run. */
struct stdio_exec_job {
    char *const *argv, *const *envp;
    const char *cwd;           /* NULL: the host's */
    int fd_in, fd_out, fd_err; /* become the child's 0, 1, 2 */
    pid_t pid;                 /* out: the child, its own group leader */
    /* private to stdio_exec.c */
    char *path;
    int rc;
    bool done;
};

struct stdio_spawner;

/* Create the spawner (its thread starts on the first run).  0 or errno. */
int stdio_spawner_create(struct stdio_spawner **out);
/* Stop and join the thread; no run may be in progress.  NULL is a no-op. */
void stdio_spawner_destroy(struct stdio_spawner *sp);
/* Resolve command against the host's PATH and start it on the spawner
 * thread, with PR_SET_PDEATHSIG(SIGKILL), a new process group, default
 * signal dispositions and only fds 0..2 open.  Any thread; serialised.
 * 0 (j->pid set) or the errno of the step that failed. */
int stdio_spawner_run(struct stdio_spawner *sp, const char *command,
                      struct stdio_exec_job *j);

/* ---- stdio_io.c ---------------------------------------------------- */

/* The I/O thread body; arg is the struct stdio_child. */
void *stdio_io_main(void *arg);

/* Write buf[0..len) plus "\n" to the child's stdin before dl.  Caller holds
 * the write token.  AUR_E_TIMEOUT, AUR_E_CLOSED (child gone, stdin closed
 * or framing lost) or AUR_E_IO.  Never raises SIGPIPE. */
int stdio_child_write(struct stdio_child *ch, const char *buf, size_t len,
                      aur_deadline dl, struct aur_error *err);

/* Split stdout bytes into frames and deliver them; the caller owns stdout
 * (out_owner). */
void stdio_stdout_bytes(struct stdio_child *ch, const char *p, size_t n);

/* After a caller found its reply, the I/O thread leaves stdout to the
 * callers this long (ms), so a stream of calls does not hand it back and
 * forth; it checks again each time. */
#define STDIO_PARK_MS 2

/* ---- stdio_assist.c ------------------------------------------------ */

/* The integer id of a request as the core writes it ({"jsonrpc":"2.0",
 * "id":N,"method":...), and whether it is a tools/call. */
bool stdio_request_id(const char *buf, size_t len, int64_t *id,
                      bool *is_call);
/* The ids of requests awaiting a reply; mu held.  add: when full (or out
 * of memory) the id is not remembered, so no assist happens. */
bool stdio_ids_has(const struct stdio_child *ch, int64_t id);
void stdio_ids_add(struct stdio_child *ch, int64_t id);
void stdio_ids_remove(struct stdio_child *ch, int64_t id);
/* A response came for id (arg: the child), or msg (borrowed) is one:
 * forget its id.  Take mu. */
void stdio_response_seen(void *arg, int64_t id);
void stdio_note_response(struct stdio_child *ch, struct json_object *msg);

/* After a successful stdio_child_write of buf, without the write token:
 * if buf is a tools/call and the only request waiting for a reply, read
 * stdout on this thread for a short while so the reply needs no hand-off
 * from the I/O thread.  Any thread; never concurrent with stop. */
void stdio_child_assist(struct stdio_child *ch, const char *buf, size_t len,
                        aur_deadline dl);

/* pthread_cond_timedwait on a CLOCK_MONOTONIC cond until host time
 * until_ms.  Returns false once until_ms has passed.  Caller loops on its
 * predicate. */
bool stdio_cond_wait(const struct aur_host *h, pthread_cond_t *cv,
                     pthread_mutex_t *mu, int64_t until_ms);

/* Initialise a cond for stdio_cond_wait.  0 or an errno. */
int stdio_cond_init(pthread_cond_t *cv);

#endif /* AUR_STDIO_INT_H */
