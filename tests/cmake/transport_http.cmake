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
          http/http_host.c support/plugin_host.c
          ${CMAKE_SOURCE_DIR}/lib/aurx/path_rule.c
  LIBS ${CMAKE_DL_LIBS}
  DEPENDS transport-http https_fixture TIMEOUT 120)
target_include_directories(check_transport_http PRIVATE ${AUR_HTTP_PLUGIN_DIR})
aur_add_check(check_http_parsers
  SOURCES plugins/transport-http/check_http_parsers.c
          ${AUR_HTTP_PLUGIN_DIR}/http_sse.c ${AUR_HTTP_PLUGIN_DIR}/http_url.c
  LIBS aur_aurx PkgConfig::CURL TIMEOUT 60)
target_include_directories(check_http_parsers PRIVATE ${AUR_HTTP_PLUGIN_DIR})
target_compile_definitions(check_transport_http PRIVATE
  AUR_HTTPS_FIXTURE="$<TARGET_FILE:https_fixture>")
