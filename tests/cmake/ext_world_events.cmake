# ext-world-events: unit tests against the plugin alone, then the real
# host with the SQLite journal, our fixture server and the SDK v1 peer.
if(TARGET ext-world-events)
  set(d plugins/ext-world-events)
  aur_add_check(check_ext_world_events SOURCES ${d}/check_ext_world_events.c
                ${d}/check_ext_world_events_batch.c ${d}/we_host.c
                LIBS ${CMAKE_DL_LIBS} DEPENDS ext-world-events TIMEOUT 120)
  if(TARGET aurora-mcp AND TARGET aur_test_support)
    aur_add_check(check_ext_world_events_host
                  SOURCES ${d}/check_ext_world_events_host.c
                  LIBS aurora-mcp aur_test_support
                  DEPENDS ext-world-events transport-stdio aur-fixture-server
                  TIMEOUT 300)
  endif()
endif()
