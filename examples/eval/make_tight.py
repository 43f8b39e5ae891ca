#!/usr/bin/env python3
"""Draws the memory-tight evaluation set (docs/evaluation.md, "Memory-tight
compositions"): clusters of GPUs with at most 52 GB each, where the planners'
fill meets memory limits most.  The rule, with Python's random.Random(seed):

  for each composition, in order:
    model        uniform over the eight presets
    GPU types    1 to 3 (uniform), drawn without replacement from the ten
                 catalog types of at most 52 GB
    per type     one node group: GPUs per node uniform in {1, 2, 4, 8},
                 nodes so that the type has 8 to 64 GPUs (uniform over the
                 node counts that give 8..64, at least one node)
    batch        uniform in {64, 128, 256, 512} sequences

Usage: make_tight.py N SEED > FILE (the set in the repository: 60 7)."""
import json
import random
import sys

MODELS = ["llama3-8b", "llama3-70b", "qwen3-8b", "qwen3-32b", "qwen3-64b", "qwen3-30b-a3b", "mixtral-8x7b",
          "deepseek-v3"]
SMALL = ["a100-40", "a6000", "a5000", "l40s", "v100-16", "titan-rtx", "rtx-3090", "rtx-4090", "l4", "rtx-2080ti"]


def draw(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        model = rng.choice(MODELS)
        types = rng.sample(SMALL, rng.randint(1, 3))
        groups = []
        for t in types:
            per = rng.choice([1, 2, 4, 8])
            lo, hi = max(1, -(-8 // per)), max(1, 64 // per)
            groups.append("%s:%dx%d" % (t, rng.randint(lo, hi), per))
        out.append({"name": "tight-%s-%d" % (model, i), "model": model, "cluster": ",".join(groups),
                    "global_batch": rng.choice([64, 128, 256, 512])})
    return out


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    json.dump({"format": "arachne-eval", "version": 1, "policy": "../policies/default.arpol", "samples": 16,
               "seed": 1, "random_factor": 1, "random_time_budget_s": 5, "compositions": draw(n, seed)},
              sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
