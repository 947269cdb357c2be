#!/usr/bin/env bash
# Before and after in one device call: builds TARGET from the working tree ("after") and from a before version, then
# runs the command with each binary in turn, ROUNDS times, so both versions are measured on the same GPU within the
# same minutes. Prints each run's lines matching $MATCH (default: the summary line). Logs under $OUT (default ./out).
# The before version is one of (the device machine's copy has no usable git history, so it travels as files):
#  - BEFORE_TAR: a `git archive REV` tarball. It is unpacked into $BUILD-before (default build-before, ignored by
#    git; emptied first) and built in a build folder of its own there, at the same time as the after version (half
#    the cores each), so a change may add, remove or move files. Make it here with `git archive REV > before.tar`.
#  - BEFORE: a folder of the before version's changed files at their paths in the repo (`git show REV:path >
#    before/path`), swapped into the working tree for the before build and restored on exit. Only for changes that
#    add or remove no file.
# Usage (repo root): BEFORE_TAR=before.tar TARGET=ddpx BIN=src/cli/ddpx [ROUNDS=2] [MATCH=regex] \
#          bash bench/before-after.sh train --device cuda --model vit_l_32 --precision bf16 --steps 200
set -uo pipefail
cd "$(dirname "$0")/.."
: "${TARGET:?TARGET: the CMake target to build, e.g. ddpx or powersgd_timing}"
: "${BIN:?BIN: the built binary relative to the build folder, e.g. src/cli/ddpx}"
ROUNDS=${ROUNDS:-2}
MATCH=${MATCH:-^summary}
OUT=${OUT:-out}
BUILD=${BUILD:-build}
mkdir -p "$OUT"
if [[ -n "${BEFORE_TAR:-}" && -n "${BEFORE:-}" ]]; then
  echo "before-after: set BEFORE_TAR or BEFORE, not both" >&2; exit 2
fi
if [[ -z "${BEFORE_TAR:-}" && -z "${BEFORE:-}" ]]; then
  echo "before-after: set BEFORE_TAR (a git archive of the before commit) or BEFORE (a folder of its changed" \
    "files)" >&2
  exit 2
fi
configure() {  # source folder, build folder, log name (a build folder already configured is reused)
  [[ -f "$2/build.ninja" ]] && return 0
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure_$3.log" 2>&1 ||
    { echo "before-after: configuring the $3 version failed:" >&2; tail -20 "$OUT/configure_$3.log" >&2; return 1; }
}
build_into() {  # build folder, name, jobs: builds TARGET and keeps its binary as $OUT/<name>
  cmake --build "$1" -j "$3" --target "$TARGET" >"$OUT/build_$2.log" 2>&1 ||
    { echo "before-after: building the $2 version failed:" >&2; grep -B2 -A8 error "$OUT/build_$2.log" | head -40 >&2
      return 1; }
  cp "$1/$BIN" "$OUT/$2"
}
cores=$(nproc)
if [[ -n "${BEFORE_TAR:-}" ]]; then
  [[ -f "$BEFORE_TAR" ]] || { echo "before-after: BEFORE_TAR=$BEFORE_TAR is not a file" >&2; exit 2; }
  tree="$BUILD-before"
  rm -rf "$tree" && mkdir -p "$tree" && tar -xf "$BEFORE_TAR" -C "$tree" ||
    { echo "before-after: BEFORE_TAR=$BEFORE_TAR does not unpack (make it with git archive REV > FILE)" >&2; exit 2; }
  [[ -f "$tree/CMakeLists.txt" ]] ||
    { echo "before-after: $BEFORE_TAR holds no CMakeLists.txt at its top (make it with git archive)" >&2; exit 2; }
  half=$(( cores > 1 ? cores / 2 : 1 ))
  ( configure "$tree" "$tree/build" before && build_into "$tree/build" before "$half" ) &
  before_pid=$!
  configure . "$BUILD" after && build_into "$BUILD" after "$(( cores - half > 0 ? cores - half : 1 ))"
  after_rc=$?
  wait "$before_pid"; before_rc=$?
  (( before_rc == 0 && after_rc == 0 )) || exit 1
else
  mapfile -t files < <(cd "$BEFORE" && find . -type f | sed 's|^\./||' | sort)
  [[ ${#files[@]} -gt 0 ]] || { echo "before-after: $BEFORE holds no files" >&2; exit 2; }
  for f in "${files[@]}"; do
    [[ -f "$f" ]] || { echo "before-after: $BEFORE/$f has no counterpart $f in the working tree (a file the" \
      "change adds or removes: use BEFORE_TAR)" >&2; exit 2; }
  done
  saved=$(mktemp -d)
  restore() { for f in "${files[@]}"; do cp "$saved/$f" "$f"; done; rm -rf "$saved"; }
  for f in "${files[@]}"; do mkdir -p "$saved/$(dirname "$f")"; cp "$f" "$saved/$f"; done
  trap restore EXIT
  configure . "$BUILD" after || exit 1
  for f in "${files[@]}"; do cp "$BEFORE/$f" "$f"; done
  build_into "$BUILD" before "$cores" || exit 1
  for f in "${files[@]}"; do cp "$saved/$f" "$f"; done
  build_into "$BUILD" after "$cores" || exit 1
fi
for ((round = 1; round <= ROUNDS; ++round)); do
  for version in before after; do
    "$OUT/$version" "$@" >"$OUT/run_${version}_$round.log" 2>&1
    echo "round $round $version (rc $?): $(grep -E "$MATCH" "$OUT/run_${version}_$round.log" | head -3 | cut -c1-160)"
  done
done
