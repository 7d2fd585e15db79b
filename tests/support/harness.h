/*
 * harness.h - test support: throwaway config directories for the real
 * host, and small helpers to read what the servers logged.
 *
 * Ownership: every returned string is malloc'd and the caller frees it.
 * Threads: test-process only.
 */
#ifndef AUR_TEST_HARNESS_H
#define AUR_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

/* A new config dir with host.ini (plugins transport-stdio, the build's
 * plugin_dir, journal data/world.sqlite3, log_level warn). extra_host
 * lines are appended to [host] (NULL = none); mcp lines form [mcp]
 * (NULL = "enabled = true"). */
char *h_mkconfig(const char *extra_host, const char *mcp);

/* Write apps.d/<file> with an [app] section for package and a [stdio]
 * section running command with the given NULL-terminated args. */
void h_add_app(const char *dir, const char *file, const char *package,
               double timeout_s, const char *app_extra, const char *command,
               const char *const *args);

/* Write any file under dir (parents created). */
void h_write(const char *dir, const char *rel, const char *text);

/* Path of a file in the build tree / source tree (malloc'd). */
char *h_bin(const char *rel);
char *h_src(const char *rel);

/* The whole file, or NULL. */
char *h_slurp(const char *path);

/* Lines of a file that start with prefix. */
int h_count_lines(const char *path, const char *prefix);

/* Index (0-based) of the first line starting with prefix, or -1. */
int h_first_line(const char *path, const char *prefix);

/* Number of live processes whose command line contains marker
 * (zombies are not counted). */
int h_procs_with(const char *marker);

/* rm -rf dir (bounded to paths under /tmp). */
void h_rmtree(const char *dir);

#endif
