#!/usr/bin/env python3
"""bench/ncu_details_summary.py on ncu details text shaped as ncu 2025 prints it (two launches, units in us and
ms, a missing section): one row per launch, durations in us, the smallest block limit named, excess sectors read
from the Source Counters note, '-' for what a section did not report, and exit 1 with a hint when nothing matched."""
import csv
import io
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ncu_details_summary.py")

LOG = """==PROF== Connected to process 1234 (/root/build/src/cli/ddpx)
==PROF== Profiling "backward_kernel": 0%....50%....100% - 9 passes
[1234] ddpx@127.0.0.1
  void <unnamed>::backward_kernel<64, 4>(AttentionShape, const __nv_bfloat16 *, float *) (1024, 1, 1)x(128, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    DRAM Throughput                   %        12.46
    Duration                         us        25.50
    L1/TEX Cache Throughput           %        82.74
    Section: Launch Statistics
    Registers Per Thread             register/thread             128
    Section: Occupancy
    Block Limit Barriers                  block           32
    Block Limit SM                        block           32
    Block Limit Registers                 block            4
    Block Limit Shared Mem                block            5
    Theoretical Occupancy                     %           25
    Achieved Occupancy                        %        22.78
    Section: Source Counters
    OPT   Est. Speedup: 34.66%
          This kernel has uncoalesced global accesses resulting in a total of 1127168 excessive sectors (42% of the
          total 2682624 sectors).
  (anonymous namespace)::reduce_slabs_kernel(const float *, float *) (64, 1, 1)x(256, 1, 1), Context 1, Stream 14, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    DRAM Throughput                   %         0.01
    Duration                      msecond         1.25
"""

with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "ncu.txt")
    open(path, "w").write(LOG)
    table = subprocess.run([sys.executable, SCRIPT, path], check=True, capture_output=True, text=True).stdout
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| kernel |")]
    assert len(rows) == 2, table
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells == ["backward_kernel<64, 4>", "(1024,1,1)x(128,1,1)", "25.5", "12.5", "82.7", "22.8", "25.0", "128",
                     "registers (4 blocks/SM)", "42.0"], cells
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    assert cells[:3] == ["reduce_slabs_kernel", "(64,1,1)x(256,1,1)", "1250.0"], cells  # ms -> us
    assert cells[4:] == ["-"] * 6, cells
    out = subprocess.run([sys.executable, SCRIPT, path, "--csv"], check=True, capture_output=True, text=True).stdout
    parsed = list(csv.DictReader(io.StringIO(out)))
    assert [row["kernel"] for row in parsed] == ["backward_kernel<64, 4>", "reduce_slabs_kernel"], parsed
    assert float(parsed[0]["excess_pct"]) == 42.0 and parsed[1]["registers"] == "", parsed

    empty = os.path.join(folder, "empty.txt")
    open(empty, "w").write("==PROF== No kernels were profiled.\n")
    result = subprocess.run([sys.executable, SCRIPT, empty], capture_output=True, text=True)
    assert result.returncode == 1 and "did the -k regex match" in result.stdout, result
print("bench/ncu_details_summary.py: all checks passed")
