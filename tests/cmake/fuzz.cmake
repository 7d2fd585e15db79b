# Replay builds of the fuzz targets (fuzz/*.c, see fuzz/run.sh for the
# libFuzzer builds): each <name>_replay is the target compiled with
# -DAUR_FUZZ_REPLAY and the normal compiler and flags, and CTest runs it
# over its checked-in seed corpus as <name>_corpus.  fuzz_json lives in
# jsonx.cmake.
function(aur_add_fuzz_replay name)
  cmake_parse_arguments(F "" "SOURCE;CORPUS" "DEFINES;LIBS;EXTRA;INCLUDES"
                        ${ARGN})
  add_executable(${name}_replay ${CMAKE_SOURCE_DIR}/fuzz/${F_SOURCE}
                 ${F_EXTRA})
  target_compile_definitions(${name}_replay PRIVATE AUR_FUZZ_REPLAY ${F_DEFINES})
  target_include_directories(${name}_replay PRIVATE ${AUR_LIB_INCLUDE_DIRS}
                             ${CMAKE_SOURCE_DIR}/fuzz ${F_INCLUDES})
  target_link_libraries(${name}_replay PRIVATE ${F_LIBS} PkgConfig::JSONC m
                        Threads::Threads)
  add_test(NAME ${name}_corpus COMMAND ${name}_replay
           ${CMAKE_SOURCE_DIR}/fuzz/corpus/${F_CORPUS})
  set_tests_properties(${name}_corpus PROPERTIES TIMEOUT 120)
endfunction()

aur_add_fuzz_replay(fuzz_names SOURCE fuzz_names.c CORPUS names LIBS aur_names)
# The transports' App-file rules are compiled in (fuzz_transports.c).
set(AUR_FUZZ_TRANSPORT_RULES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_transports.c
    ${CMAKE_SOURCE_DIR}/fuzz/fuzz_transports_http.c
    ${CMAKE_SOURCE_DIR}/plugins/transport-stdio/stdio_config.c
    ${CMAKE_SOURCE_DIR}/plugins/transport-http/http_config.c
    ${CMAKE_SOURCE_DIR}/plugins/transport-http/http_keys.c
    ${CMAKE_SOURCE_DIR}/plugins/transport-http/http_url.c)
set(AUR_FUZZ_TRANSPORT_INC ${CMAKE_SOURCE_DIR}/plugins/transport-stdio
    ${CMAKE_SOURCE_DIR}/plugins/transport-http ${CMAKE_SOURCE_DIR}/lib/aurx)
aur_add_fuzz_replay(fuzz_config SOURCE fuzz_config.c CORPUS config
                    EXTRA ${AUR_FUZZ_TRANSPORT_RULES}
                    INCLUDES ${AUR_FUZZ_TRANSPORT_INC}
                    LIBS aur_config aur_names PkgConfig::CURL)
aur_add_fuzz_replay(fuzz_config_split SOURCE fuzz_config.c CORPUS config_split
                    DEFINES FUZZ_CONFIG_SPLIT EXTRA ${AUR_FUZZ_TRANSPORT_RULES}
                    INCLUDES ${AUR_FUZZ_TRANSPORT_INC}
                    LIBS aur_config aur_names PkgConfig::CURL)
# rpc.c needs the clock and the log besides the JSON parser; the static
# core has them all (internal aur__* functions: not the shared library,
# which exports only aur_host.h).
if(TARGET aurora-mcp-internal)
  aur_add_fuzz_replay(fuzz_rpc_frames SOURCE fuzz_rpc_frames.c CORPUS rpc_frames
                      LIBS aurora-mcp-internal)
  aur_add_fuzz_replay(fuzz_call_reply SOURCE fuzz_call_reply.c CORPUS call_reply
                      LIBS aurora-mcp-internal)
  # serve's request reader, compiled from the CLI's own source.
  aur_add_fuzz_replay(fuzz_serve_request SOURCE fuzz_serve_request.c
                      CORPUS serve_request
                      EXTRA ${CMAKE_SOURCE_DIR}/cli/serve_request.c
                      INCLUDES ${CMAKE_SOURCE_DIR}/cli
                      LIBS aurora-mcp-internal)
endif()
if(TARGET fuzz_rpc_frames_replay)
  # The same corpus without the harness's drain: close while server
  # requests are still queued (regress-1 once crashed rpc close).
  add_test(NAME fuzz_rpc_frames_undrained_corpus COMMAND fuzz_rpc_frames_replay
           ${CMAKE_SOURCE_DIR}/fuzz/corpus/rpc_frames)
  set_tests_properties(fuzz_rpc_frames_undrained_corpus PROPERTIES
                       TIMEOUT 120 ENVIRONMENT AUR_FUZZ_RPC_UNDRAINED=1)
endif()

# Plugin parsers compiled straight into their targets (EXTRA), like their
# unit tests do; the core's JSON parser and config rule come from the
# object libraries.
set(AUR_FUZZ_HTTP ${CMAKE_SOURCE_DIR}/plugins/transport-http)
set(AUR_FUZZ_TC ${CMAKE_SOURCE_DIR}/plugins/ext-tool-contract)
set(AUR_FUZZ_WE ${CMAKE_SOURCE_DIR}/plugins/ext-world-events)
aur_add_fuzz_replay(fuzz_sse SOURCE fuzz_sse.c CORPUS sse
                    EXTRA ${AUR_FUZZ_HTTP}/http_sse.c
                    INCLUDES ${AUR_FUZZ_HTTP}
                    LIBS aur_aurx PkgConfig::CURL)
aur_add_fuzz_replay(fuzz_url SOURCE fuzz_url.c CORPUS url
                    EXTRA ${AUR_FUZZ_HTTP}/http_url.c
                    INCLUDES ${AUR_FUZZ_HTTP} LIBS PkgConfig::CURL)
aur_add_fuzz_replay(fuzz_scope SOURCE fuzz_scope.c CORPUS scope
                    EXTRA ${AUR_FUZZ_TC}/tc_scope.c ${AUR_FUZZ_TC}/tc_plugin.c
                    INCLUDES ${AUR_FUZZ_TC} LIBS aur_jsonx)
aur_add_fuzz_replay(fuzz_event SOURCE fuzz_event.c CORPUS event
                    EXTRA ${AUR_FUZZ_WE}/we_validate.c
                    INCLUDES ${AUR_FUZZ_WE} LIBS aur_jsonx)
