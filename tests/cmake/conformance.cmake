# The official MCP conformance suite's client scenarios
# (@modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12, pinned with
# a Node 24 runtime in tests/conformance/package.json) against a driver
# built on the embedding API.  run.sh does `npm ci` in tests/conformance if
# node_modules is missing; without it (and outside CI) the test is skipped
# (exit 77).  Labelled "conformance" so it can run on its own after the
# unit tests: ctest -LE conformance, then ctest -L conformance.  Loopback
# only; see docs/conformance.md.
if(TARGET aurora-mcp AND TARGET transport-http AND TARGET ext-tool-contract)
  add_executable(aur-conformance-driver
                 ${CMAKE_CURRENT_LIST_DIR}/../conformance/driver.c)
  target_link_libraries(aur-conformance-driver PRIVATE aurora-mcp
                        PkgConfig::JSONC Threads::Threads)
  set_target_properties(aur-conformance-driver PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_dependencies(aur-conformance-driver transport-http ext-tool-contract)

  add_test(NAME conformance
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/../conformance/run.sh
                   --driver $<TARGET_FILE:aur-conformance-driver>
                   --plugin-dir ${CMAKE_BINARY_DIR}/plugins
                   --out ${CMAKE_BINARY_DIR}/conformance)
  # RUN_SERIAL: the scenarios time the client (sse-retry, timeouts), so
  # they get the machine to themselves rather than share it with -j.
  set_tests_properties(conformance PROPERTIES
    TIMEOUT 600 LABELS conformance SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
