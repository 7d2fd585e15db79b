# The per-App budgets (issue 8 item 2): notification rate, schema and
# description sizes, result size, and their config keys, through the
# embedding API against the fixture server.  aur_test_support (and
# aur_test_support_internal) come from engine.cmake, included after this file (CMake resolves the name later).
if(TARGET aurora-mcp)
  aur_add_check(check_budgets SOURCES lib/engine/check_budgets.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio aur-fixture-server
                TIMEOUT 300)
endif()

# What one App can make the host hold (issue "Hostile servers cannot
# exhaust the host", item 1): the parser's memory bound and compaction,
# the peak RSS of the host against a big catalog page, a costly page, a
# notification flood behind a busy dispatcher and big cursors, the log a
# stderr flood becomes, and max_app_memory_bytes (docs/budgets.md).
if(TARGET aurora-mcp)
  # Also the parser's and the log's internals: the static core.
  aur_add_check(check_memory SOURCES lib/engine/check_memory.c
                LIBS aurora-mcp-internal aur_test_support_internal
                DEPENDS transport-stdio aur-fixture-server
                TIMEOUT 900)
endif()
