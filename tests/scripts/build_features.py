"""What the ddpx under test was built with, read from `ddpx --version` (its `backends:` line), so the script tests
choose a CPU backend this build has instead of assuming Gloo: a build without libgloo-dev (the GPU machines' bare
images) runs its 2-rank cases over MPI and skips documented commands that name a backend it lacks."""
import re
import subprocess


def built_backends(ddpx):
    """(built, missing): the sets of backend names `ddpx --version` lists as built and as not built."""
    out = subprocess.run([ddpx, "--version"], capture_output=True, text=True, timeout=60).stdout
    line = next((l for l in out.splitlines() if l.startswith("backends: ")), None)
    if line is None:
        raise RuntimeError(f"`{ddpx} --version` has no backends line:\n{out}")
    body = line[len("backends: "):]
    missing_text = re.search(r"\(not built: ([^)]*)\)", body)
    missing = {n.strip() for n in missing_text.group(1).split(",")} if missing_text else set()
    body = body[:missing_text.start()] if missing_text else body
    built = {n for n in re.findall(r"[a-z]+", body.replace("with --device cuda", "").replace("none for cpu", ""))}
    return built, missing


def cpu_ranks_backend(ddpx):
    """The backend a CPU run of several ranks started by --nproc-per-node uses in these tests: gloo where built
    (no mpirun needed), else mpi."""
    built, _ = built_backends(ddpx)
    return "gloo" if "gloo" in built else "mpi"
