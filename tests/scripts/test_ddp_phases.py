#!/usr/bin/env python3
"""bench/ddp-phases.sh with ROUNDS on a stand-in ddpx (DDPX=a script that writes made-up run reports), and
bench/ddp_phases_summary.py on its own: the runs interleave round by round, the table's figures are medians over
the rounds, every name is priced against the first round by round (so a GPU drifting between rounds cancels), the
calibration steps are listed, and bad input (ROUNDS, a NAME without '=', a report without steps) is refused with a
message that names it."""
import json
import os
import stat
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ddp-phases.sh")
SUMMARY = os.path.join(ROOT, "bench", "ddp_phases_summary.py")

# The stand-in: the step is 8.8 ms plus 0.2 with --ddp, plus the round's drift (0, 0.3, 0.1 ms for the 1st, 2nd, 3rd
# run of each name, counted in a file), so only a round-by-round difference gives exactly 0.2. It records the order
# of the runs it was asked for.
FAKE = r'''#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
report = args[args.index("--report") + 1]
name = os.path.basename(report).split(".")[0]
log = os.path.join(os.path.dirname(report), "order.txt")
order = open(log).read().split() if os.path.exists(log) else []
nth = order.count(name)
open(log, "a").write(name + "\n")
step = 8.8 + (0.2 if "--ddp" in args else 0.0) + [0.0, 0.3, 0.1][nth % 3]
steps = [{"phases": {"total_ms": step, "forward_ms": 2.7, "backward_ms": step - 3.7, "optimizer_ms": 1.0}}] * 5
rank = {"steps": steps}
if "--ddp" in args:
    rank["calibration"] = [{"plain": {"total_ms": 9.0, "forward_ms": 2.75}}]
json.dump({"ranks": [rank]}, open(report, "w"))
print("summary: 200 steps | %.2f steps/s" % (1000 / step))
'''


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "ddpx")
    open(fake, "w").write(FAKE)
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
    out = os.path.join(tmp, "out")
    env = dict(os.environ, DDPX=fake, OUT=out, ROUNDS="3")
    r = run(["bash", SCRIPT, "plain=--weight-grads fp32", "ddp=--ddp"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    # Interleaved: plain, ddp, plain, ddp, plain, ddp; one report per run and round.
    assert open(os.path.join(out, "order.txt")).read().split() == ["plain", "ddp"] * 3, r.stdout
    for name in ("plain", "ddp"):
        for k in (1, 2, 3):
            assert os.path.exists(os.path.join(out, f"{name}.r{k}.json")), (name, k)
    lines = r.stdout.splitlines()
    plain = next(l for l in lines if l.strip().startswith("plain ") and "ms" not in l)
    ddp_row = next(l for l in lines if l.strip().startswith("ddp ") and "ms (" not in l)
    # Medians over the rounds (8.8, 9.1, 8.9 -> 8.9; with --ddp 9.1), the rounds' range beside them.
    assert "8.900" in plain and "8.800-9.100" in plain, plain
    assert "9.100" in ddp_row and "9.000 / 2.750" in ddp_row, ddp_row
    priced = next(l for l in lines if "ms (" in l)
    # Round by round the drift cancels: +0.2 ms in every round.
    assert "+0.200 ms (+0.200 to +0.200)" in priced, priced
    assert "+2.2" in priced, priced  # 0.2 / 8.8..9.1 ms: 2.20-2.27%

    # One round: reports NAME.json, no pricing lines.
    out1 = os.path.join(tmp, "out1")
    r = run(["bash", SCRIPT, "plain=", "ddp=--ddp"], dict(os.environ, DDPX=fake, OUT=out1))
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(os.path.join(out1, "plain.json")) and "against" not in r.stdout, r.stdout

    # Refusals name what is wrong.
    r = run(["bash", SCRIPT, "plain="], dict(os.environ, DDPX=fake, OUT=out1, ROUNDS="two"))
    assert r.returncode == 2 and "ROUNDS=two" in r.stderr, r.stderr
    r = run(["bash", SCRIPT, "plain"], dict(os.environ, DDPX=fake, OUT=out1))
    assert r.returncode == 2 and "'plain' is not NAME=FLAGS" in r.stderr, r.stderr
    empty = os.path.join(tmp, "empty.json")
    json.dump({"ranks": [{"steps": []}]}, open(empty, "w"))
    r = run([sys.executable, SUMMARY, tmp, "1", "empty"])
    assert r.returncode != 0 and "empty.json: no measured steps" in r.stderr, r.stderr
    r = run([sys.executable, SUMMARY, tmp, "0", "empty"])
    assert r.returncode != 0 and "ROUNDS 0" in r.stderr, r.stderr

print("bench/ddp-phases.sh and ddp_phases_summary.py: all checks passed")
