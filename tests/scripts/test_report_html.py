#!/usr/bin/env python3
"""`ddpx report run.json --html page.html` drawn by a real browser: a tiny CPU run's report becomes a page, headless
Chromium takes a screenshot of it, and the test decodes the PNG (zlib and PNG's filters, no imaging library) and
checks what a reader would see: the page fills the window, the verdict box's orange bar and background are there,
and the breakdown chart's bars are drawn in the chart colour. The page itself must link the trace and hold the
verdict, the breakdown table and the charts. Skips (77) without chromium.
Usage: test_report_html.py DDPX_BINARY"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from png_decode import decode_png  # noqa: E402

DDPX = sys.argv[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
if not CHROMIUM:
    print("SKIP: no chromium (Debian: apt-get install chromium)")
    sys.exit(77)


def count_near(rows, rgb, tolerance=12):
    return sum(1 for row in rows for px in row if all(abs(a - b) <= tolerance for a, b in zip(px, rgb)))


work = pathlib.Path(tempfile.mkdtemp(prefix="ddpx_report_html_"))
failures = []
try:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                                            "SLURM_PROCID", "PMI_RANK")}
    run = subprocess.run([DDPX, "train", "--device", "cpu", "--model", "vit_tiny_test", "--batch", "2", "--steps", "6",
                          "--warmup", "2", "--workers", "1", "--cpu-threads", "1", "--quiet",
                          "--report", str(work / "run.json")], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    page = work / "page.html"
    report = subprocess.run([DDPX, "report", str(work / "run.json"), "--trace", str(work / "run.trace.json"),
                             "--html", str(page)], capture_output=True, text=True, timeout=60, env=env)
    assert report.returncode == 0, report.stdout + report.stderr
    html = page.read_text()
    for needle in ('<div class="verdict">', "Where the time goes", "<svg", 'href="run.trace.json"', "forward",
                   "ddpx run: vit_tiny_test fp32, batch 2 x 1 rank"):
        if needle not in html:
            failures.append(f"the page lacks {needle!r}")

    shot = work / "shot.png"
    width, height = 1200, 1400
    browser = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                              f"--window-size={width},{height}", f"--screenshot={shot}", page.as_uri()],
                             capture_output=True, text=True, timeout=120,
                             env=dict(env, HOME=str(work)))  # a profile of its own, nothing shared
    if browser.returncode != 0 or not shot.exists():
        failures.append(f"chromium made no screenshot (status {browser.returncode}): {browser.stderr[-800:]}")
    else:
        w, h, rows = decode_png(shot.read_bytes())
        if (w, h) != (width, height):
            failures.append(f"screenshot is {w}x{h}, expected {width}x{height}")
        verdict_bar = count_near(rows, (0xF5, 0x85, 0x18))  # the verdict box's left border
        verdict_box = count_near(rows, (0xFF, 0xF4, 0xE5), tolerance=3)
        chart_bars = count_near(rows, (0x4C, 0x78, 0xA8))  # the breakdown chart's bars
        white = count_near(rows, (255, 255, 255), tolerance=0)
        print(f"screenshot {w}x{h}: verdict border {verdict_bar} px, verdict box {verdict_box} px, "
              f"chart bars {chart_bars} px, white {white} px")
        if verdict_bar < 6 * 30:
            failures.append(f"the verdict's border is not drawn ({verdict_bar} px)")
        if verdict_box < 2000:
            failures.append(f"the verdict box is not drawn ({verdict_box} px)")
        if chart_bars < 500:
            failures.append(f"the breakdown chart's bars are not drawn ({chart_bars} px)")
        if white > 0.97 * w * h:
            failures.append("the screenshot is almost blank")
finally:
    shutil.rmtree(work, ignore_errors=True)

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
