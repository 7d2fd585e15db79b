# The whole host against real MCP servers from npm (server-filesystem,
# server-memory, server-everything; pinned in tests/peers/package.json,
# `npm ci` there first).  Uses aur_test_support from engine.cmake
# (included before this file).
if(TARGET aurora-mcp AND TARGET aur_test_support)
  aur_add_check(check_real_servers SOURCES system/check_real_servers.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio TIMEOUT 300)
endif()
