# The rules lib/aurx shares between the core and the plugins.
aur_add_check(check_aurx SOURCES lib/aurx/check_aurx.c LIBS aur_aurx
              TIMEOUT 60)
