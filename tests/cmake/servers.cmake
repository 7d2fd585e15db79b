# Stand-alone MCP servers used by the integration tests (json-c only, no
# core), and a wire smoke test of both them and the bundled demo server.
set(AUR_SERVERS_TESTS ${CMAKE_CURRENT_LIST_DIR}/..)

file(GLOB AUR_FIXTURE_SERVER_SOURCES CONFIGURE_DEPENDS
     ${AUR_SERVERS_TESTS}/fixtures/fixture_*.c)
# The line framing is shared with the demo server (one copy of the reader).
add_executable(aur-fixture-server ${AUR_FIXTURE_SERVER_SOURCES}
               ${CMAKE_SOURCE_DIR}/examples/demo-server/mcp_lineio.c)
target_include_directories(aur-fixture-server PRIVATE
                           ${CMAKE_SOURCE_DIR}/examples/demo-server)
target_link_libraries(aur-fixture-server PRIVATE PkgConfig::JSONC)
set_target_properties(aur-fixture-server PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

if(TARGET aurora-mcp-demo-server)
  add_test(NAME servers_smoke
           COMMAND sh ${AUR_SERVERS_TESTS}/servers_smoke.sh
                   $<TARGET_FILE:aurora-mcp-demo-server>
                   $<TARGET_FILE:aur-fixture-server>)
  set_tests_properties(servers_smoke PROPERTIES TIMEOUT 60)
endif()
