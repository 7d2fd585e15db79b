# The world journal (SQLite).
aur_add_check(check_journal SOURCES check_journal.c LIBS aur_journal aur_jsonx
              TIMEOUT 60)
