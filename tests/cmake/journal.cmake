# The world journal (SQLite).
aur_add_check(check_journal SOURCES check_journal.c check_journal_batch.c
              journal_fixture.c LIBS aur_journal aur_jsonx
              TIMEOUT 60)
