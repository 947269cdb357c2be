#!/usr/bin/env python3
"""Tests of scripts/check_includes.py: it passes on the real src/, and on a temporary copy of src/ with one
planted violation it fails naming the file, the line and the rule. Run as the CTest test include_graph_check;
each case copies src/ (under 2 MB) into its own temporary folder, which is removed afterwards."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_includes.py")


def run_check(root):
    result = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


class CopyOfSource(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="ddpx-include-check-")
        shutil.copytree(os.path.join(ROOT, "src"), os.path.join(self.root, "src"))

    def tearDown(self):
        shutil.rmtree(self.root)

    def append_line(self, relative, line):
        """Appends `line` to src/<relative> and returns its line number."""
        path = os.path.join(self.root, "src", relative)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        lines.append(line)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return len(lines)

    def test_the_copy_passes_as_the_tree_does(self):
        rc, output = run_check(self.root)
        self.assertEqual(rc, 0, output)

    def test_a_reader_that_opens_a_file_itself_fails(self):
        # issue 48: readers that opened with a plain open() hung on a FIFO; every reader goes through InputFile.
        for relative, line_text in [("data/idx_source.cpp", "std::ifstream in(path);"),
                                    ("analysis/curve_chart.cpp", "  const int fd = ::open(path.c_str(), O_RDONLY);"),
                                    ("io/npy.cpp", "FILE* f = fopen(path.c_str(), \"rb\");")]:
            line = self.append_line(relative, line_text)
            rc, output = run_check(self.root)
            self.assertEqual(rc, 1, output)
            self.assertIn(f"src/{relative}:{line}: opens a file directly", output)
            self.assertIn("InputFile", output)
            shutil.rmtree(os.path.join(self.root, "src"))
            shutil.copytree(os.path.join(ROOT, "src"), os.path.join(self.root, "src"))
        # A string that merely mentions open( is not a call.
        self.append_line("data/folder_source.cpp", 'const char* hint = "Image.open(f)";')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 0, output)

    def test_a_sideways_include_names_file_line_and_rule(self):
        # ddp knows nothing of the model: its contract is a flat gradient buffer.
        line = self.append_line("ddp/reducer.cpp", '#include "model/vit/vit_layout.hpp"')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn(f"src/ddp/reducer.cpp:{line}: ddp must not include model", output)
        self.assertIn('"model/vit/vit_layout.hpp"', output)
        self.assertIn("ddp may include comm_plan, core, dist", output)
        self.assertIn("ALLOWED_DEPENDENCIES in scripts/check_includes.py", output)
        self.assertEqual(output.count("must not include"), 1, output)

    def test_an_upward_include_fails(self):
        line = self.append_line("core/error.hpp", '#  include "train/trainer.hpp"')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn(f"src/core/error.hpp:{line}: core must not include train", output)
        self.assertIn("core may include nothing of ddpx", output)

    def test_a_relative_include_counts_as_the_folder_it_reaches(self):
        line = self.append_line("analysis/verdict.cpp", '#include "../dist/communicator.hpp"')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn(f"src/analysis/verdict.cpp:{line}: analysis must not include dist", output)

    def test_an_angle_include_of_our_header_counts(self):
        line = self.append_line("io/npy.cpp", "#include <data/dataset.hpp>")
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn(f"src/io/npy.cpp:{line}: io must not include data", output)

    def test_a_never_rule_holds_where_the_graph_reaches(self):
        # analysis reaches model through io, but never includes it; a family's own header is out of io's reach too.
        line = self.append_line("analysis/verdict.cpp", '#include "model/flat_layout.hpp"')
        family = self.append_line("io/npy.cpp", '#include "model/vit/vit_layout.hpp"')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn(f'src/analysis/verdict.cpp:{line}: analysis never includes model/* ("model/flat_layout.hpp")',
                      output)
        self.assertIn(f'src/io/npy.cpp:{family}: io never includes model/*/* ("model/vit/vit_layout.hpp")', output)
        self.assertIn("NEVER_INCLUDE in scripts/check_includes.py", output)
        self.assertNotIn("must not include", output)

    def test_a_header_never_tests_a_build_switch(self):
        # DDPX_HAVE_CUDA is defined per CMake target: a header testing it reads differently in different targets.
        line = self.append_line("train/step_engine.hpp", "#ifdef DDPX_HAVE_CUDA")
        self.append_line("train/step_engine.hpp", "#endif")
        self.append_line("train/trainer.cpp", "#if defined(DDPX_HAVE_GLOO)")  # a .cpp may
        self.append_line("train/trainer.cpp", "#endif")
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn(f"src/train/step_engine.hpp:{line}: a header tests the build switch DDPX_HAVE_CUDA", output)
        self.assertNotIn("trainer.cpp", output)

    def test_a_generic_model_header_is_not_a_family_one(self):
        self.append_line("io/npy.cpp", '#include "model/flat_layout.hpp"')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 0, output)

    def test_a_transitive_dependency_is_allowed(self):
        # cli depends on train, train on dist: cli may include dist without declaring it.
        self.append_line("cli/main.cpp", '#include "dist/communicator.hpp"')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 0, output)

    def test_an_undeclared_folder_fails(self):
        os.makedirs(os.path.join(self.root, "src", "extras"))
        with open(os.path.join(self.root, "src", "extras", "thing.cpp"), "w", encoding="utf-8") as f:
            f.write('#include "core/error.hpp"\n')
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn("folder 'extras' is not declared in ALLOWED_DEPENDENCIES", output)

    def test_a_link_the_graph_does_not_declare_fails(self):
        self.append_line("optim/CMakeLists.txt", "target_link_libraries(ddpx_optim PUBLIC ddpx_dist)")
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn("src/optim/CMakeLists.txt: optim links ddpx_dist but ALLOWED_DEPENDENCIES", output)

    def test_a_declared_edge_cmake_does_not_link_fails(self):
        path = os.path.join(self.root, "src", "ddp", "CMakeLists.txt")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("PUBLIC ddpx_dist", "PUBLIC ddpx_core"))
        rc, output = run_check(self.root)
        self.assertEqual(rc, 1, output)
        self.assertIn("ddp is declared to depend on dist", output)


class DeclaredGraph(unittest.TestCase):
    def test_is_acyclic_and_closed(self):
        sys.dont_write_bytecode = True  # no __pycache__ left in scripts/
        sys.path.insert(0, os.path.dirname(SCRIPT))
        import check_includes

        graph = check_includes.ALLOWED_DEPENDENCIES
        self.assertIsNone(check_includes.find_cycle(graph))
        self.assertEqual(check_includes.find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}), ["a", "b", "c", "a"])
        for deps in graph.values():
            self.assertTrue(set(deps) <= set(graph))


if __name__ == "__main__":
    unittest.main(verbosity=2)
