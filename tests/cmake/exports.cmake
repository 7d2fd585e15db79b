# The shared library exports its embedding API (aur_host.h) and nothing
# else (lib/libaurora-mcp.map), and no program of the build loads it
# while carrying a core of its own (aurora-mcp-internal, the object
# libraries).  Tests linking aurora-mcp use only aur_host.h; those that
# call internal aur__* functions link aurora-mcp-internal instead.
if(TARGET aurora-mcp AND TARGET aurora-mcp-internal)
  add_test(NAME exports_test
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/exports_test.sh
                   $<TARGET_FILE:aurora-mcp> ${CMAKE_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR} $<TARGET_FILE:aurora-mcp-internal>)
  set_tests_properties(exports_test PROPERTIES TIMEOUT 120)
endif()
