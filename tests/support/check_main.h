/*
 * check_main.h - the main() of every Check suite: Check's default fork
 * mode (each test in its own process, so a crash or a leaked thread stays
 * in it; CK_FORK=no still turns it off for a debugger), normal output, and
 * EXIT_FAILURE if anything failed.  Header-only, so the unit suites need
 * no harness library.
 */
#ifndef AUR_TEST_CHECK_MAIN_H
#define AUR_TEST_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

/* Runs s and, if more is not NULL, the suite more after it. */
static inline int aur_check_main(Suite *s, Suite *more)
{
    SRunner *sr = srunner_create(s);
    int failed;

    if (more)
        srunner_add_suite(sr, more);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
