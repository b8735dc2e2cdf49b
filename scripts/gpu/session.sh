#!/usr/bin/env bash
# The GPU benchmark session of issue #3, in stages that each fit in one device call (under 9
# minutes on one H100 with 16 cores). Run from anywhere; stages may be combined in one call:
#
#   scripts/gpu/session.sh build             configure (LibTorch with CUDA from python3's torch,
#                                            sm_90, Release, Ninja); build dynamix and the GPU tests
#   scripts/gpu/session.sh build-all         the rest of the build, while the call's budget lasts
#   scripts/gpu/session.sh test              ctest on the GPU tests (CUDA kernels, NCCL, device
#                                            buckets, any test named cuda/gpu) -> $OUT/ctest-gpu.txt
#   scripts/gpu/session.sh bench [MODEL...]  per model x fp32/bf16 x contiguous/channels_last:
#                                            `dynamix bench step` and scripts/gpu/pytorch_loop.py
#                                            with the same settings, alternating -> bench-step.jsonl
#   scripts/gpu/session.sh compile [MODEL...] PyTorch's best modes (bf16, channels_last,
#                                            cudnn.benchmark, torch.compile)   -> bench-step.jsonl
#   scripts/gpu/session.sh contiguous [MODEL] fp32 contiguous `bench step` with one setting changed at
#                                            a time, and a `dynamix train` split (RESULTS §17b)
#   scripts/gpu/session.sh allreduce         `dynamix bench allreduce` on the GPU: NCCL at 1 rank,
#                                            MPI with host staging, CPU reference -> allreduce.txt
#   scripts/gpu/session.sh runs              `dynamix train` for real: a CPU checkpoint resumed on
#                                            the GPU, then 4 ranks on the GPU under MPS with thread
#                                            shares $MPS_SHARES, every policy  -> runs.tar.gz
#
# MODEL: resnet18 (3x32x32, batch 256, 10 classes), resnet50, vgg16 (3x224x224, batch 64, 1000
# classes); default all three. A stage that needs binaries builds what is missing first (a
# fresh machine then pays for the build). Items that fail are recorded and the stage goes on;
# the script exits 1 if any item failed, after printing the summary table. Files under $OUT:
# env.txt build.log dynamix-bin.tar.xz ctest-gpu.txt bench-step.jsonl bench-logs.txt allreduce.txt
# session-summary.txt. scripts/gpu/summarize.py turns them into the tables of docs/RESULTS.md.
#
# Settings (environment): OUT (default $BUILD_DIR/out), BUILD_DIR (build-gpu), PYTHON (python3),
# DEVICE (cuda; cpu for a dry run without a GPU), BUDGET_S (510: seconds for the whole call, all
# its stages together; no item starts later and none runs past it), ITEM_TIMEOUT_S (150),
# COMPILE_TIMEOUT_S (300), BENCH_WARMUP (10), BENCH_STEPS (30), BENCH_REPEATS (3), BENCH_BATCH
# (unset: the issue's batches; set for dry runs only), CMAKE_EXTRA (more configure flags),
# DYNAMIX_METHOD (auto | bench-step | train: how DYNAMIX's step is timed, see choose_method),
# GPU_TESTS (cuda|gpu|nccl|device|OptimizerArchive: test and target names, case-insensitive, that the test stage
# takes), CARRIED_BIN (build-gpu-bin/dynamix-bin.tar.xz: the build stage's
# $OUT/dynamix-bin.tar.xz, carried into a later call that may land on a fresh machine, so that
# bench and allreduce need no new build), BIN_TARBALL (1; 0: the build stage returns no binary,
# leaving its place among the 8 files a call returns), TEST_TIMEOUT_S (300: per ctest test),
# runs: MPS_SHARES (100,100,50,25), MPS_POLICIES (static proportional gns dynamix), MPS_MODEL
# (resnet50), MPS_IMAGE (224), MPS_BATCH (32 per rank), MPS_STEPS (300), RESUME_CHECK (1),
# RESUME_FROM (a run folder with a checkpoint written elsewhere, e.g. by LibTorch 1.13, to resume).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
BUILD_DIR=${BUILD_DIR:-build-gpu}
OUT=${OUT:-$root/$BUILD_DIR/out}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
BUDGET_S=${BUDGET_S:-510}
GPU_TESTS=${GPU_TESTS:-cuda|gpu|nccl|device|OptimizerArchive}
ITEM_TIMEOUT_S=${ITEM_TIMEOUT_S:-150}
COMPILE_TIMEOUT_S=${COMPILE_TIMEOUT_S:-300}
BENCH_WARMUP=${BENCH_WARMUP:-10}
BENCH_STEPS=${BENCH_STEPS:-30}
BENCH_REPEATS=${BENCH_REPEATS:-3}
ALL_MODELS=(resnet18 resnet50 vgg16)

mkdir -p "$OUT"
if [[ -f .gpu-deps/env.sh ]]; then
  # shellcheck disable=SC1091
  source .gpu-deps/env.sh
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONUNBUFFERED=1
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}
fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
DYNAMIX="$root/$BUILD_DIR/bin/dynamix"
CARRIED_BIN=${CARRIED_BIN:-build-gpu-bin/dynamix-bin.tar.xz}

# --- Summary rows: stage, item, status, seconds, note --------------------------------------------
ROWS=()
FAILED=0
row() {  # row STAGE ITEM STATUS SECONDS NOTE
  ROWS+=("$(printf '| %-9s | %-44s | %-7s | %7s | %s |' "$1" "$2" "$3" "$4" "$5")")
  [[ $3 == ok || $3 == skipped ]] || FAILED=1
}
print_summary() {
  ((${#ROWS[@]})) || return 0
  {
    echo
    echo "## session.sh $* ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    printf '| %-9s | %-44s | %-7s | %7s | %s |\n' stage item status seconds note
    printf '| %-9s | %-44s | %-7s | %7s | %s |\n' --- --- --- --- ---
    printf '%s\n' "${ROWS[@]}"
  } | tee -a "$OUT/session-summary.txt"
}
die() {
  echo "session.sh: error: $*" >&2
  row "${STAGE:-?}" fatal FAILED - "$*"
  exit 1
}
trap 'rc=$?; print_summary "$ARGS"; exit $rc' EXIT
ARGS="$*"

stage_start() {
  STAGE=$1
  echo "=== session.sh $STAGE ($(left)s of the call's budget left) ==="
}
left() { echo $((BUDGET_S - SECONDS)); }  # SECONDS counts from the script's start

# run_item STAGE ITEM TIMEOUT LOG CMD...: runs CMD with its output appended to LOG under a header,
# bounded by TIMEOUT and the call's budget. Sets ITEM_RC and ITEM_S; returns 0 always.
run_item() {
  local stage=$1 item=$2 limit=$3 log=$4
  shift 4
  local rem
  rem=$(left)
  ((limit < rem)) || limit=$rem
  ITEM_RC=0
  ITEM_S=0
  if ((limit < 15)); then
    ITEM_RC=-1
    echo "### $item: skipped, the call's budget is spent" >>"$log"
    return 0
  fi
  echo "### $item ($(date -u +%H:%M:%S), limit ${limit}s): $*" >>"$log"
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1 || ITEM_RC=$?
  ITEM_S=$((SECONDS - t0))
  echo "### $item: exit $ITEM_RC after ${ITEM_S}s" >>"$log"
  return 0
}

write_env() {
  {
    echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(hostname) $(uname -r), $(nproc) cores"
    echo "# tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
      "+ $(git status --short 2>/dev/null | wc -l) changed files"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 || true
    "$PY" - <<'EOF' 2>&1 || true
def show(label, read):
    try:
        print(label, read())
    except Exception as e:
        print(label, "?", type(e).__name__, e)
import torch
show("torch", lambda: torch.__version__)
show("torch cuda", lambda: torch.version.cuda)
show("cuda available", torch.cuda.is_available)
show("device", lambda: torch.cuda.get_device_name(0))
show("cudnn", torch.backends.cudnn.version)
show("torch's nccl", lambda: torch.cuda.nccl.version())
show("cmake_prefix_path", lambda: torch.utils.cmake_prefix_path)
def tv():
    import torchvision
    return torchvision.__version__
show("torchvision", tv)
EOF
    nvcc --version 2>&1 | tail -2 || true
    cmake --version | head -1 || true
    mpirun --version 2>&1 | head -1 || true
    g++ --version | head -1 || true
    grep -h NCCL_VERSION_CODE /usr/include/nccl.h /usr/local/cuda/include/nccl.h 2>/dev/null | head -1 || true
  } >"$OUT/env.txt"
}

# --- build ---------------------------------------------------------------------------------------
# Build targets of the GPU tests: targets named after $GPU_TESTS, and the test binaries whose
# sources hold a test (suite or name) matching it, wherever CMake files put them.
gpu_targets() {
  # shellcheck disable=SC2016
  ninja -C "$BUILD_DIR" -t targets all | sed -n 's/^\([A-Za-z0-9_]*\): phony$/\1/p' | grep -v '^cmake_' |
    "$PY" -c '
import pathlib, re, sys
want = re.compile(sys.argv[1], re.I)
phony = sys.stdin.read().split()
found = {p for p in phony if want.search(p)}
test_re = re.compile(r"^\s*TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)", re.M)
sources = {f.name for f in pathlib.Path("tests").rglob("*.cc")
           if any(want.search(a) or want.search(b) for a, b in test_re.findall(f.read_text(errors="replace")))}
for cm in pathlib.Path("tests").rglob("CMakeLists.txt"):
    text = cm.read_text()
    lists = {}  # set(VAR ...) and list(APPEND VAR ...): source lists named by a variable
    for var, vals in re.findall(r"\bset\(\s*(\w+)\s+([^)]*)\)", text) + re.findall(r"list\(\s*APPEND\s+(\w+)\s+([^)]*)\)", text):
        lists[var] = lists.get(var, "") + " " + vals
    text = re.sub(r"\$\{(\w+)\}", lambda m: lists.get(m.group(1), m.group(0)), text)
    for name, body in re.findall(r"dynamix_add_(?:mpi_)?(?:test|binary)\(\s*([\w${}]+)(.*?)\)", text, re.S):
        if any(re.search(r"(^|[\s/])" + re.escape(s) + r"(\s|$)", body) for s in sources):
            rx = re.compile("^" + re.sub(r"\\\$\\\{\w+\\\}", ".*", re.escape(name)) + "$")
            found.update(p for p in phony if rx.match(p))
if found:
    print("\n".join(sorted(found)))
' "$GPU_TESTS"
}

configure() {
  local torch_prefix
  torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
    die "$PY cannot import torch (LibTorch with CUDA comes from PyTorch here)"
  local prefix=$torch_prefix${CMAKE_PREFIX_PATH:+;${CMAKE_PREFIX_PATH//:/;}}
  local flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$prefix")
  if [[ $DEVICE == cuda ]]; then
    flags+=(-DDYNAMIX_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
  fi
  local extra_flags=()
  read -r -a extra_flags <<<"${CMAKE_EXTRA:-}"
  flags+=("${extra_flags[@]}")
  local log="$OUT/configure.tmp" t0=$SECONDS
  echo "### cmake -S . -B $BUILD_DIR ${flags[*]}" >>"$OUT/build.log"
  if ! cmake -S . -B "$BUILD_DIR" "${flags[@]}" >"$log" 2>&1; then
    cat "$log" >>"$OUT/build.log"
    rm -f "$log"
    tail -30 "$OUT/build.log"
    die "cmake configure failed (build.log)"
  fi
  cat "$log" >>"$OUT/build.log"
  grep '^-- DYNAMIX:' "$log" || true
  if [[ $DEVICE == cuda ]] && ! grep -q 'DYNAMIX: CUDA LibTorch ON' "$log"; then
    rm -f "$log"
    die "configured without a CUDA LibTorch (build.log): the GPU path would not be built"
  fi
  rm -f "$log"
  row "${STAGE:-build}" configure ok $((SECONDS - t0)) "$torch_prefix"
}

# ensure_built TARGET...: configures if needed, then builds the targets (quick when up to date).
ensure_built() {
  (($#)) || die "ensure_built: no target"
  [[ -f $BUILD_DIR/build.ninja ]] || configure
  local t0=$SECONDS rem rc=0
  rem=$(left)
  ((rem > 10)) || die "no time left in this call to build $*"
  echo "### ninja $* ($(date -u +%H:%M:%S), limit ${rem}s)" >>"$OUT/build.log"
  timeout -k 10 "$rem" ninja -k 0 -C "$BUILD_DIR" "$@" >>"$OUT/build.log" 2>&1 || rc=$?
  if ((rc == 124 || rc == 137)); then
    die "the build of $* did not finish within the call's budget;" \
      "call again at once (ninja resumes while the machine is warm)"
  elif ((rc != 0)); then
    grep -E 'error|FAILED' "$OUT/build.log" | tail -20
    die "build of $* failed (build.log)"
  fi
  echo "built $* in $((SECONDS - t0))s"
}

# The dynamix binary for stages that need nothing else: this build's, else one that an earlier
# call's build stage returned (dynamix-bin.tar.xz, carried back in as $CARRIED_BIN), else a build.
need_dynamix() {
  if [[ ! -f $BUILD_DIR/build.ninja && -f $CARRIED_BIN ]]; then
    mkdir -p "$BUILD_DIR/bin"
    tar -C "$BUILD_DIR/bin" -xJf "$CARRIED_BIN"
    if "$DYNAMIX" --help >/dev/null 2>&1; then
      row "$STAGE" "dynamix from $CARRIED_BIN" ok 0 "built by an earlier call"
      return 0
    fi
    echo "session.sh: the carried dynamix does not run here; building it"
    rm -f "$DYNAMIX"
  fi
  ensure_built dynamix
}

stage_build() {
  stage_start build
  write_env
  cat "$OUT/env.txt"
  configure
  local t0=$SECONDS targets
  mapfile -t targets < <(gpu_targets)
  ensure_built dynamix "${targets[@]}"
  row build "dynamix + ${#targets[@]} GPU test targets" ok $((SECONDS - t0)) "${targets[*]}"
  "$DYNAMIX" --version >>"$OUT/env.txt" 2>&1 || true  # which LibTorch and CUDA this binary has
  # For later calls on a fresh machine: carry it back in as $CARRIED_BIN (see need_dynamix).
  if [[ ${BIN_TARBALL:-1} == 1 ]]; then
    tar -C "$BUILD_DIR/bin" -cJf "$OUT/dynamix-bin.tar.xz" dynamix
    row build "dynamix-bin.tar.xz" ok 0 "$(du -h "$OUT/dynamix-bin.tar.xz" | cut -f1)"
  fi
}

# Everything else (the other tests, benchmarks) while the call's budget lasts; run again to resume.
stage_build_all() {
  stage_start build-all
  [[ -f $BUILD_DIR/build.ninja ]] || configure
  local t0=$SECONDS rem rc=0
  rem=$(left)
  if ((rem < 30)); then
    row build-all all skipped 0 "no time left in this call"
    return 0
  fi
  echo "### ninja (all, limit ${rem}s)" >>"$OUT/build.log"
  timeout -k 10 "$rem" ninja -C "$BUILD_DIR" >>"$OUT/build.log" 2>&1 || rc=$?
  case $rc in
    0) row build-all all ok $((SECONDS - t0)) "" ;;
    124 | 137) row build-all all skipped $((SECONDS - t0)) "stopped at the budget; run build-all again" ;;
    *) row build-all all FAILED $((SECONDS - t0)) "exit $rc (build.log)" ;;
  esac
}

# --- test ----------------------------------------------------------------------------------------
stage_test() {
  stage_start test
  [[ -f $BUILD_DIR/build.ninja ]] || configure
  local targets
  mapfile -t targets < <(gpu_targets)
  ((${#targets[@]})) || die "no build target matches '$GPU_TESTS' (configured without the CUDA toolkit?)"
  ensure_built "${targets[@]}"
  # CTests matching $GPU_TESTS by name, or running a GPU target's binary (alone or under mpirun:
  # the multi-rank runs of a shared binary are named after their test file, not the binary).
  local names
  names=$(cd "$BUILD_DIR" && ctest --show-only=json-v1 |
    "$PY" -c '
import json, os, re, sys
want = re.compile(sys.argv[1], re.I)
targets = set(sys.argv[2:])
for test in json.load(sys.stdin)["tests"]:
    if want.search(test["name"]) or targets & {os.path.basename(a) for a in test.get("command", [])}:
        print(test["name"])
' "$GPU_TESTS" "${targets[@]}")
  [[ -n $names ]] || die "ctest lists no GPU test (GPU_TESTS='$GPU_TESTS')"
  local regex
  regex=$(sed -e 's/[][\.*^$+?(){}|]/\\&/g' -e 's/^/^/' -e 's/$/$/' <<<"$names" | paste -sd'|')
  local list
  mapfile -t list <<<"$names"
  echo "GPU tests (${#list[@]}):"
  printf '  %s\n' "${list[@]}"
  local rc=0 t0=$SECONDS rem
  rem=$(left)
  {
    echo "# ctest -R on the GPU tests, $(date -u '+%Y-%m-%d %H:%M UTC')"
    printf '#   %s\n' "${list[@]}"
  } >"$OUT/ctest-gpu.txt"
  if ((rem < 15)); then
    row test "ctest GPU tests" skipped 0 "no time left in this call"
    return 0
  fi
  (cd "$BUILD_DIR" && timeout -k 10 "$rem" ctest -R "$regex" -j 4 --output-on-failure --timeout "${TEST_TIMEOUT_S:-300}") \
    >>"$OUT/ctest-gpu.txt" 2>&1 || rc=$?
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|tests failed|Not Run' "$OUT/ctest-gpu.txt" | tail -60 || true
  local total skipped
  total=$(grep -cE '^ *[0-9]+/[0-9]+ Test' "$OUT/ctest-gpu.txt" || true)
  skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test.*Skipped' "$OUT/ctest-gpu.txt" || true)
  if ((rc == 0)); then
    row test "ctest GPU tests" ok $((SECONDS - t0)) "$total run, $skipped skipped (ctest-gpu.txt)"
  else
    row test "ctest GPU tests" FAILED $((SECONDS - t0)) "exit $rc, $total run, $skipped skipped (ctest-gpu.txt)"
  fi
  if [[ $DEVICE == cuda ]] && ((total > 0 && skipped == total)); then
    row test "GPU seen by the tests" FAILED - "every GPU test skipped: no device visible to them?"
  fi
}

# --- bench / compile -----------------------------------------------------------------------------
model_shape() {  # model -> "batch image_size classes" (issue #3's settings; BENCH_BATCH overrides)
  case $1 in
    resnet18) echo "${BENCH_BATCH:-256} 32 10" ;;
    resnet50 | vgg16) echo "${BENCH_BATCH:-64} 224 1000" ;;
  esac
}

# record IMPL LOGFILE KEY=VALUE... [-- RECORD.PY OPTIONS...]: appends the item's JSON line to
# bench-step.jsonl and its log to bench-logs.txt, and adds a summary row.
record() {
  local impl=$1 log=$2
  shift 2
  local sets=() kv
  while (($#)); do
    kv=$1
    shift
    [[ $kv == -- ]] && break
    sets+=(--set "$kv")
  done
  local line
  line=$("$PY" "$root/scripts/gpu/record.py" --impl "$impl" --log "$log" --rc "$ITEM_RC" --seconds "$ITEM_S" \
    "${sets[@]}" "$@") || die "record.py failed on $log"
  echo "$line" >>"$OUT/bench-step.jsonl"
  cat "$log" >>"$OUT/bench-logs.txt"
  local summary
  summary=$("$PY" -c '
import json, sys
r = json.loads(sys.argv[1])
print("%.1f img/s, %.2f ms/step" % (r["images_per_s"], r["step_ms_median"]) if r["ok"] else r["error"])
' "$line")
  local status=ok
  grep -q '"ok": true' <<<"$line" || status=FAILED
  row "$STAGE" "$ITEM" "$status" "$ITEM_S" "$summary"
}

# How DYNAMIX's step is timed. bench-step: `dynamix bench step`, which also runs its own bare
# LibTorch loop; that loop must run on the GPU too, or its CPU steps eat the budget. train: a
# `dynamix train` run of 1 + warmup + steps x repeats steps, timed from its metrics.jsonl
# step_time (the same Trainer::step). auto: bench-step when bench_step.cc puts its bare loop on a
# device, else train.
choose_method() {
  case ${DYNAMIX_METHOD:-auto} in
    bench-step | train) echo "${DYNAMIX_METHOD}" ;;
    auto)
      if grep -q 'device' framework/cli/bench_step.cc; then echo bench-step; else echo train; fi
      ;;
    *) die "DYNAMIX_METHOD must be auto, bench-step or train" ;;
  esac
}

DYN_TIMEOUTS=0
bench_dynamix() {  # model batch size classes precision channels_last [label [config key=value...]]
  local m=$1 b=$2 s=$3 c=$4 p=$5 cl=$6 label=${7:-same-settings} log
  local extra_sets=("${@:8}") set_flags=() kv
  for kv in "${extra_sets[@]}"; do set_flags+=(--set "$kv"); done
  ITEM="dynamix $m $p $([[ $cl == true ]] && echo channels_last || echo contiguous)${extra_sets[*]:+ ${extra_sets[*]}}"
  if ((DYN_TIMEOUTS >= 2)); then
    row "$STAGE" "$ITEM" skipped 0 "two dynamix items timed out before"
    return 0
  fi
  local settings=("model=$m" "batch=$b" "image_size=$s" "classes=$c" "precision=$p" "channels_last=$cl"
    compile=false "device=$DEVICE" "label=$label" "flags=${extra_sets[*]}")
  log=$(mktemp)
  if [[ $METHOD == bench-step ]]; then
    run_item "$STAGE" "$ITEM" "$ITEM_TIMEOUT_S" "$log" "$DYNAMIX" bench step \
      --set "train.device=$DEVICE" --set "model=$m" --set "dataset.shape=[3,$s,$s]" --set "dataset.classes=$c" \
      --set "batch.init=$b" --set "train.precision=$p" --set "train.channels_last=$cl" \
      --warmup "$BENCH_WARMUP" --steps "$BENCH_STEPS" --repeats "$BENCH_REPEATS" "${set_flags[@]}"
    ((ITEM_RC == -1)) || record dynamix "$log" "${settings[@]}"
  else
    local dir="$root/$BUILD_DIR/bench-train"
    rm -rf "$dir"
    mkdir -p "$dir"
    cat >"$dir/config.yaml" <<EOF
# scripts/gpu/session.sh: $ITEM, timed from metrics.jsonl
model: $m
dataset: {name: synthetic, shape: [3, $s, $s], classes: $c, train_size: 65536, test_size: 256}
batch: {init: $b}
train: {optimizer: sgd, lr: 0.01, momentum: 0.9, epochs: 1000,
        max_steps: $((1 + BENCH_WARMUP + BENCH_STEPS * BENCH_REPEATS)),
        device: $DEVICE, precision: $p, channels_last: $cl}
output: {dir: $dir/run}
EOF
    run_item "$STAGE" "$ITEM" "$ITEM_TIMEOUT_S" "$log" "$DYNAMIX" train --config "$dir/config.yaml" "${set_flags[@]}"
    if ((ITEM_RC != -1)); then
      cat "$dir/config.yaml" >>"$log"
      record dynamix "$log" "${settings[@]}" -- --metrics "$dir/run/metrics.jsonl" \
        --skip $((1 + BENCH_WARMUP)) --chunk "$BENCH_STEPS"
    fi
  fi
  if ((ITEM_RC == -1)); then
    row "$STAGE" "$ITEM" skipped 0 "the call's budget is spent"
  elif ((ITEM_RC == 124 || ITEM_RC == 137)); then
    DYN_TIMEOUTS=$((DYN_TIMEOUTS + 1))
  fi
  rm -f "$log"
}

bench_pytorch() {  # label timeout model batch size classes precision channels_last [extra flags...]
  local label=$1 limit=$2 m=$3 b=$4 s=$5 c=$6 p=$7 cl=$8 log
  shift 8
  local flags=("$@") extra="$*"
  [[ $cl == true ]] && flags+=(--channels-last)
  ITEM="pytorch $m $p $([[ $cl == true ]] && echo channels_last || echo contiguous)${extra:+ $extra}"
  log=$(mktemp)
  run_item "$STAGE" "$ITEM" "$limit" "$log" "$PY" "$root/scripts/gpu/pytorch_loop.py" --model "$m" --batch "$b" \
    --image-size "$s" --classes "$c" --precision "$p" --device "$DEVICE" --warmup "$BENCH_WARMUP" \
    --steps "$BENCH_STEPS" --repeats "$BENCH_REPEATS" --label "$label" "${flags[@]}"
  if ((ITEM_RC == -1)); then
    row "$STAGE" "$ITEM" skipped 0 "the call's budget is spent"
  else
    record pytorch "$log" "model=$m" "batch=$b" "image_size=$s" "classes=$c" "precision=$p" \
      "channels_last=$cl" "device=$DEVICE" "label=$label" "flags=$extra"
  fi
  rm -f "$log"
}

stage_bench() {
  stage_start bench
  local models=("$@")
  ((${#models[@]})) || models=("${ALL_MODELS[@]}")
  need_dynamix
  write_env
  METHOD=$(choose_method)
  row bench "DYNAMIX timed by" ok 0 "$METHOD (DYNAMIX_METHOD=${DYNAMIX_METHOD:-auto})"
  local i=0 m p cl b s c
  for m in "${models[@]}"; do
    read -r b s c <<<"$(model_shape "$m")"
    for p in fp32 bf16; do
      for cl in false true; do
        # Alternate which loop goes first, so neither always runs on a warmer GPU.
        if ((i % 2 == 0)); then
          bench_dynamix "$m" "$b" "$s" "$c" "$p" "$cl"
          bench_pytorch same-settings "$ITEM_TIMEOUT_S" "$m" "$b" "$s" "$c" "$p" "$cl"
        else
          bench_pytorch same-settings "$ITEM_TIMEOUT_S" "$m" "$b" "$s" "$c" "$p" "$cl"
          bench_dynamix "$m" "$b" "$s" "$c" "$p" "$cl"
        fi
        # PyTorch's SGD one parameter at a time (foreach off): how much of the gap the optimizer makes.
        if [[ $p == fp32 && $cl == false ]]; then
          bench_pytorch same-settings "$ITEM_TIMEOUT_S" "$m" "$b" "$s" "$c" "$p" "$cl" --optimizer-impl loop
        fi
        i=$((i + 1))
      done
    done
  done
  "$PY" "$root/scripts/gpu/summarize.py" "$OUT" | tee -a "$OUT/session-summary.txt" || row bench summarize FAILED - ""
}

stage_compile() {
  stage_start compile
  local models=("$@")
  ((${#models[@]})) || models=("${ALL_MODELS[@]}")
  need_dynamix
  write_env
  METHOD=$(choose_method)
  local m b s c
  for m in "${models[@]}"; do
    read -r b s c <<<"$(model_shape "$m")"
    bench_dynamix "$m" "$b" "$s" "$c" bf16 true best train.cudnn_benchmark=true
    bench_pytorch best "$ITEM_TIMEOUT_S" "$m" "$b" "$s" "$c" bf16 true --cudnn-benchmark
    bench_pytorch best "$COMPILE_TIMEOUT_S" "$m" "$b" "$s" "$c" bf16 true --cudnn-benchmark --compile
  done
  "$PY" "$root/scripts/gpu/summarize.py" "$OUT" | tee -a "$OUT/session-summary.txt" || row compile summarize FAILED - ""
}

# --- contiguous ----------------------------------------------------------------------------------
# Where DYNAMIX's contiguous-layout step loses ~17 ms to the bare loop (RESULTS §17b): fp32
# contiguous `bench step` as it is and with one setting changed at a time, channels_last for
# reference, then one `dynamix train` run whose metrics split the step into data, compute and comm.
stage_contiguous() {
  stage_start contiguous
  local m=${1:-resnet18} b s c kv
  need_dynamix
  write_env
  read -r b s c <<<"$(model_shape "$m")"
  METHOD=bench-step
  bench_dynamix "$m" "$b" "$s" "$c" fp32 false bisect
  for kv in dataset.workers=1 monitor.enabled=false train.cudnn_benchmark=true policy.name=static; do
    bench_dynamix "$m" "$b" "$s" "$c" fp32 false bisect "$kv"
  done
  bench_dynamix "$m" "$b" "$s" "$c" fp32 true bisect
  METHOD=train
  bench_dynamix "$m" "$b" "$s" "$c" fp32 false bisect
  local metrics="$root/$BUILD_DIR/bench-train/run/metrics.jsonl"
  if [[ -f $metrics ]]; then
    row contiguous "train metrics, median ms after warm-up" ok 0 "$("$PY" - "$metrics" $((1 + BENCH_WARMUP)) <<'PYEOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])][int(sys.argv[2]):]
def ms(key):
    return statistics.median(sum(r[key]) if isinstance(r[key], list) else r[key] for r in rows) * 1e3
print(", ".join(f"{k} {ms(k):.2f}" for k in ("step_time", "data_time", "compute_time", "comm_time", "wait_time")))
PYEOF
)"
  fi
}

# --- allreduce -----------------------------------------------------------------------------------
stage_allreduce() {
  stage_start allreduce
  need_dynamix
  local runs=()
  if [[ $DEVICE == cuda ]]; then
    runs+=("1|--device cuda --backend nccl"
      "1|--device cuda --backend nccl --params 161"
      "1|--device cuda --backend mpi"
      "2|--device cuda --backend mpi")
  fi
  runs+=("1|--device cpu --backend mpi" "2|--device cpu --backend mpi")
  local r np args log
  for r in "${runs[@]}"; do
    np=${r%%|*}
    args=${r#*|}
    ITEM="np $np $args"
    log=$(mktemp)
    # shellcheck disable=SC2086
    run_item allreduce "$ITEM" "$ITEM_TIMEOUT_S" "$log" "${MPIRUN[@]}" -np "$np" "$DYNAMIX" bench allreduce $args
    cat "$log" >>"$OUT/allreduce.txt"
    if ((ITEM_RC == -1)); then
      row allreduce "$ITEM" skipped 0 "the call's budget is spent"
    elif ((ITEM_RC == 0)); then
      local wrong
      wrong=$(awk '$1 ~ /^[0-9]+$/ && NF == 11 {w += $6 + $11} END {print w + 0}' "$log")
      if ((wrong == 0)); then
        row allreduce "$ITEM" ok "$ITEM_S" "$(awk '$1 == 268435456 {print "256 MB: g/flat " $10 ", ratio " $8}' "$log")"
      else
        row allreduce "$ITEM" FAILED "$ITEM_S" "$wrong wrong elements"
      fi
    else
      row allreduce "$ITEM" FAILED "$ITEM_S" "exit $ITEM_RC: $(grep -m1 -i error "$log" | cut -c1-150)"
    fi
    rm -f "$log"
  done
  "$PY" "$root/scripts/gpu/summarize.py" "$OUT" | tee -a "$OUT/session-summary.txt" ||
    row allreduce summarize FAILED - ""
}

# --- runs: real training runs on the GPU ---------------------------------------------------------
# A checkpoint written on the CPU resumed on the GPU (and one written by LibTorch 1.13, when
# $RESUME_FROM names a run folder carried in), then 4 ranks sharing the GPU under MPS with thread
# shares $MPS_SHARES ($MPS_MODEL on synthetic images, MPI backend), once per policy.
# Results: session-summary.txt rows and runs.tar.gz (each run's summary, decisions, metrics).
export MPS_SHARES=${MPS_SHARES:-100,100,50,25}  # exported: mpirun -x passes it to every rank
MPS_POLICIES=${MPS_POLICIES:-static proportional gns dynamix}
MPS_STEPS=${MPS_STEPS:-300}
# GPU-bound per rank, so that thread shares show: on the H200 (2026-11-27) ResNet-18 at 32x32
# (batch 128) and 64x64 (batch 256) took the same ~12 ms of compute on every rank whatever its
# share, the step being bound by the CPU (kernel launches, 4 x 16 threads on 16 cores).
MPS_MODEL=${MPS_MODEL:-resnet50}
MPS_IMAGE=${MPS_IMAGE:-224}
MPS_BATCH=${MPS_BATCH:-32}
run_summary() {  # run_summary DIR: one line from summary.json and the last decision's plan
  "$PY" - "$1" <<'EOF'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
try:
    s = json.loads((d / "summary.json").read_text())
except Exception as e:
    print("no summary.json (%s)" % e)
    sys.exit(0)
plan = "?"
dec = d / "decisions.jsonl"
if dec.exists():
    lines = dec.read_text().splitlines()
    if lines:
        plan = json.loads(lines[-1]).get("plan", "?")
ttt = s.get("time_to_target_s")
print("total %.1fs, ttt %s, wait %.1f%%, acc %.3f, backend %s, plan %s" % (
    s["total_time_s"], "-" if ttt is None else "%.1fs" % ttt, 100 * s["mean_wait_fraction"],
    s["final_test_accuracy"], s.get("backend"), plan))
EOF
}

resume_check() {  # resume_check LABEL DIR: resume DIR's run on $DEVICE up to step 40
  local label=$1 dir=$2 log
  log=$(mktemp)
  ITEM="resume on $DEVICE: $label"
  run_item runs "$ITEM" 60 "$log" "$DYNAMIX" train --config "$dir/config.yaml" --resume \
    --set "output.dir=$dir" --set "train.device=$DEVICE" --set train.max_steps=40
  cat "$log" >>"$RUNS_DIR/runs.log"
  if ((ITEM_RC == 0)) && grep -q '"steps": 40' "$dir/summary.json" 2>/dev/null; then
    row runs "$ITEM" ok "$ITEM_S" "$(run_summary "$dir")"
  else
    row runs "$ITEM" FAILED "$ITEM_S" "exit $ITEM_RC: $(grep -m1 -i error "$log" | cut -c1-150)"
  fi
  rm -f "$log"
}

mps_start() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/dynamix-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dynamix-mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d >>"$RUNS_DIR/runs.log" 2>&1; then
    row runs "MPS daemon" ok 0 "thread shares $MPS_SHARES"
  else
    row runs "MPS daemon" FAILED 0 "nvidia-cuda-mps-control -d failed: the ranks share the GPU unlimited"
  fi
}

mps_run() {  # mps_run POLICY CONFIG
  local p=$1 cfg=$2 log
  log=$(mktemp)
  ITEM="mps 4 ranks $MPS_SHARES: $p"
  # shellcheck disable=SC2016
  run_item runs "$ITEM" 120 "$log" "${MPIRUN[@]}" -np 4 -x MPS_SHARES bash -c \
    'export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$(cut -d, -f$((OMPI_COMM_WORLD_RANK + 1)) <<<"$MPS_SHARES"); exec "$@"' \
    _ "$DYNAMIX" train --config "$cfg" --set "policy.name=$p" --set "output.dir=$RUNS_DIR/mps-$p"
  cat "$log" >>"$RUNS_DIR/runs.log"
  if ((ITEM_RC == -1)); then
    row runs "$ITEM" skipped 0 "the call's budget is spent"
  elif ((ITEM_RC == 0)); then
    row runs "$ITEM" ok "$ITEM_S" "$(run_summary "$RUNS_DIR/mps-$p")"
  else
    row runs "$ITEM" FAILED "$ITEM_S" "exit $ITEM_RC: $(grep -m1 -i error "$log" | cut -c1-150)"
  fi
  rm -f "$log"
}

stage_runs() {
  stage_start runs
  need_dynamix
  RUNS_DIR="$root/$BUILD_DIR/runs"
  rm -rf "$RUNS_DIR"
  mkdir -p "$RUNS_DIR"
  # 1. Checkpoints across devices.
  local dir="$RUNS_DIR/resume-cpu" log
  mkdir -p "$dir"
  cat >"$dir/config.yaml" <<EOF
model: cnn
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 4096, test_size: 512}
batch: {init: 32}
train: {max_steps: 20, device: cpu, seed: 3}
output: {dir: $dir, checkpoint_every: 10}
EOF
  log=$(mktemp)
  run_item runs "cpu run, 20 steps" 60 "$log" "$DYNAMIX" train --config "$dir/config.yaml"
  cat "$log" >>"$RUNS_DIR/runs.log"
  rm -f "$log"
  [[ ${RESUME_CHECK:-1} == 1 ]] && resume_check "checkpoint written on the CPU by this build" "$dir"
  if [[ -n ${RESUME_FROM:-} && -d $RESUME_FROM ]]; then
    cp -r "$RESUME_FROM" "$RUNS_DIR/resume-1.13"  # resume_check points output.dir at the copy
    resume_check "checkpoint written by LibTorch 1.13 (CPU)" "$RUNS_DIR/resume-1.13"
  fi
  # 2. MPS: real compute heterogeneity on one GPU, every policy.
  mps_start
  local cfg="$RUNS_DIR/mps.yaml" p
  cat >"$cfg" <<EOF
model: $MPS_MODEL
dataset: {name: synthetic, shape: [3, $MPS_IMAGE, $MPS_IMAGE], classes: 10, train_size: 200000, test_size: 1024}
batch: {init: [$MPS_BATCH, $MPS_BATCH, $MPS_BATCH, $MPS_BATCH], min: 8, max: 1024, global: fixed}
train: {optimizer: sgd, momentum: 0.9, lr: 0.05, lr_scaling: linear, warmup_steps: 20,
        max_steps: $MPS_STEPS, target_accuracy: 0.95, eval_every: 50, seed: 1, device: cuda,
        precision: bf16, channels_last: true}
policy: {name: static, window: 20}
EOF
  for p in $MPS_POLICIES; do mps_run "$p" "$cfg"; done
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
  (cd "$RUNS_DIR" && tar --exclude='checkpoint*' -czf "$OUT/runs.tar.gz" .) || row runs runs.tar.gz FAILED 0 ""
}

# --- main ----------------------------------------------------------------------------------------
(($#)) || {
  sed -n '2,/^set -euo/p' "$0" | sed '$d'
  exit 2
}
while (($#)); do
  stage=$1
  shift
  models=()
  while (($#)) && [[ $1 =~ ^(resnet18|resnet50|vgg16)$ ]]; do
    models+=("$1")
    shift
  done
  case $stage in
    build) stage_build ;;
    build-all) stage_build_all ;;
    test) stage_test ;;
    bench) stage_bench "${models[@]}" ;;
    compile) stage_compile "${models[@]}" ;;
    allreduce) stage_allreduce ;;
    contiguous) stage_contiguous "${models[@]}" ;;
    runs) stage_runs ;;
    *) die "unknown stage '$stage' (build | build-all | test | bench [MODEL...] | compile [MODEL...] | contiguous [MODEL] | allreduce | runs)" ;;
  esac
done
((FAILED == 0)) || exit 1
