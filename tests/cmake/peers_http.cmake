# The whole host over HTTPS (transport-http) against the official SDK
# servers in tests/peers (node; `npm ci` there first).  Uses the
# aur_test_support library from engine.cmake (included before this file).
if(TARGET aurora-mcp AND TARGET aur_test_support)
  aur_add_check(check_peers_http SOURCES system/check_peers_http.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio transport-http transport-http-libcurl
                        TIMEOUT 300)
endif()
