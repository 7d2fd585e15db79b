#!/usr/bin/env bash
# Run one command against a throwaway PostgreSQL (tests/support/pg.sh):
# start it, export its URI as AUR_TEST_JOURNAL_URI, run the command, stop
# the server and remove it whatever the command did.  The exit status is
# the command's.
#   with_pg.sh COMMAND [ARG...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/aur-pg-XXXXXX)
cleanup() { bash "$here/pg.sh" stop "$dir" >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT
# (the server goes when this script does, even after a kill -9)
uri=$(AUR_PG_OWNER=$$ bash "$here/pg.sh" start "$dir")
rc=$?
[ "$rc" = 77 ] && exit 77 # no server binaries: skipped
if [ "$rc" != 0 ]; then
    echo "with_pg.sh: PostgreSQL did not start" >&2
    cat "$dir"/*.log >&2 2>/dev/null
    exit 1
fi
# the suite makes a database per test
bash "$here/pg.sh" psql "$dir" "ALTER ROLE $(sed 's|^postgresql://\([^@:]*\).*|\1|' <<<"$uri") CREATEDB" >/dev/null ||
    { echo "with_pg.sh: cannot grant CREATEDB" >&2; exit 1; }
AUR_TEST_JOURNAL_URI=$uri "$@"
