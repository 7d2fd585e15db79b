# Strict JSON intake and canonical output (lib/jsonx/).
aur_add_check(check_jsonx SOURCES lib/jsonx/check_jsonx.c LIBS aur_jsonx
              TIMEOUT 60)

# The fuzz target's replay build: runs every file of the seed corpus
# through the same entry point libFuzzer calls (see fuzz/fuzz_json.c).
add_executable(fuzz_json_replay ${CMAKE_SOURCE_DIR}/fuzz/fuzz_json.c)
target_compile_definitions(fuzz_json_replay PRIVATE AUR_FUZZ_REPLAY)
target_include_directories(fuzz_json_replay PRIVATE ${AUR_LIB_INCLUDE_DIRS})
target_link_libraries(fuzz_json_replay PRIVATE aur_jsonx PkgConfig::JSONC)
add_test(NAME fuzz_json_corpus
         COMMAND fuzz_json_replay ${CMAKE_SOURCE_DIR}/fuzz/corpus/json)
set_tests_properties(fuzz_json_corpus PROPERTIES TIMEOUT 60)
