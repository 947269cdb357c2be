#!/usr/bin/env bash
# Makes sure what ddpx needs is there, installing only what is missing and installable. Idempotent.
#   scripts/install-deps.sh          what the build needs
#   scripts/install-deps.sh --tests  that, plus what only the tests need (scripts/test.sh passes it; --test too)
#   DDPX_SKIP_DEPS=1                 skip this step entirely (clusters with modules, containers, no package manager)
# Guarantees:
#  - Every requirement is checked by what the build or the tests use (a command on PATH, a header the compiler
#    finds, a Python module), never by a package name: cmake and ninja from pip, a module system or /usr/local
#    count as present.
#  - Only what is missing is installed, with apt-get, and only where apt-get exists and we are root or sudo works
#    without a password; the Debian/Ubuntu package to install is named beside each check below.
#  - A missing build requirement that cannot be installed stops with a message naming it, its package and
#    DDPX_SKIP_DEPS; a missing optional (Gloo) or test-only requirement is reported, and ddpx builds without it or
#    the tests that need it are skipped.
#  - NCCL comes with the CUDA toolkit or the system (libnccl-dev from NVIDIA's repository); it is not installed here
#    (CMake fails at configure, naming it, when CUDA is found and NCCL is not).
set -euo pipefail

[[ ${DDPX_SKIP_DEPS:-0} == 1 ]] && { echo "[ddpx setup] DDPX_SKIP_DEPS=1: not checking dependencies"; exit 0; }
WITH_TESTS=0
[[ ${1:-} == --tests || ${1:-} == --test ]] && WITH_TESTS=1

# check|what it is|Debian package. check: cmd:NAME (a command), hdr:PATH (an #include <PATH>), py:MODULE,
# file:PATH (a file a package installs, e.g. a data set).
BUILD_REQUIREMENTS=(
  "cmd:cmake|CMake 3.25+|cmake"
  "cmd:ninja|Ninja|ninja-build"
  "cmd:g++|a C++20 compiler|g++"
  "hdr:CLI/CLI.hpp|CLI11|libcli11-dev"
  "hdr:nlohmann/json.hpp|nlohmann-json|nlohmann-json3-dev"
  "hdr:fmt/format.h|fmt|libfmt-dev"
  "hdr:gtest/gtest.h|GoogleTest|libgtest-dev"
  "hdr:openblas_config.h|OpenBLAS (its cblas.h: netlib's lacks blasint)|libopenblas-dev"
  "hdr:mpi.h|Open MPI headers|libopenmpi-dev"
  "cmd:mpirun|Open MPI's mpirun|openmpi-bin"
  "cmd:python3|Python 3|python3"
  "hdr:zlib.h|zlib|zlib1g-dev"
  "hdr:openssl/hmac.h|OpenSSL's libcrypto (HMAC-SHA-256 for the multi-node launchers' handshake)|libssl-dev"
  "hdr:jpeglib.h|libjpeg-turbo (its libjpeg API: crop and skip scanlines, DCT scaling)|libjpeg62-turbo-dev"
  "hdr:spng.h|libspng (PNG decoding)|libspng-dev"
)
# Installed where possible, built without otherwise (CMake leaves the feature out and says so).
OPTIONAL_REQUIREMENTS=(
  "hdr:gloo/allreduce.h|Gloo (the CPU backend without MPI; ddpx builds without it)|libgloo-dev"
  "hdr:hwloc.h|hwloc (--pin-loaders: loader threads near their GPU; ddpx builds without it)|libhwloc-dev"
  "file:/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz|Fashion-MNIST (--data idx:, the CPU main job and the data tests)|dataset-fashion-mnist"
  "hdr:c10/macros/cmake_macros.h|LibTorch (the LibTorch DDP adapter, src/torch_ddp; ddpx builds without it)|libtorch-dev"
)
# Only the tests need these (scripts/test.sh). Add a line per test-only requirement.
TEST_REQUIREMENTS=(
  "cmd:torchrun|a real torchrun (Debian's PyTorch 1.13) for the torchrun tests|python3-torch"
  "cmd:ip|iproute2 (ip) for the tests' network-namespace hosts|iproute2"
  "cmd:pgrep|procps (pgrep) for the multi-node tests|procps"
  "cmd:unshare|util-linux (unshare) for the multi-node tests' UTS namespaces|util-linux"
  "cmd:slurmctld|Slurm (slurmctld, slurmd, srun, sbatch) for the Slurm tests|slurm-wlm"
  "cmd:munged|munge, Slurm's authentication, for the Slurm tests|munge"
  "cmd:clang++|clang for the file-reader fuzzers (tests/fuzz)|clang"
  "hdr:fuzzer/FuzzedDataProvider.h|clang's runtimes (libFuzzer, sanitizers) for tests/fuzz|libclang-rt-dev"
  "cmd:ccache|ccache (the fuzzers' own build reuses objects)|ccache"
  "file:/usr/lib/python3/dist-packages/torchvision/__init__.py|Debian's torchvision (tools/make_transform_fixtures.py, the data tests' PIL fixtures)|python3-torchvision"
  "file:/usr/lib/python3/dist-packages/skimage/__init__.py|scikit-image's sample photographs (the data tests' JPEGs)|python3-skimage"
  "cmd:chromium|Chromium, headless, for the report --html screenshot test|chromium"
)

HEADER_DIRS=(/usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/x86_64-linux-gnu/openblas-openmp
             /usr/include/x86_64-linux-gnu/openblas-serial /usr/include/openblas /usr/include/x86_64-linux-gnu
             /usr/lib/x86_64-linux-gnu/openmpi/include /usr/include/openmpi /usr/local/include)

has_command() { command -v "$1" >/dev/null 2>&1 || [[ -x /usr/sbin/$1 ]]; }

has_header() {
  local compiler flags=() dir dirs=("${HEADER_DIRS[@]}")
  # MPI wrappers know where their headers are (RHEL: /usr/include/openmpi-x86_64, modules: anywhere).
  if [[ $1 == mpi.h ]] && command -v mpicxx >/dev/null 2>&1; then
    for dir in $(mpicxx --showme:incdirs 2>/dev/null || true); do dirs+=("$dir"); done
  fi
  compiler=$(command -v c++ || command -v g++ || command -v clang++ || true)
  if [[ -n $compiler ]]; then
    for dir in "${dirs[@]}"; do [[ -d $dir ]] && flags+=("-I$dir"); done
    printf '#include <%s>\n' "$1" | "$compiler" -std=c++20 "${flags[@]}" -E -x c++ - >/dev/null 2>&1 && return 0
  fi
  for dir in /usr/include "${dirs[@]}"; do [[ -f $dir/$1 ]] && return 0; done
  return 1
}

present() {
  local check=$1
  case $check in
    cmd:*) has_command "${check#cmd:}" ;;
    hdr:*) has_header "${check#hdr:}" ;;
    py:*) python3 -c "import ${check#py:}" >/dev/null 2>&1 ;;
    file:*) [[ -f ${check#file:} ]] ;;
    *) echo "install-deps.sh: unknown check '$check'" >&2; return 1 ;;
  esac
}

missing_build=() missing_test=() what_build=() what_test=()
for line in "${BUILD_REQUIREMENTS[@]}"; do
  IFS='|' read -r check what package <<<"$line"
  present "$check" || { missing_build+=("$package"); what_build+=("$what (${check#*:})"); }
done
for line in "${OPTIONAL_REQUIREMENTS[@]}"; do
  IFS='|' read -r check what package <<<"$line"
  present "$check" || { missing_test+=("$package"); what_test+=("$what (${check#*:})"); }
done
if ((WITH_TESTS)); then
  for line in "${TEST_REQUIREMENTS[@]}"; do
    IFS='|' read -r check what package <<<"$line"
    present "$check" || { missing_test+=("$package"); what_test+=("$what (${check#*:})"); }
  done
fi
wanted=("${missing_build[@]}" "${missing_test[@]}")
((${#wanted[@]})) || exit 0

SUDO=""
can_install=0
if command -v apt-get >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]]; then can_install=1
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"; can_install=1
  fi
fi
if ((can_install)); then
  echo "[ddpx setup] installing: ${wanted[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${wanted[@]}" >/dev/null; then
    exit 0
  fi
  echo "[ddpx setup] apt-get could not install: ${wanted[*]}" >&2
fi
for item in "${what_test[@]}"; do echo "[ddpx setup] missing (optional or for the tests, which skip): $item" >&2; done
if ((${#missing_build[@]})); then
  for item in "${what_build[@]}"; do echo "[ddpx setup] missing: $item" >&2; done
  echo "[ddpx setup] install them (Debian/Ubuntu packages: ${missing_build[*]}) or point CMake at them and set" \
       "DDPX_SKIP_DEPS=1 to skip this check" >&2
  exit 1
fi
