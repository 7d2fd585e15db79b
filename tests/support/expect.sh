# tests/support/expect.sh - the assertions of the shell tests, sourced by
# each (cli_test.sh, install_test.sh, ...): counts in $pass and $fail,
# a failure said on stderr, finish prints the count and exits non-zero
# when anything failed.
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_eq() { if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1' want '$2'"; fi; }
expect_has() { case "$1" in *"$2"*) ok ;; *) bad "$3: '$2' not in: $1" ;; esac; }
# settle_marker MARKER [TENTHS]: wait (bounded: TENTHS of a second, default 100)
# until no process has MARKER in its command line; prints how many are
# left.
settle_marker() {
    local n i
    for ((i = 0; i < ${2:-100}; i++)); do
        n=$(pgrep -f -- "$1" | wc -l)
        [ "$n" = 0 ] && break
        sleep 0.1
    done
    echo "$n"
}
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}
