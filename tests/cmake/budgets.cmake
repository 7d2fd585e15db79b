# The per-App budgets (issue 8 item 2): notification rate, schema and
# description sizes, result size, and their config keys, through the
# embedding API against the fixture server.  aur_test_support comes from
# engine.cmake, included after this file (CMake resolves the name later).
if(TARGET aurora-mcp)
  aur_add_check(check_budgets SOURCES check_budgets.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio aur-fixture-server
                TIMEOUT 300)
endif()
