"""A fuzzer of `ddpx train`'s flags: random sets of the flags `ddpx train --help` lists, with valid, boundary and
wrong values, on tiny data of every source (idx, folder, pack, wds, npy, learnable), on 1 and 2 ranks, by --steps and
by --epochs, with and without --resume; plus a pairwise set over recipe flags x sources x {steps, epochs} x resume x
ranks, and the named regression cases (every failure the fuzzer ever found, as a fixed command line).

Usage: test_train_flag_fuzz.py DDPX [--runs N] [--seed S] [--jobs J] [--keep DIR] [--no-pairwise]
Environment: DDPX_FUZZ_SEED and DDPX_FUZZ_RUNS override --seed and --runs (CI: the fixed defaults below).

Guarantees (the oracle, for every run):
- no signal (exit status < 0 or >= 128) and no hang (RUN_TIMEOUT_S per run);
- the exit status is 0 or 2;
- a refusal (2) says `ddpx: error:` and names a flag (`--something`) or a file the command line names;
- a run that exits 0 wrote what it was asked to: --report and --trace parse as JSON, every --metrics line parses as
  JSON and names each step once (or once per attempt), --save has a safetensors header that parses (and so has
  its .ema.safetensors twin with --ema-decay),
  --checkpoint-dir holds a checkpoint.
The tables (VALUES, NEEDS, RECIPES, KNOWN_FAILURES, REGRESSIONS) are in train_fuzz_tables.py.
The flag table comes from `ddpx train --help` at run time, so a flag added to train is drawn the day it lands (by its
help's type and `a | b | c` choices where VALUES has no row for it). A run whose failure matches a KNOWN_FAILURES entry
(an open issue's row) is counted as known, not failed; the test fails when a REGRESSIONS case with a known entry
passes, so the entry gets removed. The seed, the run count and the time are printed; a failing case is printed as a
command line to paste into REGRESSIONS.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import random
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_features import built_backends  # noqa: E402
from standin_data import make_standin_data  # noqa: E402
from train_fuzz_tables import (CONTROLLED, GENERIC, KNOWN_FAILURES, NEEDS, RECIPES, REGRESSIONS,  # noqa: E402
                               SOURCE_MODEL, SOURCES, VALUES)

CI_SEED, CI_RUNS = 20261207, 300
RUN_TIMEOUT_S = 60


class Case:
    def __init__(self, name, source, ranks, length, resume, flags, expect="oracle", known=None, options=None):
        self.name, self.source, self.ranks, self.length, self.resume, self.flags = (
            name, source, ranks, length, resume, list(flags))
        self.expect, self.known = expect, known
        # resume_same_length: the resumed run asks for the length the first one finished (a restarted job).
        # killed: the first run is killed (SIGKILL) once it has written a checkpoint, as a preempted job is; the
        # second resumes from the newest and goes 3 steps further.
        self.resume_same_length = (options or {}).get("resume_same_length", False)
        self.killed = (options or {}).get("killed", False)
        # interrupted: one run, sent SIGINT (Ctrl-C) once it has written a checkpoint; it must say the step it
        # reached and how to continue (--resume), whatever its exit status.
        self.interrupted = (options or {}).get("interrupted", False)


class Result:
    def __init__(self, rc, stderr, seconds, argv):
        self.rc, self.stderr, self.seconds, self.argv = rc, stderr, seconds, argv


def read_flag_table(ddpx):
    """`ddpx train --help` -> {flag: type}, type INT, FLOAT, TEXT or FLAG, and {flag: [choices]} from `a | b`."""
    text = subprocess.run([ddpx, "train", "--help"], capture_output=True, text=True, timeout=60).stdout
    table, choices, current = {}, {}, None
    for line in text.split("\n"):
        m = re.match(r"^\s{1,8}((?:-[A-Za-z0-9],\s*)?--[a-z0-9][a-z0-9_-]*(?:,\s*--?[a-z0-9_-]+)*)"
                     r"(?: ([A-Z]+))?(\s{2,}.*)?$", line)
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            flag = next(n for n in names if n.startswith("--"))
            table[flag] = m.group(2) or "FLAG"
            current = flag
            desc = (m.group(3) or "").strip()
        elif current and line.startswith(" ") and line.strip():
            desc = line.strip()
        else:
            current = None
            continue
        found = re.match(r"^([a-z0-9][a-z0-9:_-]*(?:\s\|\s[a-z0-9][a-z0-9:_-]*)+)", desc)
        if found and current not in choices:
            choices[current] = [c.strip().rstrip(":") for c in found.group(1).split("|")]
    return table, choices


def values_for(flag, kind, choices):
    if flag in VALUES:
        return VALUES[flag]
    if kind in GENERIC:
        valid, boundary, wrong = GENERIC[kind]
        if flag in choices:
            return choices[flag], [], ["not-a-choice"]
        return valid, boundary, wrong
    return None  # FLAG: present or not


def draw_case(rng, index, table, choices):
    source = rng.choice(SOURCES)
    ranks = rng.choice([1, 1, 2])
    length = rng.choice(["steps", "steps", "epochs"])
    resume = rng.random() < 0.25
    drawable = sorted(f for f in table if f not in CONTROLLED)
    flags = []
    for flag in rng.sample(drawable, rng.randint(1, 5)):
        values = values_for(flag, table[flag], choices)
        if values is None:
            flags.append(flag)
            continue
        valid, boundary, wrong = values
        roll = rng.random()
        if (roll < 0.75 and valid) or not (boundary or wrong):
            pool = valid
        else:
            pool = boundary if (roll < 0.88 and boundary) or not wrong else wrong
        flags += [flag, rng.choice(pool)]
    if ranks > 1 and "--backend" not in flags and rng.random() < 0.3:
        flags += ["--backend", "mpi"]  # ranks under mpirun (else Gloo, ddpx's own workers)
    for flag in list(flags):
        if flag in NEEDS and NEEDS[flag][0] not in flags and rng.random() < 0.8:
            flags += NEEDS[flag]
    return Case(f"random-{index}", source, ranks, length, resume, flags)


def pairwise_cases():
    """A greedy covering array: every pair of values of two factors appears in some case."""
    factors = [("recipe", list(RECIPES)), ("source", SOURCES), ("length", ["steps", "epochs"]),
               ("resume", [False, True]), ("ranks", [1, 2])]
    uncovered = {((i, a), (j, b)) for i, j in itertools.combinations(range(len(factors)), 2)
                 for a in range(len(factors[i][1])) for b in range(len(factors[j][1]))}
    rows = []
    while uncovered:
        (i, a), (j, b) = min(uncovered)
        row = {i: a, j: b}
        for k in range(len(factors)):
            if k in row:
                continue
            row[k] = max(range(len(factors[k][1])),
                         key=lambda v: sum(1 for m, w in row.items()
                                           if ((min(k, m), v if k < m else w), (max(k, m), w if k < m else v))
                                           in uncovered))
        for p, q in itertools.combinations(sorted(row), 2):
            uncovered.discard(((p, row[p]), (q, row[q])))
        rows.append({factors[k][0]: factors[k][1][v] for k, v in row.items()})
    cases = []
    for n, r in enumerate(rows):
        mpi = r["ranks"] > 1 and sum(1 for q in rows[:n] if q["ranks"] > 1) % 2 == 1  # every other 2-rank row
        cases.append(Case(f"pairwise-{n}-{r['recipe']}{'-mpi' if mpi else ''}", r["source"], r["ranks"], r["length"],
                          r["resume"], RECIPES[r["recipe"]] + (["--backend", "mpi"] if mpi else [])))
    return cases


class Runner:
    def __init__(self, ddpx, root, data):
        self.ddpx, self.root, self.data = ddpx, root, data
        self.cpu_ranks_backend = "gloo" if "gloo" in built_backends(ddpx)[0] else "mpi"
        self.weights, self.weights_lock = {}, threading.Lock()

    def source_flags(self, source):
        d = self.data
        return {"idx": ["--data", "idx:" + d["idx"]], "folder": ["--data", "folder:" + d["folder"]],
                "pack": ["--data", "pack:" + d["pack"]], "wds": ["--data", d["wds"]],
                "npy": ["--images", d["images"], "--labels", d["labels"]], "learnable": ["--data", "learnable"]}[source]

    def val_of(self, source):
        d = self.data
        return {"idx": "idx:" + d["idx"] + ":test", "folder": "folder:" + d["folder_val"], "pack": "pack:" + d["pack"],
                "wds": d["wds"], "npy": "learnable", "learnable": "learnable"}[source]

    def weights_of(self, model):
        """A weights file of `model` (10 classes), made once by a short run."""
        with self.weights_lock:
            return self._weights_of(model)

    def _weights_of(self, model):
        if model not in self.weights:
            path = os.path.join(self.root, f"w-{len(self.weights)}.safetensors")
            subprocess.run([self.ddpx, "train", "--device", "cpu", "--model", model, "--data", "learnable", "--steps",
                            "1", "--warmup", "0", "--quiet", "--cpu-threads", "1", "--save", path],
                           capture_output=True, timeout=RUN_TIMEOUT_S)
            self.weights[model] = path
        return self.weights[model]

    def argv(self, case, folder, phase, killed_at=0):
        model = SOURCE_MODEL[case.source]
        fill = {"dir": folder, "val": self.val_of(case.source), "model": model}
        if any("{w}" in f for f in case.flags):
            fill["w"] = self.weights_of(model)
        if any("{w4}" in f for f in case.flags):  # the same model with a head of 4 classes
            fill["w4"] = self.weights_of(model + ("," if ":" in model else ":") + "classes=4")
        argv = [self.ddpx, "train", "--device", "cpu", "--model", model, "--batch", "2", "--warmup", "0",
                "--cpu-threads", "1", "--quiet"]
        argv += [f.format(**fill) for f in case.flags]
        argv += self.source_flags(case.source)
        longer = phase == 1 and not case.resume_same_length  # a resumed run goes on past the first one's end
        if case.killed or case.interrupted:  # a long run, checkpoints 20 steps apart: the signal lands between two
            argv += ["--steps", str(killed_at + 3) if phase == 1 else "100000", "--log-every", "1"]
        elif case.length == "epochs":
            argv += ["--epochs", "2" if longer else "1"]
        elif "--epochs" not in case.flags:
            argv += ["--steps", "4" if longer else "2"]
        if case.resume:
            argv += ["--checkpoint-dir", os.path.join(folder, "ck"),
                     "--checkpoint-every", "20" if case.killed or case.interrupted else "1"]
            if phase == 1:
                auto = case.length == "epochs" or case.resume_same_length  # both spellings, by the case
                argv += ["--resume", "auto" if auto else os.path.join(folder, "ck")]
        if case.ranks > 1:
            argv += ["--nproc-per-node", str(case.ranks)]
            if "--backend" not in case.flags:
                argv += ["--backend", self.cpu_ranks_backend]
        return argv

    def run(self, case):
        """Runs the case (twice with resume: the first run leaves a checkpoint, the second resumes it); returns
        [(Result, problem or None)]."""
        folder = tempfile.mkdtemp(prefix=case.name + "-", dir=self.root)
        results = []
        killed_at = 0
        if case.interrupted:
            result = self.interrupt_after_checkpoint(self.argv(case, folder, 0), folder)
            problem = None if re.search(r"step\D{0,3}\d+", result.stderr) and "--resume" in result.stderr else \
                f"exit {result.rc} after SIGINT with no word of the step reached and how to continue (--resume)"
            shutil.rmtree(folder, ignore_errors=True)
            return [(result, problem)]
        for phase in range(2 if case.resume else 1):
            if case.killed and phase == 0:
                killed_at = self.run_until_checkpoint(self.argv(case, folder, 0), folder)
                continue
            argv = self.argv(case, folder, phase, killed_at)
            started = time.monotonic()
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=folder,
                                      env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                                               OMPI_MCA_rmaps_base_oversubscribe="1"))
                result = Result(done.returncode, done.stderr, time.monotonic() - started, argv)
            except subprocess.TimeoutExpired as e:
                result = Result("timeout", (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes)
                                else (e.stderr or ""), time.monotonic() - started, argv)
            problem = problem_of(result)
            if problem is None and case.expect == "exit0" and result.rc != 0:
                problem = f"exit {result.rc}, where this case must train"
            if problem is None and case.expect == "exit2" and result.rc != 2:
                problem = f"exit {result.rc}, where this case must be refused"
            if problem is None and case.expect.startswith("names:"):
                flag = case.expect[len("names:"):]
                if result.rc != 2 or not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", result.stderr):
                    problem = f"exit {result.rc}, where this case must be refused naming {flag}"
            results.append((result, problem))
            if result.rc != 0:
                break
        shutil.rmtree(folder, ignore_errors=True)
        return results

    def interrupt_after_checkpoint(self, argv, folder):
        """Starts argv and sends its process group SIGINT, as Ctrl-C does, once it has written a checkpoint."""
        ck, started = os.path.join(folder, "ck"), time.monotonic()
        argv = [a for a in argv if a != "--quiet"]  # the line may be on either stream, and not held back by --quiet
        child = subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        while time.monotonic() < started + RUN_TIMEOUT_S and child.poll() is None:
            if os.path.isdir(ck) and any(n.startswith("checkpoint-") for n in os.listdir(ck)):
                break
            time.sleep(0.01)
        if child.poll() is None:
            os.killpg(child.pid, 2)
        try:
            output, _ = child.communicate(timeout=RUN_TIMEOUT_S)  # both streams, as a terminal shows them
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)
            output, _ = child.communicate()
            return Result("timeout", output[-4000:], time.monotonic() - started, argv)
        return Result(child.returncode, output[-4000:], time.monotonic() - started, argv)

    def run_until_checkpoint(self, argv, folder):
        """Starts argv (which logs every step to --metrics) and kills it (SIGKILL) once --metrics has gone 3 steps
        past its first checkpoint; returns the newest checkpoint's step. Tried again (3 times at most) where the
        kill came before any step past the newest checkpoint was logged, so the resumed run repeats some."""
        ck, metrics = os.path.join(folder, "ck"), flag_value(argv, "--metrics")

        def steps_in(names, pattern):
            return [int(m.group(1)) for n in names if (m := re.fullmatch(pattern, n))]

        def last_logged():
            try:
                lines = open(metrics, encoding="utf-8").read().split("\n")
            except OSError:
                return -1
            return max((json.loads(l).get("step", -1) for l in lines if l.strip().endswith("}")), default=-1)

        newest = 0
        for _ in range(3):
            shutil.rmtree(ck, ignore_errors=True)
            if os.path.exists(metrics):
                os.remove(metrics)
            child = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
            deadline, first = time.monotonic() + RUN_TIMEOUT_S, None
            while time.monotonic() < deadline and child.poll() is None:
                if first is None and os.path.isdir(ck):
                    first = max(steps_in(os.listdir(ck), r"checkpoint-(\d+)\.safetensors"), default=None)
                if first is not None and last_logged() >= first + 3:
                    break
                time.sleep(0.005)
            if child.poll() is None:
                os.killpg(child.pid, 9)
            child.wait()
            newest = max(steps_in(os.listdir(ck), r"checkpoint-(\d+)\.safetensors"), default=0) \
                if os.path.isdir(ck) else 0
            if last_logged() > newest:
                break
        return newest


def flag_value(argv, name):
    value = None
    for i, w in enumerate(argv[:-1]):
        if w == name:
            value = argv[i + 1]
    return value


def parses_json(path):
    with open(path, encoding="utf-8") as f:
        json.load(f)


def check_outputs(argv):
    """What a run that exited 0 must have written; the problem, or None."""
    checks = []
    for flag in ("--report", "--trace"):
        path = flag_value(argv, flag)
        if path and path != "/dev/null":
            checks.append((flag, path, parses_json))
    metrics = flag_value(argv, "--metrics")
    if metrics:
        def each_step_once(p):
            # A step once, or once per attempt where the lines name their attempt (issue 47 allows either).
            steps = [(r.get("attempt"), r.get("step")) for r in (json.loads(l) for l in open(p, encoding="utf-8")
                                                                 if l.strip()) if r.get("kind") == "step"]
            repeated = sorted({x[1] for x in steps if steps.count(x) > 1})
            if repeated:
                raise ValueError(f"steps {repeated} appear more than once")
        checks.append(("--metrics", metrics, each_step_once))
    save = flag_value(argv, "--save")
    if save and save != "/dev/null":
        def header(p):
            with open(p, "rb") as f:
                size, = struct.unpack("<Q", f.read(8))
                json.loads(f.read(size))
        checks.append(("--save", save, header))
        ema = flag_value(argv, "--ema-decay")
        if ema and re.fullmatch(r"0?\.\d*[1-9]\d*", ema):  # an average kept: saved beside the weights
            checks.append(("--ema-decay with --save", re.sub(r"\.safetensors$", "", save) + ".ema.safetensors", header))
    ck = flag_value(argv, "--checkpoint-dir")
    if ck:
        def has_checkpoint(p):
            if not any(n.startswith("checkpoint") and n.endswith(".safetensors") for n in os.listdir(p)):
                raise ValueError("no checkpoint*.safetensors in it")
        checks.append(("--checkpoint-dir", ck, has_checkpoint))
    for flag, path, check in checks:
        try:
            check(path)
        except (OSError, ValueError, struct.error) as error:
            return f"exit 0 but {flag} {path}: {error}"
    return None


def problem_of(r):
    if r.rc == "timeout":
        return f"hang: no exit within {RUN_TIMEOUT_S} s"
    if r.rc < 0 or r.rc >= 128:
        return f"signal: exit {r.rc}"
    if r.rc not in (0, 2):
        return f"exit {r.rc} (only 0 or 2 expected)"
    if r.rc == 2:
        if "ddpx: error:" not in r.stderr:
            return "exit 2 without 'ddpx: error:'"
        named = re.search(r"--[a-z][a-z0-9-]+", r.stderr) or any(
            "/" in w and w.split(":")[-1] in r.stderr for w in r.argv[2:])  # a flag, or a path given
        if not named:
            return "a refusal that names no flag and no file"
        return None
    return check_outputs(r.argv)


def known_failure(case, result):
    return next((f"{name} ({row})" for name, row, predicate in KNOWN_FAILURES if predicate(case, result)), None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ddpx")
    parser.add_argument("--runs", type=int, default=int(os.environ.get("DDPX_FUZZ_RUNS", CI_RUNS)))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("DDPX_FUZZ_SEED", CI_SEED)))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--no-pairwise", action="store_true")
    args = parser.parse_args()
    ddpx = os.path.abspath(args.ddpx)
    started = time.monotonic()
    # A backend this build lacks is refused naming --backend: drawn, it is a value to refuse, not one to run.
    missing = built_backends(ddpx)[1]
    valid, boundary, wrong = VALUES["--backend"]
    VALUES["--backend"] = ([v for v in valid if v not in missing], [v for v in boundary if v not in missing],
                           wrong + sorted(v for v in valid + boundary if v in missing))
    table, choices = read_flag_table(ddpx)
    for must in ("--steps", "--batch", "--data", "--lr", "--report", "--resume"):
        if must not in table:
            print(f"FAIL: `ddpx train --help` parsed to {len(table)} flags without {must}: the help's format changed")
            return 1
    undrawn = sorted(f for f in table if f not in CONTROLLED and f not in VALUES and table[f] != "FLAG")
    root = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="ddpx-fuzz-")
    os.makedirs(root, exist_ok=True)
    runner = Runner(ddpx, root, make_standin_data(ddpx, os.path.join(root, "data")))
    rng = random.Random(args.seed)
    cases = [Case(*row) for row in REGRESSIONS]
    cases += [] if args.no_pairwise else pairwise_cases()
    cases += [draw_case(rng, i, table, choices) for i in range(args.runs)]
    print(f"train flag fuzzer: seed {args.seed}, {len(table)} flags from `ddpx train --help` "
          f"({len([f for f in table if f not in CONTROLLED])} drawn; by type only: {' '.join(undrawn) or 'none'}), "
          f"{len(REGRESSIONS)} regression cases, {len(cases) - len(REGRESSIONS) - args.runs} pairwise, "
          f"{args.runs} random")
    failures, known, runs, exits = [], [], 0, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for case, results in zip(cases, pool.map(runner.run, cases)):
            if case.known and all(problem is None for _, problem in results):
                failures.append(f"{case.name}: passes now; remove its known mark ({case.known}) in REGRESSIONS")
            for result, problem in results:
                runs += 1
                exits[result.rc] = exits.get(result.rc, 0) + 1
                if problem is None:
                    continue
                why = case.known or known_failure(case, result)
                line = f"{case.name} [{case.source}, {case.ranks} rank(s), {case.length}, resume {case.resume}]: " \
                       f"{problem}\n    {shlex.join(result.argv)}\n    stderr: {result.stderr.strip()[-600:]}"
                (known if why else failures).append(line + (f"\n    known: {why}" if why else ""))
    for line in known:
        print("known " + line)
    for line in failures:
        print("FAIL " + line)
    elapsed = time.monotonic() - started
    print(f"seed {args.seed}: {len(cases)} cases, {runs} runs of ddpx train in {elapsed:.0f} s; exit statuses "
          + ", ".join(f"{k}: {v}" for k, v in sorted(exits.items(), key=lambda kv: str(kv[0])))
          + f"; {len(failures)} failures, {len(known)} known")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
