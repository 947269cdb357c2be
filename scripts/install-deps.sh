#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages ddpx needs, only those missing. Idempotent; safe to run on every call.
set -euo pipefail
PKGS=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libopenblas-dev
      libopenmpi-dev openmpi-bin libgloo-dev python3 zlib1g-dev)
# Test-only, added by `install-deps.sh --tests` (scripts/test.sh): a real torchrun (Debian's PyTorch 1.13) for the
# torchrun tests, and `ip` for the tests' network-namespace hosts.
TEST_PKGS=(python3-torch iproute2 procps util-linux)
[[ ${1:-} == --tests ]] && PKGS+=("${TEST_PKGS[@]}")
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
