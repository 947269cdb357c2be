#!/usr/bin/env bash
# Test hosts on one machine: N network namespaces joined by a bridge, each one a separate "host" with its own
# address, for multi-node tests (mpirun across hosts, ddpx --nnodes, torchrun agents, Slurm node lists).
# Guarantees:
#  - `up PREFIX N` creates namespaces PREFIX-sw (the switch: a bridge, no address) and PREFIX-0 .. PREFIX-(N-1);
#    host i has address 10.213.K.(i+1)/24 on its veth (K from the prefix, so concurrent tests do not share a
#    subnet), loopback up, and /etc/netns/PREFIX-i/hosts naming every host (PREFIX-i -> its address), which
#    `ip netns exec` shows the programs inside as /etc/hosts. Nothing is added to the root namespace: no
#    traffic leaves the namespaces the test made. Prints the addresses, one per line, host 0 first.
#  - `down PREFIX` removes every namespace and /etc/netns entry of that prefix; it is idempotent and never fails.
#  - `addr PREFIX I` prints host I's address. `exec PREFIX I CMD...` runs CMD inside host I.
#  - Needs root and iproute2 (`ip`); exits 77 (the skip code the tests use) when either is missing.
set -euo pipefail

need() {
  [[ $(id -u) -eq 0 ]] || { echo "netns_hosts: needs root" >&2; exit 77; }
  command -v ip >/dev/null || { echo "netns_hosts: needs iproute2 (ip)" >&2; exit 77; }
}

subnet_of() {  # a third octet in 1..250 derived from the prefix
  local sum; sum=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo $((sum % 250 + 1))
}

addr_of() { echo "10.213.$(subnet_of "$1").$(($2 + 1))"; }

down() {
  local prefix=$1 ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}-(sw|[0-9]+)$" || true); do
    ip netns delete "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
}

up() {
  local prefix=$1 n=$2 i sw="$1-sw"
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 16)) || { echo "netns_hosts: N must be 1..16" >&2; exit 2; }
  [[ ${#prefix} -le 8 && $prefix =~ ^[a-z][a-z0-9]*$ ]] || { echo "netns_hosts: PREFIX: 1-8 of [a-z0-9]" >&2; exit 2; }
  down "$prefix"
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  local hosts=""
  for ((i = 0; i < n; i++)); do hosts+="$(addr_of "$prefix" "$i") $prefix-$i"$'\n'; done
  for ((i = 0; i < n; i++)); do
    local ns="$prefix-$i"
    ip netns add "$ns"
    ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "p$i" master br0 up
    ip -n "$ns" addr add "$(addr_of "$prefix" "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
    printf "127.0.0.1 localhost\n%s" "$hosts" >"/etc/netns/$ns/hosts"
  done
  for ((i = 0; i < n; i++)); do addr_of "$prefix" "$i"; done
}

cmd=${1:-}; shift || true
case "$cmd" in
  up) need; up "$@" ;;
  down) need; down "$@" ;;
  addr) addr_of "$@" ;;
  exec) need; p=$1 i=$2; shift 2; exec ip netns exec "$p-$i" "$@" ;;
  *) echo "usage: netns_hosts.sh up PREFIX N | down PREFIX | addr PREFIX I | exec PREFIX I CMD..." >&2; exit 2 ;;
esac
