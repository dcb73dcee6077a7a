#!/usr/bin/env bash
# Integration test of measured credit for the sources that keep a configured one: a hardware
# RNG whose bytes take only four values (a file standing in for the device) is assessed at
# start below the 2 bits a byte it is credited; randd keeps the credit and keeps using it, and
# says so in the log, in STATUS (assessment_warning) and in the metrics. One of random bytes
# assesses above its credit: no warning. getrandom is never assessed.
. "$(dirname "$0")/common.sh"

export RANDD_SOCKET=$work/randd.sock

assessed() { [ "$(status_of "$1" assessments)" = 1 ]; }


# Four values a byte: at most 2 bits, and an assessment's confidence bounds put it below.
four_values=$(for i in $(seq 64); do printf '\\000\\001\\002\\003'; done)   # for tr: 256 of them
head -c 1M /dev/urandom | tr '\000-\377' "$four_values" >"$work/four-valued"

start_with_config "cpu_source = no" "jitter = no" "kernel_topup = no" "hwrng_device = $work/four-valued"
if wait_for "hwrng's assessment in STATUS" assessed hwrng; then
    pass "hwrng is assessed at start ($(status_of hwrng assessed_entropy_per_byte) bits a byte)"
else
    fail "no hwrng assessment: $(cat "$work/log")"
fi
warning=$(status_of hwrng assessment_warning)
[[ $warning =~ ^SP\ 800-90B\ assessment\ found\ [0-9.]+\ bits\ a\ byte,\ below\ the\ 2\ credited$ ]] &&
    pass "STATUS warns: $warning" || fail "assessment_warning: '$warning'"
in_log 'source hwrng: SP 800-90B assessment found [0-9.]+ bits a byte, below the 2 credited; keeping the configured credit' "$work/log" &&
    pass "the log warns, naming source, assessed and credited figures" || fail "no warning in the log: $(cat "$work/log")"
field_is hwrng entropy_per_byte 2 && pass "hwrng keeps its configured credit of 2 bits a byte" ||
    fail "hwrng credit: $(status_of hwrng entropy_per_byte)"
field_is hwrng state healthy && pass "and stays in use" || fail "hwrng is $(status_of hwrng state)"
"$RANDCTL" metrics | grep -q '^randd_source_assessment_warning{source="hwrng"} 1$' &&
    pass "metrics: randd_source_assessment_warning 1 for hwrng" || fail "no warning metric"
"$RANDCTL" metrics | grep -q '^randd_source_assessment_warning{source="getrandom"} 0$' &&
    pass "metrics: 0 for getrandom" || fail "getrandom's warning metric"
field_is getrandom assessed_entropy_per_byte null && pass "getrandom is not assessed (null)" ||
    fail "getrandom assessed: $(status_of getrandom assessed_entropy_per_byte)"
stop_randd

# Random bytes (common.sh's stand-in hwrng): assessed above the credit, no warning.
start_with_config "cpu_source = no" "jitter = no" "kernel_topup = no" "hwrng_device = $work/hwrng"
if wait_for "hwrng's assessment in STATUS" assessed hwrng; then
    awk -v h="$(status_of hwrng assessed_entropy_per_byte)" 'BEGIN { exit !(h > 2) }' &&
        pass "random bytes assess above the credit ($(status_of hwrng assessed_entropy_per_byte) bits a byte)" ||
        fail "random bytes assessed at $(status_of hwrng assessed_entropy_per_byte)"
    field_is hwrng assessment_warning null && pass "no assessment warning then" ||
        fail "assessment_warning: $(status_of hwrng assessment_warning)"
    in_log 'source hwrng: assessed [0-9.]+ bits a byte, credited 2' "$work/log" &&
        pass "the log gives the figure beside the credit" || fail "no assessment line: $(cat "$work/log")"
fi
stop_randd

finish test_credit.sh
