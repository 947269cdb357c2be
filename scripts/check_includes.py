#!/usr/bin/env python3
"""The folder dependency graph of src/, declared once, and the check that the code keeps to it.

Guarantees (run as the CTest test `include_graph`, so CI runs it through `.ci/run`):
  - Every `#include "F/..."` (and `#include <F/...>` that names a file under src/) in a file of src/X/ names a
    folder F that X may depend on: X itself, or a folder reachable from X through ALLOWED_DEPENDENCIES below.
    A relative include (`"../F/x.hpp"`) counts as the folder it resolves to. A violation is reported as
    `src/X/file.cpp:LINE: X must not include F ("F/x.hpp") ...`, naming the rule, and the check fails.
  - No file of src/X/ includes what NEVER_INCLUDE below rules out for X, even where the graph reaches it (analysis
    reaches model through io, yet never includes it): a violation is reported as
    `src/X/file.cpp:LINE: X never includes F ("F/x.hpp"): <the rule's reason>`. Every rule names declared folders.
  - No header of src/ (.hpp, .h, .cuh) tests a build switch (DDPX_HAVE_CUDA, DDPX_HAVE_MPI, ...) in #if, #ifdef,
    #ifndef or #elif: those are defined per CMake target, so such a header would mean different things in
    different translation units (an ODR hazard); the switch belongs in a .cpp. A violation is reported as
    `src/X/file.hpp:LINE: a header tests the build switch DDPX_HAVE_CUDA ...`.
  - No file of the readers' folders (READER_FOLDERS: src/analysis, src/data, src/io, src/report, src/topology,
    src/tune) opens a file itself with `::open(`, `open(`, `fopen(`, `gzopen(` or `std::ifstream`: they read
    through io/posix_file's InputFile (or read_small_file), the one open-for-reading function, which never blocks
    on a FIFO and refuses devices and folders (issue 48). The few files that open something else (a folder, a lock, an output, sysfs) are listed in
    OPEN_ALLOWED with the reason. A violation is reported as `src/X/file.cpp:LINE: opens a file directly ...`.
  - Every folder of src/ with a CMakeLists.txt is declared, and the declared graph is acyclic.
  - The declared graph is CMake's: the ddpx_* libraries a folder's CMakeLists.txt links with
    target_link_libraries are exactly the folders declared for it (whatever the if() around the call: the check
    reads the text, so a CUDA-only link counts).
Exit status 0 when all hold, 1 with one line per problem otherwise, 2 for bad arguments.

A new folder is one line in ALLOWED_DEPENDENCIES (and its CMakeLists.txt); a new dependency is one name in a line
and the matching target_link_libraries. `--graph` prints the graph as docs/design.md shows it.
"""
import argparse
import fnmatch
import os
import re
import sys

# Folder -> the folders it may include directly (and, through them, everything they may include). These are the
# edges of CMake's link graph (target_link_libraries in src/<folder>/CMakeLists.txt); the check keeps both equal.
ALLOWED_DEPENDENCIES = {
    "core": [],
    "model": ["core"],
    "optim": ["core"],
    "dist": ["core"],
    "comm_plan": ["core"],
    "launch": ["dist"],
    "kernels": ["core"],
    "io": ["model", "optim"],
    "data": ["core", "io"],
    "report": ["core", "io"],
    "analysis": ["comm_plan", "core", "io", "report"],
    "topology": ["core", "io", "report"],
    "tune": ["core", "io", "report"],
    "ddp": ["comm_plan", "dist"],
    "model_cuda": ["core", "kernels", "model", "optim"],
    "train": ["analysis", "data", "ddp", "dist", "io", "kernels", "model", "model_cuda", "optim", "report"],
    "predict": ["analysis", "comm_plan", "core", "report"],
    "cli": ["launch", "predict", "topology", "train", "tune"],
    "torch_ddp": ["ddp", "dist", "report"],
}

# Includes a folder must never make, whatever the graph lets it reach: (folder, pattern, reason). A pattern is an
# include path with shell wildcards (fnmatch; `*` also crosses `/`): "model/*" is all of model/, "model/*/*" a
# model family's own folder (model/vit/..., model/mlp/...) but not the generic model/flat_layout.hpp.
NEVER_INCLUDE = [
    ("report", "model/*", "the report holds plain records; the trainer hands it plain structs"),
    ("analysis", "model/*", "the analysis reads plain records; the trainer hands it plain structs"),
    ("topology", "model/*", "the hardware probes know no model"),
    ("tune", "model/*", "the tuner writes train's flags; it knows no model"),
    ("predict", "model/*", "the prediction reads reports and peak tables only, no model"),
    ("predict", "io/*", "the prediction reads files through report's and analysis' readers"),
    ("comm_plan", "dist/*", "the communication plan is pure facts: no communicator"),
    ("io", "model/*/*", "io reads and writes the generic flat layout, never a model family's own"),
    ("train", "model/*/*", "the trainer takes a Model from the registry, never a family's own headers"),
    ("train", "model_cuda/*/*", "the trainer takes a CUDA model from the CUDA registry, never a family's own headers"),
    ("cli", "model/*/*", "the command takes a Model from the registry, never a family's own headers"),
    ("cli", "model_cuda/*/*", "the command takes a CUDA model from the CUDA registry, never a family's own headers"),
]

# Folders whose files read data files: none may open a file itself (the one open-for-reading function is
# io/posix_file's InputFile; see the module's docstring).
READER_FOLDERS = ["analysis", "data", "io", "report", "topology", "tune"]
DIRECT_OPEN = re.compile(r'(?<![\w.>])(?:::)?(?:open|fopen|gzopen)\s*\(|std::ifstream\b|\bifstream\s')
# Files of READER_FOLDERS that may open directly, and why (path under src/ -> reason).
OPEN_ALLOWED = {
    "io/posix_file.cpp": "the open-for-reading function itself, and the output file's own open",
    "io/output_file.cpp": "the probe file that proves an output folder writable (O_CREAT|O_EXCL, written)",
    "io/checkpoint_folder.cpp": "opens the checkpoint folder itself (O_DIRECTORY) to write inside it with openat",
    "io/directory_lock.cpp": "the lock file it creates and writes (O_RDWR|O_CREAT|O_NOFOLLOW)",
    "topology/pci_sysfs.cpp": "sysfs attributes, which stat as 4096-byte regular files and read shorter",
}

# The CMake target each folder builds, when it is not ddpx_<folder>.
TARGET_OF_FOLDER = {"cli": "ddpx"}
# Targets that are part of a folder besides its main one (core's generated build-info library).
EXTRA_TARGETS = {"ddpx_build_info": "core"}

SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".cc")
HEADER_SUFFIXES = (".hpp", ".cuh", ".h")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*(["<])([^">]+)[">]')
BUILD_SWITCH_TEST = re.compile(r'^\s*#\s*(?:if|ifdef|ifndef|elif)\b.*?\b(DDPX_HAVE_\w+)')


def reachable(graph, start):
    """Every folder reachable from `start` through `graph` (start included)."""
    seen, stack = {start}, [start]
    while stack:
        for dep in graph.get(stack.pop(), []):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def find_cycle(graph):
    """A list of folders forming a cycle, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for dep in graph.get(node, []):
            if state.get(dep) == "open":
                return path[path.index(dep):] + [dep] if dep in path else path + [dep]
            if dep not in state:
                cycle = visit(dep, path + [dep])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [node])
            if cycle:
                return cycle
    return None


def included_folder(src_dir, file_path, quote, included, folders):
    """The src/ folder an include names, or None when it names none of ours (system and generated headers)."""
    if quote == '"' and included.startswith("."):
        resolved = os.path.normpath(os.path.join(os.path.dirname(file_path), included))
        relative = os.path.relpath(resolved, src_dir)
        if relative.startswith(".."):
            return None
        first = relative.split(os.sep)[0]
        return first if first in folders else None
    first = included.split("/")[0]
    if "/" not in included or first not in folders:
        return None
    if quote == "<" and not os.path.exists(os.path.join(src_dir, included)):
        return None  # a system header whose first folder happens to share a name
    return first


def check_includes(root, graph):
    src_dir = os.path.join(root, "src")
    folders = sorted(d for d in os.listdir(src_dir) if os.path.isdir(os.path.join(src_dir, d)))
    problems = []
    for folder in folders:
        if folder not in graph:
            problems.append(f"src/{folder}/: folder '{folder}' is not declared in ALLOWED_DEPENDENCIES "
                            f"(scripts/check_includes.py): add a line naming the folders it may include")
    allowed = {folder: reachable(graph, folder) for folder in graph}
    for folder in folders:
        if folder not in graph:
            continue
        base = os.path.join(src_dir, folder)
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                shown = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        switch = BUILD_SWITCH_TEST.match(line) if name.endswith(HEADER_SUFFIXES) else None
                        if switch:
                            problems.append(f"{shown}:{number}: a header tests the build switch {switch.group(1)}: "
                                            f"it is defined per CMake target, so the header would differ between "
                                            f"translation units; test it in a .cpp file")
                        match = INCLUDE_LINE.match(line)
                        if not match:
                            continue
                        quote, included = match.groups()
                        target = included_folder(src_dir, path, quote, included, graph)
                        if target is not None and target in allowed[folder]:
                            resolved = os.path.relpath(os.path.normpath(os.path.join(dirpath, included)), src_dir) \
                                if included.startswith(".") else included
                            for never_folder, pattern, reason in NEVER_INCLUDE:
                                if never_folder == folder and fnmatch.fnmatch(resolved, pattern):
                                    problems.append(f"{shown}:{number}: {folder} never includes {pattern} "
                                                    f"({quote}{included}{'>' if quote == '<' else quote}): {reason} "
                                                    f"(rule: NEVER_INCLUDE in scripts/check_includes.py)")
                        if target is None or target in allowed[folder]:
                            continue
                        may = ", ".join(sorted(allowed[folder] - {folder})) or "nothing of ddpx"
                        problems.append(
                            f"{shown}:{number}: {folder} must not include {target} ({quote}{included}"
                            f"{'>' if quote == '<' else quote}): {folder} may include {may} "
                            f"(rule: ALLOWED_DEPENDENCIES in scripts/check_includes.py; dependencies point one way)")
    return problems


def check_direct_opens(root):
    """Problems: a file of READER_FOLDERS that opens a file itself instead of through InputFile."""
    src_dir = os.path.join(root, "src")
    problems = []
    for folder in READER_FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(src_dir, folder)):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                relative = os.path.relpath(path, src_dir).replace(os.sep, "/")
                if relative in OPEN_ALLOWED:
                    continue
                with open(path, encoding="utf-8", errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        code = line.split("//", 1)[0]
                        code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', code)  # string literals ("Image.open(f)")
                        if DIRECT_OPEN.search(code):
                            problems.append(f"src/{relative}:{number}: opens a file directly; readers of "
                                            f"{', '.join('src/' + f for f in READER_FOLDERS)} read through "
                                            f"io/posix_file's InputFile or read_small_file (never blocks on a FIFO, "
                                            f"refuses devices and folders; rule: READER_FOLDERS and OPEN_ALLOWED in "
                                            f"scripts/check_includes.py)")
    return problems


def cmake_commands(text, command):
    """The argument lists of every call of `command` in CMake source `text` (comments removed)."""
    text = re.sub(r"#[^\n]*", "", text)
    calls = []
    for match in re.finditer(r"\b" + command + r"\s*\(", text):
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        calls.append(text[match.end():i - 1].split())
    return calls


def check_cmake(root, graph):
    src_dir = os.path.join(root, "src")
    folder_of_target = dict(EXTRA_TARGETS)
    for folder in graph:
        folder_of_target[TARGET_OF_FOLDER.get(folder, "ddpx_" + folder)] = folder
    problems = []
    for folder in sorted(graph):
        cmake_file = os.path.join(src_dir, folder, "CMakeLists.txt")
        if not os.path.exists(cmake_file):
            continue
        with open(cmake_file, encoding="utf-8") as f:
            text = f.read()
        linked = set()
        for args in cmake_commands(text, "target_link_libraries"):
            if not args or folder_of_target.get(args[0]) != folder:
                continue
            linked |= {folder_of_target[a] for a in args[1:] if a in folder_of_target} - {folder}
        declared = set(graph[folder])
        shown = os.path.relpath(cmake_file, root)
        for missing in sorted(declared - linked):
            problems.append(f"{shown}: {folder} is declared to depend on {missing} (scripts/check_includes.py) but "
                            f"does not link {TARGET_OF_FOLDER.get(missing, 'ddpx_' + missing)}: add it to "
                            f"target_link_libraries or remove it from ALLOWED_DEPENDENCIES")
        for extra in sorted(linked - declared):
            problems.append(f"{shown}: {folder} links {TARGET_OF_FOLDER.get(extra, 'ddpx_' + extra)} but "
                            f"ALLOWED_DEPENDENCIES (scripts/check_includes.py) does not declare {folder} -> {extra}: "
                            f"declare it (if it points down) or remove the link")
    return problems


def layers(graph):
    """Folders grouped by height: layer 0 depends on nothing, layer k only on layers below k."""
    height = {}

    def of(node):
        if node not in height:
            height[node] = 1 + max((of(d) for d in graph[node]), default=-1)
        return height[node]

    for node in graph:
        of(node)
    return [sorted(n for n in graph if height[n] == h) for h in range(max(height.values()) + 1)]


def print_graph(graph):
    for level in reversed(layers(graph)):
        for folder in level:
            deps = ", ".join(sorted(graph[folder])) or "(nothing of ddpx)"
            print(f"{folder:10} -> {deps}")


def main(argv):
    parser = argparse.ArgumentParser(description="Check that src/ folders include only the folders they may "
                                                 "(the graph declared in this script, kept equal to CMake's).")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the repository root (default: this script's repository)")
    parser.add_argument("--graph", action="store_true", help="print the declared graph, top layer first, and exit")
    args = parser.parse_args(argv)
    if args.graph:
        print_graph(ALLOWED_DEPENDENCIES)
        return 0
    if not os.path.isdir(os.path.join(args.root, "src")):
        print(f"check_includes: --root {args.root} has no src/ folder", file=sys.stderr)
        return 2
    problems = []
    cycle = find_cycle(ALLOWED_DEPENDENCIES)
    if cycle:
        problems.append("ALLOWED_DEPENDENCIES (scripts/check_includes.py) has a cycle: " + " -> ".join(cycle))
    for folder, deps in sorted(ALLOWED_DEPENDENCIES.items()):
        for dep in deps:
            if dep not in ALLOWED_DEPENDENCIES:
                problems.append(f"ALLOWED_DEPENDENCIES: {folder} -> {dep}, but {dep} is not declared")
    for folder, pattern, _ in NEVER_INCLUDE:
        if folder not in ALLOWED_DEPENDENCIES or pattern.split("/")[0] not in ALLOWED_DEPENDENCIES:
            problems.append(f"NEVER_INCLUDE: ({folder}, {pattern}) names a folder that ALLOWED_DEPENDENCIES "
                            f"does not declare")
    if not problems:
        problems += check_includes(args.root, ALLOWED_DEPENDENCIES)
        problems += check_cmake(args.root, ALLOWED_DEPENDENCIES)
        problems += check_direct_opens(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_includes: {len(problems)} problem(s) in the folder dependency graph", file=sys.stderr)
        return 1
    print(f"check_includes: {len(ALLOWED_DEPENDENCIES)} folders of src/ include only what they may, "
          f"none breaks the {len(NEVER_INCLUDE)} never-rules, no header tests a build switch, CMake links the "
          f"same graph, and no reader of {', '.join('src/' + f for f in READER_FOLDERS)} opens a file directly")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
