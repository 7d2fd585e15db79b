# The Python binding (bindings/python): its pytest suite against this
# build's library and servers, and `pip install` into a fresh venv
# (tests/python_install_test.sh).  Debian's python3 first: its
# python3-pytest and python3-venv are what scripts/setup-debian.sh
# installs.  Not in sanitizer builds: an uninstrumented interpreter cannot
# load an instrumented library; the same C calls run under ASan and TSan
# in check_api_text.
find_program(AUR_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(AUR_PYTHON3 python3)
if(AUR_PYTHON3 AND TARGET aurora-mcp AND TARGET aurora-mcp-cli
   AND NOT AUR_SANITIZE AND NOT AUR_TSAN)
  add_test(NAME python_binding
           COMMAND ${AUR_PYTHON3} -m pytest -q -p no:cacheprovider
                   ${CMAKE_SOURCE_DIR}/bindings/python/tests)
  set_tests_properties(python_binding PROPERTIES TIMEOUT 300
    ENVIRONMENT "AURORA_MCP_LIB=$<TARGET_FILE:aurora-mcp>;AURORA_MCP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;PYTHONPATH=${CMAKE_SOURCE_DIR}/bindings/python;PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME python_install_test
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/python_install_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} ${AUR_PYTHON3})
  set_tests_properties(python_install_test PROPERTIES TIMEOUT 300
                       RESOURCE_LOCK build_tree_install)
endif()
