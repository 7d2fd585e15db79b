# transport-stdio through its ABI: the suite dlopens the built plugin and
# drives tests/fixtures/stdio_child.c as the App process.
add_executable(stdio_child ${CMAKE_CURRENT_LIST_DIR}/../fixtures/stdio_child.c)

aur_add_check(check_transport_stdio
              SOURCES plugins/transport-stdio/check_transport_stdio.c
                      plugins/transport-stdio/check_transport_stdio_spawn.c
                      plugins/transport-stdio/check_transport_stdio_start.c
                      plugins/transport-stdio/check_transport_stdio_fds.c
                      plugins/transport-stdio/check_transport_stdio_cork.c
                      plugins/transport-stdio/check_transport_stdio_prepare.c
                      fixtures/stdio_host.c
                      support/plugin_host.c
          ${CMAKE_SOURCE_DIR}/lib/aurx/path_rule.c
              LIBS ${CMAKE_DL_LIBS}
              DEPENDS transport-stdio stdio_child TIMEOUT 120)
target_compile_definitions(check_transport_stdio PRIVATE
  AUR_STDIO_CHILD="$<TARGET_FILE:stdio_child>")
# The supervisor's descendant walk, compiled in (both of its ways).
set(AUR_STDIO_PLUGIN_DIR ${CMAKE_SOURCE_DIR}/plugins/transport-stdio)
aur_add_check(check_stdio_descend
              SOURCES plugins/transport-stdio/check_stdio_descend.c
                      ${AUR_STDIO_PLUGIN_DIR}/stdio_descend.c
                      ${AUR_STDIO_PLUGIN_DIR}/stdio_proc.c
              TIMEOUT 60)
target_include_directories(check_stdio_descend PRIVATE ${AUR_STDIO_PLUGIN_DIR})
