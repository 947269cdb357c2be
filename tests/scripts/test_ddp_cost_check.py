#!/usr/bin/env python3
"""bench/ddp_cost_check.py on made-up run reports: the measured difference is taken between median steps (a slow
stretch inside the DDP run moves its throughput, not the verdict's check), a verdict off by more than the tolerance
fails, an uncalibrated run fails, and reports without steps or a malformed pair are refused with a clear message."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ddp_cost_check.py")


def report(step_ms, steps_per_s, cost=None):
    r = {"throughput": {"steps_per_s": steps_per_s, "images_per_s": 32 * steps_per_s},
         "ranks": [{"steps": [{"phases": {"total_ms": t}} for t in step_ms]}]}
    if cost is not None:
        r["ddp_cost"] = cost
    return r


def cost(cost_ms, measured_ms):
    return {"cost_ms": cost_ms, "measured_step_ms": measured_ms, "exposed_comm_ms": 0.0, "hook_work_ms": 0.2,
            "other_ms": cost_ms - 0.2, "plain_step_ms": measured_ms - cost_ms, "calibration_steps": 3}


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as out:
    def write(name, content):
        path = os.path.join(out, name)
        json.dump(content, open(path, "w"))
        return path

    # Plain: 180 steps at 8.90 ms. DDP: 150 steps at 8.88 ms and a 30-step stretch at 9.95 ms (the mean 9.06 ms,
    # throughput 1.7% below plain), median 8.88: the medians differ by -0.2%, as the verdict's figure says.
    plain = write("plain.json", report([8.90] * 180, 1000 / 8.90))
    ddp_steps = [8.88] * 150 + [9.95] * 30
    ddp_mean = sum(ddp_steps) / len(ddp_steps)
    steady_verdict = write("ddp.json", report(ddp_steps, 1000 / ddp_mean, cost(-0.02, 8.88)))
    r = run(f"{steady_verdict}:{plain}")
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if "ddp.json" in l][0]
    assert "PASS" in line and "unsteady: ddp" in line, line
    cells = line.split()
    assert cells[1] == "-0.2%" and cells[2] == "-0.2%", cells  # median diff, verdict figure
    assert cells[4] == "1.7%", cells  # throughput diff, printed but not judged

    # The verdict 2 points off the medians' difference: FAIL, exit 1; a tolerance of 3 points passes it.
    off = write("ddp_off.json", report([8.88] * 180, 1000 / 8.88, cost(0.16, 8.88)))
    r = run(f"{off}:{plain}")
    assert r.returncode == 1 and "FAIL" in r.stdout, r.stdout
    assert "unsteady" not in r.stdout, r.stdout
    r = run("--tolerance", "3", f"{off}:{plain}")
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout

    # No calibrated cost: said, and exit 1.
    uncalibrated = write("ddp_nocal.json", report([8.88] * 10, 1000 / 8.88))
    r = run(f"{uncalibrated}:{plain}")
    assert r.returncode == 1 and "NOT CALIBRATED" in r.stdout, r.stdout

    # A report without steps, and a malformed pair: refused, naming the file or the argument.
    empty = write("empty.json", {"throughput": {"steps_per_s": 1.0}, "ranks": [{"steps": []}]})
    r = run(f"{steady_verdict}:{empty}")
    assert r.returncode != 0 and "empty.json holds no steps" in r.stderr, r.stderr
    r = run(steady_verdict)
    assert r.returncode != 0 and "is not DDP.json:PLAIN.json" in r.stderr, r.stderr
print("bench/ddp_cost_check.py: all checks passed")
