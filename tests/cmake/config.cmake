# Names grammars and the configuration loader.
aur_add_check(check_names SOURCES lib/names/check_names.c LIBS aur_names
              TIMEOUT 60)
# The loader checks App files against the real transport plugins
# (support/transports.c loads this build's transport-stdio and -http).
aur_add_check(check_config SOURCES lib/config/check_config.c
              lib/config/check_config_bad.c lib/config/config_fixture.c
              support/transports.c
              LIBS aur_config aur_names ${CMAKE_DL_LIBS}
              DEPENDS transport-stdio transport-http TIMEOUT 60)
# Allocation failure swept through the loader and canonical JSON: the
# core's own allocations are wrapped at link time.
aur_add_check(check_oom SOURCES lib/engine/check_oom.c support/transports.c
              support/oom_wrap.c
              LIBS aur_config aur_names aur_jsonx ${CMAKE_DL_LIBS}
              DEPENDS transport-stdio transport-http TIMEOUT 120)
target_link_options(check_oom PRIVATE ${AUR_OOM_WRAP})
