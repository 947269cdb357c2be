#!/usr/bin/env python3
"""bench/before-after.sh on a two-file CMake project: the before version from a `git archive`-style tarball that
adds and removes files (BEFORE_TAR) and from a folder of changed files (BEFORE), each run alternating with the
after version and given the command's arguments; the working tree restored after BEFORE; and every misuse refused
with exit status 2 and a message that names what to set."""
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "before-after.sh")

CMAKE = """cmake_minimum_required(VERSION 3.16)
project(hello CXX)
file(GLOB SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
add_executable(hello ${SOURCES})
"""
MAIN = """#include <cstdio>
const char* version();
int main(int argc, char** argv) {
  std::printf("summary: %s", version());
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\\n");
}
"""


def version_file(name):
    return 'const char* version() { return "%s"; }\n' % name


def make_project(top, files):
    os.makedirs(os.path.join(top, "bench"), exist_ok=True)
    shutil.copy(SCRIPT, os.path.join(top, "bench", "before-after.sh"))
    for name, text in files.items():
        with open(os.path.join(top, name), "w") as f:
            f.write(text)


def run(top, env, *args):
    full = dict(os.environ, TARGET="hello", BIN="hello", OUT=os.path.join(top, "out"), **env)
    for key in ("BEFORE", "BEFORE_TAR"):
        if key not in env:
            full.pop(key, None)
    return subprocess.run(["bash", os.path.join(top, "bench", "before-after.sh"), *args], env=full, cwd=top,
                          capture_output=True, text=True, timeout=600)


with tempfile.TemporaryDirectory() as tmp:
    # The after version keeps its version in after_version.cpp; the before version in before_version.cpp, a file
    # the change removed (and after_version.cpp is one it added).
    after = os.path.join(tmp, "after")
    make_project(after, {"CMakeLists.txt": CMAKE, "main.cpp": MAIN, "after_version.cpp": version_file("after")})
    archive = os.path.join(tmp, "before.tar")
    with tarfile.open(archive, "w") as tar:
        for name, text in {"CMakeLists.txt": CMAKE, "main.cpp": MAIN,
                           "before_version.cpp": version_file("before")}.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    r = run(after, {"BEFORE_TAR": archive, "ROUNDS": "2"}, "--steps", "7")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("round")]
    assert lines == [f"round {n} {v} (rc 0): summary: {v} --steps 7" for n in (1, 2) for v in ("before", "after")], \
        r.stdout

    # BEFORE: the changed file swapped in for the before build, and the working tree as it was afterwards.
    before_dir = os.path.join(tmp, "before-files")
    os.makedirs(before_dir)
    with open(os.path.join(before_dir, "after_version.cpp"), "w") as f:
        f.write(version_file("old"))
    shutil.rmtree(os.path.join(after, "out"))
    r = run(after, {"BEFORE": before_dir, "ROUNDS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "round 1 before (rc 0): summary: old" in r.stdout and "round 1 after (rc 0): summary: after" in r.stdout, \
        r.stdout
    assert open(os.path.join(after, "after_version.cpp")).read() == version_file("after"), "working tree not restored"

    # Misuse: exit 2 and a message naming what to do; nothing is built.
    with open(os.path.join(before_dir, "removed.cpp"), "w") as f:
        f.write("")
    refusals = [({}, "set BEFORE_TAR"), ({"BEFORE": before_dir, "BEFORE_TAR": archive}, "not both"),
                ({"BEFORE_TAR": os.path.join(tmp, "missing.tar")}, "is not a file"),
                ({"BEFORE": before_dir}, "use BEFORE_TAR")]
    not_a_project = os.path.join(tmp, "empty.tar")
    with tarfile.open(not_a_project, "w"):
        pass
    refusals.append(({"BEFORE_TAR": not_a_project}, "no CMakeLists.txt"))
    for env, words in refusals:
        r = run(after, env)
        assert r.returncode == 2 and words in r.stderr, (env, r.returncode, r.stderr)
print("bench/before-after.sh: all checks passed")
