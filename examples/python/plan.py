#!/usr/bin/env python3
"""plan.py -- plan LLM training on a heterogeneous cluster from Python.

    python3 examples/python/plan.py --model llama3-8b --cluster a100-40:8x4,h100:8x4
    python3 examples/python/plan.py --model qwen3-30b-a3b --cluster h100:4x8 --samples 8 --json
    python3 examples/python/plan.py --model llama3-8b --cluster h100:2x8 --out plan.json --svg plan.svg

Plans with the policy given by --policy, else the bundled policy (found as
`arachne plan` finds it: $ARACHNE_POLICY, the source tree, the install
prefix), else a freshly initialised (untrained) one, and
prints the plan: per template the replicas, micro-batch and stages (GPU type x
TP degree, layers as a half-open range FIRST-END like the CLI's "0-3" for
layers 0, 1, 2; stage time, memory per GPU), then the iteration time,
tokens/s and MFU.  --json prints only the plan JSON ("arachne-plan" v1).
When the library has no policy planner, random search stands in (said on
stderr).  Exit status: 0 success, 1 library error, 2 usage error.
"""

import argparse
import os
import sys

try:  # the installed package (pip install ./python), else this source tree's
    import arachne
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import arachne  # noqa: E402


def _note(msg):
    sys.stderr.write("plan.py: %s\n" % msg)


def make_plan(args, cm):
    """The plan and a word on how it was made."""
    if arachne.has_function("arachne_plan_build"):
        if args.policy:
            policy = arachne.Policy.load(args.policy)
            how = "policy %s" % args.policy
        elif arachne.Policy.bundled_path():
            policy = arachne.Policy.bundled()
            how = "bundled policy %s" % os.path.basename(arachne.Policy.bundled_path())
        else:
            policy = arachne.Policy.create(seed=args.seed)
            how = "untrained policy (seed %d)" % args.seed
            _note("no bundled policy found (ARACHNE_POLICY, examples/policies/default.arpol, "
                  "share/arachne/default.arpol): planning with a freshly "
                  "initialised, untrained policy (seed %d)" % args.seed)
        with policy:
            return policy.plan(cm, samples=args.samples, seed=args.seed), how
    if args.policy:
        raise arachne.Error(arachne.E_UNSUPPORTED, "this library has no policy planner "
                            "(arachne_plan_build); cannot use --policy")
    budget = max(200, 50 * args.samples)
    _note("this library has no policy planner yet (arachne_plan_build): using random search "
          "(%d plans, seed %d) instead" % (budget, args.seed))
    return arachne.search_random(cm, budget=budget, seed=args.seed), "random search"


def format_plan(d, how):
    """The plan dict (Plan.to_dict()) as a text table."""
    lines = []
    lines.append("plan for %s on %s: %s, %d of %d GPUs" % (d["model"], d["cluster"], how, d["gpus_used"],
                                                          d["gpus_total"]))
    lines.append("global batch %d x %d tokens" % (d["global_batch"], d["seq_len"]))
    for i, t in enumerate(d["templates"]):
        lines.append("")
        lines.append("template %d: %d replica%s x %d stage%s, micro-batch %d, %d micro-batches per replica%s" % (
            i, t["replicas"], "" if t["replicas"] == 1 else "s", len(t["stages"]),
            "" if len(t["stages"]) == 1 else "s", t["micro_batch"], t["micro_batches"],
            (", pipeline %.3f s" % t["pipeline_s"]) if "pipeline_s" in t else ""))
        lines.append("  %-5s %-18s %-9s %-11s %12s %13s" % ("stage", "GPU x TP", "layers", "EP/ETP/EDP",
                                                           "stage ms", "memory GB/GPU"))
        for s, st in enumerate(t["stages"]):
            first, end = st["layers"]
            lines.append("  %-5d %-18s %-9s %-11s %12.2f %13.2f" % (
                s, "%s x %d" % (st["gpu"], st["tp"]), "%d-%d" % (first, end) if end > first else "-",
                "%d/%d/%d" % (st["ep"], st["etp"], st["edp"]), st["stage_s"] * 1e3, st["memory_bytes"] / 1e9))
    lines.append("")
    lines.append("iteration %.3f s   %.4g iter/s   %s tokens/s   MFU %.1f%%" % (
        d["iteration_s"], d["iter_per_s"], "{:,.0f}".format(d["tokens_per_s"]), 100.0 * d["mfu"]))
    p = d.get("planner", {})
    if p:
        lines.append("planner %s: %s evaluations in %.3f s" % (p.get("method", "?"), p.get("evaluations", "?"),
                                                             p.get("planning_s", 0.0)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plan.py", description="Plan LLM training on a heterogeneous cluster.")
    ap.add_argument("--model", required=True, help="preset name or model JSON file")
    ap.add_argument("--cluster", required=True, help="compact spec (a100-40:8x4,h100:8x4) or cluster JSON file")
    ap.add_argument("--samples", type=int, default=16, help="policy plans, best kept (1: greedy; default 16)")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--policy", help="policy file (default: the bundled policy)")
    ap.add_argument("--global-batch", type=int, help="samples per iteration (default 512)")
    ap.add_argument("--seq-len", type=int, help="tokens per sample (default 4096)")
    ap.add_argument("--lib", help="path of libarachne.so")
    ap.add_argument("--json", action="store_true", help="print only the plan JSON")
    ap.add_argument("--out", help="also save the plan JSON to this file")
    ap.add_argument("--svg", help="also draw the plan as SVG into this file")
    args = ap.parse_args(argv)
    if args.samples < 1:
        ap.error("--samples must be at least 1")
    try:
        if args.lib:
            arachne.load_library(args.lib)
        setup = {}
        if args.global_batch is not None:
            setup["global_batch"] = args.global_batch
        if args.seq_len is not None:
            setup["seq_len"] = args.seq_len
        with arachne.Model.open(args.model) as model, arachne.Cluster.open(args.cluster) as cluster:
            with arachne.CostModel(model, cluster, **setup) as cm:
                plan, how = make_plan(args, cm)
                with plan:
                    if args.out:
                        plan.save(args.out)
                    if args.svg:
                        plan.save_svg(args.svg)
                    if args.json:
                        sys.stdout.write(plan.to_json())
                        if not plan.to_json().endswith("\n"):
                            sys.stdout.write("\n")
                    else:
                        print(format_plan(plan.to_dict(), how))
    except arachne.Error as e:
        _note(e.message or e.status_name)
        return 1
    except OSError as e:
        _note(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
