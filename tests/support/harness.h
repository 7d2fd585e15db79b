/*
 * harness.h - test support for the suites that run the real host
 * (libaurora-mcp): throwaway config directories, starting the host and
 * calling tools through the embedding API, small helpers to read what the
 * servers and the journal hold, and the Check runner.
 *
 * Ownership: every returned string is malloc'd and the caller frees it,
 * unless said otherwise.  Failures are Check assertions.
 * Threads: test-process only.
 */
#ifndef AUR_TEST_HARNESS_H
#define AUR_TEST_HARNESS_H

#include <aurora/aur_host_jsonc.h>

#include <check.h>

#include "check_main.h"
#include "slack.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* A new config dir with host.ini (plugins transport-stdio, the build's
 * plugin_dir, journal data/world.sqlite3, log_level warn). extra_host
 * lines are appended to [host] (NULL = none); mcp lines form [mcp]
 * (NULL = "enabled = true"). */
char *h_mkconfig(const char *extra_host, const char *mcp);

/* The usual fixture of a suite that runs our C fixture server: a new
 * config dir (h_mkconfig(NULL, NULL)), the server's path, and
 * <dir>/server.log for its --log.  _free removes the dir and frees all
 * three (NULLs them). */
void h_fixture_env(char **dir, char **fixture, char **log);
void h_fixture_env_free(char **dir, char **fixture, char **log);

/* apps.d/a.ini: our fixture server as App package (modern era, ntools
 * tools, NULL = 1, logging to log); the host created, and started too
 * unless create_only (both asserted).  The caller destroys it. */
struct aur_mcp *h_fixture_host(const char *dir, const char *fixture,
                               const char *log, const char *package,
                               const char *ntools, bool create_only);

/* Write apps.d/<file> with an [app] section for package and a [stdio]
 * section running command with the given NULL-terminated args. */
void h_add_app(const char *dir, const char *file, const char *package,
               double timeout_s, const char *app_extra, const char *command,
               const char *const *args);

/* h_add_app whose args are [script,] "--log", log, then opts (NULL or
 * NULL-terminated; asserts they fit).  script NULL = none. */
void h_add_logged_app(const char *dir, const char *file, const char *package,
                      double timeout_s, const char *app_extra,
                      const char *command, const char *script,
                      const char *log, const char *const *opts);

/* Write any file under dir (parents created). */
void h_write(const char *dir, const char *rel, const char *text);

/* dir/host.ini as h_mkconfig writes it, with the host's log at debug in
 * dir/host.log; returns that path (malloc'd). */
char *h_debug_host(const char *dir);

/* Path of a file in the build tree / source tree (malloc'd). */
char *h_bin(const char *rel);
char *h_src(const char *rel);

/* The whole file, or NULL. */
char *h_slurp(const char *path);

/* Lines of a file that start with prefix. */
int h_count_lines(const char *path, const char *prefix);

/* Index (0-based) of the first line starting with prefix, or -1. */
int h_first_line(const char *path, const char *prefix);
/* ... of the n-th such line (n from 1), or -1 when there are fewer. */
int h_nth_line(const char *path, const char *prefix, int n);

/* Number of live processes whose command line contains marker
 * (zombies are not counted). */
int h_procs_with(const char *marker);
/* Send sig to each of them; how many took it (0 = count only). */
int h_signal_procs_with(const char *marker, int sig);

/* rm -rf dir (bounded to paths under /tmp). */
void h_rmtree(const char *dir);

/* Asserts tests/peers/node_modules/<rel> exists ("run `npm ci`"). */
void h_need_peers(const char *rel);

/* CLOCK_MONOTONIC milliseconds. */
int64_t h_now_ms(void);
/* slack_ms (slack.h): ms stretched for slow runs such as valgrind, for
 * slack on upper time bounds and for deadlines a test needs to be met,
 * never for what a test asserts is enforced. */
int64_t h_slack(int64_t ms);

/* What fd says up to its first newline, waiting at most ms in all, into
 * buf (NUL-terminated; empty when nothing came).  For a peer's "PORT n"
 * line.  fd stays open. */
void h_read_line(int fd, char *buf, size_t size, int64_t ms);

/* Start argv (argv[0] looked up on PATH) in its own process group, its
 * stdin a pipe (*in_w, transfer: closing it asks a peer to exit), its
 * stderr into errpath (NULL: inherited), and wait at most ms for its
 * "PORT <n>" line; aborts the test, quoting errpath, when none comes.
 * Returns the port; *pid is the peer's (kill -pid to stop its group). */
int h_spawn_port_peer(const char *const *argv, const char *errpath,
                      int64_t ms, pid_t *pid, int *in_w);

/* aur_mcp_create on dir (asserted AUR_OK, *h set) then aur_mcp_start;
 * returns start's rc.  serr is cleared first.  The caller destroys *h. */
int h_start(const char *dir, struct aur_mcp **h,
            struct aur_startup_error *serr);

/* aur_mcp_call_jsonc of tool with args (JSON text, asserted to parse) and the
 * App's own timeout; *content = the output's content ("" if none). */
enum aur_call_status h_call(struct aur_mcp *h, const char *tool,
                            const char *args, char **content);

/* h_call, asserting its status and, unless content is NULL, that the
 * content is exactly content. */
void h_expect(struct aur_mcp *h, const char *tool, const char *args,
              enum aur_call_status status, const char *content);

/* The first App of the status document (transfer; asserted present). */
/* A call's scopes as {"observe":[...],"publish":[...]} (compact, no
 * slash escapes), or NULL when it has none (malloc'd). */
char *h_scopes_json(const struct aur_tool_output *out);

struct json_object *h_app_status(struct aur_mcp *h);
/* Its negotiated_version, "" if none (static buffer). */
const char *h_negotiated_version(struct aur_mcp *h);
/* Whether restart_required turned true within h_slack(ms), polled every
 * 20 ms. */
bool h_wait_restart_required(struct aur_mcp *h, int ms);

/* The string member key of o (borrowed), or NULL if absent or not a
 * string. */
const char *h_str(struct json_object *o, const char *key);

/* The journal under dir reads back and holds exactly the commit kinds
 * want (NULL-terminated, at most 16), in order. */
void h_journal_is(const char *dir, const char *const *want);


#endif
