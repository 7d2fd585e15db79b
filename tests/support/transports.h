/*
 * transports.h - this build's transport plugins as config-loader defs,
 * for suites of the config module alone.  Loaded once per process and
 * never unloaded; not thread-safe on first call (call it from the test's
 * main thread).
 */
#ifndef AUR_TEST_TRANSPORTS_H
#define AUR_TEST_TRANSPORTS_H

#include "config.h"

/* transport-stdio and transport-http; aborts when they cannot be
 * loaded (the build makes them before the tests). */
const struct aur__transport_def *test_transports(size_t *n);

#endif
