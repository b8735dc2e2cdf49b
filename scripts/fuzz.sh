#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan, UBSan) into build-fuzz/ and fuzzes each one.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   fuzz each target (default 60 s, all targets)
#   scripts/fuzz.sh --ci                               CI run: replay the committed corpus, then 10 s each,
#                                                      nproc targets at a time
# Options: --jobs=N (N targets at a time; default 1, --ci: nproc), --parallel (all targets at once),
# --no-build; FUZZ_ARGS adds libFuzzer flags.
# Targets: config idx cifar npy checkpoint policy.
# New inputs go to build-fuzz/corpus/<target>/ (tests/fuzz/corpus/ is only read), crashes to
# build-fuzz/artifacts/<target>/, logs to build-fuzz/logs/. Exits 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=build-fuzz
seconds=60
ci=0
jobs=1
parallel=0
do_build=1
targets=()
for arg in "$@"; do
  case $arg in
    --ci) ci=1 seconds=10 jobs=$(nproc) ;;
    --parallel) parallel=1 ;;
    --jobs=[1-9]*) jobs=${arg#--jobs=} ;;
    --no-build) do_build=0 ;;
    [0-9]*) seconds=$arg ;;
    config|idx|cifar|npy|checkpoint|policy) targets+=("$arg") ;;
    *) echo "usage: $0 [--ci] [--jobs=N] [--parallel] [--no-build] [SECONDS_PER_TARGET] [config|idx|cifar|npy|checkpoint|policy ...]" >&2
       exit 2 ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(config idx cifar npy checkpoint policy)
[[ $parallel == 0 ]] || jobs=${#targets[@]}

if [[ $do_build == 1 ]]; then
  # ccache on (CMakeLists.txt's launcher): tests/fuzz/fuzz.cmake builds the PCH without a timestamp,
  # so a cached one is accepted in a fresh tree.
  if [[ ! -f $build/CMakeCache.txt ]]; then
    CC=clang CXX=clang++ cmake -S . -B $build -G Ninja -C tests/fuzz/fuzz.cmake >/dev/null
  fi
  cmake --build $build -j "${FUZZ_BUILD_JOBS:-2}" --target "${targets[@]/#/fuzz_}"
fi

# Per target: longest input worth trying (seeds + room to grow), dictionary.
declare -A max_len=([config]=4096 [idx]=4096 [cifar]=8192 [npy]=4096 [checkpoint]=24576 [policy]=40960)
declare -A extra=([config]="-dict=$root/tests/fuzz/config.dict")
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1"

# Fuzzes one target; its log is build-fuzz/logs/<target>.log.
run_target() {
  local t=$1 bin=$root/$build/fuzz/fuzz_$1 seeds=$root/tests/fuzz/corpus/$1
  local corpus=$root/$build/corpus/$t artifacts=$root/$build/artifacts/$t/ log=$root/$build/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local opts=(-timeout=30 -rss_limit_mb=4096 -max_len="${max_len[$t]}" -artifact_prefix="$artifacts" ${extra[$t]:-}
              ${FUZZ_ARGS:-})
  : >"$log"
  if [[ $ci == 1 ]]; then
    # Every committed input (seeds and past crashers) must run clean.
    "$bin" "${opts[@]}" "$seeds"/* >>"$log" 2>&1 || return 1
  fi
  nice -n 10 "$bin" "${opts[@]}" -max_total_time="$seconds" -print_final_stats=1 "$corpus" "$seeds" >>"$log" 2>&1
}

summary() {
  local t=$1 rc=$2 log=$root/$build/logs/$1.log
  local runs time
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  time=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' | tail -1 || true)
  if [[ $rc == 0 ]]; then
    printf '%-11s ok     %8s runs in %4s s   corpus %s files\n' "$t" "${runs:-?}" "${time:-?}" \
      "$(ls "$root/$build/corpus/$t" | wc -l)"
  else
    printf '%-11s FAILED (exit %s): see %s and %s\n' "$t" "$rc" "$log" "$root/$build/artifacts/$t/"
    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|invariant failed' "$log" || true
  fi
}

# Each target fuzzes for the same time, so a slot frees when the oldest running target ends.
failed=0
declare -A pids rcs
for i in "${!targets[@]}"; do
  if ((i >= jobs)); then
    rc=0; wait "${pids[${targets[i - jobs]}]}" || rc=$?
    rcs[${targets[i - jobs]}]=$rc
  fi
  run_target "${targets[i]}" & pids[${targets[i]}]=$!
done
for i in "${!targets[@]}"; do
  t=${targets[i]}
  if ((i >= ${#targets[@]} - jobs)); then
    rc=0; wait "${pids[$t]}" || rc=$?
    rcs[$t]=$rc
  fi
  summary "$t" "${rcs[$t]}"
  [[ ${rcs[$t]} == 0 ]] || failed=1
done
exit $failed
