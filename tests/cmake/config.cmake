# Names grammars and the configuration loader.
aur_add_check(check_names SOURCES check_names.c LIBS aur_names TIMEOUT 60)
aur_add_check(check_config SOURCES check_config.c LIBS aur_config aur_names
              TIMEOUT 60)
