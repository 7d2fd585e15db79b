# The world journal (SQLite).
aur_add_check(check_journal SOURCES lib/journal/check_journal.c
              lib/journal/check_journal_batch.c lib/journal/journal_fixture.c
              LIBS aur_journal aur_jsonx
              TIMEOUT 60)
