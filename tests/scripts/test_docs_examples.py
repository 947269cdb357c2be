"""The documented examples run as tests: every `ddpx ...` command in a fenced code block of README.md and docs/*.md
is extracted, given small stand-in data, shortened, and run on the CPU.

Usage: test_docs_examples.py DDPX [--repo DIR] [--keep DIR] [--only REGEX]

Guarantees:
- Every command is found without being listed: a line of a fenced block whose first word (after `$ `, `NAME=value`
  assignments and a launcher: mpirun, srun, torchrun) is `ddpx` followed by a word that is not a label (`ddpx
  launch:` is output, not a command); `\\` continuations are joined, `#` comments dropped, `&&` / `||` split.
- Each command is either run or skipped with a stated reason (SKIP_RULES: a CUDA GPU, Slurm, several nodes,
  NCCL). A run passes when it exits 0, or, where the docs show `$ COMMAND` followed by `ddpx: error: TEXT`, when it
  exits 2 with that TEXT (`...` matches anything) on stderr. Each runs in a fresh folder holding the stand-in
  files it names (STANDINS: data from standin_data.py, weights, reports and traces made by ddpx itself, recorded
  fixtures); absolute data paths of the docs are mapped to stand-ins (PATH_STANDINS). A file a command names that
  has no stand-in and does not exist fails the test, naming it: a new example needs a row in a table here, never
  an edit of the extractor.
- Runs are shortened by shorten() (steps, warm-up, ranks, iterations); nothing else of the command changes.
- KNOWN_FAILURES names the examples that fail today because of an open issue (with its row), by their text; such an
  example is still run, reported as `known`, and the test fails once it passes (or once no example matches the
  entry), so the list empties as the fixes land.
- A table of every command (file:line, result, reason or exit status) is printed; the exit status is 0 when every
  command passed or was skipped or failed as known.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_features import built_backends  # noqa: E402
from standin_data import make_standin_data  # noqa: E402

LAUNCHERS = {"mpirun", "srun", "torchrun"}
RUN_TIMEOUT_S = 180

# The backends the ddpx under test lacks (build_features.py), set in main() before any rule is asked.
MISSING_BACKENDS = set()

# (reason, predicate over the Command): the first that matches skips the command.
# torchvision's train.py flags (cli/torchvision_flags.hpp): a command line using one defaults to --device cuda.
TORCHVISION_ONLY = {"-b", "--batch-size", "--wd", "--opt", "--data-path", "--lr-scheduler", "--model-ema", "--amp",
                    "--ra-sampler", "--output-dir", "--mixup-alpha", "--cutmix-alpha", "--auto-augment", "-j"}
SKIP_RULES = [
    ("needs a CUDA GPU", lambda c: c.flag("--device") == "cuda"),
    ("needs a CUDA GPU (a torchvision command line's default --device cuda)",
     lambda c: c.sub == "train" and c.flag("--device") is None
     and any(w.split("=", 1)[0] in TORCHVISION_ONLY or w.startswith("configs/torchvision/") for w in c.words)),
    ("needs a Slurm cluster (ctest -L slurm runs these)", lambda c: c.launcher == "srun"),
    ("several nodes (ctest -L multinode runs these)",
     lambda c: (c.flag("--nnodes") not in (None, "1")) or "-H" in c.launcher_args
     or c.launcher_flag("--nnodes") not in (None, "1")),
    ("needs NCCL (a GPU)", lambda c: any(k.startswith("NCCL_") for k in c.env)),
    ("its launcher is not installed", lambda c: c.launcher is not None and shutil.which(c.launcher) is None),
    ("allreduce and bench default to NCCL on GPUs", lambda c: c.sub in ("allreduce", "bench")
     and c.flag("--device") != "cpu"),
    ("this ddpx was built without that --backend (`ddpx --version` lists the backends built)",
     lambda c: c.flag("--backend") in MISSING_BACKENDS),
    ("writes the GPU table NVML gives (none without a GPU)",
     lambda c: c.sub == "topo" and c.flag("--json") is not None and c.flag("--from-json") is None),
]

# Absolute paths the docs use for a user's data, and the stand-in key of standin_data.py (or a file in the run's
# folder) that replaces them.
PATH_STANDINS = [
    ("/usr/share/datasets/fashion-mnist", "idx"),
    ("/data/imagenet/train", "folder"),
    ("/data/imagenet/val", "folder_val"),
    ("/data/train.pack", "@train.pack"),
    ("/data/test.pack", "pack"),
]

# Relative file names the examples read, and how each is made (once, then copied into every run's folder that
# names it): ("data", key) from standin_data.py, ("ddpx", args) a run of ddpx that writes it in the folder,
# ("fixture", path) a recorded file of the repository.
TRAIN_TINY = ["train", "--device", "cpu", "--model", "vit_tiny_test", "--steps", "3", "--warmup", "1", "--quiet"]
STANDINS = {
    "images.npy": ("data", "images"),
    "labels.npy": ("data", "labels"),
    "x.npy": ("data", "images"),  # 16x16x3: vit_tiny_test's and mlp_tiny_test's input
    "y.npy": ("data", "labels"),
    "w.safetensors": ("ddpx", TRAIN_TINY + ["--save", "w.safetensors"]),
    "run.json": ("ddpx", TRAIN_TINY + ["--report", "run.json", "--trace", "run.trace.json"]),
    "m.jsonl": ("ddpx", TRAIN_TINY + ["--metrics", "m.jsonl"]),
    "run.trace.json": ("ddpx", TRAIN_TINY + ["--report", "run.json", "--trace", "run.trace.json"]),
    "base.json": ("ddpx", TRAIN_TINY + ["--report", "base.json"]),
    "allreduce.json": ("ddpx", TRAIN_TINY + ["--ddp", "--report", "allreduce.json"]),
    "bf16.json": ("ddpx", TRAIN_TINY + ["--ddp", "--comm-hook", "bf16", "--report", "bf16.json"]),
    "powersgd1.json": ("ddpx", TRAIN_TINY + ["--ddp", "--comm-hook", "powersgd:1", "--report", "powersgd1.json"]),
    "peak.json": ("fixture", "tests/fixtures/recorded/peak_shm_2xh200.json"),
    "ar.json": ("fixture", "tests/fixtures/recorded/nccl_tests_all_reduce_2xh200.json"),
    "ar.log": ("write", lambda repo: eight_rank_log(repo)),  # the docs' `mpirun -np 8 all_reduce_perf > ar.log`
    "topo.json": ("fixture", "tests/fixtures/recorded/topo_2xh200_nv18.json"),
    "run.log": ("fixture", "tests/fixtures/recorded/nccl_info_shm.log"),  # what NCCL_DEBUG=INFO printed
    "trace_rank0.json": ("fixture", "tests/fixtures/torch_profile/trace_rank0.json"),
    "trace_rank1.json": ("fixture", "tests/fixtures/torch_profile/trace_rank1.json"),
}

def eight_rank_log(repo):
    """The recorded 2-rank all_reduce_perf log with 8 device lines: the shape of the docs' `mpirun -np 8` log."""
    text = open(os.path.join(repo, "tests/fixtures/recorded/nccl_tests_all_reduce_2xh200.txt"), encoding="utf-8").read()
    lines = text.split("\n")
    first = next(i for i, l in enumerate(lines) if re.match(r"#\s+Rank\s+0 ", l))
    template = lines[first]
    ranks = [re.sub(r"Rank\s+0 ", f"Rank {r:2d} ", template).replace("device  0", f"device {r:2d}") for r in range(8)]
    rest = [l for l in lines[first:] if not re.match(r"#\s+Rank\s+\d+ ", l)]
    return "\n".join(lines[:first] + ranks + rest)


# Examples that fail today for a reason an open issue names: {regex over the command's text: "issue N row ..."}
# (the text, not the line, so that edits above it keep the entry; an entry that matches no example fails the test).
# Empty since issue 47 row 1 (--val alone: SIGFPE) was fixed.
KNOWN_FAILURES = {}


class Command:
    def __init__(self, file, line, text, expected_error):
        self.file, self.line, self.text, self.expected_error = file, line, text, expected_error
        self.env = {}
        words = shlex.split(text.replace("...", " "))
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            key, value = words.pop(0).split("=", 1)
            self.env[key] = value
        self.launcher, self.launcher_args = None, []
        if words and words[0] in LAUNCHERS:
            self.launcher = words[0]
            at = words.index("ddpx")
            self.launcher_args, words = words[1:at], words[at:]
        self.words = words  # from "ddpx"
        self.sub = words[1] if len(words) > 1 else ""
        self.elided = "..." in text

    def flag(self, name):
        value = None
        for i, w in enumerate(self.words):
            if w == name and i + 1 < len(self.words):
                value = self.words[i + 1]
            elif w.startswith(name + "="):
                value = w.split("=", 1)[1]
        return value

    def launcher_flag(self, name):
        for i, w in enumerate(self.launcher_args):
            if w == name and i + 1 < len(self.launcher_args):
                return self.launcher_args[i + 1]
        return None

    def where(self):
        return f"{self.file}:{self.line}"


def is_command(words):
    """A ddpx command line, not printed output: `ddpx` then a word that is not a label."""
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words = words[1:]
    if words and words[0] in LAUNCHERS and "ddpx" in words:
        return True
    return len(words) >= 2 and words[0] == "ddpx" and not words[1].endswith(":")


def split_shell(line):
    """A logical line -> the commands of it (`&&`, `||`, `;` split; `|| exit 1` and redirections dropped)."""
    parts = re.split(r"\s(?:&&|\|\||;)\s", line)
    out = []
    for part in parts:
        part = re.sub(r"\s\d?>&?\s*\S+", " ", part).strip()  # > file, 2>&1
        if part and part != "exit 1":
            out.append(part)
    return out


def extract(repo, files):
    commands = []
    for rel in files:
        lines = open(os.path.join(repo, rel), encoding="utf-8").read().split("\n")
        in_block, i = False, 0
        while i < len(lines):
            raw = lines[i]
            if re.match(r"^\s*```", raw):
                in_block = not in_block
                i += 1
                continue
            if not in_block:
                i += 1
                continue
            first = i + 1
            logical = raw
            while logical.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                logical = logical.rstrip()[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            prompt = logical.lstrip().startswith("$ ")
            text = logical.lstrip()[2:] if prompt else logical.strip()
            text = re.sub(r"(^|\s)#.*$", "", text).strip()  # a comment (never inside the examples' words)
            expected = None
            if prompt and i < len(lines) and lines[i].startswith("ddpx: error:"):
                expected = lines[i][len("ddpx: error:"):].strip()
            for part in split_shell(text):
                try:
                    words = shlex.split(part)
                except ValueError:
                    continue
                if is_command(words):
                    commands.append(Command(rel, first, part, expected))
    return commands


class Standins:
    """Makes each stand-in file once, in a cache folder, and copies it into a run's folder on request."""

    def __init__(self, ddpx, repo, root):
        self.ddpx, self.repo, self.root = ddpx, repo, root
        self.cache = os.path.join(root, "made")
        os.makedirs(self.cache, exist_ok=True)
        self.data = make_standin_data(ddpx, os.path.join(root, "data"))

    def path_of(self, name):
        kind, what = STANDINS[name]
        if kind == "data":
            return self.data[what]
        if kind == "fixture":
            return os.path.join(self.repo, what)
        if kind == "write":
            written = os.path.join(self.cache, name)
            with open(written, "w", encoding="utf-8") as f:
                f.write(what(self.repo))
            return written
        made = os.path.join(self.cache, name)
        if not os.path.exists(made):
            done = subprocess.run([self.ddpx] + what, cwd=self.cache, capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT_S)
            if done.returncode != 0 or not os.path.exists(made):
                raise RuntimeError(f"making stand-in {name} with `ddpx {' '.join(what)}` failed "
                                   f"({done.returncode}): {done.stderr[-2000:]}")
        return made

    def place(self, command, folder):
        """Copies the stand-ins the command names into folder; returns the command's words with absolute data
        paths mapped. Raises naming a relative input file that has no stand-in."""
        words = []
        for w in command.words:
            for prefix, key in PATH_STANDINS:
                if prefix in w:
                    target = os.path.join(folder, key[1:]) if key.startswith("@") else self.data[key]
                    w = w.replace(prefix, target)
            words.append(w)
        for name in STANDINS:
            pattern = re.escape(name).replace(r"rank0", r"rank[0*]").replace(r"rank1", r"rank[1*]")
            if any(re.search(r"(^|[=:/\s])" + pattern + "$", w) for w in command.words):
                shutil.copy(self.path_of(name), os.path.join(folder, name))
        return words


def shorten(command, words):
    """The command's words with the run made short; flags go before a `--` if there is one."""
    def cap(flag, most, ws):
        return [str(min(int(ws[i]), most)) if i > 0 and ws[i - 1] == flag and ws[i].isdigit() else w
                for i, w in enumerate(ws)]

    words = cap("--nproc-per-node", 2, words)
    extra = []
    if command.sub == "train":
        words = cap("--steps", 3, cap("--warmup", 1, cap("--epochs", 1, words)))
        if "--epochs" not in words and "--steps" not in words:
            extra += ["--steps", "3"]
        if "--warmup" not in words:
            extra += ["--warmup", "1"]
    elif command.sub == "bench":
        words = cap("--steps", 4, cap("--warmup", 1, words))
        if "--warmup" not in words:
            extra += ["--warmup", "1"]
    elif command.sub == "allreduce":  # allreduce refuses a flag given twice
        extra += [w for flag, value in (("--iters", "2"), ("--warmup", "1")) if flag not in words
                  for w in (flag, value)]
    if "--" in words:
        at = words.index("--")
        return words[:at] + extra + words[at:]
    return words + extra


def launcher_words(command):
    if command.launcher is None:
        return []
    args = list(command.launcher_args)
    for i in range(len(args) - 1):
        if args[i] in ("-np", "-n", "--nproc_per_node") and args[i + 1].isdigit():
            args[i + 1] = str(min(int(args[i + 1]), 2))
    if command.launcher == "mpirun":
        args = ["--allow-run-as-root", "--oversubscribe"] + args
    return [command.launcher] + args


def matches_expected(expected, stderr):
    pattern = ".*?".join(re.escape(piece.strip()) for piece in expected.split("..."))
    return re.search(pattern, stderr, re.S) is not None


def run_one(command, ddpx, standins, root):
    folder = tempfile.mkdtemp(prefix="ex-", dir=root)
    words = []
    for w in shorten(command, standins.place(command, folder)):  # the shell's globs, in the run's folder
        matched = sorted(glob.glob(w, root_dir=folder)) if re.search(r"[*?]", w) else []
        words += matched or [w]
    argv = launcher_words(command) + [ddpx] + words[1:]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", **command.env)
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        rc, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        rc, stderr = "timeout", ""
    seconds = time.monotonic() - started
    if command.expected_error is not None:
        ok = rc == 2 and matches_expected(command.expected_error, stderr)
        why = f"exit {rc}, expected 2 with '{command.expected_error}'"
    else:
        ok = rc == 0
        why = f"killed by signal {-rc} (exit {128 - rc} in a shell)" if isinstance(rc, int) and rc < 0 else f"exit {rc}"
    return ok, why, seconds, argv, stderr


def check_extractor():
    """The extractor on a made-up page: the problem, or None."""
    page = "\n".join(["text `ddpx train --not-in-a-block`", "```bash", "ddpx train --device cpu \\",
                      "    --steps 5   # a comment", "X=1 ddpx model --list && ddpx topo > t.log 2>&1",
                      "cmake --build b", "mpirun -np 2 ddpx allreduce --device cpu", "```", "```", "$ ddpx trian",
                      "ddpx: error: no ... 'train'",
                      "ddpx launch: rank 3 was killed", "```"])
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "page.md"), "w", encoding="utf-8") as f:
            f.write(page)
        got = [(c.line, c.text, c.expected_error, c.env, c.launcher) for c in extract(folder, ["page.md"])]
    want = [(3, "ddpx train --device cpu --steps 5", None, {}, None),
            (5, "X=1 ddpx model --list", None, {"X": "1"}, None), (5, "ddpx topo", None, {}, None),
            (7, "mpirun -np 2 ddpx allreduce --device cpu", None, {}, "mpirun"),
            (10, "ddpx trian", "no ... 'train'", {}, None)]
    return None if got == want else f"the extractor read {got}, expected {want}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ddpx")
    parser.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--only", help="run only the commands whose text matches this regex")
    args = parser.parse_args()
    ddpx, repo = os.path.abspath(args.ddpx), os.path.abspath(args.repo)
    MISSING_BACKENDS.update(built_backends(ddpx)[1])
    docs = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    problem = check_extractor()
    if problem:
        print(f"FAIL: {problem}")
        return 1
    commands = extract(repo, docs)
    if len(commands) < 20:
        print(f"FAIL: only {len(commands)} ddpx commands found in {', '.join(docs)}: the extractor broke")
        return 1
    root = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="ddpx-docs-")
    os.makedirs(root, exist_ok=True)
    standins = Standins(ddpx, repo, root)
    rows, failures, started = [], [], time.monotonic()
    for command in commands:
        if args.only and not re.search(args.only, command.text):
            continue
        reason = next((r for r, rule in SKIP_RULES if rule(command)), None)
        if reason is not None:
            rows.append((command.where(), "skip", reason, command.text))
            continue
        known = next((row for pattern, row in KNOWN_FAILURES.items() if re.search(pattern, command.text)), None)
        try:
            ok, why, seconds, argv, stderr = run_one(command, ddpx, standins, root)
        except (RuntimeError, KeyError, OSError) as error:
            ok, why, seconds, argv, stderr = False, f"no stand-in: {error}", 0.0, [], ""
        if ok and known is None:
            rows.append((command.where(), "pass", f"{why}, {seconds:.1f} s", command.text))
        elif not ok and known is not None:
            rows.append((command.where(), "known", f"{why}: {known}", command.text))
        elif ok:
            rows.append((command.where(), "FIXED", f"passes now: remove it from KNOWN_FAILURES ({known})",
                         command.text))
            failures.append(command)
        else:
            if re.search(r"No such file|does not exist|cannot open", stderr):
                why += " (a file it names has no stand-in? add a row to STANDINS or PATH_STANDINS)"
            rows.append((command.where(), "FAIL", why, command.text))
            failures.append(command)
            print(f"--- {command.where()}: {why}\n    ran: {shlex.join(argv)}\n    stderr: {stderr[-1500:]}")
    for pattern, row in KNOWN_FAILURES.items():
        if not args.only and not any(re.search(pattern, c.text) for c in commands):
            rows.append(("KNOWN_FAILURES", "FAIL", f"matches no documented command: remove it ({row})", pattern))
            failures.append(pattern)
    width = max(len(r[0]) for r in rows)
    print(f"{'example':<{width}}  result  detail | command")
    for where, result, detail, text in rows:
        print(f"{where:<{width}}  {result:<6}  {detail} | {text}")
    counts = {k: sum(1 for r in rows if r[1] == k) for k in ("pass", "skip", "known", "FAIL", "FIXED")}
    print(f"{len(rows)} documented commands: " + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f"; {time.monotonic() - started:.0f} s")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
