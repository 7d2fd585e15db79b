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
 * writer of exited/out_done/err_done/reported, so it may read them without
 * the lock; everybody else takes mu.  in_fd and in_broken belong to the
 * holder of the connection's write token.
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

    /* I/O thread only. */
    char *line;
    size_t line_len, line_cap;
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

/* pthread_cond_timedwait on a CLOCK_MONOTONIC cond until host time
 * until_ms.  Returns false once until_ms has passed.  Caller loops on its
 * predicate. */
bool stdio_cond_wait(const struct aur_host *h, pthread_cond_t *cv,
                     pthread_mutex_t *mu, int64_t until_ms);

/* Initialise a cond for stdio_cond_wait.  0 or an errno. */
int stdio_cond_init(pthread_cond_t *cv);

#endif /* AUR_STDIO_INT_H */
