/*
 * check_startup.h - the fixture check_startup.c and check_startup_world.c
 * share: a fresh config directory per test (dir), our fixture server
 * (fixture) logging to logpath.  One test at a time (Check forks each).
 */
#ifndef AUR_TEST_CHECK_STARTUP_H
#define AUR_TEST_CHECK_STARTUP_H

#include <aurora/aur_host.h>
#include <check.h>

extern char *dir;
extern char *fixture;
extern char *logpath;

void setup(void);
void teardown(void);
/* The fixture with --log <logpath> and then the given options. */
void add_fixture(const char *file, const char *pkg, double timeout,
                 const char *const *opts);
/* A fresh config directory: extra_host lines added to [host] (NULL =
 * none), [mcp] holding mcp. */
void remake_config(const char *extra_host, const char *mcp);
int start(struct aur_mcp **h, struct aur_startup_error *serr);

/* check_startup_world.c's tests, added to tc. */
void startup_world_tests(TCase *tc);
/* check_startup_catalog.c's tests, added to tc. */
void startup_catalog_tests(TCase *tc);

#endif
