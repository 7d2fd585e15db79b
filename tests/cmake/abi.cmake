# The plugin loader (lib/plugin/loader.c) against real fixture plugins.
#
# The loader is built on its own, not from the aur_engine object library,
# so this suite depends only on loader.c, the config module (a plugin's
# settings are checked against its host.ini section), json-c and libdl.
set(AUR_ABI_FIXTURE_SRC ${CMAKE_CURRENT_LIST_DIR}/../fixtures/plugins)
set(AUR_ABI_FIXTURE_DIR ${CMAKE_BINARY_DIR}/fixture-plugins)

add_library(aur_loader_test STATIC ${CMAKE_SOURCE_DIR}/lib/plugin/loader.c)
target_include_directories(aur_loader_test PUBLIC ${AUR_LIB_INCLUDE_DIRS})
target_link_libraries(aur_loader_test PUBLIC aur_config aur_names
                      PkgConfig::JSONC ${CMAKE_DL_LIBS})

# One fixture per file: the file name is the target and .so name.
set(AUR_ABI_FIXTURES
    good_transport good_extension not_a_plugin null_entry bad_magic
    major_mismatch newer_minor short_struct longer_struct bad_kind
    null_name bad_name no_init null_ops short_ops short_ops_tail
    missing_send no_hooks_ext methods_without_notify bad_methods)
set(AUR_ABI_FIXTURE_TARGETS)
foreach(f ${AUR_ABI_FIXTURES})
  aur_add_plugin(${f} FIXTURE OUTPUT_DIR ${AUR_ABI_FIXTURE_DIR}
                 SOURCES ${AUR_ABI_FIXTURE_SRC}/${f}.c)
  list(APPEND AUR_ABI_FIXTURE_TARGETS ${f})
endforeach()

# Fixtures loaded through aur__plugins_load need file name == descriptor
# name; the two dup files share one source and one declared name.
aur_add_plugin(fx-init-fails FIXTURE OUTPUT_DIR ${AUR_ABI_FIXTURE_DIR}
               SOURCES ${AUR_ABI_FIXTURE_SRC}/init_fails.c)
list(APPEND AUR_ABI_FIXTURE_TARGETS fx-init-fails)
# Loaded by cli_test beside transport-stdio (two transports, one word).
aur_add_plugin(fx-word-thief FIXTURE OUTPUT_DIR ${AUR_ABI_FIXTURE_DIR}
               SOURCES ${AUR_ABI_FIXTURE_SRC}/fx-word-thief.c)
list(APPEND AUR_ABI_FIXTURE_TARGETS fx-word-thief)
foreach(f fx-init-records-a fx-init-records-b)
  aur_add_plugin(${f} FIXTURE OUTPUT_DIR ${AUR_ABI_FIXTURE_DIR}
                 SOURCES ${AUR_ABI_FIXTURE_SRC}/init_records.c)
  target_compile_definitions(${f} PRIVATE FX_NAME="${f}")
  list(APPEND AUR_ABI_FIXTURE_TARGETS ${f})
endforeach()
foreach(f dup_a dup_b)
  aur_add_plugin(${f} FIXTURE OUTPUT_DIR ${AUR_ABI_FIXTURE_DIR}
                 SOURCES ${AUR_ABI_FIXTURE_SRC}/dup.c)
  list(APPEND AUR_ABI_FIXTURE_TARGETS ${f})
endforeach()

aur_add_check(check_abi SOURCES lib/plugin/check_abi.c support/plugin_host.c
              LIBS aur_loader_test ${CMAKE_DL_LIBS}
              DEPENDS ${AUR_ABI_FIXTURE_TARGETS} TIMEOUT 60)
target_compile_definitions(check_abi PRIVATE
  AUR_TEST_FIXTURE_PLUGIN_DIR="${AUR_ABI_FIXTURE_DIR}")
