# ext-tool-contract: unit tests through the plugin ABI (dlopen of the built
# plugin, the core's JSON services as the test host) and integration tests
# through the real host against the fixture server and the SDK peers.
# tc_unit_host.c calls the core's internal JSON functions, so the suite
# links the static core (aurora-mcp-internal), not the shared library.
set(AUR_TC_TESTS plugins/ext-tool-contract)
if(TARGET aurora-mcp AND TARGET ext-tool-contract)
  aur_add_check(check_ext_tool_contract
                SOURCES ${AUR_TC_TESTS}/check_ext_tool_contract.c
                        ${AUR_TC_TESTS}/check_ext_tool_contract_host.c
                        ${AUR_TC_TESTS}/check_ext_tool_contract_render.c
                        ${AUR_TC_TESTS}/tc_unit_host.c
                LIBS aurora-mcp-internal aur_test_support_internal
                     ${CMAKE_DL_LIBS}
                DEPENDS ext-tool-contract transport-stdio aur-fixture-server
                TIMEOUT 300)
endif()
