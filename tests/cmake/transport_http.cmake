# transport-http: the SSE parser and URL rules compiled in from the plugin
# (check_http_parsers), and the plugin through its ABI against
# tests/http/https_fixture.c (check_transport_http).
add_executable(https_fixture ${CMAKE_CURRENT_LIST_DIR}/../http/https_fixture.c)
target_link_libraries(https_fixture PRIVATE OpenSSL::SSL OpenSSL::Crypto
                      PkgConfig::JSONC Threads::Threads)

set(AUR_HTTP_PLUGIN_DIR ${CMAKE_SOURCE_DIR}/plugins/transport-http)
aur_add_check(check_transport_http
  SOURCES plugins/transport-http/check_transport_http.c
          plugins/transport-http/check_transport_http_xheader.c
          plugins/transport-http/check_transport_http_stop.c
          plugins/transport-http/check_transport_http_assist.c
          plugins/transport-http/check_transport_http_resend.c
          plugins/transport-http/check_transport_http_oom.c
          http/http_host.c support/plugin_host.c
          ${CMAKE_SOURCE_DIR}/lib/aurx/path_rule.c
  LIBS ${CMAKE_DL_LIBS}
  DEPENDS transport-http transport-http-libcurl https_fixture TIMEOUT 120)
target_include_directories(check_transport_http PRIVATE ${AUR_HTTP_PLUGIN_DIR})
# The plugin's libcurl header-list calls reach check_transport_http_oom.c
# first: the binary exports those two functions and nothing else.
target_link_options(check_transport_http PRIVATE
  -Wl,--dynamic-list=${CMAKE_CURRENT_LIST_DIR}/../http/curl_wrap.list)
aur_add_check(check_http_parsers
  SOURCES plugins/transport-http/check_http_parsers.c
          ${AUR_HTTP_PLUGIN_DIR}/http_sse.c ${AUR_HTTP_PLUGIN_DIR}/http_url.c
  LIBS aur_aurx PkgConfig::CURL TIMEOUT 60)
target_include_directories(check_http_parsers PRIVATE ${AUR_HTTP_PLUGIN_DIR})
target_compile_definitions(check_transport_http PRIVATE
  AUR_HTTPS_FIXTURE="$<TARGET_FILE:https_fixture>")
# The whole host with transport-http listed: libcurl stays out of a
# process without an HTTP App, an HTTPS App (the SDK peer, tests/peers)
# loads the backend, a missing backend fails only HTTP Apps.  Uses the
# aur_test_support library from engine.cmake (included before this file).
if(TARGET aurora-mcp AND TARGET aur_test_support)
  aur_add_check(check_transport_http_lazy
    SOURCES plugins/transport-http/check_transport_http_lazy.c
    LIBS aurora-mcp aur_test_support
    DEPENDS transport-stdio transport-http transport-http-libcurl
            aur-fixture-server TIMEOUT 180)
endif()
