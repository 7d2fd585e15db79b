# Integration suites: the real host (libaurora-mcp) against real child
# processes.  They need the stdio transport and the fixture server built.
#
# A suite that uses only the embedding API (aur_host.h) links the shared
# library, which exports nothing else; one that also calls internal aur__*
# functions links aurora-mcp-internal (the same objects, static) instead,
# and aur_test_support_internal with it: never both cores in one binary.
if(TARGET aurora-mcp)
  foreach(core aurora-mcp aurora-mcp-internal)
    if(core STREQUAL "aurora-mcp")
      set(lib aur_test_support)
    else()
      set(lib aur_test_support_internal)
    endif()
    add_library(${lib} STATIC ${CMAKE_SOURCE_DIR}/tests/support/harness.c)
    target_include_directories(${lib} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
    target_link_libraries(${lib} PUBLIC ${core} PkgConfig::CHECK
                          PkgConfig::JSONC)
    target_compile_definitions(${lib} PRIVATE
      AUR_TEST_SRC_DIR="${CMAKE_SOURCE_DIR}" AUR_TEST_BIN_DIR="${CMAKE_BINARY_DIR}")
  endforeach()
  set(AUR_check_startup_SRC lib/engine/check_startup.c
      lib/engine/check_startup_catalog.c lib/engine/check_startup_world.c)
  set(AUR_check_calls_SRC lib/engine/check_calls.c)
  set(AUR_check_api_text_SRC lib/engine/check_api_text.c)
  set(AUR_check_async_SRC lib/engine/check_async.c)
  set(AUR_check_call_start_SRC lib/engine/check_call_start.c
      lib/engine/check_call_batch.c)
  set(AUR_check_truth_SRC lib/engine/check_truth.c)
  set(AUR_check_peers_SRC system/check_peers.c)
  foreach(suite check_startup check_calls check_api_text check_async
          check_call_start check_peers check_truth)
    aur_add_check(${suite} SOURCES ${AUR_${suite}_SRC}
                  LIBS aurora-mcp aur_test_support
                  DEPENDS transport-stdio aur-fixture-server TIMEOUT 600)
  endforeach()
  # Status read while a start runs, with both extensions negotiated.
  if(TARGET ext-world-events AND TARGET ext-tool-contract)
    aur_add_check(check_status_live SOURCES lib/engine/check_status_live.c
                  LIBS aurora-mcp aur_test_support
                  DEPENDS transport-stdio ext-world-events ext-tool-contract
                  aur-fixture-server TIMEOUT 300)
  endif()
  # check_startup_world.c plants a failing trigger in the journal file.
  target_link_libraries(check_startup PRIVATE PkgConfig::SQLITE)
  # The OOM policy of aur_host.h, swept over startup and the call path:
  # the static core, so its allocations go through support/oom_wrap.c.
  aur_add_check(check_oom_host SOURCES lib/engine/check_oom_host.c
                support/oom_wrap.c
                LIBS aurora-mcp-internal aur_test_support_internal
                DEPENDS transport-stdio aur-fixture-server TIMEOUT 1500)
  target_link_options(check_oom_host PRIVATE ${AUR_OOM_WRAP})
  aur_add_check(check_call_reply SOURCES lib/engine/check_call_reply.c
                LIBS aurora-mcp-internal TIMEOUT 60)
endif()

# The SDK peers' own self-test (raw JSON lines against both SDK servers).
find_program(AUR_NODE node)
if(AUR_NODE)
  add_test(NAME peers_selftest
           COMMAND ${AUR_NODE} ${CMAKE_SOURCE_DIR}/tests/peers/selftest.mjs)
  set_tests_properties(peers_selftest PROPERTIES TIMEOUT 180)
endif()

if(TARGET aurora-mcp-cli)
  add_test(NAME cli_test COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli_test.sh
           ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  set_tests_properties(cli_test PROPERTIES TIMEOUT 300)
  # Canary values in a token and a non-whitelisted variable: zero hits in
  # any output, log, status or journal.
  add_test(NAME secrets_test COMMAND bash ${CMAKE_SOURCE_DIR}/tests/secrets_test.sh
           ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  set_tests_properties(secrets_test PROPERTIES TIMEOUT 300)
  # Out of file descriptors: a clear error naming the App, never a hang;
  # the CLI raises its soft limit to the hard one (needs prlimit).
  add_test(NAME fdlimit_test COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fdlimit_test.sh
           ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  set_tests_properties(fdlimit_test PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  # Outcomes, journal order and cleanup with 200 Apps on one host
  # (scripts/scale.sh runs the same test with 1 000).
  add_test(NAME scale_test COMMAND bash ${CMAKE_SOURCE_DIR}/tests/scale_test.sh
           ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} 200)
  set_tests_properties(scale_test PROPERTIES TIMEOUT 600)
endif()

# Two checks of the source tree alone, the same in every build: not
# repeated in the sanitizer builds, whose CI passes they would only slow.
if(NOT AUR_SANITIZE AND NOT AUR_TSAN)
  # Every error code has a test that produces it (docs/error-codes.md).
  add_test(NAME error_codes_test COMMAND bash
           ${CMAKE_SOURCE_DIR}/tests/error_codes_test.sh ${CMAKE_SOURCE_DIR})
  # Every file the README, docs/ and the man page point to is in the tree.
  add_test(NAME links_test COMMAND bash
           ${CMAKE_SOURCE_DIR}/tests/links_test.sh ${CMAKE_SOURCE_DIR})
endif()
