#!/usr/bin/env python3
"""The build's conventions, each on a real CMake configure or build:
 - without CLI11, configure fails and names libcli11-dev;
 - -DBUILD_TESTING=OFF configures without GoogleTest (find_package(GTest) disabled) and defines no test target;
 - CMAKE_CXX_FLAGS_RELEASE defaults to -O2 -DNDEBUG and a user's value is kept and reaches the compiler;
 - find_package(ddpx) against this build tree (argument 1) gives ddpx::train, and a program built with it runs;
 - `cmake --install` of this build puts the headers under include/ddpx/ (nothing of ddpx's at include/core, ...),
   and a program including <ddpx/train/trainer.hpp> builds against the installed prefix and runs;
 - the LibTorch example (examples/torch_ddp, its own CMakeLists) builds against the installed prefix and trains.
Configures use -DDDPX_WITH_CUDA=OFF (faster; the package rules do not depend on it)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "build"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def configure(build, *flags):
    return subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DDDPX_WITH_CUDA=OFF",
                           "-DCMAKE_BUILD_TYPE=Release", *flags], capture_output=True, text=True, timeout=600)


def cache_value(build, name):
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


work = pathlib.Path(tempfile.mkdtemp(prefix="ddpx_build_conventions_"))
try:
    # 1. CLI11 is required at configure time, with the package to install.
    r = configure(work / "no-cli11", "-DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON")
    check(r.returncode != 0, "configure without CLI11 succeeded")
    check("libcli11-dev" in r.stdout + r.stderr, "configure without CLI11 does not name libcli11-dev:\n" + r.stderr[-800:])

    # 2. BUILD_TESTING=OFF needs no GoogleTest and defines no tests; a user's release flags are kept.
    user_flags = "-O1 -DNDEBUG -DDDPX_USER_RELEASE_FLAG"
    lib_only = work / "lib-only"
    r = configure(lib_only, "-DBUILD_TESTING=OFF", "-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON",
                  f"-DCMAKE_CXX_FLAGS_RELEASE={user_flags}")
    check(r.returncode == 0, "configure with BUILD_TESTING=OFF and no GoogleTest failed:\n" + r.stderr[-1500:])
    if r.returncode == 0:
        ninja = (lib_only / "build.ninja").read_text()
        check("test_cli" not in ninja and "test_core" not in ninja, "BUILD_TESTING=OFF still defines test targets")
        check(cache_value(lib_only, "CMAKE_CXX_FLAGS_RELEASE") == user_flags,
              f"the user's CMAKE_CXX_FLAGS_RELEASE was replaced: {cache_value(lib_only, 'CMAKE_CXX_FLAGS_RELEASE')}")
        commands = json.loads((lib_only / "compile_commands.json").read_text())
        trainer = [c["command"] for c in commands if c["file"].endswith("src/train/trainer.cpp")]
        check(len(trainer) == 1 and "-DDDPX_USER_RELEASE_FLAG" in trainer[0] and "-O1" in trainer[0],
              "the user's release flags do not reach the compiler: " + (trainer[0] if trainer else "no trainer.cpp"))

    # 3. The default release flags keep -DNDEBUG.
    defaults = work / "defaults"
    r = configure(defaults, "-DBUILD_TESTING=OFF")
    check(r.returncode == 0, "default configure failed:\n" + r.stderr[-1500:])
    if r.returncode == 0:
        check(cache_value(defaults, "CMAKE_CXX_FLAGS_RELEASE") == "-O2 -DNDEBUG",
              f"default CMAKE_CXX_FLAGS_RELEASE is {cache_value(defaults, 'CMAKE_CXX_FLAGS_RELEASE')!r}")

    # 4. find_package(ddpx) against this build tree: a program using ddpx::train builds and runs.
    consumer = work / "consumer"
    consumer.mkdir()
    (consumer / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(uses_ddpx LANGUAGES C CXX)\n"
        "set(CMAKE_CXX_STANDARD 20)\nfind_package(ddpx 0.1 REQUIRED)\n"
        "add_executable(uses_ddpx main.cpp)\ntarget_link_libraries(uses_ddpx PRIVATE ddpx::train)\n")
    languages = ["-DCUDAToolkit_ROOT=/usr/local/cuda"] if os.path.exists("/usr/local/cuda/bin/nvcc") else []

    def build_and_run(where, include_prefix, package_flag):
        (consumer / "main.cpp").write_text(
            f'#include <cstdio>\n#include {include_prefix[0]}core/build_info.hpp{include_prefix[1]}\n'
            f'#include {include_prefix[0]}model/model_registry.hpp{include_prefix[1]}\n'
            "int main() {\n  const auto model = ddpx::make_model(\"vit_tiny_test\");\n"
            '  std::printf("ddpx %s: %lld parameters\\n", ddpx::ddpx_version().c_str(),\n'
            "              static_cast<long long>(model->layout().num_params()));\n}\n")
        build = consumer / ("build-" + where.split()[-1])  # "tree", "prefix": a cache of its own each
        r = subprocess.run(["cmake", "-S", str(consumer), "-B", str(build), "-G", "Ninja", package_flag, *languages],
                           capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, f"find_package(ddpx) against {where} failed:\n" + (r.stdout + r.stderr)[-2000:])
        if r.returncode != 0:
            return
        r = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, f"building against ddpx::train ({where}) failed:\n" + (r.stdout + r.stderr)[-2000:])
        if r.returncode == 0:
            r = subprocess.run([str(build / "uses_ddpx")], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0 and r.stdout.startswith("ddpx 0.1: ") and "parameters" in r.stdout,
                  f"the program built with ddpx::train ({where}) printed {r.stdout!r} {r.stderr[-500:]!r}")

    build_and_run("the build tree", ('"', '"'), f"-Dddpx_DIR={BUILD}")

    # 5. cmake --install: headers under include/ddpx/, none at the prefix's include/ top; <ddpx/...> builds.
    prefix = work / "prefix"
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], capture_output=True, text=True,
                       timeout=600)
    check(r.returncode == 0, "cmake --install failed:\n" + (r.stdout + r.stderr)[-2000:])
    if r.returncode == 0:
        top = sorted(p.name for p in (prefix / "include").iterdir())
        check(top == ["ddpx"], f"the install's include/ holds {top}, expected only ddpx/")
        check((prefix / "include" / "ddpx" / "train" / "trainer.hpp").is_file(),
              "include/ddpx/train/trainer.hpp was not installed")
        build_and_run("the installed prefix", ("<ddpx/", ">"), f"-DCMAKE_PREFIX_PATH={prefix}")

        # 6. The LibTorch example as a user's project of its own against the installed prefix (where this build
        # has the adapter): its CMakeLists finds ddpx (and LibTorch through it), builds and trains a few steps.
        if (BUILD / "examples" / "torch_ddp" / "train_cnn").exists():
            example = work / "example-build"
            r = subprocess.run(["cmake", "-S", str(ROOT / "examples" / "torch_ddp"), "-B", str(example), "-G",
                                "Ninja", "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}", *languages],
                               capture_output=True, text=True, timeout=600)
            check(r.returncode == 0, "examples/torch_ddp does not configure against the installed prefix:\n" +
                  (r.stdout + r.stderr)[-2000:])
            if r.returncode == 0:
                r = subprocess.run(["cmake", "--build", str(example)], capture_output=True, text=True, timeout=900)
                check(r.returncode == 0, "examples/torch_ddp does not build against the installed prefix:\n" +
                      (r.stdout + r.stderr)[-2000:])
            fashion = pathlib.Path("/usr/share/datasets/fashion-mnist")
            if r.returncode == 0 and fashion.is_dir():
                r = subprocess.run([str(example / "train_cnn"), "--fashion-mnist", str(fashion), "--steps", "3",
                                    "--batch", "16"], capture_output=True, text=True, timeout=120)
                print("train_cnn against the installed prefix:", r.stdout.strip().splitlines()[-1:] or r.stderr[-300:])
                check(r.returncode == 0 and "step 2 loss" in r.stdout,
                      f"train_cnn built against the installed prefix printed {r.stdout[-500:]!r} {r.stderr[-500:]!r}")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    sys.exit(1)
print("ok: CLI11 required, BUILD_TESTING=OFF without GoogleTest, release flags kept, find_package(ddpx) works "
      "against the build tree and an installed prefix (headers under include/ddpx/), and so does the LibTorch example")
