#!/usr/bin/env python3
"""The counts of issue 49's table, re-counted by the same commands (grep-like scans of src/ and the tool library's
`duplicates`), so a later review compares like with like. One function per part of the issue; each prints
`name: count` lines and, with --verbose, what it counted.

Usage: python3 tools/structure_counts.py [--root DIR] [--verbose] [--skip-duplicates]
The `duplicates` command (the tool library's) is run over src/ when it is on PATH; otherwise its line says so.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def source_files(src):
    for folder, _, files in os.walk(src):
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(folder, name)


def room_loops(src):
    """Loops between the files of one folder of src/ (a registry includes its rows, each row includes the
    registry): strongly connected sets of two or more units, a unit being a file's path without its suffix (x.hpp
    and x.cpp are one unit), the edges its includes of the same top folder."""
    loops = []
    for top in sorted(os.listdir(src)):
        room = os.path.join(src, top)
        if not os.path.isdir(room):
            continue
        graph = {}
        for path in source_files(room):
            unit = os.path.splitext(os.path.relpath(path, src))[0]
            with open(path, encoding="utf-8", errors="replace") as f:
                for included in INCLUDE.findall(f.read()):
                    target = os.path.splitext(included)[0]
                    if included.split("/")[0] == top and target != unit:
                        graph.setdefault(unit, set()).add(target)
        loops += [(top, component) for component in strongly_connected(graph) if len(component) > 1]
    return loops


def strongly_connected(graph):
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            out.append(sorted(component))

    sys.setrecursionlimit(100000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


# The fields and variables that hold a mode the code has parsed already (the flag's text kept beside it, or a
# report's field): a comparison of one of them with a string literal decides on the text again.
MODE_NAMES = ("resume", "normalize", "device", "precision", "weight_grads", "backend", "weights", "pytorch")
STRING_COMPARE = re.compile(r'[!=]=\s*"|"\s*[!=]=')
MODE_COMPARE = re.compile(r'(?:\.|->|\b)(' + "|".join(MODE_NAMES) + r')\s*[!=]=\s*"')


def string_compares(src):
    """All comparisons with a string literal in src/, and those on a mode already parsed (MODE_NAMES)."""
    every, on_modes = [], []
    for path in source_files(src):
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                code = line.split("//")[0]
                if STRING_COMPARE.search(code):
                    where = f"{os.path.relpath(path, src)}:{number}: {line.strip()}"
                    every.append(where)
                    if MODE_COMPARE.search(code):
                        on_modes.append(where)
    return every, on_modes


def duplicates_over(src):
    """The tool library's `duplicates` over src/: its first line counts the pairs."""
    tool = shutil.which("duplicates")
    if not tool:
        return None, "duplicates: not on PATH (the tool library's command)"
    result = subprocess.run([tool, "--seconds", "120"], cwd=src, capture_output=True, text=True, timeout=300)
    first = (result.stdout.strip().splitlines() or [""])[0]
    match = re.match(r"(\d+) pairs", first)
    return (int(match.group(1)) if match else 0), first


# Lines a count's regex matches that are not what it counts: RunFacts::reducer is a bool (the job's decision).
IGNORED_LINES = r"facts\.reducer"


def matches(root, regex, include=None, exclude=None):
    """(path, line number) of every line of src/ matching regex; include/exclude: path regexes (relative)."""
    found = []
    for path in sorted(pathlib.Path(root, "src").rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES:
            continue
        rel = path.relative_to(root).as_posix()
        if include and not re.search(include, rel):
            continue
        if exclude and re.search(exclude, rel):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("//"):
                continue
            if re.search(regex, line) and not re.search(IGNORED_LINES, line):
                found.append((rel, number))
    return found


# name -> (regex, include, exclude, what it counts)
COUNTS = {
    # Issue 49 item 1: the process's place in a job (world, heartbeat, watchdog, MPI session, communicator).
    "job_builders": (
        r"make_communicator\(|make_(shared|unique)<(CommWatchdog|HeartbeatBoard|MpiSession)>",
        None, r"^src/dist/(backend_registry|watchdog|heartbeat|mpi_session)\.",
        "files that build a job's parts (communicator, watchdog, heartbeat, MPI session); dist/job.cpp is the one"),
    "nullable_distributed_checks": (
        # a handle (x.communicator, dist_.reducer, options_.watchdog, watchdog_) tested for null: in an if/&&/||,
        # before ? or &&, or against nullptr
        r"(\bif \(|&& |\|\| )!?[\w.>-]*\b(communicator|reducer|watchdog)_?( &&| \|\||\))"
        r"|[\w.>-]*\b(communicator|reducer|watchdog)_?(\.get\(\))? (\?|&&|[!=]= nullptr)",
        r"^src/(train|cli|torch_ddp|ddp)/", None,
        "\"is this run distributed?\" asked of a nullable communicator/reducer/watchdog handle outside DistJob"),
    "reducer_watchdog_null_checks": (
        r"if \(options_\.watchdog", r"^src/ddp/reducer\.cpp$", None,
        "`if (options_.watchdog` in the reducer (item 6: an always-present watchdog)"),
    "detect_world_calls": (
        r"\bdetect_world\(\)", None, r"^src/dist/",
        "detect_world() called outside dist/ (the job reads the world once)"),
}

def dist_job(root, verbose):
    """Issue 49 item 1 (the `distjob` helper's rows): where a job is built, and "is this run distributed?" asked of
    nullable handles."""
    root = pathlib.Path(root)
    for name, (regex, include, exclude, what) in COUNTS.items():
        found = matches(root, regex, include, exclude)
        files = sorted({path for path, _ in found})
        shown = len(files) if name == "job_builders" else len(found)
        unit = "files" if name == "job_builders" else "sites"
        print(f"{name}: {shown} {unit} ({what})")
        if verbose:
            for path, number in found:
                print(f"    {path}:{number}")


def data_plan_files(root, folder, suffixes=(".cpp", ".hpp", ".cu")):
    base = pathlib.Path(root) / "src" / folder
    return sorted(p for p in base.rglob("*") if p.suffix in suffixes)


def strip_comments(text):
    """The text without // comments (whole-line and trailing; a // inside a string literal is kept)."""
    lines = []
    for line in text.splitlines():
        quoted = False
        for i, c in enumerate(line):
            if c == '"' and (i == 0 or line[i - 1] != "\\"):
                quoted = not quoted
            elif not quoted and line.startswith("//", i):
                line = line[:i]
                break
        lines.append(line)
    return "\n".join(lines)


def data_plan_rows(root):
    """Issue 49 items 2 and 4: the data opened once per source; errors naming the flag the user typed.

    Opens: the call sites in src/train that open a --data or --val spec (open_data, open_sample_source, or
    make_dataset/make_val_dataset of a spec rather than of opened data), split by the source they open (a site
    mentioning `val` opens --val). Runtime check: tests/train/test_data_opens.cpp (data_opens() per origin).

    Errors: string literals in src/data that start with a hard-coded "--data" (a source saying --data whatever the
    user typed: --val, ddpx pack SOURCE, ddpx eval --data, ...). Runtime check: tests/data/test_data_origin.cpp.
    """
    opener = re.compile(
        r"\b(?:open_data|open_sample_source)\(([^,)]*)|\bmake_dataset\(((?:options|requested|spec)\b[^,)]*)|"
        r"\bmake_val_dataset\((\*(?:options|requested)[^,)]*)")
    opens = {"--data": 0, "--val": 0}
    sites = []
    for path in data_plan_files(root, "train", (".cpp",)):
        for number, line in enumerate(strip_comments(path.read_text()).splitlines(), 1):
            for match in opener.finditer(line):
                argument = next(group for group in match.groups() if group is not None)
                if re.match(r"^\s*const\s+DataSpec&", argument):
                    continue  # a definition, not a call
                opens["--val" if "val" in argument else "--data"] += 1
                sites.append(f"{path.relative_to(root)}:{number}")
    print(f"data opened per source in a train run | {', '.join(sites) or 'none'} | "
          f"--data {opens['--data']}, --val {opens['--val']}")

    hard_coded = re.compile(r'"--data[ :]')  # a message's start; data_origin.cpp's "--data" is the flag's table
    per_file = {}
    for path in data_plan_files(root, "data", (".cpp", ".hpp")):
        count = len(hard_coded.findall(strip_comments(path.read_text())))
        if count:
            per_file[str(path.relative_to(root))] = count
    where = ", ".join(f"{name} x{count}" for name, count in per_file.items()) or "none"
    print(f"errors in src/data naming --data whatever flag was typed | {where} | {sum(per_file.values())}")


def house(root, verbose, skip_duplicates):
    """Issue 49 items 5 and 6 (the `house` helper's rows): profile/ in its parts, room loops, string modes,
    duplicates."""
    src = os.path.join(root, "src")
    parts = [p for p in ("report", "analysis", "topology", "tune") if os.path.isdir(os.path.join(src, p))]
    print(f"profile/ split: src/profile {'exists' if os.path.isdir(os.path.join(src, 'profile')) else 'gone'}; "
          f"its parts: {', '.join(parts) or 'none'} ({len(parts)})")
    loops = room_loops(src)
    print(f"room loops (files of one folder including each other): {len(loops)}")
    if verbose:
        for top, component in loops:
            print(f"  {top}: {' <-> '.join(component)}")
    every, on_modes = string_compares(src)
    print(f"string compares: {len(every)}; on a mode already parsed ({', '.join(MODE_NAMES)}): {len(on_modes)}")
    if verbose:
        for where in on_modes:
            print("  " + where)
    if not skip_duplicates:
        count, line = duplicates_over(src)
        print(f"duplicates over src: {count if count is not None else 'not run'} ({line})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--skip-duplicates", action="store_true")
    args = parser.parse_args()
    dist_job(args.root, args.verbose)
    data_plan_rows(pathlib.Path(args.root))
    house(args.root, args.verbose, args.skip_duplicates)


if __name__ == "__main__":
    main()
