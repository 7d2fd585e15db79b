# Kill points: the real host against servers that die at every point
# around a tools/call, over stdio (aur-fixture-server --kill-at) and HTTPS
# (tests/http/killpoint_https.c), checking the succeeded/failed/unknown
# promise against what each server recorded it received.
# AUR_KILLPOINT_TRIALS (total trials, default 1000) raises the count; the
# other knobs are described at the top of system/check_killpoints.c.
add_executable(killpoint_https ${CMAKE_CURRENT_LIST_DIR}/../http/killpoint_https.c)
target_link_libraries(killpoint_https PRIVATE OpenSSL::SSL OpenSSL::Crypto
                      PkgConfig::JSONC)
if(TARGET aurora-mcp AND TARGET aur_test_support)
  aur_add_check(check_killpoints SOURCES system/check_killpoints.c
                system/killpoints_trial.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio transport-http aur-fixture-server
                        killpoint_https
                TIMEOUT 1200)
  target_compile_definitions(check_killpoints PRIVATE
    AUR_KP_HTTPS="$<TARGET_FILE:killpoint_https>")
endif()
