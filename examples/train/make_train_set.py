#!/usr/bin/env python3
"""Draws the training compositions of the bundled policy
(examples/train/default.json; docs/training.md, "Training compositions").

The rule, fixed before any planner was run on its output:
  - models: dense and MoE presets alternate (composition i is dense when i is
    even); dense from DENSE (every dense preset but qwen3-64b, which stays
    unseen to test generalisation to a new model), MoE from MOE (deepseek-v3
    only where the memory rule lets it in);
  - size: the cluster's GPU count drawn log-uniformly between 16 and 16,384,
    except that composition i with i % LARGE_EVERY != 0 draws it between 16
    and LARGE_FROM - 1: one composition in LARGE_EVERY is a large one
    (LARGE_FROM to 16,384 GPUs); rollouts there cost 10-100 times those of a
    small cluster, so the training budget holds them to about a fifth;
  - types: 2-8 per cluster (at most one type per 8 GPUs), drawn from TYPES
    (every catalog type in use, the Hopper and Blackwell parts included);
    composition i contains NEW[i % len(NEW)], except that a cluster below
    RACK_MIN GPUs takes NEW_SMALL[i % len(NEW_SMALL)] instead of a 72-GPU
    rack type, and no other rack type;
  - node shapes: GB200 and GB300 come as 72-GPU NVL72 racks; every other
    type in nodes of 1, 2, 4 or 8 GPUs, drawn among the sizes that keep the
    type within MAX_NODES nodes (8-GPU nodes when none does; a second node
    size with probability 0.3); the fill's node packing costs time in
    proportion to the node count, and rollouts, unlike evaluation runs, are
    many; the GPU count is split between the types by uniform weights;
  - global batch drawn from 256, 512, ..., 8,192 sequences;
  - the cluster's memory must hold MEMORY_MARGIN times the 18 bytes per
    parameter of weights, gradients and optimizer state (no planner is run:
    the draw depends neither on the planner nor on the cost model);
  - not a composition of any evaluation or validation set of examples/eval
    (in any order of the GPU types), and not drawn before in this run
    (tests/check_eval_sets.sh redraws the file and checks it).
Usage: make_train_set.py [COUNT SEED] > examples/train/default.json
(default: COUNT and SEED below, the draw of the bundled config).  The output
is the whole config: HEADER below, then the compositions, then OUTPUT.
       make_train_set.py --eval COUNT SEED PREFIX
writes the same draw as arachne-eval configs PREFIX-0.json, PREFIX-1.json,
... of EVAL_CHUNK compositions each (the most an eval config holds), in
draw order: the input of bench_distill (docs/experiments.md, "Distillation
experiment").
"""
import glob
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "eval"))
from make_sets import PARAMS_B, TYPES, NEW, NEW_SMALL, RACK, SIZES, MEMORY_MARGIN, key, node_parts, assemble  # noqa: E402

DENSE = ["llama3-8b", "qwen3-8b", "qwen3-32b"]
MOE = ["qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3"]
BATCHES = [256, 512, 1024, 2048, 4096, 8192]
LO, HI = 16, 16384
LARGE_EVERY = 5
LARGE_FROM = 1024
RACK_MIN = 288
MAX_NODES = 256
COUNT, SEED = 128, 7
EVAL_CHUNK = 256

HEADER = {
    "name": "default",
    "seed": 3,
    "updates": 100,
    "log_every": 5,
    "policy": {"hidden": 128, "layers": 2, "init_seed": 1},
    "setup": {"global_batch": 512, "seq_len": 4096, "recompute": "selective", "max_depth": 16},
    "hyper": {"group_size": 5, "ppo_epochs": 2, "clip": 0.2, "learning_rate": 0.003, "entropy": 0.01,
              "force_depth_start": 0.8, "force_depth_end": 0.25, "sil_interval": 1, "sil_weight": 1.0,
              "max_grad_norm": 1.0, "sil_neighbours": 2, "sil_per_depth": 2, "uniform_type_rollouts": 1,
              "pcgrad": 1, "size_curriculum": 50},
}
OUTPUT = {"policy": "examples/policies/default.arpol", "csv": "examples/train/default-log.csv",
          "svg": "examples/train/default-curve.svg", "checkpoint": "build/default-policy.ckpt",
          "checkpoint_every": 20, "select_every": 10}


def type_part(rng, name, gpus):
    """One type's part of a cluster with about `gpus` GPUs: NVL72 racks, or
    nodes of a size drawn from those that keep the type within MAX_NODES
    nodes (8 when none does), a second size with probability 0.3."""
    if name in RACK:
        n = max(1, round(gpus / RACK[name]))
        return "%s:%dx%d" % (name, n, RACK[name]), n * RACK[name]
    fit = [s for s in SIZES if gpus <= MAX_NODES * s] or [SIZES[-1]]
    sizes = [rng.choice(fit)]
    if rng.random() < 0.3 and len(fit) > 1:
        sizes.append(rng.choice([s for s in fit if s != sizes[0]]))
    return node_parts(name, sizes, gpus)


def eval_keys():
    """Every composition of an evaluation or validation set."""
    out = set()
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "eval", "*.json"))):
        out |= {key(c["model"], c["cluster"]) for c in json.load(open(p))["compositions"]}
    return out


def draw(count, seed):
    rng = random.Random(seed)
    seen, out = eval_keys(), []
    while len(out) < count:
        i = len(out)
        moe = i % 2 == 1
        model = rng.choice(MOE if moe else DENSE)
        hi = HI if i % LARGE_EVERY == 0 else LARGE_FROM - 1
        lo = LARGE_FROM if i % LARGE_EVERY == 0 else LO
        total = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        racks = total >= RACK_MIN
        new = NEW[i % len(NEW)]
        if new in RACK and not racks:
            new = NEW_SMALL[i % len(NEW_SMALL)]
        ntypes = rng.randint(2, max(2, min(8, total // 8)))
        others = rng.sample([t for t in TYPES if t != new and (racks or t not in RACK)], ntypes - 1)
        types = [new] + others
        rng.shuffle(types)
        w = [rng.random() + 0.05 for _ in types]
        parts = [type_part(rng, t, max(1, int(total * x / sum(w)))) for t, x in zip(types, w)]
        batch = rng.choice(BATCHES)
        gpus, cluster, k, mem = assemble(model, parts)
        if not lo <= gpus <= (HI if i % LARGE_EVERY == 0 else LARGE_FROM - 1) or k in seen or \
                mem < MEMORY_MARGIN * 18 * PARAMS_B[model]:
            continue
        seen.add(k)
        out.append({"name": "train-%d-%s-%d" % (i, model, gpus), "model": model, "cluster": cluster,
                    "setup": {"global_batch": batch}})
    return out


def write_eval_chunks(count, seed, prefix):
    comps = draw(count, seed)
    for k in range(0, len(comps), EVAL_CHUNK):
        cfg = {"format": "arachne-eval", "version": 1,
               "compositions": [{"name": c["name"], "model": c["model"], "cluster": c["cluster"],
                                 "global_batch": c["setup"]["global_batch"]} for c in comps[k:k + EVAL_CHUNK]]}
        with open("%s-%d.json" % (prefix, k // EVAL_CHUNK), "w") as f:
            json.dump(cfg, f, indent=1)
            f.write("\n")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--eval":
        write_eval_chunks(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
        return
    if len(sys.argv) not in (1, 3):
        sys.exit("usage: make_train_set.py [COUNT SEED] | --eval COUNT SEED PREFIX")
    count, seed = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (COUNT, SEED)
    comps = draw(count, seed)
    # one composition a line, so a diff of the file shows which changed
    lines = ['{']
    for k, v in HEADER.items():
        lines.append(' %s: %s,' % (json.dumps(k), json.dumps(v)))
    lines.append(' "compositions": [')
    lines.append(",\n".join("  " + json.dumps(c) for c in comps))
    lines.append(' ],')
    lines.append(' "output": %s' % json.dumps(OUTPUT))
    lines.append('}')
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
