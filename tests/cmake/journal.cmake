# The world journal: one suite, run against both backends.  check_journal
# uses a SQLite file; check_journal_pg runs the same binary against a
# PostgreSQL that tests/support/with_pg.sh starts for it (a database per
# test), with the module the library loads on first use.
pkg_check_modules(AUR_TEST_PQ REQUIRED IMPORTED_TARGET libpq)
aur_add_check(check_journal SOURCES lib/journal/check_journal.c
              lib/journal/check_journal_batch.c
              lib/journal/check_journal_sqlite_schema.c
              lib/journal/check_journal_sqlite_prime.c
              lib/journal/journal_fixture.c
              LIBS aur_journal aur_jsonx PkgConfig::AUR_TEST_PQ
              DEPENDS journal-postgresql
              TIMEOUT 60)
add_test(NAME check_journal_pg
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/with_pg.sh
                 $<TARGET_FILE:check_journal>)
set_tests_properties(check_journal_pg PROPERTIES TIMEOUT 240
                     RESOURCE_LOCK postgresql SKIP_RETURN_CODE 77)
