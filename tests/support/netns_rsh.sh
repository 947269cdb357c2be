#!/usr/bin/env bash
# An rsh agent for Open MPI (--mca plm_rsh_agent) that "logs in" to a test host made by netns_hosts.sh: it runs
# the command inside network namespace HOST with a UTS namespace of its own whose hostname is HOST, so Open MPI
# sees separate nodes (and does not use shared memory between them). Usage (as Open MPI calls it): HOST CMD...
set -euo pipefail
host=$1
shift
exec ip netns exec "$host" unshare --uts bash -c 'hostname "$0" && exec bash -c "$*"' "$host" "$@"
