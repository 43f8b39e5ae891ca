#!/usr/bin/env python3
"""bench/peers/sailor.py -- arachne next to the real Sailor (eth-easl/sailor).

For each cell (model, GPUs, global batch) it runs, on the same measured
profiles (Sailor's own profiles_tmp.json and llm_info.json):

  * Sailor's planner (its C++ core through its Python module) and ours
    (`arachne plan` with the bundled policy, best of 16), timing both;
  * Sailor's runtime simulator on both plans (ours via `arachne export
    --format sailor`);
  * our cost model on both plans (Sailor's via `arachne import --format
    sailor`, placement included);

and prints a table and one JSON line per cell.  Not part of `make check`.

    SAILOR_SRC=/path/to/sailor-checkout python3 bench/peers/sailor.py [--cells N] [--json-only]

SAILOR_SRC is a Sailor source tree (the directory holding the `sailor/`
package) whose C++ planner module has been built
(sailor/Planner/sailor_planner/cpp_src: `make libplanner.so`, see
docs/evaluation.md).  Needs numpy and pandas (Sailor imports them); `torch`,
which Sailor imports but the planner and the simulator never use, is
replaced by an empty module.  SAILOR_PYTHON names the Python that has them
(default: this one).  ARACHNE_BIN overrides bin/arachne.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ZONE = "us-central1-a"          # the zone of Sailor's testbed (its cluster_config)
NODE = {"A100-40": 4, "V100-16": 4, "GH-96": 4, "A100-80": 4}   # GPUs per node there

# Architectures of the models Sailor profiled (public model configs; OPT and
# GPT-Neo use GELU MLPs and tie the head to the embedding).
MODELS = {
    "OPT-350": dict(blocks=24, hidden=1024, heads=16, head_dim=64, ffn=4096, vocab=50272),
    "GPT-Neo-2.7": dict(blocks=32, hidden=2560, heads=20, head_dim=128, ffn=10240, vocab=50257),
    "OPT-30": dict(blocks=48, hidden=7168, heads=56, head_dim=128, ffn=28672, vocab=50272),
}

# (model, {GPU type: GPUs}, global batch)
CELLS = [
    ("OPT-350", {"A100-40": 32}, 256),
    ("OPT-350", {"A100-40": 16, "V100-16": 16}, 256),
    ("OPT-350", {"GH-96": 16, "A100-40": 16}, 512),
    ("GPT-Neo-2.7", {"A100-40": 32, "V100-16": 32}, 512),
    ("GPT-Neo-2.7", {"A100-40": 128}, 1024),
    ("OPT-30", {"A100-40": 64}, 512),
    ("OPT-350", {"V100-16": 64}, 512),
    ("GPT-Neo-2.7", {"A100-40": 64, "V100-16": 64}, 1024),
]


def arachne(*args):
    exe = os.environ.get("ARACHNE_BIN", os.path.join(ROOT, "bin", "arachne"))
    r = subprocess.run([exe] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("arachne %s: %s" % (args[0], r.stderr.strip()))
    return r.stdout


# ---- the worker: runs inside Sailor's environment (own process) ----------

def worker(req_path):
    """Runs Sailor's planner and simulator as the request says; writes JSON."""
    req = json.load(open(req_path))
    # Sailor's C++ writes to stdout directly: send fd 1 to a log
    log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    src = req["sailor_src"]
    # this file is sailor.py: its directory must not shadow Sailor's package
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    # the planner module as built (its Makefile names it for one Python and
    # `uname -p`): offered to this Python as plain libplanner.so
    cpp = os.path.join(src, "sailor", "Planner", "sailor_planner", "cpp_src")
    built = sorted(f for f in os.listdir(cpp) if f.startswith("libplanner") and f.endswith(".so"))
    if built and req.get("plan_sailor"):
        link = os.path.join(os.path.dirname(req["out"]), "libplanner.so")
        if not os.path.exists(link):
            os.symlink(os.path.join(cpp, built[0]), link)
        sys.path.insert(0, os.path.dirname(link))
    from sailor.Planner.simulations.runtime_simulator import Simulator
    out = {}
    tc = json.load(open(req["training_config"]))
    profiles = json.load(open(req["profiles"]))
    llm_info = json.load(open(req["llm_info"]))
    if req.get("plan_sailor"):
        import libplanner
        quotas = json.load(open(req["quotas"]))
        gpus = sorted(quotas.keys())
        planner = libplanner.SailorPlanner(req["planner_profiles"], req["network_coeffs"], req["training_config"],
                                           req["llm_info"], req["communication_cost"], True, True, req["quotas"],
                                           "throughput")
        want = {ZONE: {g: quotas[g][ZONE] for g in gpus}}
        t0 = time.perf_counter()
        configs = planner.get_sorted_plans(want, 1e30, 0.0)
        out["sailor_search_s"] = time.perf_counter() - t0
        if len(configs) == 0:
            out["sailor_plan"] = None
        else:
            c = configs[0]
            zones = c.get_zones()
            per_stage = []
            for stage in c.get_config_per_stage():
                # (GPU index into the sorted quota keys, TP, zone index): one VM of TP GPUs
                per_stage.append([[[[gpus[e[0]], e[1], zones[e[2]]]], e[1]] for e in stage])
            out["sailor_plan"] = {
                "pipeline_list": [{"num_stages": len(per_stage), "layers_per_stage": [list(s) for s in c.get_stages()],
                                   "tmp_per_stage": per_stage, "dp": [len(s) for s in per_stage]}],
                "mbs": c.get_mbs(), "iter_time": c.get_Tpp(),
                "estimated_throughput": 1.0 / c.get_Tpp() if c.get_Tpp() else 0.0}
    sim = Simulator(req["home"], tc, llm_info, True, profiles, ZONE)
    for name in ("ours", "sailor"):
        plan = out.get("sailor_plan") if name == "sailor" else req.get("our_plan")
        if not plan:
            continue
        try:
            fits = bool(sim.check_config_fits(plan))
            it = sim.simulate_iteration_time(plan)[0]
            out["sim_" + name] = {"iteration_s": it, "fits": fits}
        except Exception as e:  # noqa: BLE001 -- report, do not hide
            out["sim_" + name] = {"error": "%s: %s" % (type(e).__name__, e)}
    json.dump(out, open(req["out"], "w"))


def run_worker(req, work):
    path = os.path.join(work, "req.json")
    json.dump(req, open(path, "w"))
    stub = os.path.join(work, "stub")
    os.makedirs(os.path.join(stub, "torch"), exist_ok=True)
    open(os.path.join(stub, "torch", "__init__.py"), "w").write("# empty: Sailor imports torch, never uses it here\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([req["sailor_src"], stub]))
    py = os.environ.get("SAILOR_PYTHON", sys.executable)
    r = subprocess.run([py, os.path.abspath(__file__), "--worker", path], env=env, capture_output=True,
                       text=True, timeout=3600)
    if r.returncode != 0 or not os.path.exists(req["out"]):
        raise RuntimeError("Sailor worker failed (exit %d): %s" % (r.returncode, r.stderr.strip()[-600:]))
    return json.load(open(req["out"]))


# ---- one cell -------------------------------------------------------------

def cell(src, model, gpus, batch, work):
    planner_dir = os.path.join(src, "sailor", "Planner")
    prof_path = os.path.join(planner_dir, "simulations", "profiles_tmp.json")
    llm_path = os.path.join(planner_dir, "llm_info.json")
    profiles = json.load(open(prof_path))
    arch = MODELS[model]
    seq = 2048
    # Sailor's inputs: training config, quotas, a planner profile with the
    # missing (mbs, TP) pairs filled by a prohibitive time (its planner reads
    # them unchecked; the simulator keeps the real table)
    tc = {"global_batch_size": batch, "type": "gpt2", "hidden_size": arch["hidden"], "sequence_length": seq,
          "num_layers": arch["blocks"], "vocab_size": arch["vocab"], "model": model, "optimizer": "Adam",
          "heads": arch["heads"], "head_dim": arch["head_dim"], "max_position_embeddings": seq,
          "num_all_layers": arch["blocks"] + 2}
    json.dump(tc, open(os.path.join(work, "training_config.json"), "w"))
    json.dump({g: {ZONE: n} for g, n in gpus.items()}, open(os.path.join(work, "quotas.json"), "w"))
    filled = json.loads(json.dumps(profiles))
    for g, by_mbs in filled[model].items():
        tps = sorted({int(t) for m in by_mbs.values() for t in m})
        for m in by_mbs.values():
            for t in tps:
                if str(t) not in m:
                    m[str(t)] = {str(l): [1e3, 1e3, 1e3] for l in range(arch["blocks"] + 2)}
    # its planner reads <dir>/<GPU>/profile.json ({mbs: {tp: {layer: [...]}}})
    for g, by_mbs in filled[model].items():
        os.makedirs(os.path.join(work, "planner_profiles", g), exist_ok=True)
        json.dump(by_mbs, open(os.path.join(work, "planner_profiles", g, "profile.json"), "w"))
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    if not os.path.exists(os.path.join(home, "sailor")):
        os.symlink(os.path.abspath(src), os.path.join(home, "sailor"))

    # our side: the same measured table, imported
    pdir = os.path.join(work, "sailor_profiles")
    os.makedirs(pdir, exist_ok=True)
    for name, path in (("profiles.json", prof_path), ("llm_info.json", llm_path),
                       ("training_config_bench.json", os.path.join(work, "training_config.json"))):
        if not os.path.exists(os.path.join(pdir, name)):
            os.symlink(path, os.path.join(pdir, name))
    ours_prof = os.path.join(work, "profile.json")
    arachne("profile", "--import-sailor", pdir, "--model", model, "--out", ours_prof)
    mjson = dict(format="arachne-model", version=1, name=model, blocks=arch["blocks"], hidden=arch["hidden"],
                 heads=arch["heads"], kv_heads=arch["heads"], head_dim=arch["head_dim"], ffn=arch["ffn"],
                 vocab=arch["vocab"], gated_mlp=False, tied_embeddings=True)
    model_path = os.path.join(work, "model.json")
    json.dump(mjson, open(model_path, "w"))
    spec = ",".join("%s:%dx%d" % (g.lower(), n // NODE[g], NODE[g]) for g, n in gpus.items())
    common = ["--model", model_path, "--cluster", spec, "--profile", ours_prof, "--global-batch", str(batch)]
    t0 = time.perf_counter()
    ours = json.loads(arachne("plan", *common, "--json", "--allow-batch-rounding"))
    ours_wall = time.perf_counter() - t0
    our_path = os.path.join(work, "ours.json")
    json.dump(ours, open(our_path, "w"))
    try:
        our_sailor = json.loads(arachne("export", "--format", "sailor", our_path))
    except RuntimeError as e:
        our_sailor = None
        export_error = str(e)
    req = dict(sailor_src=os.path.abspath(src), home=home, log=os.path.join(work, "sailor.log"),
               out=os.path.join(work, "sailor_out.json"), training_config=os.path.join(work, "training_config.json"),
               profiles=prof_path, planner_profiles=os.path.join(work, "planner_profiles") + os.sep, llm_info=llm_path,
               quotas=os.path.join(work, "quotas.json"),
               network_coeffs=os.path.join(src, "sailor", "providers", "multizone_bandwidths_het.json"),
               communication_cost=os.path.join(src, "sailor", "providers", "gcp", "communication_cost.json"),
               plan_sailor=True, our_plan=our_sailor)
    s = run_worker(req, work)
    row = {"model": model, "gpus": gpus, "global_batch": batch, "cluster": spec,
           "ours_search_s": ours["planner"]["planning_s"], "ours_wall_s": ours_wall,
           "sailor_search_s": s.get("sailor_search_s"),
           "ours_by_ours_s": ours["iteration_s"], "ours_by_sailor": s.get("sim_ours"),
           "ours_batch_runs": sum(t["replicas"] * t["micro_batch"] * t["micro_batches"] for t in ours["templates"])}
    if our_sailor is None:
        row["ours_by_sailor"] = {"error": export_error}
    sp = s.get("sailor_plan")
    row["sailor_by_sailor"] = s.get("sim_sailor")
    if sp:
        sp_path = os.path.join(work, "sailor_plan.json")
        json.dump(sp, open(sp_path, "w"))
        try:
            imp = json.loads(arachne("import", "--format", "sailor", sp_path, *common, "--json",
                                     "--allow-batch-rounding"))
            row["sailor_by_ours_s"] = imp["iteration_s"]
        except RuntimeError as e:
            row["sailor_by_ours_s"] = None
            row["sailor_by_ours_error"] = str(e)
        row["sailor_plan"] = {"stages": sp["pipeline_list"][0]["num_stages"], "mbs": sp["mbs"],
                              "dp": sp["pipeline_list"][0]["dp"]}
    return row


def fmt(v, spec="%.3f"):
    return spec % v if isinstance(v, (int, float)) else "-"


def sim_it(d):
    return d.get("iteration_s") if isinstance(d, dict) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cells", type=int, default=len(CELLS), help="run the first N cells (default all)")
    ap.add_argument("--json-only", action="store_true")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker)
        return 0
    src = os.environ.get("SAILOR_SRC")
    if not src or not os.path.isdir(os.path.join(src, "sailor", "Planner")):
        print("set SAILOR_SRC to a Sailor source tree (the directory holding sailor/Planner)", file=sys.stderr)
        return 2
    rows = []
    if not a.json_only:
        print("%-12s %-26s %6s | %9s %9s | %-22s %-22s" % ("model", "GPUs", "batch", "search s", "", "iteration s, ours",
                                                           "iteration s, Sailor's"))
        print("%-12s %-26s %6s | %9s %9s | %10s %11s %10s %11s %7s" % ("", "", "", "ours", "Sailor", "our model",
                                                                       "Sailor sim", "our model", "Sailor sim",
                                                                       "ratio"))
    for model, gpus, batch in CELLS[:a.cells]:
        with tempfile.TemporaryDirectory(prefix="arachne-sailor-") as work:
            try:
                row = cell(src, model, gpus, batch, work)
            except Exception as e:  # noqa: BLE001 -- one failed cell must not hide the others
                row = {"model": model, "gpus": gpus, "global_batch": batch, "error": str(e)[-400:]}
        o, s = sim_it(row.get("ours_by_sailor")), sim_it(row.get("sailor_by_sailor"))
        row["ratio_sailor_sim"] = (o / s) if o and s else None
        rows.append(row)
        if not a.json_only:
            g = "+".join("%s x%d" % (k, v) for k, v in gpus.items())
            if "error" in row:
                print("%-12s %-26s %6d | error: %s" % (model, g, batch, row["error"][:80]))
            else:
                print("%-12s %-26s %6d | %9s %9s | %10s %11s %10s %11s %7s" % (
                    model, g, batch, fmt(row["ours_search_s"]), fmt(row["sailor_search_s"]),
                    fmt(row["ours_by_ours_s"]), fmt(o),
                    "OOM" if "over by" in row.get("sailor_by_ours_error", "") else fmt(row.get("sailor_by_ours_s")),
                    fmt(s),
                    fmt(row["ratio_sailor_sim"], "%.2f")))
        sys.stdout.flush()
    for row in rows:
        print(json.dumps(dict(row, bench="peers/sailor"), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
