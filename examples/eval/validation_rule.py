#!/usr/bin/env python3
"""The validation rule that chooses between trained policy files
(docs/experiments.md, "Training experiment" sections; docs/training.md).

Two steps, and a third measure:

  validation_rule.py config SET.json > FAST.json
      writes the fast variant of an eval config: the same compositions,
      no exhaustive search, random search with the policy's own budget
      capped at 0.05 s, no refinement.  Only the policy's greedy and
      best-of-16 plans enter the rule, so the baselines are left cheap.
      SET.json may also be an `arachne train` config: its compositions,
      with the training setup's keys that an eval composition takes
      (global_batch, seq_len, recompute, dist_optimizer, headroom,
      max_depth), become the fast config's, so that a policy file can be
      planned on the compositions it was trained on.
      Run it once per policy file:
        bin/arachne eval --config FAST.json --policy RUN.arpol --json --out RUN-SET.json

  validation_rule.py compare BASE=a.json[,b.json...] RUN=a.json[,b.json...] ...
      compares each run with the first (the base), composition by
      composition, on the same sets in the same order: the geometric mean
      of RUN / BASE for the greedy plan, for best-of-16, and for the score
      sqrt(greedy x best-of-16), over all, dense and MoE compositions of
      each set and pooled over every set.  A geometric mean of ratios needs
      no reference throughput, so a 20-GPU and a 16,384-GPU composition
      weigh alike.  A composition that either run did not plan is left out
      and counted in the `skipped` column.

  validation_rule.py gap RESULT.json ...
      the greedy gap within one run: per result file and population, the
      geometric mean of greedy / best-of-16 of the same policy, its
      minimum and the share of compositions at 0.95 or more
      (docs/experiments.md, "In-sample").  Compositions where either plan
      is missing are left out and counted.

Exit status: 0, or 2 on a usage error or a file that does not fit.
"""
import json
import math
import sys

FAST = {"random_factor": 1, "random_time_budget_s": 0.05, "refine_evaluations": 0,
        "exhaustive": {"max_gpus": 0, "max_templates": 1, "max_depth": 6, "time_budget_s": 1}}


def fail(msg):
    sys.stderr.write("validation_rule.py: %s\n" % msg)
    sys.exit(2)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (path, e))


# setup keys of an `arachne train` config that an eval composition takes
EVAL_SETUP_KEYS = ("global_batch", "seq_len", "recompute", "dist_optimizer", "headroom", "max_depth")


def from_train_config(cfg, path):
    """An eval config of a training config's compositions: each takes the
    top-level setup, then its own, keeping the keys an eval composition
    accepts (the fill switches of a training setup are left out: the eval
    plans with the library's defaults)."""
    top = cfg.get("setup", {})
    comps = cfg.get("compositions")
    if not isinstance(top, dict) or not isinstance(comps, list) or not comps:
        fail("%s: a training config needs a `compositions` list and an object `setup`" % path)
    out = []
    for i, c in enumerate(comps):
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in ("name", "model", "cluster")):
            fail("%s: composition %d needs string `name`, `model` and `cluster`" % (path, i))
        own = c.get("setup", {})
        if not isinstance(own, dict):
            fail("%s: composition %d: `setup` is not an object" % (path, i))
        e = {"name": c["name"], "model": c["model"], "cluster": c["cluster"]}
        for k in EVAL_SETUP_KEYS:
            if k in own or k in top:
                e[k] = own.get(k, top.get(k))
        out.append(e)
    return {"format": "arachne-eval", "version": 1, "samples": 16, "seed": 1, "compositions": out}


def fast_config(path):
    cfg = load_json(path)
    if isinstance(cfg, dict) and "format" not in cfg and "compositions" in cfg and "updates" in cfg:
        cfg = from_train_config(cfg, path)
    if not isinstance(cfg, dict) or cfg.get("format") != "arachne-eval":
        fail("%s: not an arachne-eval config or an arachne train config" % path)
    cfg.pop("policy", None)  # the policy is given with --policy; relative paths would break
    cfg.pop("flat", None)
    cfg.update(FAST)
    return cfg


def plans(path):
    """name -> (moe, greedy iter/s or None, best-of-K iter/s or None), in file
    order; K is the result's `samples` (16 in the validation configs)."""
    res = load_json(path)
    if not isinstance(res, dict) or res.get("format") != "arachne-eval-result":
        fail("%s: not an arachne-eval result (--json --out)" % path)
    best = "policy-best%d" % res.get("samples", 16)
    out = {}
    comps = res.get("compositions")
    if not isinstance(comps, list):
        fail("%s: no `compositions` list" % path)
    for i, c in enumerate(comps):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("results"), dict):
            fail("%s: composition %d has no `name` or `results`" % (path, i))
        r = c["results"]

        def speed(m):
            x = r.get(m) or {}
            v = x.get("iter_per_s")
            return v if x.get("plan") and isinstance(v, (int, float)) and v > 0 else None
        out[c["name"]] = (bool(c.get("moe")), speed("policy"), speed(best))
    return out


def geo(logs):
    return math.exp(sum(logs) / len(logs)) if logs else float("nan")


def ratios(base, run, where):
    """population -> {"greedy", "best", "score": log ratios; "skipped": count}."""
    if list(base) != list(run):
        fail("%s: compositions differ from the base's" % where)
    pops = {p: {"greedy": [], "best": [], "score": [], "skipped": 0} for p in ("all", "dense", "moe")}
    for name, (moe, g0, b0) in base.items():
        _, g1, b1 = run[name]
        for p in ("all", "moe" if moe else "dense"):
            pop = pops[p]
            if None in (g0, b0, g1, b1):
                pop["skipped"] += 1
                continue
            pop["greedy"].append(math.log(g1 / g0))
            pop["best"].append(math.log(b1 / b0))
            pop["score"].append(0.5 * (pop["greedy"][-1] + pop["best"][-1]))
    return pops


def parse_run(arg):
    if "=" not in arg:
        fail("%s: expected NAME=result.json[,result.json...]" % arg)
    name, files = arg.split("=", 1)
    files = [f for f in files.split(",") if f]
    if not name or not files:
        fail("%s: expected NAME=result.json[,result.json...]" % arg)
    return name, files


def compare(args):
    if len(args) < 2:
        fail("compare needs a base and at least one run")
    runs = [parse_run(a) for a in args]
    base_name, base_files = runs[0]
    base = [plans(f) for f in base_files]
    print("%-12s %-10s %-6s %5s %8s %8s %8s %8s %7s" % ("run", "set", "pop", "n", "greedy", "best16", "score",
                                                         "g-min", "skipped"))
    for name, files in runs[1:]:
        if len(files) != len(base_files):
            fail("%s: %d result files, the base %s has %d" % (name, len(files), base_name, len(base_files)))
        pooled = []
        for k, f in enumerate(files):
            pops = ratios(base[k], plans(f), f)
            label = "set%d" % (k + 1)
            for p in ("all", "dense", "moe"):
                lg, pop = pops[p]["greedy"], pops[p]
                print("%-12s %-10s %-6s %5d %8.4f %8.4f %8.4f %8.3f %7d" % (
                    name, label, p, len(lg), geo(lg), geo(pop["best"]), geo(pop["score"]),
                    math.exp(min(lg)) if lg else float("nan"), pop["skipped"]))
            pooled += pops["all"]["score"]
        print("%-12s %-10s %-6s %5d %8s %8s %8.4f" % (name, "pooled", "all", len(pooled), "", "", geo(pooled)))


def gap(paths):
    if not paths:
        fail("gap needs at least one result file")
    print("%-24s %-6s %5s %9s %8s %8s %7s" % ("result", "pop", "n", "g/best16", "g-min", "share95", "skipped"))
    for path in paths:
        rows = plans(path).values()
        for p in ("all", "dense", "moe"):
            logs, skipped = [], 0
            for moe, g, b in rows:
                if p != "all" and moe != (p == "moe"):
                    continue
                if g is None or b is None:
                    skipped += 1
                    continue
                logs.append(math.log(g / b))
            share = sum(1 for x in logs if x >= math.log(0.95)) / len(logs) if logs else float("nan")
            print("%-24s %-6s %5d %9.4f %8.3f %8.2f %7d" % (
                path[-24:], p, len(logs), geo(logs), math.exp(min(logs)) if logs else float("nan"), share, skipped))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "config" and len(sys.argv) == 3:
        json.dump(fast_config(sys.argv[2]), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif len(sys.argv) >= 2 and sys.argv[1] == "compare":
        compare(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "gap":
        gap(sys.argv[2:])
    else:
        fail("usage: validation_rule.py config SET.json | compare BASE=r.json[,..] RUN=r.json[,..] ... | "
             "gap r.json ...")


if __name__ == "__main__":
    main()
