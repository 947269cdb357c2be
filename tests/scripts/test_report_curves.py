#!/usr/bin/env python3
"""The training curves of `ddpx report run.json --metrics m.jsonl --html page.html`, loaded by headless Chromium.

A tiny CPU run on a made-up image folder (3 classes of 16x16 PNGs, --val on the same folder) is stopped after 6
steps and resumed to 10 (--resume auto), so --metrics holds two attempts. Then:
  - every metrics line carries "time" (Unix seconds, increasing) and "elapsed"; step lines carry step_ms and
    data_wait_ms;
  - `ddpx report --metrics m.jsonl --csv` has a header and one row per step/eval line, attempts 1 and 2;
  - Chromium loads the page (--dump-dom) and the same bytes as XHTML without a parser error; in the DOM the curves
    SVG has its five panels (loss, learning rate, accuracy, step time, data wait), one polyline per series and
    attempt with the points the metrics give, a "resumed" marker, and round y ticks (every label a multiple of its
    axis' step; accuracy never above 100);
  - a screenshot shows the curves' colour.
Skips (77) without chromium. Usage: test_report_curves.py DDPX_BINARY"""
import csv
import json
import os
import pathlib
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from decimal import Decimal

DDPX = sys.argv[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
if not CHROMIUM:
    print("SKIP: no chromium (Debian: apt-get install chromium)")
    sys.exit(77)
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from png_decode import decode_png  # noqa: E402


def write_png(path, width, height, pixel):
    """An 8-bit RGB PNG whose pixel (x, y) is pixel(x, y)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                     chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def count_near(rows, rgb, tolerance=20):
    return sum(1 for row in rows for px in row if all(abs(a - b) <= tolerance for a, b in zip(px, rgb)))


work = pathlib.Path(tempfile.mkdtemp(prefix="ddpx_report_curves_"))
failures = []
try:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                                            "SLURM_PROCID", "PMI_RANK")}
    rng = random.Random(50)
    for label, base in enumerate([(200, 40, 40), (40, 200, 40), (40, 40, 200)]):
        folder = work / "data" / f"class{label}"
        folder.mkdir(parents=True)
        for k in range(8):
            noise = [rng.randint(-30, 30) for _ in range(3)]
            write_png(folder / f"{k}.png", 16, 16,
                      lambda x, y: [max(0, min(255, c + n + 3 * x - 3 * y)) for c, n in zip(base, noise)])
    metrics, report_path = work / "m.jsonl", work / "run.json"
    common = ["train", "--device", "cpu", "--model", "mlp:image=16,channels=3,layers=1,width=16,classes=3",
              "--data", f"folder:{work / 'data'}", "--val", f"folder:{work / 'data'}", "--eval-every", "2",
              "--batch", "4", "--lr", "0.05", "--log-every", "1", "--warmup", "0", "--workers", "1",
              "--cpu-threads", "1", "--checkpoint-dir", str(work / "ck"), "--checkpoint-every", "3",
              "--metrics", str(metrics), "--report", str(report_path)]
    for steps in ("6", "10"):
        run = subprocess.run([DDPX, *common, "--steps", steps, "--resume", "auto"], capture_output=True, text=True,
                             timeout=180, env=env)
        assert run.returncode == 0, run.stdout + run.stderr

    lines = [json.loads(line) for line in metrics.read_text().splitlines() if line]
    kinds = [line["kind"] for line in lines]
    if kinds.count("run") != 2:
        failures.append(f"expected two attempts in --metrics, got kinds {kinds}")
    times = [line.get("time") for line in lines]
    if not all(isinstance(t, float) and t > 1.7e9 for t in times) or times != sorted(times):
        failures.append(f"metrics lines lack increasing Unix times: {times}")
    if not all(isinstance(line.get("elapsed"), (int, float)) and line["elapsed"] >= 0 for line in lines):
        failures.append("metrics lines lack elapsed seconds")
    steps_lines = [line for line in lines if line["kind"] == "step"]
    evals = [line for line in lines if line["kind"] == "eval"]
    if not all(line.get("step_ms", 0) > 0 and line.get("data_wait_ms", -1) >= 0 for line in steps_lines):
        failures.append("step lines lack step_ms/data_wait_ms")

    page, table = work / "page.html", work / "m.csv"
    report = subprocess.run([DDPX, "report", str(report_path), "--metrics", str(metrics), "--html", str(page),
                             "--csv", str(table)], capture_output=True, text=True, timeout=60, env=env)
    assert report.returncode == 0, report.stdout + report.stderr
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != len(steps_lines) + len(evals):
        failures.append(f"--csv has {len(rows)} rows for {len(steps_lines)} step and {len(evals)} eval lines")
    if sorted({row["attempt"] for row in rows}) != ["1", "2"]:
        failures.append("--csv does not tell the two attempts apart")
    if rows and (rows[0]["kind"], rows[0]["step"]) != ("step", "1"):
        failures.append(f"--csv's first row is {rows[0]}")

    profile = dict(env, HOME=str(work))  # a profile of its own, nothing shared
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom_run = subprocess.run([CHROMIUM, *flags, "--enable-logging=stderr", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=120, env=profile)
    dom = dom_run.stdout
    if dom_run.returncode != 0 or "<svg" not in dom:
        failures.append(f"chromium did not load the page (status {dom_run.returncode}): {dom_run.stderr[-800:]}")
    if "CONSOLE" in dom_run.stderr and "error" in dom_run.stderr.lower():
        failures.append(f"the page logged errors: {dom_run.stderr[-800:]}")
    xhtml = work / "page.xhtml"
    xhtml.write_bytes(page.read_bytes())
    strict = subprocess.run([CHROMIUM, *flags, "--dump-dom", xhtml.as_uri()], capture_output=True, text=True,
                            timeout=120, env=profile)
    if "parsererror" in strict.stdout or "<svg" not in strict.stdout:
        failures.append("the page is not well-formed XML: " + strict.stdout[:800])

    curves = dom[dom.find('class="curves"'):]
    panels = re.findall(r'<g class="panel">(.*?)</g>', curves, re.S)
    titles = [re.search(r'font-weight="bold">(.*?)</text>', p).group(1) for p in panels]
    if len(panels) != 5:
        failures.append(f"expected 5 curve panels, got {titles}")
    polylines = re.findall(r'<polyline data-series="([^"]*)" data-attempt="(\d)"[^>]*points="([^"]*)"', curves)
    drawn = {(series, attempt): len(points.split()) for series, attempt, points in polylines}
    steps_by_attempt = {1: sum(1 for l in steps_lines if l["step"] <= 6), 2: sum(1 for l in steps_lines if l["step"] > 6)}
    for attempt in (1, 2):
        for series in ("train loss", "lr", "step", "data wait"):
            if drawn.get((series, str(attempt))) != steps_by_attempt[attempt]:
                failures.append(f"{series!r} of attempt {attempt}: {drawn.get((series, str(attempt)))} points, "
                                f"expected {steps_by_attempt[attempt]}")
    top1_points = sum(n for (series, _), n in drawn.items() if series == "top-1")
    if top1_points != len([e for e in evals if e["weights"] == "model"]) or top1_points == 0:
        failures.append(f"top-1 has {top1_points} points for {len(evals)} evaluations")
    if "resumed</text>" not in curves:
        failures.append("no marker where the run resumed")
    for title, panel in zip(titles, panels):
        ticks = [Decimal(t) for t in re.findall(r'class="ytick"[^>]*>([^<]*)<', panel)]
        steps = {b - a for a, b in zip(ticks, ticks[1:])}
        if len(ticks) < 2 or len(steps) != 1:
            failures.append(f"{title}: y ticks {ticks} are not evenly spaced")
            continue
        step = steps.pop()
        mantissa = step.normalize().as_tuple().digits[0]
        if mantissa not in (1, 2, 5) or any(t % step != 0 for t in ticks):
            failures.append(f"{title}: y ticks {ticks} are not round multiples of a 1-2-5 step")
        if "accuracy" in title and ticks[-1] > 100:
            failures.append(f"{title}: a tick above 100%: {ticks}")

    shot = work / "shot.png"
    width, height = 1200, 4000
    browser = subprocess.run([CHROMIUM, *flags, f"--window-size={width},{height}", f"--screenshot={shot}",
                              page.as_uri()], capture_output=True, text=True, timeout=120, env=profile)
    if browser.returncode != 0 or not shot.exists():
        failures.append(f"chromium made no screenshot (status {browser.returncode}): {browser.stderr[-800:]}")
    else:
        w, h, pixels = decode_png(shot.read_bytes())
        blue = count_near(pixels, (0x1F, 0x77, 0xB4))
        print(f"screenshot {w}x{h}: {blue} px of the first series' colour; panels {titles}; polylines {drawn}")
        if blue < 400:
            failures.append(f"the curves are not drawn on the screenshot ({blue} px of their colour)")
finally:
    shutil.rmtree(work, ignore_errors=True)

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
