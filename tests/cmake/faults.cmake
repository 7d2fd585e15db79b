# The fault matrix (issue 8): the real host against the misbehaving
# fixture server, and the CLI binary under SIGTERM/SIGINT.
if(TARGET aurora-mcp AND TARGET aur_test_support AND TARGET aurora-mcp-cli)
  aur_add_check(check_faults SOURCES lib/engine/check_faults.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio aur-fixture-server aurora-mcp-cli
                TIMEOUT 600)
endif()
