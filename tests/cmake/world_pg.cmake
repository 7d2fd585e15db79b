# One World on PostgreSQL end to end (issue #21): four hosts sharing one
# database, a host killed mid-flood, the database restarted and away,
# TLS and the password variable, journal --after/--scope/--follow beside
# SQLite.  The test starts its own throwaway PostgreSQL
# (tests/support/pg.sh); it skips (77) only when the server programs are
# not installed, which CI installs (scripts/setup-debian.sh).  PROCESSORS
# 2: four hosts, their Apps and the server run at once.
if(TARGET aurora-mcp-cli AND TARGET aur-fixture-server
   AND TARGET ext-world-events AND TARGET transport-stdio)
  add_test(NAME world_pg_test
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/world_pg_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  set_tests_properties(world_pg_test PROPERTIES TIMEOUT 600
                       SKIP_RETURN_CODE 77 PROCESSORS 2)
endif()
