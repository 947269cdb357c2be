"""The tables of test_train_flag_fuzz.py: which flags it sets itself, the values it draws for each flag (valid,
boundary, wrong), the flags a flag needs, the sources' models, the recipe levels of the pairwise set, the failures an
open issue already names, and the named regression cases.

Guarantees: data only (no I/O); a flag of `ddpx train --help` without a row in VALUES is still drawn, by its type
(GENERIC), so this file never has to grow for a new flag to be fuzzed.
"""
import re

# Flags the fuzzer sets itself (the case's source, ranks, length and resume), or never draws, with the reason.
CONTROLLED = {
    "--data": "the case's source", "--images": "the case's source", "--labels": "the case's source",
    "--steps": "the case's length", "--epochs": "the case's length",
    "--nproc-per-node": "the case's ranks", "--nproc_per_node": "the case's ranks",
    "--resume": "the case's resume", "--checkpoint-dir": "the case's resume",
    "--nnodes": "several nodes: a launcher waits for peers", "--node-rank": "several nodes",
    "--master-addr": "several nodes", "--master-port": "several nodes", "--join-timeout": "several nodes",
    "--config": "a file of flags: fuzz_train_config fuzzes its reader", "--help": "prints help",
    "--cpu-threads": "kept at 1 on the shared 2-core machine",
}

# Values per flag: (valid, boundary, wrong). "{dir}" is the run's folder, "{w}" a weights file of the case's model
# (10 classes), "{w4}" of the same model with 4 classes, "{val}" the held-out set of the case's source.
VALUES = {
    "--device": (["cpu"], [], ["cuda", "tpu"]),
    "--model": (["{model}"], ["mlp_tiny_test:classes=3", "vit_tiny_test"], ["vit_nope", "mlp:image=0"]),
    "--precision": (["fp32"], [], ["bf16", "fp64"]),
    "--batch": (["1", "2", "3", "4"], ["0", "100000"], ["-1", "x"]),  # 3: ranks and epochs that do not divide
    "--warmup": (["0", "1"], ["100000"], ["-1"]),
    "--calibrate-steps": (["0", "1"], ["2", "3"], ["-1"]),
    "--seed": (["0", "7", "123456789"], ["18446744073709551615"], ["-1", "1e3"]),
    "--val": (["{val}"], [], ["folder:{dir}/none", "bogus:x"]),
    "--augment": (["auto", "crop-flip", "resize"], [], ["flip"]),
    "--mean": (["0.5", "0.485,0.456,0.406"], ["0"], ["a,b"]),
    "--std": (["0.5", "0.229,0.224,0.225"], ["0", "0,0,0"], ["-1"]),
    "--normalize": (["host"], ["device"], ["gpu"]),
    "--max-pixels": (["178956970"], ["1", "0"], ["-5"]),
    "--val-resize": (["0", "32", "36"], ["1", "65536"], ["-1", "65537", "x"]),
    "--workers": (["1", "2"], ["0", "16"], ["17", "-1"]),
    "--prefetch": (["0", "2"], ["1", "64"], ["-1"]),
    "--optimizer": (["sgd", "adamw"], [], ["adam"]),
    "--lr": (["0.01", "1e-3"], ["0", "1e30"], ["-1", "nan", "fast"]),
    "--weight-decay": (["0", "0.05"], ["1"], ["-0.1"]),
    "--lr-schedule": (["constant", "cosine", "linear", "step:2", "step:1:0.5", "exponential:0.9"], ["step:100000"],
                      ["step:0", "exp", "step:2:-1", "exponential", "exponential:2"]),
    "--lr-warmup-steps": (["0", "1", "2"], ["100000"], ["-1"]),
    "--lr-warmup-start": (["0.1", "1"], ["0"], ["-1", "2"]),
    "--min-lr": (["0", "1e-5"], [], ["-1"]),
    "--label-smoothing": (["0", "0.1"], ["0.99"], ["1.5", "-0.1"]),
    "--clip-grad-norm": (["1", "0.5"], ["0", "1e-30"], ["-1"]),
    "--ema-decay": (["0.9", "0.999"], ["0", "1"], ["1.5", "-0.5"]),
    "--ema-every": (["1", "2"], ["100000"], ["0", "-1"]),
    "--ema-copy-epochs": (["0", "1"], ["100000"], ["-1"]),
    "--ema-adjust": (["none", "torchvision"], [], ["timm"]),
    "--lr-warmup-method": (["linear", "constant"], [], ["cosine"]),
    "--lr-step-unit": (["step", "epoch"], [], ["epochs"]),
    "--repeated-augment": (["0", "2", "3"], ["1", "100000"], ["-1"]),  # the stand-in data is below 256 samples
    "--eval-every": (["1", "2", "epoch"], ["100000"], ["0", "-1", "sometimes"]),
    "--mixup": (["0.2", "1"], ["0"], ["-1"]),
    "--cutmix": (["1"], ["0"], ["-1"]),
    "--randaugment": (["2,9", "1,0"], ["16,30"], ["0,5", "2,31", "x"]),
    "--auto-augment-policy": (["imagenet", "cifar10", "svhn"], [], ["ImageNet", "ta_wide", ""]),
    "--random-erase": (["0.25", "0.5"], ["0", "1"], ["-0.1", "1.5", "nan", "x", ""]),
    "--load": (["{w}", "{w4}"], [], ["{dir}/missing.safetensors", "{dir}"]),
    "--save": (["{dir}/w.safetensors"], ["/dev/null"], ["{dir}/no/such/dir/w.safetensors", "{dir}"]),
    "--checkpoint-every": (["1", "2"], ["100000"], ["0", "-1"]),
    "--keep-checkpoints": (["1", "2"], ["100"], ["0", "-1"]),
    "--backend": (["auto", "gloo"], ["mpi"], ["nccl", "tcp"]),
    "--ranks-per-gpu": (["1"], ["2"], ["0"]),
    "--comm-hook": (["allreduce", "bf16", "powersgd:1", "powersgd:2:3"], ["powersgd:64"], ["powersgd:0", "zip"]),
    "--bucket-mb": (["25", "0.001"], ["100000"], ["0", "-1", "25MB"]),
    "--first-bucket-mb": (["1", "0.001"], ["100000"], ["0", "-1"]),
    "--grad-accum": (["1", "2"], ["8"], ["0", "-1"]),
    "--powersgd-start": (["2", "3"], ["1", "100000"], ["0", "-1"]),
    "--comm-timeout": (["60"], ["100000"], ["0", "-1"]),
    "--optimizer-overlap": (["auto", "on", "off"], [], ["maybe"]),
    "--cuda-graph": (["auto", "off"], ["on"], ["yes"]),
    "--weight-grads": (["auto", "fp32"], [], ["bf16"]),
    "--profile-steps": ([], ["0:0"], ["1:2", "2:1", "x"]),  # CUDA's profiler: refused on the CPU
    "--report": (["{dir}/run.json"], ["/dev/null"], ["{dir}/no/such/dir/r.json", "{dir}"]),
    "--trace": (["{dir}/run.trace.json"], [], ["{dir}/no/such/dir/t.json"]),
    "--metrics": (["{dir}/metrics.jsonl"], [], ["{dir}/no/such/dir/m.jsonl"]),
    "--log-every": (["1", "3"], ["100000"], ["0", "-1"]),
    "--divergence-ratio": (["0", "10"], ["1"], ["-1"]),
    "--momentum": (["0", "0.9"], ["1"], ["-0.5"]),
    "--dampening": (["0", "0.1"], ["1"], ["-1"]),
    "--beta1": (["0.9"], ["0"], ["1", "-1"]),
    "--beta2": (["0.999"], ["0"], ["1.5"]),
    "--eps": (["1e-8"], ["0"], ["-1"]),
}
# By type, for a flag without a row above (a new flag).
GENERIC = {
    "INT": (["1", "2"], ["0", "2147483648"], ["-1", "x", "1.5", "0x10"]),
    "UINT": (["1", "2"], ["0", "18446744073709551615"], ["-1", "x"]),
    "FLOAT": (["0.5", "1"], ["0", "1e30"], ["-1", "nan", "x"]),
    "TEXT": (["x"], [""], ["\x01"]),
}

# The flags a drawn flag needs to be used at all (added with probability 0.8, so the lone flag's refusal is drawn too).
NEEDS = {
    "--beta1": ["--optimizer", "adamw"], "--beta2": ["--optimizer", "adamw"], "--eps": ["--optimizer", "adamw"],
    "--nesterov": ["--momentum", "0.9"], "--reset-head": ["--load", "{w}"], "--eval-every": ["--val", "{val}"],
    "--min-lr": ["--lr-schedule", "cosine"], "--checkpoint-every": ["--checkpoint-dir", "{dir}/ck"],
    "--keep-checkpoints": ["--checkpoint-dir", "{dir}/ck"], "--val": ["--eval-every", "1"],
    "--powersgd-start": ["--comm-hook", "powersgd:1"],
    "--ema-every": ["--ema-decay", "0.9"], "--ema-copy-epochs": ["--ema-decay", "0.9"],
    "--ema-adjust": ["--ema-decay", "0.9"],
}

SOURCES = ["idx", "folder", "pack", "wds", "npy", "learnable"]
# The model each source trains by default (the input shapes of the tiny data) and its held-out set.
SOURCE_MODEL = {"idx": "mlp:image=28,channels=1,layers=1,width=16", "folder": "mlp_tiny_test",
                "pack": "mlp_tiny_test", "wds": "mlp_tiny_test", "npy": "mlp_tiny_test", "learnable": "mlp_tiny_test"}

# Recipe levels for the pairwise set: each a fixed group of recipe flags (a value of the "recipe" factor).
RECIPES = {
    "plain": [],
    "cosine-warmup": ["--lr-schedule", "cosine", "--lr-warmup-steps", "1", "--min-lr", "1e-5"],
    "step-nodecay": ["--lr-schedule", "step:1:0.5", "--no-decay", "--optimizer", "adamw"],
    "smooth-mix": ["--label-smoothing", "0.1", "--mixup", "0.2", "--cutmix", "1"],
    "ema-clip": ["--ema-decay", "0.9", "--clip-grad-norm", "1", "--save", "{dir}/w.safetensors"],
    "val-every": ["--val", "{val}", "--eval-every", "1", "--metrics", "{dir}/metrics.jsonl"],
    "randaug-accum": ["--randaugment", "2,9", "--grad-accum", "2", "--report", "{dir}/run.json"],
    "autoaug-erase": ["--auto-augment-policy", "imagenet", "--random-erase", "0.25"],
}

# Failures an open issue already names (matched on the case and its result): (name, issue row, predicate). Empty:
# issue 47's rows (--val alone, --epochs with a schedule, --epochs 0, --load's classes, a finished run's resume, the
# metrics across attempts, Ctrl-C, the other spellings) and the --model refusals this fuzzer found are fixed and
# stay as REGRESSIONS below.
KNOWN_FAILURES = []

# Every failure the fuzzer found, and the issue rows it checks, as fixed cases: (name, source, ranks, length, resume,
# extra flags, expect, known[, options: Case's resume_same_length, killed, interrupted]). expect: "oracle" (the oracle above),
# "exit0" (the run must train), "exit2" (it must be refused by the oracle's rules), "names:FLAG" (refused, naming
# FLAG). known: the open issue row it
# fails by today, or None; a known case that passes fails the test, so that the mark is removed once the fix lands.
REGRESSIONS = [
    ("val_alone_idx", "idx", 1, "steps", False, ["--val", "{val}"], "exit0", None),
    ("val_alone_2_ranks_folder", "folder", 2, "steps", False, ["--val", "{val}"], "exit0", None),
    ("epochs_cosine_warmup", "folder", 1, "epochs", False, ["--lr-schedule", "cosine", "--lr-warmup-steps", "1"],
     "exit0", None),  # issue 47 row 2: the schedule's horizon was read before --epochs set the steps
    ("epochs_zero", "learnable", 1, "steps", False, ["--epochs", "0"], "exit2",
     None),  # issue 47 row 3: --epochs 0 trained the default steps
    ("resume_auto_of_finished_run", "folder", 1, "steps", True, [], "exit0",
     None, {"resume_same_length": True}),  # issue 47 row 7: a finished run's --resume auto exited 2
    ("load_alone_takes_files_classes", "folder", 1, "steps", False, ["--load", "{w4}"], "exit0",
     None),  # issue 47 row 4: --load without classes= ignored the file's class count
    ("metrics_of_killed_and_resumed_run", "learnable", 1, "steps", True, ["--metrics", "{dir}/metrics.jsonl",
     "--report", "{dir}/run.json"], "exit0", None,
     {"killed": True}),  # issue 47 row 8: the metrics file held the killed attempt's steps twice
    ("ctrl_c_says_how_to_continue", "learnable", 1, "steps", True, [], "oracle",
     None, {"interrupted": True}),  # issue 47 row 9: Ctrl-C said nothing of where it stopped
    ("model_spec_refusal_names_flag", "learnable", 1, "steps", False, ["--model", "mlp:image=0"], "oracle",
     None),  # found by this fuzzer (seed 20261207): "model 'mlp:image=0': image must be positive" named no flag
    ("unknown_model_refusal_names_flag", "npy", 1, "steps", True, ["--model", "vit_nope"], "oracle",
     None),  # found by this fuzzer (seed 11): "unknown model 'vit_nope'; known models: ..." named no flag
]


# The spellings a timm user types, and the ddpx flag a refusal of each must name (issue 47 row 10):
# {typed: (value or None, the ddpx flag)}; cli/suggest.cpp's flag_aliases() names each.
OTHER_SPELLINGS = {
    "--sched": ("cosine", "--lr-schedule"), "--smoothing": ("0.1", "--label-smoothing"),
    "--clip-grad": ("1", "--clip-grad-norm"), "--batch_size": ("4", "--batch"),
}
# torchvision's train.py spellings are accepted (cli/torchvision_flags.hpp, issue 50 item 1): each makes a
# torchvision command line, which trains or is refused naming a flag, never crashes.
TORCHVISION_SPELLINGS = {
    "-b": "4", "--batch-size": "4", "--wd": "0.1", "--lr-scheduler": "cosineannealinglr", "--model-ema": None,
    "--opt": "adamw", "--amp": None, "--weights": "w", "--data-path": "/x", "--ra-sampler": None,
    "--auto-augment": "augmix", "--output-dir": "tv_out", "-j": "1",
}
REGRESSIONS += [(f"torchvision_spelling_{typed.strip('-')}", "learnable", 1, "steps", False,
                 [typed] + ([value] if value else []), "oracle", None)
                for typed, value in TORCHVISION_SPELLINGS.items()]
REGRESSIONS += [(f"other_spelling_{typed.strip('-')}", "learnable", 1, "steps", False,
                 [typed] + ([value] if value else []), "names:" + flag, None)
                for typed, (value, flag) in OTHER_SPELLINGS.items()]
