/*
 * stdio_int.h - private to transport-stdio (never installed).
 *
 * These files share these types:
 *   stdio_plugin.c  descriptor, init/fini, config, open/send/close/reopen
 *   stdio_spawn.c   child environment, spawn, termination and reaping
 *   stdio_exec.c    a start: PATH lookup, the spawner, the start report
 *   stdio_fdpass.c  the spawner thread, its own descriptor table,
 *                   descriptors passed to and from it
 *   stdio_job.c     the spawner thread's part: cgroup, pipes, spawn
 *   stdio_contain.c the per-App supervisor ("shim"), its own program
 *                   (stdio_supervisor.c reads its arguments)
 *   stdio_cgroup.c  the host's side of it: the App's cgroup, the stop
 *                   signals
 *   stdio_cgtree.c  removing an App's cgroup and the cgroups the App
 *                   made below it (both sides)
 *   stdio_io.c      the per-child I/O thread (framing, stderr, exit
 *                   watch, on_closed) and the stdin writer
 *   stdio_ids.c     the ids of the requests awaiting a reply
 *
 * The host's direct child is not the App but its supervisor (see
 * stdio_contain.c): pid below is the supervisor's, whose exit status
 * mirrors the App's, so everything that watches pid sees the App.
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

/* Bytes of the stderr tail an App's exit error quotes: the error text is
 * AUR_ERR_MSG_SIZE in all, and names the App and the exit too. */
#define STDIO_STDERR_TAIL 120

#include <aurora/aur_plugin.h>

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "mono.h" /* aur__mono_cond_init for every cond here */

#include <unistd.h>

/* Close *fd if open, and mark it closed. */
static inline void stdio_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Settings from the [transport-stdio] section; read-only after init. */
/* The [stdio] section of an App file (stdio_config.c, ABI 1.4). */
extern const char *const stdio_words[];
extern const struct aur_cfg_key stdio_keys[];
int stdio_check(void *state, const struct aur_cfg *ep, int active,
                struct aur_error *err);
void stdio_preflight(void *state, const struct aur_cfg *ep,
                     void (*report)(void *ctx, const char *check,
                                    const char *problem),
                     void *ctx);
/* The command (a path read against config_dir, or a bare name) and the
 * working directory resolved inside config_dir, both malloc'd (*cwd NULL
 * when there is none).  AUR_OK, or err (AUR_E_CONFIG naming the line,
 * AUR_E_NOMEM); free what was set either way. */
int stdio_paths(const struct aur_host *h, const struct aur_cfg *ep,
                char **command, char **cwd, struct aur_error *err);

struct stdio_state {
    const struct aur_host *host;
    struct aur_self *self;
    size_t max_line;       /* max_line_bytes: one stdout frame */
    size_t stderr_line;    /* stderr_line_bytes: one logged stderr line */
    int64_t term_grace_ms; /* each escalation step of the shutdown */
    struct stdio_spawner *spawner; /* own lock; see stdio_exec.c */
    pthread_mutex_t warm_mu;       /* warm (stdio_warm.c) */
    struct stdio_warm *warm;       /* a prepared start, or NULL */
    /* What a writer does each time before it waits for an App's stdin:
     * stdio_cork_others, set once at init, so that stdio_write.c, which
     * the cork code calls, does not call back up into it. */
    void (*before_write_wait)(const struct aur_conn *c);
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
/* The host's handle on one App's containment (stdio_contain.c). */
struct stdio_contain {
    int ctl_w;         /* host end of the supervisor's lifeline, -1 none */
    int cg_dir;        /* directory holding the App's cgroup (the
                          spawner's, borrowed), -1: none */
    int cg_kill;       /* that cgroup's cgroup.kill, -1 none */
    char cg_name[64];  /* the App's cgroup, a name under cg_dir */
};

struct stdio_child {
    struct aur_conn *conn; /* owner (borrowed back pointer) */
    pid_t pid;             /* the supervisor: also its process group id */
    struct stdio_contain ct; /* stop and free only */
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
    bool stopping;     /* (mu) the escalation began (stdio_child_begin_stop) */
    bool told;         /* (mu) ... and the supervisor runs it */
    int64_t term_at, kill_at; /* (mu) its steps, host time */
    int busy;          /* (mu) sink calls in progress */
    int exit_code;     /* (mu) siginfo si_code: CLD_EXITED, CLD_KILLED.. */
    int exit_status;   /* (mu) exit status or signal number */
    char exit_why[AUR_ERR_MSG_SIZE]; /* (mu) how it ended, once reported */

    /* Who reads stdout (see stdio_io.c, "assist"). */
    int out_owner;       /* (mu) 0 nobody, 1 the I/O thread, 2 a caller */
    bool io_parked;      /* (mu) the I/O thread is not polling stdout */
    int64_t park_until;  /* (mu) ... and need not before this host time */
    int kick_w1;         /* (mu) wake-up pipe of the I/O thread + 1, 0 none */
    int64_t *ids;        /* (mu) integer ids of requests awaiting a reply */
    size_t n_ids, cap_ids; /* (mu; n_ids also read atomically) */
    int64_t *unsent;     /* (mu) ids of held requests not yet written */
    size_t n_unsent, cap_unsent; /* (mu; n_unsent also read atomically) */
    uint64_t dropped;    /* (mu) frames dropped for answering one */

    /* The stdout owner only. */
    char *line;
    size_t line_len, line_cap;

    /* I/O thread only. */
    char *eline; /* stderr_line bytes */
    size_t eline_len;
    bool etrunc; /* the current stderr line was cut */
    /* The end of what the child printed on stderr (its last lines, joined
     * by " | ", sanitised and redacted), for the error its exit makes. */
    char etail[STDIO_STDERR_TAIL + 1];
    size_t etail_len;

    /* Set at spawn, then read-only: values of the App's whitelisted
     * variables (4 bytes or more), blanked out of every stderr line. */
    char **redact;
    size_t n_redact;
};

/* Requests a corking thread sent and stdin has not had yet (ABI 1.6
 * cork, stdio_write.c): their lines, each with its LF, and where each
 * ends.  The write token's holder only. */
struct stdio_held {
    char *buf;
    size_t len, cap;
    struct stdio_held_msg {
        int64_t id;
        size_t end; /* offset just past its LF */
    } *msg;
    size_t n, cap_msg;
    aur_deadline dl; /* the earliest of their deadlines */
};

/*
 * One App connection.  The core may call send from several threads; the
 * write token (writing, under mu) serialises them while still letting a
 * waiting sender honour its own deadline.
 */
struct aur_conn {
    struct stdio_state *st; /* borrowed */
    const struct aur_cfg *endpoint; /* borrowed: the host's, which a
                                       prepare named (stdio_warm.c) */
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
    bool closing;      /* (mu) stop or close began: no more sends */
    bool stop_pending; /* (mu) stop came while a send held the token */
    aur_deadline stop_dl; /* (mu) ... and its deadline */
    struct stdio_child *child; /* token holder only; NULL after a failed
                                  reopen */
    struct stdio_held held;    /* token holder only */
    bool held_any;             /* (mu) held.n > 0, as the last holder left */
    aur_deadline held_dl;      /* (mu) ... and held.dl (stdio_cork) */
};

/* ---- stdio_spawn.c ------------------------------------------------- */

/* Spawn the endpoint's command and start its I/O thread; the exec may
 * take until dl (the App's one startup deadline).  *out only on AUR_OK;
 * on failure nothing is left running and no sink call is made. */
int stdio_child_start(struct aur_conn *c, struct stdio_child **out,
                      aur_deadline dl, struct aur_error *err);

/* Begin ending the child without waiting: close its stdin and hand the
 * escalation toward dl to its supervisor.  Once; any later call, and
 * stdio_child_stop, go on from there.  Only when no write is under way
 * (the caller holds or has settled the write token). */
void stdio_child_begin_stop(struct stdio_child *ch, aur_deadline dl);
/* Stop sink calls, close stdin, escalate (wait, SIGTERM, SIGKILL of
 * everything the App started, through its supervisor) within dl as
 * documented in stdio_plugin.c, reap, join the I/O thread, remove the
 * App's cgroup and free ch.  Bounded even when dl has passed. */
void stdio_child_stop(struct stdio_child *ch, aur_deadline dl);

/* ---- stdio_exec.c -------------------------------------------------- */

/* What the supervisor works from. */
struct stdio_shim_args {
    const char *path;           /* resolved command */
    char *const *argv, *const *envp;
    const char *cwd;            /* NULL: the host's */
    int fd_in, fd_out, fd_err;  /* the App's 0, 1, 2 */
    int fd_status;              /* errno of a failed start, CLOEXEC */
    int fd_life;                /* read end of the host's lifeline */
    int cg_procs, cg_kill, cg_events, cg_dir; /* -1: no cgroup */
    bool cg_required;           /* a cgroup join failure fails the start */
    pid_t host;                 /* the process that started us */
    char title[64];             /* "aur-contain <package>" */
    char cg_name[64];
};

/* One App start, filled by the caller; everything is borrowed and must
 * outlive stdio_spawner_run. */
struct stdio_exec_job {
    char *const *argv, *const *envp;
    const char *cwd;           /* NULL: the host's */
    const char *title;         /* the supervisor's process title (package) */
    int fd_in, fd_out, fd_err; /* become the App's 0, 1, 2 */
    int64_t wait_ms;           /* for the exec: what is left of the deadline */
    pid_t pid;                 /* out: the supervisor, its own group leader */
    struct stdio_contain ct;   /* out: the App's containment handle */
    const char *step;          /* out, on failure: what failed ("create the
                                  status pipe", ...), static text */
    /* private to stdio_exec.c and stdio_fdpass.c */
    char *path;
    int st_r, life_w;             /* the status pipe, the lifeline */
    struct stdio_shim_args a;     /* what the supervisor was given */
};

/* [transport-stdio] containment = auto | cgroup | process. */
enum stdio_contain_mode {
    STDIO_CONTAIN_AUTO,    /* a cgroup per App when the host may make one */
    STDIO_CONTAIN_CGROUP,  /* ... or fail: init, and any App it cannot place */
    STDIO_CONTAIN_PROCESS  /* the supervisor alone, cgroupfs untouched */
};

/* The spawner: stdio_exec.c makes it and does the work of a start;
 * stdio_fdpass.c runs its thread and the socket to it. */
struct stdio_spawner {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC */
    pthread_t thread;
    bool running;
    bool stop;                  /* (mu) destroy asked the thread to end */
    bool ready;                 /* (mu) the thread has set up its table */
    bool own_table;             /* (mu) ... a table of its own */
    bool busy;                  /* (mu) an opener holds the socket */
    uint64_t seq;               /* (mu) the last request's number */
    uint64_t live;              /* (mu) the request whose opener still
                                   waits for it, 0: none */
    int sock;                   /* the openers' end (host's table) */
    int sock_sp;                /* the spawner's end in the host's table:
                                   closed once the thread has its own */
    /* Set at create, then the spawner thread's. */
    enum stdio_contain_mode mode;
    int cg_base;      /* our own cgroup directory, -1: none; the Apps'
                         cgroups borrow it until destroy (host's table) */
    int cg_own;       /* the same directory in the spawner's table */
    bool cg_off;      /* making cgroups there was refused: no more */
    unsigned cg_seq;  /* names of the Apps' cgroups */
    char *supervisor; /* the supervisor program's path (NULL: unknown) */
    bool supervisor_ok; /* ... and it is there, executable */
};

/* stdio_job.c, on the spawner thread.  start: the App's cgroup and the
 * supervisor's spawn from j->fd_in/out/err and j->title, nothing that
 * waits on the App; 0 (j->pid, j->st_r, j->life_w and j->a's cgroup
 * set) or an errno, j->step naming the step, nothing left open.  close:
 * what is left of a start that went wrong or is done, its cgroup
 * removed.  drop: the descriptors only (the cgroup is the opener's). */
int stdio_job_start(struct stdio_spawner *sp, struct stdio_exec_job *j);
void stdio_job_close(struct stdio_exec_job *j);
void stdio_job_drop(struct stdio_exec_job *j);
/* stdio_job.c, either thread: a new cgroup for an App under base (our
 * cgroup directory in the calling thread's table), its name unique. */
int stdio_job_cgroup(struct stdio_spawner *sp, int base,
                     struct stdio_shim_args *a);
/* stdio_fdpass.c, on the opening thread: the App's pipe ends to the
 * spawner thread (started on first use), the supervisor's descriptors
 * back into our table, before until (stdio_mono_ms).  0 (j->pid,
 * j->st_r, j->life_w and j->a's cgroup set) or an errno, j->step naming
 * the step, nothing left open or running. */
int stdio_spawner_exchange(struct stdio_spawner *sp,
                           struct stdio_exec_job *j, int64_t until);
/* Stop and join the thread, undo the starts nobody took and close the
 * socket; no exchange may be in progress. */
void stdio_spawner_halt(struct stdio_spawner *sp);

/* Create the spawner (its thread starts on the first run), reading the
 * containment key of cfg (may be NULL).  AUR_OK, AUR_E_CONFIG (bad value,
 * or cgroup asked for and unavailable: err says why) or AUR_E_NOMEM. */
int stdio_spawner_create(struct stdio_spawner **out,
                         const struct aur_host *host,
                         const struct aur_cfg *cfg, struct aur_error *err);
/* Stop and join the thread; no run may be in progress.  NULL is a no-op. */
void stdio_spawner_destroy(struct stdio_spawner *sp);
/* Resolve command against the host's PATH and start it under a
 * supervisor spawned by the spawner thread (the exec is awaited on the
 * calling thread; stdio_contain.c): the App gets
 * PR_SET_PDEATHSIG(SIGKILL) tied to its supervisor, a new process group,
 * default signal dispositions, only fds 0..2 open and, when available,
 * its own cgroup.  Any thread; serialised, each wait bounded by
 * j->wait_ms (at least 100 ms).  0 (j->pid and j->ct set) or the errno
 * of the step that failed, j->step naming it (ELIBACC: no supervisor
 * program; ETIMEDOUT: the spawner thread or the exec took too long).
 * pre (NULL: none): a begun start for these pipes (stdio_spawner_begin,
 * moved in: stdio_spawner_run owns it, whatever it returns). */
int stdio_spawner_run(struct stdio_spawner *sp, const char *command,
                      struct stdio_exec_job *j,
                      const struct stdio_exec_job *pre);
/* pipe2(O_CLOEXEC) with neither end on 0..2 (the App's ends are dup2'ed
 * there): one of the App's pipes.  0 or an errno. */
int stdio_pipe_high(int fds[2]);
/* The first half of a run: the supervisor spawned for j's pipes, waiting
 * for its frame, before until (stdio_mono_ms).  0 (j->pid, j->st_r,
 * j->life_w and j->a set: a pre for stdio_spawner_run, which then owns
 * it) or an errno, j->step naming the step, nothing left. */
int stdio_spawner_begin(struct stdio_spawner *sp, struct stdio_exec_job *j,
                        int64_t until);
/* Undo a begun start: its cgroup killed, its supervisor killed and
 * reaped (and with it an App it forked), its descriptors closed, its
 * cgroup removed. */
void stdio_spawner_undo(struct stdio_exec_job *j);
/* The supervisor program's path, for the error of a start that failed
 * with ELIBACC (it is missing or not executable). */
const char *stdio_spawner_supervisor(const struct stdio_spawner *sp);

/* ---- stdio_warm.c -------------------------------------------------- */

/* A start prepared before its open (ABI 1.7 prepare): the host's ends of
 * the App's pipes and the supervisor waiting for its frame. */
struct stdio_warm {
    const struct aur_cfg *endpoint; /* borrowed: the host's */
    int in_w, out_r, err_r;         /* our ends of the App's 0, 1, 2 */
    struct stdio_exec_job job;      /* a pre for stdio_spawner_run */
};

/* The prepare and unprepare hooks (the ABI's contract). */
void stdio_prepare(void *state, const struct aur_cfg *endpoint);
void stdio_unprepare(void *state, const struct aur_cfg *endpoint);
/* The start prepared for endpoint, moved into *out (then the caller owns
 * it: stdio_spawner_run, or stdio_warm_undo); false when there is none. */
bool stdio_warm_take(struct stdio_state *st, const struct aur_cfg *endpoint,
                     struct stdio_warm *out);
/* Undo a prepared start: supervisor killed and reaped, all closed. */
void stdio_warm_undo(struct stdio_warm *w);
/* At fini: undo what no open took. */
void stdio_warm_fini(struct stdio_state *st);

/* ---- stdio_fdpass.c ----------------------------------------------- */

/* Most descriptors one message carries. */
#define STDIO_FDPASS_MAX 4

/* Send the len bytes of msg and n descriptors fds (still ours: the
 * receiver gets copies) as one packet on the SOCK_SEQPACKET socket s,
 * waiting for room until until (stdio_mono_ms; -1: no bound).  0,
 * ETIMEDOUT, or an errno (EPIPE: the other end is gone); never SIGPIPE. */
int stdio_fd_send(int s, const void *msg, size_t len, const int *fds,
                  size_t n, int64_t until);
/* Receive one packet of exactly len bytes into msg and up to n
 * descriptors (close-on-exec) into fds, the rest -1, waiting until until
 * (as above).  0; or EMFILE: msg arrived but its descriptors did not all
 * fit in our table; or ETIMEDOUT, EPIPE (end of file), EPROTO (not len
 * bytes) or an errno.  On any error no received descriptor is left
 * open and fds are all -1. */
int stdio_fd_recv(int s, void *msg, size_t len, int *fds, size_t n,
                  int64_t until);
/* Give the calling thread a descriptor table of its own holding only
 * keep[0..n) (moved to the lowest numbers from 3 up: keep is updated)
 * and /dev/null on 0, 1 and 2.  false: the kernel (or a seccomp filter)
 * refused both close_range(CLOSE_RANGE_UNSHARE) and unshare(CLONE_FILES),
 * or this is a ThreadSanitizer build: the thread still shares the
 * process's table and nothing changed. */
bool stdio_fd_own_table(int *keep, size_t n);

/* ---- stdio_contain.c, stdio_supervisor.c: the supervisor ----------- */

/* The supervisor is its own program, "aur-contain" beside the plugin
 * (STDIO_SUPERVISOR), started with posix_spawn.  Its command line:
 *   aur-contain TITLE HOSTPID IN OUT ERR STATUS LIFE CGPROCS CGKILL
 *               CGEVENTS CGDIR CGNAME
 * (descriptor numbers, -1 for none; CGNAME the App's cgroup in CGDIR, ""
 * for none: on the command line, so that a supervisor whose host dies
 * before its frame can still remove it).  Everything else, which may be
 * secret (the App's environment), comes over LIFE as one frame the host
 * writes when the App opens: a 4-byte length in host byte order, then
 * NUL-ended fields: path, cwd ("" = the host's), cg_required ("0"/"1"),
 * argc, argv[0..argc), envc, envp[0..envc). */
#define STDIO_SUPERVISOR "aur-contain"
/* stdio_exec_job.step when the supervisor was gone before its frame:
 * the start failed and the App never ran (stdio_spawn.c says so). */
#define STDIO_STEP_LOST_FRAME "hand the supervisor its frame (it had exited)"
#define STDIO_FRAME_MAX ((size_t)16 << 20)
/* The host's stop on the lifeline, after the frame: STDIO_STOP_MSG, then
 * two uint32 (host byte order): ms from now to SIGTERM, ms to the kill. */
#define STDIO_STOP_MSG 'S'
#define STDIO_STOP_LEN (1 + 2 * sizeof(uint32_t))


/* The supervisor's setup once its arguments are read, before its frame
 * (which a prepared start waits for): signals, parent-death signal,
 * subreaper, its descriptors at their slots (a->fd_status and a->fd_life
 * are FD_STATUS and FD_LIFE afterwards).  On failure it reports on the
 * status pipe and exits 127. */
void stdio_shim_setup(struct stdio_shim_args *a);
/* The supervisor's end when its frame never comes (the host is gone):
 * it removes the App's cgroup, which nothing was forked into, since no
 * one else will. */
void stdio_shim_abandon(const struct stdio_shim_args *a);
/* The supervisor's life once its frame is read: the App forked, then
 * watched until it ends.  Never returns. */
_Noreturn void stdio_shim_main(const struct stdio_shim_args *a);

/* ---- stdio_proc.c: /proc, prctl and the clock for the supervisor --- */

/* prctl as the bare system call. */
int stdio_shim_prctl(int option, unsigned long arg);

/* Decimal digits of v at buf (no NUL); returns the length (at most 20). */
size_t stdio_fmt_dec(char *buf, unsigned long v);

/* A number at *p in base 10 or 16, *p advanced past it; false if none.
 * /proc/<pid>/stat (pid 0: our own) after "(comm) " in buf, NULL if the
 * process is gone. */
bool stdio_parse_num(const char **p, int base, unsigned long *out);
const char *stdio_read_stat(long pid, char *buf, size_t size);

/* Monotonic milliseconds (async-signal-safe: clock_gettime only). */
int64_t stdio_mono_ms(void);

/* Our child pid: 1 running, 0 exited and not yet reaped, -1 no child of
 * ours to reap (reaped elsewhere: the pid may be another process's). */
int stdio_child_state(pid_t pid);
/* SIGKILL our child pid and reap it (a supervisor that never got to fork
 * its App: nothing else of it to wait for); nothing when it is no longer
 * a child of ours to reap (then the pid may be another process's). */
void stdio_kill_reap(pid_t pid);

/* ---- stdio_descend.c: the supervisor's descendants ----------------- */

/* One supervisor's walks (its own memory; single-threaded). */
struct stdio_descend_table;
struct stdio_descend {
    long self;                         /* the supervisor's pid */
    struct stdio_descend_table *table; /* mapped at the first walk */
    bool no_table;                     /* the mapping failed */
    bool no_children_files; /* a kernel without CONFIG_PROC_CHILDREN */
};

/* Signal sig to every live descendant of d->self outside process group
 * skip (0: none; the caller signals that group itself); returns how many
 * live descendants there were.  Without memory for a walk only our
 * direct children are found; without /proc, none.  A process born or
 * moved during the walk may be missed: callers repeat until no child is
 * left. */
int stdio_descend_signal(struct stdio_descend *d, int sig, long skip);

/* ---- stdio_cgtree.c (the supervisor's and the host's) -------------- */

/* rmdir of the cgroup dir/name and of every cgroup below it, deepest
 * first (16 levels at most).  0 (also when it was gone), or an errno:
 * EBUSY while a process is in it or below, ELOOP when the App nested
 * cgroups deeper than that. */
int stdio_cgroup_remove(int dir, const char *name);

/* ---- stdio_cgroup.c ------------------------------------------------ */

/* Our own cgroup v2 directory (O_DIRECTORY), or -1 with *why set. */
int stdio_cgroup_base(const char **why);
/* Make "aurora-mcp-<pid>-<seq>" under base and open its files for a
 * supervisor (a->cg_*, a->cg_name; cg_dir is base itself, borrowed: a
 * descriptor of the same directory per App cost every later spawn's
 * exec one more to close).  0 or an errno, with nothing left behind. */
int stdio_cgroup_make(int base, unsigned seq, struct stdio_shim_args *a);
/* Remove the empty cgroups of hosts that are gone (SIGKILL leaves one
 * behind when the supervisor could not remove it). */
void stdio_cgroup_sweep(int base);

/* ct with nothing open. */
void stdio_contain_clear(struct stdio_contain *ct);
/* Host side of the escalation.  term: SIGTERM to the supervisor, which
 * relays it to the App's group and every process the App started.
 * kill: SIGCONT and SIGUSR1: it kills all of them, reaps them and exits
 * with the App's status.  backstop: cgroup.kill, and SIGKILL to the
 * supervisor's group (the App then dies of its parent-death signal). */
/* stop: the whole escalation, handed to the supervisor to run on its own
 * clock (SIGTERM after term_ms, the kill after kill_ms).  false: it could
 * not be told (gone already); the host then escalates itself. */
bool stdio_contain_stop(const struct stdio_contain *ct, uint32_t term_ms,
                        uint32_t kill_ms);
void stdio_contain_term(pid_t shim);
void stdio_contain_kill(pid_t shim);
void stdio_contain_backstop(const struct stdio_contain *ct, pid_t shim);
/* After the supervisor is reaped: close the lifeline, remove the App's
 * cgroup and any below it, killing what is left in them, until the
 * removal succeeds or until (stdio_mono_ms) passes.  0, or the errno of
 * the removal (stdio_cgroup_remove: EBUSY, a process is still dying). */
int stdio_contain_release(struct stdio_contain *ct, int64_t until);
/* How long a SIGKILLed process may take to be gone before close gives up
 * on it and says so.  Dying is the kernel's work and takes its time: on
 * a 2-CPU machine short of CPU and I/O, 200 Apps under ASan closed at
 * once were not all gone 4 s after their EOF (CI); only a process stuck
 * in uninterruptible sleep takes longer than this. */
#define STDIO_DEATH_MS 10000

/* ---- stdio_io.c ---------------------------------------------------- */

/* The I/O thread body; arg is the struct stdio_child. */
void *stdio_io_main(void *arg);

/* Split stdout bytes into frames and deliver them; the caller owns stdout
 * (out_owner). */
void stdio_stdout_bytes(struct stdio_child *ch, const char *p, size_t n);
/* Tell the host that the request with this id ended without a response
 * (end borrowed), unless the connection's sink calls are over.  Any
 * thread. */
void stdio_request_ended(struct stdio_child *ch, int64_t id,
                         const struct aur_request_end *end);

/* How long an exit waits for stdout EOF (and EOF for the exit) so the last
 * frames are delivered before on_closed, and the exit status is known. */
#define STDIO_LINGER_MS 200

/* ---- stdio_write.c ------------------------------------------------- */

/* Write buf[0..len) plus "\n" to the child's stdin before dl.  Caller holds
 * the write token.  AUR_E_TIMEOUT, AUR_E_CLOSED (child gone, stdin closed
 * or framing lost) or AUR_E_IO.  Never raises SIGPIPE. */
int stdio_child_write(struct stdio_child *ch, const char *buf, size_t len,
                      aur_deadline dl, struct aur_error *err);

/* A held request is at most this long, and all of them together too. */
#define STDIO_HELD_MAX (64 * 1024)
/* Keep request buf[0..len) in h instead of writing it (the caller holds
 * the write token and corks the connection).  AUR_OK: kept, its id
 * awaited.  AUR_DECLINE: not kept (it does not fit, it is not a request
 * with an integer id, stdin is gone, or nothing could report its end):
 * write it now, after what h holds. */
int stdio_held_add(struct stdio_child *ch, struct stdio_held *h,
                   const char *buf, size_t len, aur_deadline dl);
/* Write what h holds, in one write where stdin takes it (the caller holds
 * the write token; closing: write nothing).  A request not written whole
 * ends through the sink's on_request_end: delivered 0 when none of its
 * bytes left.  h is empty afterwards. */
void stdio_held_flush(struct stdio_child *ch, struct stdio_held *h,
                      bool closing);
/* Whether what h holds surely fits in the App's stdin pipe now (it is
 * empty), so a flush writes it without waiting (token holder). */
bool stdio_held_fits(const struct stdio_child *ch, const struct stdio_held *h);
void stdio_held_free(struct stdio_held *h);

/* ---- stdio_plugin.c ------------------------------------------------ */

/* This thread is about to wait on c (for its write token, or for room in
 * its stdin): the other connections it corks write what they hold where
 * that needs no wait (AUR_CORK_TRY), so an App that does not read holds
 * up no other App's held requests.  Cheap when this thread corks none. */
void stdio_cork_others(const struct aur_conn *c);

/* ---- stdio_stderr.c (the I/O thread) -------------------------------- */

/* Read stderr once into chunk (size bytes) and log its complete lines.
 * true: stderr ended (its last line is out; the caller sets err_done). */
bool stdio_stderr_read(struct stdio_child *ch, char *chunk, size_t size);
/* Log the line stderr has not finished, if any. */
void stdio_stderr_flush(struct stdio_child *ch);
/* true: a warning about a malformed frame may be logged now. */
bool stdio_warn_take(struct stdio_child *ch);
/* Log how many lines the budgets held back, if any. */
void stdio_log_held_back(struct stdio_child *ch);

/* After a caller found its reply, the I/O thread leaves stdout to the
 * callers this long (ms), so a stream of calls does not hand it back and
 * forth; it checks again each time. */
#define STDIO_PARK_MS 2

/* ---- stdio_ids.c --------------------------------------------------- */

/* The integer id of a request as the core writes it ({"jsonrpc":"2.0",
 * "id":N,"method":...), and whether it is a tools/call. */
bool stdio_request_id(const char *buf, size_t len, int64_t *id,
                      bool *is_call);
/* The ids of requests awaiting a reply; mu held.  add: when full (or out
 * of memory) the id is not remembered, so no assist happens. */
bool stdio_ids_has(const struct stdio_child *ch, int64_t id);
void stdio_ids_add(struct stdio_child *ch, int64_t id);
void stdio_ids_remove(struct stdio_child *ch, int64_t id);
/* The ids of held requests none of whose bytes were handed to write()
 * yet; mu held.  add: false when full (or out of memory): then the
 * request is not held. */
bool stdio_unsent_add(struct stdio_child *ch, int64_t id);
void stdio_unsent_remove(struct stdio_child *ch, int64_t id);
/* Whether the frame buf[0..len) may be taken by the host for an answer
 * to an unsent request (then it must be dropped).  Parses; ask only
 * while n_unsent > 0.  Takes mu. */
bool stdio_answers_unsent(struct stdio_child *ch, const char *buf,
                          size_t len);
/* A response came for id (arg: the child), or msg (borrowed) is one:
 * forget its id.  Take mu. */
void stdio_response_seen(void *arg, int64_t id);
void stdio_note_response(struct stdio_child *ch, struct json_object *msg);

/* ---- stdio_assist.c ------------------------------------------------ */

/* After a successful stdio_child_write of buf, without the write token:
 * if buf is a tools/call and the only request waiting for a reply, read
 * stdout on this thread for a short while so the reply needs no hand-off
 * from the I/O thread.  Any thread; never concurrent with stop. */
void stdio_child_assist(struct stdio_child *ch, const char *buf, size_t len,
                        aur_deadline dl);
/* After a request nobody assists: the I/O thread reads stdout again now,
 * not when its park ends.  Take mu. */
void stdio_unpark(struct stdio_child *ch);

/* pthread_cond_timedwait on a CLOCK_MONOTONIC cond until host time
 * until_ms.  Returns false once until_ms has passed.  Caller loops on its
 * predicate. */
bool stdio_cond_wait(const struct aur_host *h, pthread_cond_t *cv,
                     pthread_mutex_t *mu, int64_t until_ms);


#endif /* AUR_STDIO_INT_H */
