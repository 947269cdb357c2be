#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages ddpx needs, only those missing. Idempotent; safe to run on every call.
set -euo pipefail
PKGS=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libopenblas-dev
      libopenmpi-dev openmpi-bin python3
      clang libclang-rt-dev ccache)  # clang + its runtimes (libFuzzer, sanitizers) and ccache: tests/fuzz
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[ddpx setup] installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
