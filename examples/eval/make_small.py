#!/usr/bin/env python3
"""Draws small compositions: the nine of examples/eval/small.json (seed 6)
and the validation set examples/eval/validation.json (12 with seed 8, names
prefixed val- there).

The rule was fixed before any policy was evaluated on its output:
  - a model preset the policy was trained on (llama3-8b, qwen3-8b, qwen3-32b,
    qwen3-30b-a3b, mixtral-8x7b);
  - 2 or 3 GPU types from those in the training compositions;
  - per type 4-16 GPUs in nodes of 1, 2, 4 or 8 GPUs (a type gets a second
    node size with probability 0.3), 16-40 GPUs in all, so exhaustive search
    over one template of depth <= 6 finishes or nearly does in 60 s;
  - global batch 256;
  - not a training or held-out composition of examples/train/default.json,
    examples/train/extended.json or examples/eval/heldout.json, and the
    cluster must admit a plan (arachne plan succeeds, and the cluster is not
    one of REJECTED_AT_DRAW, which the planner of the time could not plan).
Usage: make_small.py ARACHNE_BIN [COUNT] [SEED] > small-compositions.json
"""
import json
import random
import subprocess
import sys

# the drawing helpers are the evaluation sets' (same directory)
from make_sets import SIZES, key, keys_of, small_type as draw_type  # noqa: E402, F401

MODELS = ["llama3-8b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "mixtral-8x7b"]
TYPES = ["a100-40", "a100-80", "h100", "h100-pcie", "a6000", "a5000", "rtx-pro-6000", "l40s", "v100-16",
         "gh-96", "rtx-3090"]


# Compositions the drawn ones must differ from.  A draw made before its
# compositions joined training does not repeat afterwards: the first 100 of
# `400 20` became training compositions 103-202 in session 12 (the last 200
# are examples/eval/validation-200.json), so that draw now skips them.
TRAINING = ("examples/train/default.json", "examples/train/extended.json")
HELD_OUT = ("examples/eval/heldout.json",)


# Clusters the planner could not plan when the sets were drawn (the draws
# of seeds 6 and 8 skipped them).  The planner has since learned to plan
# some of them (the capped layer split, docs/fill.md), which would shift
# every later draw; the rule keeps skipping them so that the sets stay the
# draws they were.
REJECTED_AT_DRAW = {key(m, c) for m, c in (
    ("mixtral-8x7b", "l40s:8x1+1x8,a6000:2x4"),
    ("mixtral-8x7b", "v100-16:2x4,a100-40:2x4"),
    ("qwen3-32b", "rtx-3090:7x1+1x8,l40s:8x1+1x8"),
    ("qwen3-30b-a3b", "a100-40:4x1+2x4,rtx-3090:1x8"),
    ("qwen3-32b", "rtx-3090:1x4+1x8,h100-pcie:8x1"),
    ("mixtral-8x7b", "a6000:1x8,rtx-3090:4x1,l40s:4x1"),
    ("mixtral-8x7b", "a6000:1x4,a5000:1x4+1x8"),
    ("mixtral-8x7b", "a5000:2x1+1x4,l40s:1x4,h100-pcie:3x2"),
    ("mixtral-8x7b", "v100-16:1x4,h100-pcie:2x4,a100-40:1x8"),
    ("qwen3-32b", "rtx-3090:7x1+2x4,a5000:4x2+1x8,a6000:1x4"),
)}


def main():
    binary = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 6)
    seen, out = keys_of(TRAINING + HELD_OUT), []
    while len(out) < count:
        model = rng.choice(MODELS)
        types = rng.sample(TYPES, rng.choice([2, 3]))
        parts = [draw_type(rng, t) for t in types]
        gpus = sum(n for _, n in parts)
        cluster = ",".join(p for p, _ in parts)
        k = key(model, cluster)
        if not 16 <= gpus <= 40 or k in seen or k in REJECTED_AT_DRAW:
            continue
        # feasibility only: a plan exists (its batch split need not be exact)
        ok = subprocess.run([binary, "plan", "--model", model, "--cluster", cluster, "--global-batch", "256",
                             "--allow-batch-rounding"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if not ok:
            continue
        seen.add(k)
        name = "small-%s-%d" % (model, gpus)
        while any(c["name"] == name for c in out):
            name += "b"
        out.append({"name": name, "model": model, "cluster": cluster,
                    "global_batch": 256})
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
