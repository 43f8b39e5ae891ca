#!/usr/bin/env python3
"""Draws the broad evaluation sets: held-out (examples/eval/broad-small.json,
broad-large.json) and validation (broad-val-small.json, broad-val-large.json).

The rule, fixed before any planner was run on its output:
  - models: dense and MoE presets alternate (composition i is dense when i is
    even); dense from DENSE, MoE from MOE_SMALL (small sets) or MOE (large);
  - GPU types from TYPES (every catalog type in use, the Hopper and Blackwell
    parts H200, B200, B300, GB200, GB300 included); composition i contains
    NEW[i % len(NEW)] (small sets: the new parts that come in 8-GPU nodes),
    the other types drawn uniformly;
  - node shapes: GB200 and GB300 come as 72-GPU NVL72 racks; every other type
    in nodes of 1, 2, 4 or 8 GPUs (a second node size with probability 0.3);
  - small: 2-4 types, 4-16 GPUs per type, 16-40 GPUs in all (an exhaustive
    search over one template of depth <= 6 finishes, or nearly, in seconds);
    global batch 256;
  - large: 2-8 types, 256-16,384 GPUs in all, the total drawn log-uniformly
    and split between the types by uniform weights; global batch drawn from
    512, 1024, 2048, 4096, 8192;
  - the cluster's memory must hold MEMORY_MARGIN times the 18 bytes per
    parameter of weights, gradients and optimizer state (no planner is run:
    the draw does not depend on the planner or the cost model);
  - not a composition of the training configs or of any earlier evaluation
    or validation set (in any order of the GPU types), nor of the configs
    named after PREFIX (the validation draws name the held-out broad sets),
    and not drawn before in this run (tests/check_eval_sets.sh checks it).
Usage: make_sets.py small|large COUNT SEED [PREFIX [EXCLUDED_CONFIG...]] > compositions.json
       make_sets.py --eval small|large COUNT SEED PREFIX [EXCLUDED_CONFIG...]

With --eval the same draw goes to arachne-eval configs PREFIX-0.json,
PREFIX-1.json, ... of EVAL_CHUNK compositions each (the most an eval config
holds), in draw order: bench_distill's input (docs/evaluation.md).  Their
names are NAME-i-MODEL, NAME the file name of PREFIX and i the draw index:
the rule's own names (model and GPU count, a `b` appended on a repeat)
outgrow the 63-byte limit past a few thousand compositions.
"""
import json
import math
import os
import random
import sys

DENSE = ["llama3-8b", "qwen3-8b", "qwen3-32b", "qwen3-64b"]
MOE_SMALL = ["qwen3-30b-a3b", "mixtral-8x7b"]
MOE = ["qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3"]
# parameters (billions) of the presets, for the memory rule
PARAMS_B = {"llama3-8b": 8.03, "qwen3-8b": 8.19, "qwen3-32b": 32.76, "qwen3-64b": 63.97,
            "qwen3-30b-a3b": 30.53, "mixtral-8x7b": 46.70, "deepseek-v3": 671.03}
# usable GB per GPU (the catalog's figures, rounded down)
MEMORY_GB = {"a100-40": 42, "a100-80": 85, "h100": 80, "h100-pcie": 80, "a6000": 48, "a5000": 24,
             "rtx-pro-6000": 96, "l40s": 48, "v100-16": 17, "gh-96": 102, "rtx-3090": 25,
             "h200": 151, "b200": 193, "b300": 299, "gb200": 199, "gb300": 299}
TYPES = sorted(MEMORY_GB)
NEW = ["h200", "b200", "b300", "gb200", "gb300"]
NEW_SMALL = ["h200", "b200", "b300"]
RACK = {"gb200": 72, "gb300": 72}
SIZES = [1, 2, 4, 8]
MEMORY_MARGIN = 3.0
BATCHES = [512, 1024, 2048, 4096, 8192]

EARLIER = ("examples/train/default.json", "examples/train/extended.json", "examples/eval/heldout.json",
           "examples/eval/small.json", "examples/eval/validation.json", "examples/eval/validation-200.json",
           "examples/eval/quick.json")


def key(model, cluster):
    """The same composition whatever the order of its types."""
    return model, tuple(sorted(cluster.split(",")))


def keys_of(paths):
    return {key(c["model"], c["cluster"]) for p in paths for c in json.load(open(p))["compositions"]}


def small_type(rng, name):
    """One type's part of a small cluster: 4-16 GPUs."""
    while True:
        sizes = [rng.choice(SIZES)]
        if rng.random() < 0.3:
            sizes.append(rng.choice([s for s in SIZES if s != sizes[0]]))
        parts, total = [], 0
        for s in sorted(sizes):
            n = rng.randint(1, 8 // s)
            parts.append("%dx%d" % (n, s))
            total += n * s
        if 4 <= total <= 16:
            return "%s:%s" % (name, "+".join(parts)), total


def node_parts(name, sizes, gpus):
    """A type's spec with about `gpus` GPUs on nodes of the given sizes (the
    first takes three quarters when there are two); returns (spec, GPUs)."""
    share = [gpus] if len(sizes) == 1 else [gpus - gpus // 4, gpus // 4]
    parts, total = [], 0
    for s, g in zip(sizes, share):
        n = max(1, g // s)
        parts.append("%dx%d" % (n, s))
        total += n * s
    return "%s:%s" % (name, "+".join(parts)), total


def large_type(rng, name, gpus):
    """One type's part of a large cluster with about `gpus` GPUs."""
    if name in RACK:
        n = max(1, round(gpus / RACK[name]))
        return "%s:%dx%d" % (name, n, RACK[name]), n * RACK[name]
    sizes = [rng.choice(SIZES)]
    if rng.random() < 0.3:
        sizes.append(rng.choice([s for s in SIZES if s != sizes[0]]))
    return node_parts(name, sizes, gpus)


def assemble(model, parts):
    """A composition from its types' (spec, GPUs) parts: GPU count, cluster
    spec, its order-free key and its memory in GB."""
    cluster = ",".join(p for p, _ in parts)
    mem = sum(n * MEMORY_GB[p.split(":")[0]] for p, n in parts)
    return sum(n for _, n in parts), cluster, key(model, cluster), mem


def draw(kind, count, seed, prefix, excluded=()):
    rng = random.Random(seed)
    seen, out = keys_of(EARLIER + tuple(excluded)), []
    while len(out) < count:
        i = len(out)
        moe = i % 2 == 1
        model = rng.choice((MOE_SMALL if kind == "small" else MOE) if moe else DENSE)
        new = (NEW_SMALL if kind == "small" else NEW)[i % len(NEW_SMALL if kind == "small" else NEW)]
        ntypes = rng.randint(2, 4) if kind == "small" else rng.randint(2, 8)
        others = rng.sample([t for t in TYPES if t != new and (kind == "large" or t not in RACK)], ntypes - 1)
        types = [new] + others
        rng.shuffle(types)
        if kind == "small":
            parts = [small_type(rng, t) for t in types]
            batch = 256
        else:
            total = int(round(math.exp(rng.uniform(math.log(256), math.log(16384)))))
            w = [rng.random() + 0.05 for _ in types]
            parts = [large_type(rng, t, max(1, int(total * x / sum(w)))) for t, x in zip(types, w)]
            batch = rng.choice(BATCHES)
        gpus, cluster, k, mem = assemble(model, parts)
        lo, hi = (16, 40) if kind == "small" else (256, 16384)
        if not lo <= gpus <= hi or k in seen or mem < MEMORY_MARGIN * 18 * PARAMS_B[model]:
            continue
        seen.add(k)
        name = "%s%s-%s-%d" % (prefix, kind, model, gpus)
        while any(c["name"] == name for c in out):
            name += "b"
        out.append({"name": name, "model": model, "cluster": cluster, "global_batch": batch})
    return out


EVAL_CHUNK = 256


def write_eval_chunks(kind, count, seed, prefix, excluded):
    """The draw as eval configs of EVAL_CHUNK compositions, numbered names."""
    comps = draw(kind, count, seed, prefix, excluded)
    name = os.path.basename(prefix)
    for i, c in enumerate(comps):
        c["name"] = "%s-%d-%s" % (name, i, c["model"])
    for k in range(0, len(comps), EVAL_CHUNK):
        cfg = {"format": "arachne-eval", "version": 1, "samples": 16, "seed": 1,
               "compositions": comps[k:k + EVAL_CHUNK]}
        with open("%s-%d.json" % (prefix, k // EVAL_CHUNK), "w") as f:
            json.dump(cfg, f, indent=1)
            f.write("\n")


def main():
    args = sys.argv[1:]
    chunks = args[:1] == ["--eval"]
    if chunks:
        args = args[1:]
    if len(args) < (4 if chunks else 3) or args[0] not in ("small", "large"):
        sys.exit("usage: make_sets.py [--eval] small|large COUNT SEED [PREFIX [EXCLUDED_CONFIG...]]"
                 " (PREFIX is required with --eval)")
    kind, count, seed = args[0], int(args[1]), int(args[2])
    prefix = args[3] if len(args) > 3 else ""
    if chunks:
        write_eval_chunks(kind, count, seed, prefix, args[4:])
        return
    json.dump(draw(kind, count, seed, prefix, args[4:]), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
