# Transports are plugins in fact: `cmake --install` of this build tree into
# a temporary prefix, then the out-of-tree example transport
# (examples/transport-unix, MCP over a Unix domain socket) built against
# that prefix via pkg-config alone and run by the installed CLI against a
# real MCP server (tests/peers/unix-server.mjs, official SDK).  Skipped
# (77) when node or the SDK in tests/peers/node_modules is missing.
if(TARGET aurora-mcp-cli)
  add_test(NAME unix_transport_test
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/unix_transport_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  set_tests_properties(unix_transport_test PROPERTIES
                       TIMEOUT 300 SKIP_RETURN_CODE 77
                       RESOURCE_LOCK build_tree_install)
endif()
