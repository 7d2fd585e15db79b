#!/usr/bin/env bash
# Every error code is produced by a test: each code of AUR_RC_MAP
# (aur_plugin.h) and each code the README lists has a row in
# docs/error-codes.md naming a test file, and that file asserts the code.
# A code marked reserved must not be returned by the bundled code.
# usage: error_codes_test.sh SOURCE_DIR
set -u
SRC="$1"
DOC="$SRC/docs/error-codes.md"
. "$(dirname "$0")/support/expect.sh"

# The test file of a docs row whose first cells are `a` (and `b`).
row_file() {
    grep -F "| \`$1\` |${2:+ \`$2\` |}" "$DOC" | head -1 |
        awk -F'|' '{print $(NF-1)}' | tr -d ' `'
}

# The ABI list.
n=0
while read -r sym word; do
    n=$((n + 1))
    f=$(row_file "$word" "$sym")
    if [ -z "$f" ]; then
        bad "$word ($sym) has no row in docs/error-codes.md"
    elif [ "$f" = "-" ]; then
        grep -q "\`$word\` | \`$sym\` | \*reserved\*" "$DOC" ||
            bad "$word has no test and is not marked reserved"
        if grep -rnw "$sym" "$SRC/lib" "$SRC/plugins" --include='*.c' |
            grep -q .; then
            bad "$sym is marked reserved but the bundled code uses it"
        else ok; fi
    elif [ ! -f "$SRC/$f" ]; then
        bad "$word: $f does not exist"
    elif grep -nw "$sym" "$SRC/$f" | grep -vE 'aur_fail\(|return ' | grep -q .; then
        ok
    else
        bad "$word: $f never asserts $sym"
    fi
done < <(grep -o 'X(AUR_[A-Z_]*, -*[0-9]*, "[a-z_]*"' \
    "$SRC/include/aurora/aur_plugin.h" |
    sed 's/X(\(AUR_[A-Z_]*\), -*[0-9]*, "\([a-z_]*\)"/\1 \2/')
[ "$n" -ge 20 ] || bad "read only $n codes from aur_plugin.h"

# The README's user-facing codes: the startup table and the serve errors.
readme=$(sed -n '/^### Error codes/,/^## /p' "$SRC/README.md")
codes=$(echo "$readme" | sed -n 's/^| `\([a-z_]*\)` |.*/\1/p')
codes="$codes $(echo "$readme" | sed -n 's/^`serve` request errors: //p' |
    grep -o '`[a-z_]*`' | tr -d '`')"
m=0
for c in $codes; do
    m=$((m + 1))
    f=$(row_file "$c")
    if [ -z "$f" ] || [ ! -f "$SRC/$f" ]; then
        bad "README code $c has no row with an existing test file"
    elif grep -qF "\"code\":\"$c\"" "$SRC/$f" || grep -qF "\"$c\"" "$SRC/$f"; then
        ok
    else
        bad "README code $c: $f never asserts it"
    fi
done
[ "$m" -ge 7 ] || bad "read only $m codes from the README"

echo "error codes: $pass passed, $fail failed ($n ABI codes, $m README codes)"
[ "$fail" = 0 ]
