# scripts/pool.sh - sourced, not run: pool_run JOBS FUNC ITEM... calls
# FUNC ITEM in the background for every ITEM, at most JOBS at once, and
# returns when all have ended.  FUNC reports through files of its own;
# its exit status is not collected (the callers read each item's result
# in the items' order afterwards).  Used by fuzz/run.sh and
# scripts/valgrind.sh, whose jobs are one thread each.
pool_run() {
    local jobs=$1 fn=$2 running=0 item
    shift 2
    for item in "$@"; do
        if [ "$running" -ge "$jobs" ]; then
            wait -n || true
            running=$((running - 1))
        fi
        "$fn" "$item" &
        running=$((running + 1))
    done
    wait
}
