#!/bin/sh
# examples/launcher.c: one torchrun line per node that runs ranks, node ranks
# in plan order, a rank map that sends every plan rank to its GPU once, the
# Slurm form, --plan-out honoured, the bundled policy found from another
# directory; groups of thousands of ranks whole, the memory setup in the
# map; usage errors exit 2.
bin=${ARACHNE_BIN:-bin/arachne}
launcher=$(dirname "$bin")/launcher
[ -x "$launcher" ] || { echo "$launcher not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$bin" policy init --out "$t/p.arpol" --seed 1 > /dev/null || { echo "policy init failed"; exit 1; }
out=$("$launcher" --model llama3-8b --cluster rtx-pro-6000:1x3,a6000:1x4 --samples 4 --policy "$t/p.arpol" \
      --plan-out "$t/plan.json" --rank-map "$t/ranks.json" 2>&1) || { echo "launcher failed: $out"; exit 1; }
echo "$out" | grep -q '^torchrun --nnodes=' || { echo "no torchrun line"; exit 1; }
"$bin" price "$t/plan.json" > /dev/null || { echo "--plan-out wrote a plan that does not price"; exit 1; }

# per node torchrun lines in plan order, the rank map, --plan-out honoured,
# the bundled policy found from another directory
bindir=$(cd "$(dirname "$bin")" && pwd)
out=$(cd "$t" && env -u ARACHNE_POLICY "$bindir/launcher" --model llama3-8b --cluster a100-40:2x4,h100:1x8 \
      --samples 2 --plan-out mine.json --rank-map map.json 2>"$t/err") || { echo "launcher failed: $(cat "$t/err")"; exit 1; }
if [ -f "$bindir/../examples/policies/default.arpol" ]; then  # the release layout (bin/ next to examples/)
    grep -q "untrained" "$t/err" && { echo "bundled policy not found from another directory: $(cat "$t/err")"; exit 1; }
fi
echo "$out" | grep '^torchrun' | grep -v -- "--arachne-plan mine.json --arachne-rank-map map.json" \
    && { echo "--plan-out/--rank-map not used in a torchrun line"; exit 1; }
echo "$out" | grep -q "^SLURM_HOSTFILE=hostfile.slurm srun --ntasks=" || { echo "no srun line"; exit 1; }
echo "$out" > "$t/out.txt"
python3 - "$t" <<'PY' || exit 1
import json, re, sys
t = sys.argv[1]
out = open(t + "/out.txt").read()
m = json.load(open(t + "/map.json"))
plan = json.load(open(t + "/mine.json"))
n = sum(t_["replicas"] * t_.get("cp", 1) * sum(s["tp"] for s in t_["stages"]) for t_ in plan["templates"])
assert m["world_size"] == n and sorted(m["plan_rank_by_torch_rank"]) == list(range(n)), "map covers every rank once"
torch = 0
heads = re.findall(r"^## node_rank (\d+) = cluster node (\d+) .*: (\d+) ranks?, plan ranks ([\d ]+)$", out, re.M)
runs = re.findall(r"^torchrun --nnodes=(\d+) --node_rank=(\d+) --nproc_per_node=(\d+) ", out, re.M)
assert len(heads) == len(runs) == len(m["nodes"]), (len(heads), len(runs))
assert "0" in heads[0][3].split(), "node_rank 0 must run plan rank 0"
where = {}
for t_ in plan["templates"]:
    for r in t_["ranks"]:
        where[r["rank"]] = (r["node"], r["gpu"])
for (nr, node, cnt, ranks), (nn, nr2, nproc), entry in zip(heads, runs, m["nodes"]):
    assert nr == nr2 and int(nn) == len(m["nodes"]) and cnt == nproc
    assert entry["node_rank"] == int(nr) and entry["node"] == int(node) and entry["torch_rank_start"] == torch
    for loc in entry["local"]:
        assert m["plan_rank_by_torch_rank"][torch + loc["local_rank"]] == loc["rank"]
        assert where[loc["rank"]] == (entry["node"], loc["cuda_device"]), "rank map sends a rank to another GPU"
        assert loc["rank"] in loc["tp_group"]
        tmpl = plan["templates"][loc["template"]]
        if tmpl.get("cp", 1) > 1:  # context parallelism: the ranks that split the stage's sequence
            assert loc["rank"] in loc["cp_group"] and len(loc["cp_group"]) == tmpl["cp"], loc
        else:
            assert "cp_group" not in loc, loc
    assert [l["rank"] for l in entry["local"]] == [int(x) for x in ranks.split()]
    torch += len(entry["local"])
assert torch == n
PY

# an interleaved plan (the default best of 16 here): each rank's chunks are
# its stage's share, and the chunks of a replica's ranks tile the model once
"$launcher" --model llama3-8b --cluster a100-40:2x4,h100:1x8 --plan-out "$t/vp.json" --rank-map "$t/vpmap.json" \
    > /dev/null 2>&1 || { echo "launcher (default samples) failed"; exit 1; }
python3 - "$t" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
m = json.load(open(t + "/vpmap.json"))
plan = json.load(open(t + "/vp.json"))
assert any(t_.get("vp", 1) > 1 for t_ in plan["templates"]), "expected an interleaved template in this plan"
seen = {}
for entry in m["nodes"]:
    for loc in entry["local"]:
        tmpl = plan["templates"][loc["template"]]
        if tmpl.get("vp", 1) <= 1:
            assert "chunks" not in loc, loc
            continue
        assert loc["vp"] == tmpl["vp"] and len(loc["chunks"]) == tmpl["vp"], loc
        assert sum(e - f for f, e in loc["chunks"]) == loc["layers"][1] - loc["layers"][0], loc
        key = (loc["template"], loc["replica"], loc["tp_rank"], loc.get("cp_rank", 0))
        for f, e in loc["chunks"]:
            seen.setdefault(key, []).extend(range(f, e))
for key, layers in seen.items():
    assert sorted(layers) == list(range(len(layers))) and len(set(layers)) == len(layers), (key, sorted(layers))
PY
# a data-parallel group too long for a fixed field buffer: 2,048 one-GPU
# replicas on 4,096 one-GPU nodes (greedy with the bundled policy, full
# recomputation by the probe; each dp_group is over 8 KB of text, which the
# rank map once cut short); every rank's groups are whole, and the map
# carries the plan's memory setup
if [ -f examples/policies/default.arpol ]; then
    "$launcher" --model llama3-8b --cluster h100:4096x1 --global-batch 4096 --samples 1 --refine 0 \
        --policy examples/policies/default.arpol --plan-out "$t/big.json" --rank-map "$t/bigmap.json" > /dev/null 2>&1 \
        || { echo "launcher (4,096 nodes) failed"; exit 1; }
    python3 - "$t" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
m = json.load(open(t + "/bigmap.json"))
plan = json.load(open(t + "/big.json"))
assert m["recompute"] == plan["setup"]["recompute"] and m["dist_optimizer"] == plan["setup"]["dist_optimizer"], m.get("recompute")
longest = 0
for entry in m["nodes"]:
    for loc in entry["local"]:
        tmpl = plan["templates"][loc["template"]]
        assert len(loc["dp_group"]) == tmpl["replicas"] and loc["rank"] in loc["dp_group"], (loc["rank"], len(loc["dp_group"]))
        longest = max(longest, len(",".join(map(str, loc["dp_group"]))))
assert longest > 8192, "the plan no longer has a group over 8 KB: pick a cluster that does (%d)" % longest
PY
    rm -f "$t/bigmap.json"
fi
# the asked batch: the default planner's best plan here runs 260 of 256
# samples (interleaved, in steps of 20); with ARACHNE_OPT_EXACT_DIVISION 2
# the library plans again and the launcher writes a plan that runs 256, the
# plan `arachne plan --max-vp 8` (the library's interleaving) gives
if [ -f examples/policies/default.arpol ]; then
    "$launcher" --model llama3-8b --cluster h100:2x4,gh-96:1x4,b200:2x4 --global-batch 256 \
        --policy examples/policies/default.arpol --plan-out "$t/b256.json" --rank-map "$t/b256map.json" \
        > /dev/null 2> "$t/b256.err" || { echo "launcher (batch 256) failed: $(cat "$t/b256.err")"; exit 1; }
    "$bin" plan --model llama3-8b --cluster h100:2x4,gh-96:1x4,b200:2x4 --global-batch 256 --max-vp 8 \
        --policy examples/policies/default.arpol --json > "$t/b256cli.json" 2> /dev/null ||
        { echo "arachne plan (batch 256) failed"; exit 1; }
    python3 - "$t/b256.json" "$t/b256cli.json" <<'PY' || exit 1
import json, sys
p = json.load(open(sys.argv[1]))
q = json.load(open(sys.argv[2]))
runs = sum(x["replicas"] * x["micro_batch"] * x["micro_batches"] for x in p["templates"])
assert runs == 256 and p["global_batch"] == 256, runs
assert abs(p["iter_per_s"] - q["iter_per_s"]) <= 1e-9 * q["iter_per_s"], (p["iter_per_s"], q["iter_per_s"])
PY
fi
"$launcher" --model llama3-8b > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || { echo "missing --cluster: exit $rc, wanted 2"; exit 1; }
"$launcher" --model nosuch --cluster a6000:1x4 > /dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || { echo "unknown model: exit $rc, wanted 1"; exit 1; }
for bad in "--samples 5x" "--samples 0" "--samples ''" "--seed -1" "--seed 1e3"; do
    eval "set -- $bad"
    err=$("$launcher" --model llama3-8b --cluster a6000:1x4 "$@" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] || { echo "$bad: exit $rc, wanted 2"; exit 1; }
    echo "$err" | grep -q "^launcher: $1: " || { echo "$bad: the message does not name $1: $err"; exit 1; }
done
exit 0
