# The world journal's PostgreSQL backend (lib/journal/pg), through its ops
# table: the test dlopens the built module as the core does and starts a
# throwaway server with tests/support/pg.sh (exit 77, skipped, when no
# PostgreSQL server binaries are installed).  RESOURCE_LOCK: tests that
# start servers share the machine's ports and shared memory.
if(TARGET journal-postgresql)
  aur_add_check(check_journal_pg_ops
                SOURCES lib/journal/check_journal_pg_ops.c
                        lib/journal/check_journal_pg_faults.c
                        lib/journal/pg_ops_fixture.c
                LIBS ${CMAKE_DL_LIBS}
                DEPENDS journal-postgresql
                TIMEOUT 240)
  target_compile_definitions(check_journal_pg_ops PRIVATE
    AUR_PG_MODULE="$<TARGET_FILE:journal-postgresql>"
    AUR_PG_SH="${CMAKE_SOURCE_DIR}/tests/support/pg.sh"
    AUR_MKCERTS="${CMAKE_SOURCE_DIR}/tests/support/mkcerts.sh")
  set_tests_properties(check_journal_pg_ops PROPERTIES
    LABELS "journal;postgresql" RESOURCE_LOCK postgresql
    SKIP_RETURN_CODE 77)
endif()
