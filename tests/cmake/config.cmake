# Names grammars and the configuration loader.
aur_add_check(check_names SOURCES check_names.c LIBS aur_names TIMEOUT 60)
aur_add_check(check_config SOURCES check_config.c check_config_bad.c
              config_fixture.c LIBS aur_config aur_names
              TIMEOUT 60)
# Allocation failure swept through the loader and canonical JSON: the
# core's own allocations are wrapped at link time.
aur_add_check(check_oom SOURCES check_oom.c LIBS aur_config aur_names aur_jsonx
              TIMEOUT 120)
target_link_options(check_oom PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc
                    -Wl,--wrap=realloc -Wl,--wrap=strdup -Wl,--wrap=strndup)
