# Timing-perturbation property tests (docs/timing-perturbation.md): only in
# a build configured with -DAUR_PERTURB=ON, where every AUR_PERTURB("point")
# of the core and the plugins may delay its thread when AUR_PERTURB_SEED is
# set.  aur-perturb runs each scenario once per seed, each run in its own
# process with AUR_PERTURB_SEED=<seed>; aur-perturb-server is the MCP
# server the change, events and kill scenarios need (the startup scenario
# runs aur-fixture-server as is).  scripts/perturb-soak.sh runs the same
# program over 10 000 seeds.
# aur-fixture-server comes from servers.cmake, included after this file:
# dependencies on it resolve at generate time.
if(AUR_PERTURB AND TARGET aurora-mcp AND TARGET transport-stdio)
  set(AUR_PT_DIR ${CMAKE_CURRENT_LIST_DIR}/../perturb)

  add_executable(aur-perturb-server ${AUR_PT_DIR}/perturb_server.c)
  target_link_libraries(aur-perturb-server PRIVATE PkgConfig::JSONC)
  if(AUR_SANITIZE)
    # Test infrastructure, not the product: an uninstrumented server
    # starts and exits in milliseconds, which keeps the sanitizer runs of
    # the perturb tests inside their time budget.  The host (aur-perturb,
    # libaurora-mcp and the plugins) stays instrumented.
    target_compile_options(aur-perturb-server PRIVATE -fno-sanitize=all)
    target_link_options(aur-perturb-server PRIVATE -fno-sanitize=all)
  endif()
  set_target_properties(aur-perturb-server PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

  add_executable(aur-perturb
                 ${AUR_PT_DIR}/perturb_main.c ${AUR_PT_DIR}/perturb_util.c
                 ${AUR_PT_DIR}/perturb_scen_startup.c
                 ${AUR_PT_DIR}/perturb_scen_change.c
                 ${AUR_PT_DIR}/perturb_scen_events.c
                 ${AUR_PT_DIR}/perturb_scen_kill.c)
  target_include_directories(aur-perturb PRIVATE ${CMAKE_SOURCE_DIR}/include
                             ${AUR_PT_DIR})
  target_link_libraries(aur-perturb PRIVATE aurora-mcp PkgConfig::JSONC
                        Threads::Threads ${CMAKE_DL_LIBS})
  target_compile_definitions(aur-perturb PRIVATE
    AUR_PT_BIN_DIR="${CMAKE_BINARY_DIR}")
  set_target_properties(aur-perturb PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  set(AUR_PT_DEPS aur-perturb-server aur-fixture-server transport-stdio)
  if(TARGET ext-world-events)
    list(APPEND AUR_PT_DEPS ext-world-events)
  endif()
  add_dependencies(aur-perturb ${AUR_PT_DEPS})

  # Seeds per CTest run (the CI floor is 200 per scenario); the soak
  # script runs 10 000.  A run mostly waits (on its Apps, on perturbation
  # sleeps, on sanitizer start-up and exit), so each test keeps 4 runs
  # going and tells CTest it takes the 2 cores (PROCESSORS 2): ctest -j2
  # then runs one perturb test at a time.
  set(AUR_PERTURB_SEEDS 200 CACHE STRING
      "seeds per scenario in the perturb_* CTest tests")
  # Each scenario once without AUR_PERTURB_SEED: the sanity baseline
  # (a few seeds, since the seed also picks the scenario's parameters).
  add_test(NAME perturb_baseline
           COMMAND aur-perturb startup,change,events,kill --baseline
                   --seeds 1:3 --jobs 4 --timeout 120)
  set_tests_properties(perturb_baseline PROPERTIES
    TIMEOUT 300 LABELS perturb PROCESSORS 2)
  foreach(scenario startup change events kill)
    add_test(NAME perturb_${scenario}
             COMMAND aur-perturb ${scenario} --seeds 1:${AUR_PERTURB_SEEDS}
                     --jobs 4 --timeout 120)
    set_tests_properties(perturb_${scenario} PROPERTIES
      TIMEOUT 900 LABELS perturb PROCESSORS 2)
  endforeach()
endif()
