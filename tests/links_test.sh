#!/usr/bin/env bash
# Every document the repository's docs point to is in the repository: the
# links of every Markdown file ([text](path)), and every path-looking name
# (docs/x.md, scripts/y.sh, lib/z/z.c, ...) in the Markdown files and the
# man page.  A name outside the tree (../shared/..., a sibling checkout)
# is a failure too: the docs must stand alone.
# usage: links_test.sh SOURCE_DIR
set -u
ROOT=$(cd "${1:-.}" && pwd -P)
cd "$ROOT" || exit 2
fail=0 checked=0
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

mapfile -t docs < <(find . \( -name node_modules -o -name '.git' -o -name 'build*' \) -prune -o \
    \( -name '*.md' -o -name '*.1' \) -type f -print | sed 's|^\./||' | sort)
[ ${#docs[@]} -gt 5 ] || { echo "links_test: found only ${#docs[@]} documents" >&2; exit 2; }

# inside ROOT, existing: 0; else 1
resolves() {
    local base=$1 target=$2 p
    case $target in
    /*) p=$target ;;
    *) p=$base/$target ;;
    esac
    p=$(realpath -m -- "$p") || return 1
    case $p in "$ROOT" | "$ROOT"/*) ;; *) return 1 ;; esac
    [ -e "$p" ]
}

for f in "${docs[@]}"; do
    dir=$(dirname "$f")
    # Markdown links, relative to the file (fenced code blocks skipped).
    if [[ $f == *.md ]]; then
        while IFS= read -r link; do
            target=${link%%#*}
            target=${target%% *}
            [ -n "$target" ] || continue
            case $target in http://* | https://* | mailto:*) continue ;; esac
            checked=$((checked + 1))
            resolves "$dir" "$target" || bad "$f: link ($link) does not resolve inside the repository"
        done < <(awk '/^```/{code=!code; next} !code' "$f" |
            grep -o '\](\([^)]*\))' | sed 's/^](\(.*\))$/\1/')
    fi
    # Names of files of the tree, relative to the repository root.
    while IFS= read -r name; do
        checked=$((checked + 1))
        # a name in a plugin's README may be relative to the plugin
        resolves "$ROOT" "$name" || resolves "$dir" "$name" ||
            bad "$f: names $name, which is not in the repository"
    done < <(sed 's/\\f[BIRP]//g; s/\\-/-/g' "$f" |
        grep -oE '(^|[^A-Za-z0-9_./-])(\.\./)*(docs|scripts|bench|examples|fuzz|tests|core|plugins|shared|design|reference)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_]\.(md|sh|c|h|1|ini|js|mjs|py|txt|supp|pc|cmake)\b' |
        sed -E 's/^[^A-Za-z0-9_.]//' | grep -v '\*' | sort -u)
    # Documents outside the tree, however they are named.
    if grep -n '\.\./shared\|shared/design\|shared/reference' "$f" >/dev/null; then
        bad "$f: refers to ../shared, which is not in the repository: $(grep -n '\.\./shared\|shared/design\|shared/reference' "$f" | head -3 | tr '\n' ' ')"
    fi
done
echo "links_test: ${#docs[@]} documents, $checked references, $fail failed"
[ "$fail" = 0 ]
