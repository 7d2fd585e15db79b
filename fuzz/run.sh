#!/usr/bin/env bash
# fuzz/run.sh - build every fuzz target with clang's libFuzzer and
# ASan + UBSan, fuzz each for FUZZ_SECONDS on a scratch copy of its seed
# corpus, and print one summary line per target.
#
# usage: fuzz/run.sh [target...]      (default: all targets below)
#   FUZZ_SECONDS    seconds per target (default 60)
#   FUZZ_SEED       libFuzzer -seed (default 0: a fresh random seed each
#                   run, for exploring).  CI sets a fixed seed so that a
#                   red run is a regression that replays the same way on
#                   a developer's machine, not the luck of the draw; new
#                   ground is broken by the unseeded runs (see README).
#   FUZZ_JOBS       targets fuzzed at once (default: the number of CPUs)
#   FUZZ_BUILD_DIR  where the fuzzers are built (default build-fuzz-clang)
#   CC              the compiler (default clang)
#
# Exit status: 0 = no target found anything (or clang is missing, which
# is reported and skipped: CTest replays the corpora without it), 1 = a
# crash, leak, timeout or OOM (the input is copied to fuzz/crashes/
# <target>-<kind>-<hash> so it can become a regression input), 2 = usage
# or build error.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_PER=${FUZZ_SECONDS:-60}
SEED=${FUZZ_SEED:-0}
JOBS=${FUZZ_JOBS:-$(nproc)}
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz-clang}
CC=${CC:-clang}
ALL="fuzz_json fuzz_names fuzz_config fuzz_config_split fuzz_rpc_frames
fuzz_sse fuzz_url fuzz_scope fuzz_event fuzz_call_reply fuzz_serve_request"

for v in "$SECONDS_PER" "$SEED" "$JOBS"; do
    case $v in
    '' | *[!0-9]*)
        echo "run.sh: FUZZ_SECONDS, FUZZ_SEED and FUZZ_JOBS must be whole numbers" >&2
        exit 2
        ;;
    esac
done
if [ "$JOBS" = 0 ]; then
    echo "run.sh: FUZZ_JOBS must be above 0" >&2
    exit 2
fi

if ! command -v "$CC" >/dev/null 2>&1; then
    echo "run.sh: $CC not found: libFuzzer runs skipped (apt-get install clang libclang-rt-14-dev)"
    exit 0
fi

CFLAGS="-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
-fno-sanitize-recover=all -fno-omit-frame-pointer -Wall -Wextra -Werror \
-Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter \
-I$ROOT/include $(for m in aurx base names jsonx config journal plugin rpc engine; do
    printf ' -I%s' "$ROOT/lib/$m"; done) -I$ROOT/fuzz"
PKG_CFLAGS=$(pkg-config --cflags json-c inih sqlite3 libcurl) || exit 2
PKG_LIBS=$(pkg-config --libs json-c inih sqlite3 libcurl) || exit 2

# The core sources each target needs, compiled straight into it; every
# lib/aurx rule with them, so that a module that comes to use another one
# still links here (fuzz_rpc_frames did not, once rpc_pool.c started its
# workers through aurx/thread.c).
sources() {
    local c=$ROOT/lib p=$ROOT/plugins
    case $1 in
    fuzz_json) echo "$ROOT/fuzz/fuzz_json.c $c/jsonx/*.c $c/aurx/*.c" ;;
    fuzz_names)
        echo "$ROOT/fuzz/fuzz_names.c $c/names/*.c $c/aurx/*.c" ;;
    fuzz_config | fuzz_config_split)
        echo "$ROOT/fuzz/fuzz_config.c $ROOT/fuzz/fuzz_transports*.c" \
            "$c/config/*.c $c/names/*.c $c/aurx/*.c" \
            "$p/transport-stdio/stdio_config.c" \
            "$p/transport-http/http_config.c $p/transport-http/http_keys.c" \
            "$p/transport-http/http_url.c" ;;
    fuzz_rpc_frames)
        echo "$ROOT/fuzz/fuzz_rpc_frames.c $c/jsonx/*.c $c/aurx/*.c" \
            "$c/rpc/*.c $c/base/*.c $c/engine/call_reply.c $c/engine/util.c" ;;
    fuzz_call_reply)
        echo "$ROOT/fuzz/fuzz_call_reply.c $c/jsonx/*.c $c/aurx/*.c" \
            "$c/engine/call_reply.c $c/engine/util.c" ;;
    fuzz_serve_request)
        echo "$ROOT/fuzz/fuzz_serve_request.c $ROOT/cli/serve_request.c" \
            "$c/jsonx/*.c $c/aurx/*.c" ;;
    fuzz_sse)
        echo "$ROOT/fuzz/fuzz_sse.c $p/transport-http/http_sse.c $c/aurx/*.c" ;;
    fuzz_url)
        echo "$ROOT/fuzz/fuzz_url.c $p/transport-http/http_url.c" ;;
    fuzz_scope)
        echo "$ROOT/fuzz/fuzz_scope.c $p/ext-tool-contract/tc_scope.c" \
            "$p/ext-tool-contract/tc_plugin.c $c/jsonx/*.c $c/aurx/*.c" ;;
    fuzz_event)
        echo "$ROOT/fuzz/fuzz_event.c $p/ext-world-events/we_validate.c" \
            "$c/jsonx/*.c $c/aurx/*.c" ;;
    *) return 1 ;;
    esac
}

corpus_of() {
    case $1 in
    fuzz_json) echo json ;;
    fuzz_names) echo names ;;
    fuzz_config) echo config ;;
    fuzz_config_split) echo config_split ;;
    fuzz_rpc_frames) echo rpc_frames ;;
    fuzz_sse) echo sse ;;
    fuzz_url) echo url ;;
    fuzz_scope) echo scope ;;
    fuzz_event) echo event ;;
    fuzz_call_reply) echo call_reply ;;
    fuzz_serve_request) echo serve_request ;;
    esac
}

TRANSPORT_INC="-I$ROOT/plugins/transport-stdio -I$ROOT/plugins/transport-http"
defines_of() {
    case $1 in
    fuzz_config) echo "$TRANSPORT_INC" ;;
    fuzz_config_split) echo "-DFUZZ_CONFIG_SPLIT $TRANSPORT_INC" ;;
    fuzz_sse | fuzz_url) echo "-I$ROOT/plugins/transport-http" ;;
    fuzz_scope) echo "-I$ROOT/plugins/ext-tool-contract" ;;
    fuzz_event) echo "-I$ROOT/plugins/ext-world-events" ;;
    fuzz_serve_request) echo "-DFUZZ_OWN_JSON_PARSE -I$ROOT/cli" ;;
    esac
}

targets=${*:-$ALL}
for t in $targets; do
    if ! sources "$t" >/dev/null; then
        echo "run.sh: unknown target $t (have: $ALL)" >&2
        exit 2
    fi
done

mkdir -p "$BUILD" || exit 2
SCRATCH=$(mktemp -d /tmp/aur-fuzz-run-XXXXXX) || exit 2
trap 'rm -rf "$SCRATCH"' EXIT

# A clang without the libFuzzer runtime fails here, not per target.
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);
int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)
{ (void)d; (void)n; return 0; }' >"$SCRATCH/probe.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$SCRATCH/probe.c" \
    -o "$SCRATCH/probe" 2>"$SCRATCH/probe.log"; then
    echo "run.sh: $CC cannot link -fsanitize=fuzzer (libFuzzer runtime" \
        "missing? apt-get install libclang-rt-14-dev):" >&2
    cat "$SCRATCH/probe.log" >&2
    exit 2
fi

# Every target is built before any runs: a build error stops the run
# before an hour of fuzzing is spent on the others.
for t in $targets; do
    # shellcheck disable=SC2046 # word splitting of flags and globs wanted
    if ! "$CC" $CFLAGS $PKG_CFLAGS $(defines_of "$t") $(sources "$t") \
        $PKG_LIBS -lm -lpthread -o "$BUILD/$t" 2>"$SCRATCH/$t.build.log"; then
        echo "run.sh: building $t failed:" >&2
        cat "$SCRATCH/$t.build.log" >&2
        exit 2
    fi
done

# fuzz_one T: fuzz T, write its summary line to $SCRATCH/T.line and what a
# failure leaves (the input in base64, the log's end) to $SCRATCH/T.report;
# false on a find.  Runs beside other targets: it prints nothing itself.
fuzz_one() {
    local t=$1 work=$SCRATCH/$1 log rc line execs cov ft corp found a name status
    mkdir -p "$work/corpus" "$work/artifacts"
    cp "$ROOT/fuzz/corpus/$(corpus_of "$t")"/* "$work/corpus/"
    log=$work/fuzz.log
    (cd "$work" &&
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
            "$BUILD/$t" -max_total_time="$SECONDS_PER" -seed="$SEED" \
            -rss_limit_mb=2048 \
            -timeout=10 -max_len=4096 -print_final_stats=1 \
            -artifact_prefix="$work/artifacts/" "$work/corpus" \
            >"$log" 2>&1)
    rc=$?

    # "#N DONE cov: X ft: Y ..." at a clean end, else the last status line.
    line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
    [ -n "$line" ] || line=$(grep -E '^#[0-9]+[[:space:]]' "$log" | tail -n 1)
    execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$line")
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$line")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$line")
    corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9a-zA-Z]+).*/\1/p' <<<"$line")

    found=""
    : >"$SCRATCH/$t.report"
    for a in "$work/artifacts"/*; do
        [ -f "$a" ] || continue
        mkdir -p "$ROOT/fuzz/crashes"
        name=$t-$(basename "$a")
        cp "$a" "$ROOT/fuzz/crashes/$name"
        found="$found fuzz/crashes/$name"
        # A CI log is all that survives a CI run: the input goes in it.
        {
            echo "----- $name ($(wc -c <"$a") bytes), base64 -d to replay -----"
            base64 -w 76 "$a" | head -n 80
        } >>"$SCRATCH/$t.report"
    done
    if [ $rc -ne 0 ] || [ -n "$found" ]; then
        status="FAIL (rc $rc)${found:+:$found}"
        cp "$log" "$ROOT/fuzz/crashes/$t.log" 2>/dev/null || true
        {
            echo "----- $t: last lines of the libFuzzer log -----"
            tail -n 40 "$log"
        } >>"$SCRATCH/$t.report"
    else
        status=ok
    fi
    printf '%-18s %4ss  execs %-10s cov %-6s ft %-6s corpus %-10s %s\n' \
        "$t" "$SECONDS_PER" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
        "${corp:-?}" "$status" >"$SCRATCH/$t.line"
    [ "$status" = ok ]
}

# FUZZ_JOBS targets at a time, each a single-threaded fuzzer on its own
# CPU: every target still gets its FUZZ_SECONDS of one CPU, and the stage
# takes 1/FUZZ_JOBS of the time.
# shellcheck source=../scripts/pool.sh
. "$ROOT/scripts/pool.sh"
# shellcheck disable=SC2086 # the target list is words
pool_run "$JOBS" fuzz_one $targets
# In the targets' order, whatever order they ended in.
failed=0
for t in $targets; do
    cat "$SCRATCH/$t.report" >&2 2>/dev/null
    if [ -s "$SCRATCH/$t.line" ]; then
        cat "$SCRATCH/$t.line"
        grep -q ' ok$' "$SCRATCH/$t.line" || failed=1
    else
        echo "$t: no result (the fuzzing job did not finish)"
        failed=1
    fi
done
exit $failed
