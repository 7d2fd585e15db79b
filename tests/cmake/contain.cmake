# Containment (docs/containment.md): nothing an App starts survives the
# host.  aur-contain-app (tests/contain/) is an App that daemonises, calls
# setsid() and runs an `sh -c` chain, recording every pid; check_contain
# runs the real CLI (serve) over it, closes it or SIGKILLs it at several
# phases, and counts the survivors (0).  aur_test_support comes from
# engine.cmake, included after this file (a target name is resolved at
# generate time).
add_executable(aur-contain-app ${CMAKE_CURRENT_LIST_DIR}/../contain/contain_app.c)
set_target_properties(aur-contain-app PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
if(TARGET aurora-mcp AND TARGET aurora-mcp-cli)
  aur_add_check(check_contain SOURCES system/check_contain.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio aur-fixture-server aurora-mcp-cli
                        aur-contain-app
                TIMEOUT 900)
  # The App's cgroup: one the App nested cgroups in, and Apps that die
  # slowly after SIGKILL (frozen with the cgroup v1 freezer).
  aur_add_check(check_contain_cgroup SOURCES system/check_contain_cgroup.c
                LIBS aurora-mcp aur_test_support
                DEPENDS transport-stdio aur-fixture-server aurora-mcp-cli
                        aur-contain-app
                TIMEOUT 300)
endif()
