#!/usr/bin/env bash
# Before and after in one device call: builds TARGET from the working tree ("after") and once more with the files
# under $BEFORE swapped in ("before": same relative paths, e.g. made with `git show REV:path > before/path`; the
# device machine's copy has no usable git history), then runs the command with each binary in turn, ROUNDS times,
# so both versions are measured on the same GPU within the same minutes. The working tree is restored on exit.
# Prints each run's lines matching $MATCH (default: the summary line). Logs under $OUT (default ./out).
# Usage (repo root): BEFORE=before TARGET=ddpx BIN=src/cli/ddpx [ROUNDS=2] [MATCH=regex] \
#          bash bench/before-after.sh train --device cuda --model vit_l_32 --precision bf16 --steps 200
set -uo pipefail
cd "$(dirname "$0")/.."
: "${BEFORE:?BEFORE: a folder holding the files of the before version, at their paths in the repo}"
: "${TARGET:?TARGET: the CMake target to build, e.g. ddpx or powersgd_timing}"
: "${BIN:?BIN: the built binary relative to the build folder, e.g. src/cli/ddpx}"
ROUNDS=${ROUNDS:-2}
MATCH=${MATCH:-^summary}
OUT=${OUT:-out}
BUILD=${BUILD:-build}
mkdir -p "$OUT"
mapfile -t files < <(cd "$BEFORE" && find . -type f | sed 's|^\./||' | sort)
[[ ${#files[@]} -gt 0 ]] || { echo "before-after: $BEFORE holds no files" >&2; exit 2; }
for f in "${files[@]}"; do
  [[ -f "$f" ]] || { echo "before-after: $BEFORE/$f has no counterpart $f in the working tree" >&2; exit 2; }
done
saved=$(mktemp -d)
restore() { for f in "${files[@]}"; do cp "$saved/$f" "$f"; done; rm -rf "$saved"; }
for f in "${files[@]}"; do mkdir -p "$saved/$(dirname "$f")"; cp "$f" "$saved/$f"; done
trap restore EXIT
[[ -f "$BUILD/build.ninja" ]] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 ||
  { tail -20 "$OUT/configure.log"; exit 1; }
build_as() {  # name: builds TARGET and keeps its binary as $OUT/<name>
  cmake --build "$BUILD" -j "$(nproc)" --target "$TARGET" >"$OUT/build_$1.log" 2>&1 ||
    { grep -B2 -A8 error "$OUT/build_$1.log" | head -40; exit 1; }
  cp "$BUILD/$BIN" "$OUT/$1"
}
for f in "${files[@]}"; do cp "$BEFORE/$f" "$f"; done
build_as before
for f in "${files[@]}"; do cp "$saved/$f" "$f"; done
build_as after
for ((round = 1; round <= ROUNDS; ++round)); do
  for version in before after; do
    "$OUT/$version" "$@" >"$OUT/run_${version}_$round.log" 2>&1
    echo "round $round $version (rc $?): $(grep -E "$MATCH" "$OUT/run_${version}_$round.log" | head -3 | cut -c1-160)"
  done
done
