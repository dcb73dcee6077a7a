#!/usr/bin/env bash
# make bench: randctl assess --restart on NIST's restart reference files, the median of three
# runs' wall time (start and file reading included, as in docs/assessment.md's ea_restart times),
# beside ea_restart's on this kind of machine (tests/vectors/sp800-90b/README.md: 22 s on the
# 1-bit dataset; the failing dataset stops at the sanity check). And --conditioning.
# Usage: bench-restart.sh RANDCTL
set -u
randctl=${1:-build/randctl}
v=tests/vectors/sp800-90b
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
run() {     # run ARGS...: prints the wall time of randctl assess ARGS in seconds
    local s e
    s=$(date +%s.%N)
    "$randctl" assess "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'
}
echo "SP 800-90B restart tests and conditioning (randctl assess; median of 3 runs, wall time)"
printf '%-66s %10s %12s\n' "what" "randctl" "NIST's tool"
for spec in "restart/restart_pass_1bit.bin --restart --h-initial 0.95|22 s" \
            "restart/restart_fail_4bit.bin --restart --h-initial 3.9 --bits 4|-"; do
    args=${spec%|*} nist=${spec#*|}
    # shellcheck disable=SC2086
    t=$(median3 "$(run $v/$args)" "$(run $v/$args)" "$(run $v/$args)")
    printf '%-66s %8s s %12s\n' "${args%% *} ${args#* }" "$t" "$nist"
done
args="--conditioning --non-vetted 4096 512 1024 300 0.99"
# shellcheck disable=SC2086
t=$(median3 "$(run $args)" "$(run $args)" "$(run $args)")
printf '%-66s %8s s %12s\n' "$args" "$t" "-"
