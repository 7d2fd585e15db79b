/*
 * cli.h - shared pieces of the aurora-mcp command line.  The CLI is a thin
 * client of the public API (<aurora/aur_host_jsonc.h>, which includes
 * <aurora/aur_host.h>); it touches nothing else of the core.
 */
#ifndef AUR_CLI_H
#define AUR_CLI_H

#include <aurora/aur_host_jsonc.h>

#include <stdbool.h>

enum {
    EXIT_OK = 0,
    EXIT_RUNTIME = 1,
    EXIT_USAGE = 2,
    EXIT_FAILED = 3,
    EXIT_UNKNOWN = 4,
};

/* ---- format.c ---- */

/* --format; AUTO is table on a terminal, JSON otherwise. */
enum cli_format { CLI_FORMAT_AUTO, CLI_FORMAT_JSON, CLI_FORMAT_TABLE };
extern enum cli_format cli_format;
/* true: print tables (the format asked for, or a terminal). */
bool cli_table(void);
/* The status document (check, discover, status) as tables; borrowed. */
void cli_print_status_table(struct json_object *doc);
/* A call's outcome: its status, then its content as the server wrote it. */
void cli_print_call_table(const struct aur_tool_output *o);
/* One journal commit (a parsed journal line) as a row; borrowed. */
void cli_print_journal_row(struct json_object *row);

/* ---- session.c: one host for one command (main thread only) ---- */

/* -v (+1) and -q (-1): log levels away from host.ini's. */
void cli_add_verbosity(int delta);
/* --app (only_these) or --disable: package borrowed (argv); false when
 * 256 of that kind are already there. */
bool cli_add_pick(const char *package, bool only_these);
/* Apply the verbosity and the picks to h (before start); EXIT_OK, or
 * EXIT_USAGE with the error object printed (an unknown package). */
int cli_apply_options(struct aur_mcp *h);
/* Create, apply the options and start a host; prints the error object on
 * failure and returns the exit code (EXIT_OK on success). */
int cli_start(const char *dir, struct aur_mcp **out);
/* Destroy a host cli_start made, detached from the signals first. */
void cli_destroy(struct aur_mcp *h);
/* SIGINT and SIGTERM go to a thread that cancels the host from now on
 * (before any other thread exists). */
void cli_signals_start(void);
/* End that thread; SIGINT and SIGTERM stay blocked in the calling thread
 * until it unblocks them.  Returns the first signal the thread took, 0 if
 * none. */
int cli_signals_stop(void);

/* ---- output.c ---- */

/* Print one JSON value as a line on stdout (and flush). */
void cli_print_json(struct json_object *v);

/* The startup-failure object {"error":{code,app,phase,message}}
 * (docs/error-codes.md). */
void cli_print_startup_error(const struct aur_startup_error *e);

/* {"status","content","observe","publish"} of a ToolOutput (transfer). */
struct json_object *cli_output_json(const struct aur_tool_output *o);

/* The serve answer line of a call, '\n' included: the bytes
 * cli_print_json would print for {"id":id,"result":cli_output_json(o)}.
 * id and o borrowed; the line is malloc'd (transfer), NULL when out of
 * memory.  id is printed as json-c prints it, so it must be one serve has
 * accepted (a string, a finite number or null: serve_request.c's id_ok),
 * never a non-finite double, which json-c prints as Infinity or NaN. */
char *cli_call_answer(struct json_object *id, const struct aur_tool_output *o,
                      size_t *len);

/* serve.c (with serve_pool.c and serve_lines.c: serve_int.h) */
int cli_serve(const char *dir);

/* serve_input.c: serve's stdin and the lines in it.  Owned by the thread
 * that holds serve's reader role. */
#define SERVE_MAX_LINE (64u << 20)
struct serve_input {
    char *buf; /* buffered input (transfer: the owner frees it) */
    size_t n, cap, off, scan;
    bool dropping; /* skipping the rest of a line over SERVE_MAX_LINE */
    bool eof;      /* read returned 0 (or failed): never read again */
    /* Asked (may be NULL) before the reader waits for more input: true
     * = return SERVE_INPUT_YIELD instead of waiting. */
    bool (*before_wait)(void *arg);
    void *before_wait_arg;
};
/* A line of more than SERVE_MAX_LINE bytes began: answer it once
 * (bad_request), then ask again; its rest is skipped. */
#define SERVE_INPUT_TOO_LONG 2
/* No line is buffered and before_wait asked not to wait yet. */
#define SERVE_INPUT_YIELD 3
/*
 * The next non-empty line of stdin (without LF or a final CR) into *line
 * (in->buf, valid until the next call) and *len; at EOF a last line
 * without LF counts too.  1 = a line; SERVE_INPUT_TOO_LONG;
 * SERVE_INPUT_YIELD; 0 = EOF or
 * an error (in->eof set); -1 = one of wake[0..nwake) is readable, or
 * nothing came within timeout_ms (-1: no limit), or *budget bytes have
 * been read (budget NULL: no limit; with *budget 0 only an end of input
 * already there is read).
 */
int serve_input_next(struct serve_input *in, const char **line, size_t *len,
                     const int *wake, int nwake, int timeout_ms,
                     size_t *budget);
/* Whether the buffer already holds the end of a line. */
bool serve_input_buffered(const struct serve_input *in);

/* ---- serve_request.c: the grammar of one serve request line ---- */

enum serve_op {
    SERVE_OP_UNKNOWN,
    SERVE_OP_CALL,
    SERVE_OP_STATUS,
    SERVE_OP_TOOLS,
    SERVE_OP_SHUTDOWN,
};

struct serve_request {
    struct json_object *root; /* the parsed line, or the fast path's id
                               * (owned) */
    struct json_object *id;   /* in root; NULL: answer with "id":null */
    enum serve_op op;
    const char *tool;         /* a call's, in root or tool_text */
    struct json_object *args; /* a call's, in root or own_args; NULL: {} */
    struct json_object *own_args; /* the fast path's arguments (owned) */
    char tool_text[256];      /* the fast path's tool id */
};

/* Read one line into *r (clear it with serve_request_clear, whatever the
 * result).  NULL when the line is a request serve can act on; else the
 * error code to answer ("bad_request" or "unknown_op") with its message in
 * msg (size bytes) and r->id the id to answer with.  envelope_only checks
 * only what any answer needs (a JSON object, an echoable "id", a string
 * "op"), as for a line that will be answered shutting_down. */
const char *serve_request_parse(const char *line, size_t len,
                                bool envelope_only, struct serve_request *r,
                                char *msg, size_t size);
void serve_request_clear(struct serve_request *r);
/* The two ways serve_request_parse reads a line (not envelope_only),
 * apart, for the fuzz target that holds one to the other: the fast path
 * (true: a call read into *r; false: declined, *r empty) and the general
 * path (serve_request_parse's contract). */
bool serve_request_fast(const char *line, size_t len, struct serve_request *r);
const char *serve_request_parse_tree(const char *line, size_t len,
                                     bool envelope_only,
                                     struct serve_request *r, char *msg,
                                     size_t size);

/* doctor.c: every enabled App started alone; json: JSON even on a
 * terminal. */
int cli_doctor(const char *dir, bool json);

/* import.c: FILE's MCP server list into dir (created if need be). */
int cli_import(const char *file, const char *dir);

#endif
