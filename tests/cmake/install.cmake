# Install end-to-end: `cmake --install` of this build tree into a temporary
# prefix, then the out-of-tree example plugin (examples/ext-audit) built
# against that prefix via pkg-config and run by the installed CLI.
if(TARGET aurora-mcp-cli AND TARGET aurora-mcp-demo-server
   AND TARGET transport-stdio)
  add_test(NAME install_test
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  # unix_transport_test installs the same tree: one at a time.
  set_tests_properties(install_test PROPERTIES TIMEOUT 300
                       RESOURCE_LOCK build_tree_install)
endif()
