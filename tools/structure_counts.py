#!/usr/bin/env python3
"""structure_counts.py [--root DIR]: the grep-based counts of issue 49's table, re-counted by one command.

Each count is a regular expression over src/ (C++ sources and headers), so the numbers can be compared between
branches (run it with --root on another checkout). Prints one line per count: its name, the number, and the
places (file:line) it counted, so a reader can check what was matched. Counts are kept simple on purpose: they
are for a reviewer's table, not a gate.
"""
import argparse
import pathlib
import re
import sys

SOURCES = ("*.cpp", "*.hpp", "*.cu", "*.h")


def source_files(root):
    src = root / "src"
    for pattern in SOURCES:
        yield from sorted(src.rglob(pattern))


# Lines a count's regex matches that are not what it counts: RunFacts::reducer is a bool (the job's decision).
IGNORED_LINES = r"facts\.reducer"


def matches(root, regex, include=None, exclude=None):
    """(path, line number) of every line of src/ matching regex; include/exclude: path regexes (relative)."""
    found = []
    for path in source_files(root):
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent, type=pathlib.Path)
    parser.add_argument("--places", action="store_true", help="list every counted file:line")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "src").is_dir():
        sys.exit(f"structure_counts.py: {root} has no src/ folder; pass --root of a ddpx checkout")
    for name, (regex, include, exclude, what) in COUNTS.items():
        found = matches(root, regex, include, exclude)
        files = sorted({path for path, _ in found})
        shown = len(files) if name == "job_builders" else len(found)
        unit = "files" if name == "job_builders" else "sites"
        print(f"{name}: {shown} {unit} ({what})")
        if args.places:
            for path, number in found:
                print(f"    {path}:{number}")


if __name__ == "__main__":
    main()
