#!/usr/bin/env bash
# Builds the file-reader fuzz targets with clang (libFuzzer + ASan + UBSan) into their own build folder and runs
# each one for a bounded time on a copy of its checked-in corpus (tests/fuzz/corpus/<target>/).
# Fails (exit 1) on any crash, sanitizer report, leak, timeout (-timeout per input) or out-of-memory
# (-rss_limit_mb), printing the target, libFuzzer's report and the saved reproducer, and how to replay it.
# Usage: run_fuzzers.sh [--build-dir DIR] [--seconds S] [TARGET...]   (default: every fuzz_* target, S seconds each)
# Environment: DDPX_FUZZ_SECONDS (default 8), DDPX_FUZZ_JOBS (build jobs, default 2), DDPX_FUZZ_ARTIFACTS (where
# crash inputs go, default <build dir>/artifacts). The corpus in the source tree is never written to.
set -euo pipefail
SOURCE_DIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${DDPX_FUZZ_BUILD_DIR:-$SOURCE_DIR/build-fuzz}
SECONDS_EACH=${DDPX_FUZZ_SECONDS:-8}
TARGETS=()
while (($#)); do
  case "$1" in
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
ARTIFACTS=${DDPX_FUZZ_ARTIFACTS:-$BUILD_DIR/artifacts}

command -v clang++ >/dev/null || { echo "run_fuzzers.sh: clang++ not found (apt-get install clang)"; exit 1; }
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
mkdir -p "$BUILD_DIR"
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S "$SOURCE_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDPX_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${LAUNCHER[@]}" >"$BUILD_DIR/configure.log" 2>&1 \
    || { cat "$BUILD_DIR/configure.log"; exit 1; }
fi
cmake --build "$BUILD_DIR" -j "${DDPX_FUZZ_JOBS:-2}" >"$BUILD_DIR/build.log" 2>&1 \
  || { tail -n 60 "$BUILD_DIR/build.log"; exit 1; }

if ((${#TARGETS[@]} == 0)); then
  for dir in "$SOURCE_DIR"/tests/fuzz/fuzz_*.cpp; do TARGETS+=("$(basename "$dir" .cpp)"); done
fi
mkdir -p "$ARTIFACTS"
failed=()
for target in "${TARGETS[@]}"; do
  binary="$BUILD_DIR/tests/fuzz/$target"
  seeds="$SOURCE_DIR/tests/fuzz/corpus/${target#fuzz_}"
  [[ -x "$binary" ]] || { echo "run_fuzzers.sh: no fuzz target '$target' in $BUILD_DIR"; exit 1; }
  [[ -d "$seeds" ]] || { echo "run_fuzzers.sh: no corpus folder $seeds for $target"; exit 1; }
  work="$BUILD_DIR/corpus/$target"  # new inputs found here; the seeds are only read
  mkdir -p "$work"
  log="$BUILD_DIR/$target.log"
  # The readers of files that grow with a run (reports, traces, configs) also get inputs of up to 4 MiB.
  max_len=65536
  case "$target" in fuzz_run_report|fuzz_trace_merge|fuzz_train_config|fuzz_tuned_config) max_len=4194304 ;; esac
  if "$binary" "$work" "$seeds" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -max_len="$max_len" \
       -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$target-" >"$log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    echo "fuzz: $target ok (${runs:-?} runs, ${SECONDS_EACH}s, $(ls "$seeds" | wc -l) seeds)"
  else
    failed+=("$target")
    echo "fuzz: $target FAILED; libFuzzer's report:"
    grep -v '^#[0-9]' "$log" | tail -n 60
    reproducer=$(grep -o "Test unit written to [^ ]*" "$log" | tail -n 1 | sed 's/Test unit written to //')
    if [[ -n "$reproducer" ]]; then
      echo "fuzz: reproducer $reproducer (first bytes below); replay: $binary $reproducer"
      head -c 512 "$reproducer" | od -A d -c | head -n 20
    fi
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#TARGETS[@]} targets ran ${SECONDS_EACH}s each without a crash, leak, timeout or OOM"
