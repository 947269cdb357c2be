#!/usr/bin/env python3
"""The counts of issue 49's table, re-counted by grep over src/ (the same commands each time).

Usage: tools/structure_counts.py [REPO_ROOT]   (default: this checkout)

Prints one line per row: `what | where | count`. Each helper's rows live in a function of their own; main() calls
them in turn. The counts are of the source text, not of a run: a runtime check of the same property lives in the
tests named beside each row.
"""
import pathlib
import re
import sys


def source_files(root, folder, suffixes=(".cpp", ".hpp", ".cu")):
    base = root / "src" / folder
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
    for path in source_files(root, "train", (".cpp",)):
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
    for path in source_files(root, "data", (".cpp", ".hpp")):
        count = len(hard_coded.findall(strip_comments(path.read_text())))
        if count:
            per_file[str(path.relative_to(root))] = count
    where = ", ".join(f"{name} x{count}" for name, count in per_file.items()) or "none"
    print(f"errors in src/data naming --data whatever flag was typed | {where} | {sum(per_file.values())}")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    print("what | where | count")
    data_plan_rows(root)


if __name__ == "__main__":
    main()
