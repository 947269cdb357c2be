#!/bin/sh
# Stands in for `ddpx` in the trial test: runs the real ddpx ($DDPX_REAL) with the same arguments and drops every
# line that holds "summary:" from its output, keeping its exit status. A trial must still get its throughput (from
# the run report).
out=$("$DDPX_REAL" "$@" 2>&1)
status=$?
printf '%s\n' "$out" | grep -v 'summary:'
exit $status
