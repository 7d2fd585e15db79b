/*
 * config_fixture.h - check_config's fixture: each test writes its config
 * into a fresh mkdtemp directory (tmp; the checked fixture runs in the
 * forked child) and it is removed afterwards; the texts of a complete
 * host.ini and of stdio and HTTP App files, with their line numbers.
 */
#ifndef AUR_TEST_CONFIG_FIXTURE_H
#define AUR_TEST_CONFIG_FIXTURE_H

#include "config.h"

#include <limits.h>
#include <stddef.h>

extern char tmp[PATH_MAX];

/* Check fixtures: make tmp; remove it with everything in it. */
void setup(void);
void teardown(void);
/* tmp/rel into out. */
void path_of(char *out, size_t n, const char *rel);
/* Write tmp/rel, creating its parent directories. */
void put(const char *rel, const char *text);
void mkdir_rel(const char *rel);
void unlink_rel(const char *rel);
void symlink_rel(const char *target, const char *rel);
/* The real transport plugins as loader defs (support/transports.c). */
const struct aur__transport_def *T(void);
size_t NT(void);
/* aur__config_load(tmp) that must succeed (transfer). */
struct aur__config *load_ok(void);

#define HOST_ALL                                                             \
    "[host]\n"                                                               \
    "plugins = transport-stdio transport-http ext-world-events\n"            \
    "journal = data/world.sqlite3\n"                                         \
    "\n"                                                                     \
    "[mcp]\n"                                                                \
    "enabled = true\n"

/* Lines: 1 [app], 2 package, 3 enabled, 4 transport, 5 timeout_seconds. */
#define APP_HEAD(pkg, enabled, transport, timeout)                           \
    "[app]\n"                                                                \
    "package = " pkg "\n"                                                    \
    "enabled = " enabled "\n"                                                \
    "transport = " transport "\n"                                            \
    "timeout_seconds = " timeout "\n"

/* Lines 6..11 after APP_HEAD: blank, [stdio], command, arg, dir, env. */
#define STDIO_TAIL                                                           \
    "\n"                                                                     \
    "[stdio]\n"                                                              \
    "command = node\n"                                                       \
    "arg = server.mjs\n"                                                     \
    "working_dir = srv\n"                                                    \
    "env = CLOCK_TOKEN\n"

#define APP_STDIO APP_HEAD("org.example.clock", "true", "stdio", "30") \
    STDIO_TAIL

/* Lines 6..8 after APP_HEAD: blank, [http], url. */
#define HTTP_TAIL "\n[http]\nurl = https://mcp.example.com/mcp\n"
#define APP_HTTP                                                             \
    APP_HEAD("org.example.web", "true", "streamable_http", "5") HTTP_TAIL

#endif
