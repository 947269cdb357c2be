#!/usr/bin/env python3
"""docs/results.md leads with the latest figure per target; the history lives in dated files under docs/results/.

Checks: the lead stays short; "## Waiting for a GPU" sits near the top; every entry under "## Latest figures per
target" states its date, commit, command and the anchor of the same call; every dated history file
(docs/results/YYYY-MM-DD.md) is linked from the lead and every link there resolves; the lead holds no journal
sections (those go to the day's file)."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
LEAD = ROOT / "docs" / "results.md"
HISTORY = ROOT / "docs" / "results"
MAX_LEAD_LINES = 200
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


lines = LEAD.read_text().split("\n")
check(len(lines) <= MAX_LEAD_LINES, f"docs/results.md has {len(lines)} lines (at most {MAX_LEAD_LINES}): "
      "move dated sections to docs/results/YYYY-MM-DD.md")
headings = [(i, l) for i, l in enumerate(lines) if l.startswith("## ")]
names = [l[3:].strip() for _, l in headings]
check(names[:2] == ["Waiting for a GPU", "Latest figures per target"],
      f"the first two sections must be 'Waiting for a GPU' and 'Latest figures per target', are {names[:2]}")
check(all(not n.startswith("One H200") for n in names), "a journal section ('## One H200 ...') is in the lead")

# Each "### " entry of the latest figures names date, commit, command and the anchor.
start = next((i for i, l in headings if l[3:].strip() == "Latest figures per target"), None)
if start is not None:
    end = next((i for i, _ in headings if i > start), len(lines))
    entries = re.split(r"\n(?=### )", "\n".join(lines[start:end]))[1:]
    check(len(entries) >= 1, "no entries under 'Latest figures per target'")
    for entry in entries:
        title = entry.split("\n", 1)[0]
        for word in ("Date:", "Commit", "Command", "nchor"):
            check(word in entry, f"latest-figures entry '{title}' does not state its {word.rstrip(':')}")

text = LEAD.read_text()
links = set(re.findall(r"\]\((results/[^)]+)\)", text))
for link in links:
    check((ROOT / "docs" / link).is_file(), f"docs/results.md links to {link}, which does not exist")
dated = sorted(p.name for p in HISTORY.glob("*.md") if re.fullmatch(r"\d{4}-\d\d-\d\d\.md", p.name))
check(len(dated) >= 1, "no dated history files docs/results/YYYY-MM-DD.md")
for name in dated:
    check(f"results/{name}" in links, f"docs/results/{name} is not linked from docs/results.md's history")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print(f"ok: docs/results.md {len(lines)} lines, {len(dated)} dated history files linked")
