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

# The ABI against the one recorded for this major release
# (abi/libaurora-mcp.abi): read from debug information, so only in builds
# that have it, and not in the sanitizer builds (they add nothing to the
# ABI, and their code is not what is released).
find_program(AUR_ABIDIFF abidiff)
if(TARGET aurora-mcp AND AUR_ABIDIFF AND NOT AUR_SANITIZE AND NOT AUR_TSAN
   AND CMAKE_BUILD_TYPE MATCHES "RelWithDebInfo|Debug")
  add_test(NAME abi_test
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/abi_test.sh
                   $<TARGET_FILE:aurora-mcp> ${CMAKE_SOURCE_DIR})
  set_tests_properties(abi_test PROPERTIES TIMEOUT 300)
endif()
