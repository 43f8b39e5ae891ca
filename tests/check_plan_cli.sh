#!/bin/sh
# arachne price / arachne export on a hand-written plan file: validation,
# repricing, the --json round trip, every export format, and the exit codes
# and one-line messages of bad plans and bad usage.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not available"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/plan.json" <<'JSON'
{
  "format": "arachne-plan",
  "version": 1,
  "model": "llama3-8b",
  "cluster": "a100-40:2x4,h100:1x8",
  "global_batch": 64,
  "seq_len": 4096,
  "setup": {"recompute": "selective", "dist_optimizer": true, "weight_bytes": 2, "grad_bytes": 4, "optim_bytes": 12, "headroom": 0.08},
  "iteration_s": 3.9255755364448177,
  "iter_per_s": 0.2547397166902171,
  "samples_per_s": 16.303341868173895,
  "tokens_per_s": 66778.48829204027,
  "mfu": 0.40772427121689064,
  "bubble": 0.12112655624228819,
  "gpus_used": 14,
  "gpus_total": 16,
  "templates": [
    {
      "replicas": 2,
      "micro_batch": 1,
      "micro_batches": 11,
      "pipeline_s": 3.716930507408075,
      "stages": [
        {"gpu": "A100-40", "tp": 2, "layers": [0, 16], "ep": 1, "etp": 1, "edp": 4, "stage_s": 0.25224696382543405, "memory_bytes": 31710902528, "compute_s": 0.22998998507241813, "tp_comm_s": 0.02202728253968254, "ep_comm_s": 0, "p2p_s": 0.00022969621333333333, "sync_s": 0.32125028608},
        {"gpu": "A100-40", "tp": 2, "layers": [16, 32], "ep": 1, "etp": 1, "edp": 4, "stage_s": 0.2857666299838765, "memory_bytes": 28227488000, "compute_s": 0.2637208598251463, "tp_comm_s": 0.02204577015873016, "ep_comm_s": 0, "p2p_s": 0, "sync_s": 0.32125061375999997}
      ],
      "ranks": [
        {"rank": 0, "node": 0, "gpu": 0, "replica": 0, "stage": 0, "tp_rank": 0},
        {"rank": 1, "node": 0, "gpu": 1, "replica": 0, "stage": 0, "tp_rank": 1},
        {"rank": 2, "node": 0, "gpu": 2, "replica": 0, "stage": 1, "tp_rank": 0},
        {"rank": 3, "node": 0, "gpu": 3, "replica": 0, "stage": 1, "tp_rank": 1},
        {"rank": 4, "node": 1, "gpu": 0, "replica": 1, "stage": 0, "tp_rank": 0},
        {"rank": 5, "node": 1, "gpu": 1, "replica": 1, "stage": 0, "tp_rank": 1},
        {"rank": 6, "node": 1, "gpu": 2, "replica": 1, "stage": 1, "tp_rank": 0},
        {"rank": 7, "node": 1, "gpu": 3, "replica": 1, "stage": 1, "tp_rank": 1}
      ]
    },
    {
      "replicas": 1,
      "micro_batch": 2,
      "micro_batches": 21,
      "pipeline_s": 3.8428693020010876,
      "stages": [
        {"gpu": "H100", "tp": 4, "layers": [0, 20], "ep": 1, "etp": 1, "edp": 4, "stage_s": 0.16331130871200655, "memory_bytes": 26138065152, "compute_s": 0.10762228137994306, "tp_comm_s": 0.055384765714285716, "ep_comm_s": 0, "p2p_s": 0.0003042616177777778, "sync_s": 0.19554306304000002},
        {"gpu": "H100", "tp": 2, "layers": [20, 32], "ep": 1, "etp": 1, "edp": 2, "stage_s": 0.16187704528895, "memory_bytes": 27233274112, "compute_s": 0.13981615216725687, "tp_comm_s": 0.02206089312169312, "ep_comm_s": 0, "p2p_s": 0, "sync_s": 0.25145477375999997}
      ],
      "ranks": [
        {"rank": 8, "node": 2, "gpu": 0, "replica": 0, "stage": 0, "tp_rank": 0},
        {"rank": 9, "node": 2, "gpu": 1, "replica": 0, "stage": 0, "tp_rank": 1},
        {"rank": 10, "node": 2, "gpu": 2, "replica": 0, "stage": 0, "tp_rank": 2},
        {"rank": 11, "node": 2, "gpu": 3, "replica": 0, "stage": 0, "tp_rank": 3},
        {"rank": 12, "node": 2, "gpu": 4, "replica": 0, "stage": 1, "tp_rank": 0},
        {"rank": 13, "node": 2, "gpu": 5, "replica": 0, "stage": 1, "tp_rank": 1}
      ]
    }
  ],
  "planner": {"method": "test", "planning_s": 0.123456789, "evaluations": 4242, "samples": 3}
}
JSON

# price: a valid plan prints the table and the file's recorded time beside the
# repriced one; a file the current cost model wrote reprices to its own time
out=$("$bin" price "$t/plan.json") || fail "price failed: $out"
echo "$out" | grep -q "^template 1: 1 replica x 2 stages" || fail "price: no template table: $out"
echo "$out" | grep -q "the file records 3.9256 s per iteration; repriced" || fail "price: no file-vs-repriced line: $out"
"$bin" price "$t/plan.json" --json > "$t/now.json" || fail "price --json failed"
out=$("$bin" price "$t/now.json") || fail "price of the repriced plan failed: $out"
echo "$out" | grep -q "(+0.00%)" || fail "price: repriced time differs from the file: $out"

# --json is the plan JSON only, and pricing that output again gives the same bytes
"$bin" price "$t/plan.json" --json > "$t/a.json" || fail "price --json failed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="arachne-plan" and d["version"]==2' "$t/a.json" \
    || fail "price --json is not plan JSON"
"$bin" price "$t/a.json" --json > "$t/b.json" || fail "price of price --json failed"
cmp -s "$t/a.json" "$t/b.json" || fail "price --json does not round-trip to the same bytes"
# a plan the library priced reprices to the time it records
out=$("$bin" price "$t/a.json") || fail "price of price --json failed: $out"
echo "$out" | grep -q "(+0.00%)" || fail "price: repriced time differs from the file: $out"

# A planned plan whose two templates are twins (the two halves of an exact
# split: the same stages, CP and expert tiling) reduces their gradients in
# one ring (docs/cost-model.md).  The planner priced it inside the fill and
# the refinement; repricing the file from scratch must give the same time
# to the last digit, or the two count the ring's peers per node differently.
"$bin" plan --model mixtral-8x7b --cluster a100-80:151x4+101x2,gb300:23x72,h100-pcie:287x4+382x1 \
    --global-batch 2048 --samples 1 --json > "$t/twin.json" || fail "plan of the twin-template composition failed"
"$bin" price "$t/twin.json" --json > "$t/twin-re.json" || fail "price of the twin-template plan failed"
python3 - "$t/twin.json" "$t/twin-re.json" <<'PY' || fail "twin-template plan: see above"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def shape(t):
    return (t.get("cp", 1), [(s["gpu"], s["tp"], tuple(s["layers"]), s.get("ep"), s.get("etp")) for s in t["stages"]])
shapes = [shape(t) for t in a["templates"]]
if not any(shapes.count(s) > 1 for s in shapes):
    sys.exit("the plan has no twin templates any more (the policy changed?): pick a composition whose plan has")
if abs(a["iter_per_s"] - b["iter_per_s"]) > 1e-12 * a["iter_per_s"]:
    sys.exit("planned %.15g iter/s, repriced %.15g" % (a["iter_per_s"], b["iter_per_s"]))
PY

# a different setup reprices (the micro-batches follow the new global batch)
"$bin" price "$t/plan.json" --global-batch 128 --json > "$t/c.json" || fail "price --global-batch failed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["global_batch"]==128; assert sum(x["replicas"]*x["micro_batch"]*x["micro_batches"] for x in d["templates"])>=128' "$t/c.json" \
    || fail "price --global-batch 128 did not reprice"

# exports: every format, ranks lists every GPU once
for f in ranks megatron torchtitan torchtitan-cli flashflex; do
    "$bin" export --format $f "$t/plan.json" > "$t/x.$f" || fail "export $f failed"
    [ -s "$t/x.$f" ] || fail "export $f is empty"
done
python3 - "$t/x.ranks" <<'PY' || fail "ranks export is inconsistent"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["rank"] for r in rows] == list(range(14))
assert len({(r["node"], r["local_gpu"]) for r in rows}) == 14
for r in rows:
    assert all(rows[o]["node"] == r["node"] for o in r["tp_group"])
PY
# two micro-batch sizes: Sailor cannot express the plan, so the export fails and writes nothing
out=$("$bin" export --format sailor "$t/plan.json" --out "$t/no.json" 2>&1) && fail "sailor export of two micro-batch sizes succeeded"
echo "$out" | grep -q "one micro-batch size" || fail "sailor refusal message: $out"
[ -e "$t/no.json" ] && fail "a refused export left a file"
grep -q "cannot express this template" "$t/x.megatron" || fail "megatron export lacks the per-stage TP note"
"$bin" export --format megatron "$t/plan.json" --out "$t/out.txt" || fail "export --out failed"
cmp -s "$t/out.txt" "$t/x.megatron" || fail "export --out differs from stdout"

# bad plans: exit 1, one line "arachne: ..." naming the place
sed 's/"rank": 1, "node": 0, "gpu": 1,/"rank": 1, "node": 0, "gpu": 0,/' "$t/plan.json" > "$t/reuse.json"
out=$("$bin" price "$t/reuse.json" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "GPU reuse: exit $rc, want 1"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "GPU reuse: want one line, got: $out"
case "$out" in "arachne: "*"already used by rank 0"*) ;; *) fail "GPU reuse message: $out";; esac
sed 's/"layers": \[16, 32\]/"layers": [17, 32]/' "$t/plan.json" > "$t/gap.json"
out=$("$bin" export --format ranks "$t/gap.json" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "layer gap: exit $rc, want 1"
case "$out" in *"gap"*) ;; *) fail "layer gap message: $out";; esac
out=$("$bin" price "$t/plan.json" --cluster a100-40:1x4,h100:1x8 2>&1); rc=$?
[ $rc -eq 1 ] || fail "smaller cluster: exit $rc, want 1 ($out)"
"$bin" price "$t/missing.json" 2>/dev/null; [ $? -eq 1 ] || fail "missing file must exit 1"

# plan_both NAME FLAG ARGS...: greedy-plans ARGS into $t/NAME-on.json and,
# with FLAG added, $t/NAME-off.json (one fill option on and off)
plan_both() {
    name=$1 flag=$2
    shift 2
    "$bin" plan "$@" --samples 1 --refine 0 --json > "$t/$name-on.json" || fail "plan ($name on) failed"
    "$bin" plan "$@" --samples 1 --refine 0 --json "$flag" > "$t/$name-off.json" || fail "plan $flag failed"
}

# --no-stage-reversal: the bundled policy's greedy template for this
# composition ends in an A5000 stage holding the output layer, at
# micro-batch 1; by default the fill runs it the other way round, the
# A5000s first with one block, and fits micro-batch 8 (docs/fill.md; a
# composition of the broad small validation set, 1.87x)
# (stage moves off: they would find the faster order from either start)
plan_both rev --no-stage-reversal --model qwen3-30b-a3b --cluster a5000:1x8,b300:1x8,b200:2x4 --global-batch 256 \
    --no-stage-moves
python3 - "$t/rev-on.json" "$t/rev-off.json" <<'PY' || fail "the stage reversal did not run the template the faster way round"
import json, sys
rev, asis = (json.load(open(p)) for p in sys.argv[1:3])
r, a = rev["iter_per_s"], asis["iter_per_s"]
first = lambda p: p["templates"][0]["stages"][0]["gpu"]
assert r > 1.5 * a, (r, a)
assert first(rev) != first(asis), (first(rev), first(asis))
PY

# --no-priced-resplit: the bundled policy's greedy template for this
# composition gives its first H200 stage 17 blocks on profiled times, the
# slowest stage once priced (0.199 s, with its expert tiling); by default
# the fill splits again on the priced times and moves a block off it to
# the H100-PCIe stage: 0.1374 -> 0.1427 iter/s (docs/fill.md; stage moves
# off, as above)
plan_both resplit --no-priced-resplit --model qwen3-30b-a3b --cluster h100-pcie:3x1+1x4,h200:1x8,a5000:2x4+1x8 \
    --global-batch 256 --no-stage-moves
python3 - "$t/resplit-on.json" "$t/resplit-off.json" <<'PY' || fail "the priced re-split did not move blocks off the slow stage"
import json, sys
rs, pr = (json.load(open(p)) for p in sys.argv[1:3])
r, a = rs["iter_per_s"], pr["iter_per_s"]
assert r > 1.03 * a, (r, a)
slowest = lambda p: max(s["stage_s"] for s in p["templates"][0]["stages"])
assert slowest(rs) < slowest(pr), (slowest(rs), slowest(pr))
layers = lambda p: [tuple(s["layers"]) for s in p["templates"][0]["stages"]]
assert layers(rs) != layers(pr), layers(rs)
PY

# --no-stage-moves: the bundled policy's greedy template for this
# composition runs its two V100 stages last, after the H100 stages; by
# default the fill also tries each stage moved to either end and here
# moves the second H200 stage to the end: 0.0888 -> 0.1146 iter/s
# (docs/fill.md)
plan_both moves --no-stage-moves --model mixtral-8x7b --cluster h100:1x8,v100-16:1x8,h200:2x4+1x8,a100-40:2x4 \
    --global-batch 256
python3 - "$t/moves-on.json" "$t/moves-off.json" <<'PY' || fail "the stage moves did not find the faster order"
import json, sys
mv, no = (json.load(open(p)) for p in sys.argv[1:3])
r, a = mv["iter_per_s"], no["iter_per_s"]
assert r > 1.2 * a, (r, a)
order = lambda p: [(s["gpu"], s["tp"]) for s in p["templates"][0]["stages"]]
assert order(mv) != order(no) and sorted(order(mv)) == sorted(order(no)), (order(mv), order(no))
PY

# --rollout: rollout decoding (docs/search.md).  On this composition the
# bundled policy's greedy plan runs at 0.0688 iter/s and the rollout's at
# 0.1164; the rollout plan is never slower than greedy, and it is the same
# plan twice.  With --samples it is a usage error.
"$bin" plan --model mixtral-8x7b --cluster b200:2x2+1x8,h100:4x1,rtx-3090:1x4 --global-batch 256 \
    --samples 1 --refine 0 --json > "$t/ro-greedy.json" || fail "greedy plan for --rollout failed"
for i in 1 2; do
    "$bin" plan --model mixtral-8x7b --cluster b200:2x2+1x8,h100:4x1,rtx-3090:1x4 --global-batch 256 \
        --rollout --refine 0 --json > "$t/ro-$i.json" || fail "plan --rollout failed"
done
python3 - "$t/ro-greedy.json" "$t/ro-1.json" "$t/ro-2.json" <<'PY' || fail "plan --rollout: not faster than greedy, or not repeatable"
import json, sys
g, a, b = (json.load(open(p)) for p in sys.argv[1:4])
assert a["planner"]["method"] == "policy-rollout", a["planner"]
assert a["iter_per_s"] > 1.5 * g["iter_per_s"], (a["iter_per_s"], g["iter_per_s"])
for p in (a, b):
    p["planner"].pop("planning_s")
assert a == b
PY
"$bin" plan --model llama3-8b --cluster a100-40:2x4 --rollout --samples 4 2>/dev/null; [ $? -eq 2 ] ||
    fail "plan --rollout --samples must exit 2"

# the recompute mode: by default plan may choose full recomputation where a
# probe says it pays, --recompute auto plans selective and full, a mode
# given is the mode planned (qwen3-30b-a3b on 22 single-GPU L40S nodes,
# batch 512: full wins; memory-tight draw no. 25 of make_tight.py 60 7); the
# table says which, the plan file records it and price reprices it as made;
# a plan that fits only with full recomputation is found; price and
# --rollout refuse auto; a failed selective plan names auto
"$bin" plan --model qwen3-30b-a3b --cluster l40s:22x1 --global-batch 512 --recompute auto > "$t/auto.txt" ||
    fail "plan --recompute auto failed"
grep -q '^recomputation: full (--recompute auto planned selective and full)$' "$t/auto.txt" ||
    fail "plan --recompute auto: no recomputation line: $(cat "$t/auto.txt")"
"$bin" plan --model qwen3-30b-a3b --cluster l40s:22x1 --global-batch 512 --recompute auto --json > "$t/auto.json" ||
    fail "plan --recompute auto --json failed"
"$bin" plan --model qwen3-30b-a3b --cluster l40s:22x1 --global-batch 512 --recompute selective --json > "$t/sel.json" ||
    fail "plan --recompute selective failed"
"$bin" plan --model qwen3-30b-a3b --cluster l40s:22x1 --global-batch 512 --json > "$t/default.json" ||
    fail "plan (default recompute) failed"
"$bin" plan --model qwen3-30b-a3b --cluster l40s:22x1 --global-batch 512 > "$t/default.txt" ||
    fail "plan (default recompute) failed"
grep -q "^recomputation: full (the planner's choice where memory binds; --recompute selective keeps selective)$" \
    "$t/default.txt" || fail "plan: no recomputation line: $(cat "$t/default.txt")"
"$bin" price "$t/auto.json" --json > "$t/auto-priced.json" || fail "price of the auto plan failed"
python3 - "$t/auto.json" "$t/sel.json" "$t/auto-priced.json" "$t/default.json" <<'PY' || fail "plan --recompute auto: wrong mode or price"
import json, sys
a, s, r, d = (json.load(open(p)) for p in sys.argv[1:5])
assert a["setup"]["recompute"] == "full" and s["setup"]["recompute"] == "selective", (a["setup"], s["setup"])
assert d["setup"]["recompute"] == "full" and d["iter_per_s"] == a["iter_per_s"], (d["setup"], d["iter_per_s"])
assert a["iter_per_s"] > 1.5 * s["iter_per_s"], (a["iter_per_s"], s["iter_per_s"])
assert abs(r["iteration_s"] - a["iteration_s"]) <= 1e-9 * a["iteration_s"], (r["iteration_s"], a["iteration_s"])
PY
"$bin" plan --model qwen3-30b-a3b --cluster l4:5x2,titan-rtx:5x4 --global-batch 256 --recompute selective 2> "$t/sel.err"
[ $? -eq 1 ] || fail "plan --recompute selective without a fitting template must exit 1"
[ "$(wc -l < "$t/sel.err")" -eq 1 ] && grep -q -- "usable (--recompute auto also plans with full recomputation)$" "$t/sel.err" ||
    fail "no --recompute auto hint on the one error line: $(cat "$t/sel.err")"
"$bin" plan --model qwen3-30b-a3b --cluster l4:5x2,titan-rtx:5x4 --global-batch 256 --recompute auto > "$t/auto2.txt" ||
    fail "plan --recompute auto found no plan where full recomputation fits"
grep -q '^recomputation: full' "$t/auto2.txt" || fail "plan --recompute auto: $(cat "$t/auto2.txt")"
# replan: a running plan that fits only with full recomputation is read in
# its own mode under auto (and cannot be read under selective)
"$bin" plan --model qwen3-30b-a3b --cluster l4:5x2,titan-rtx:5x4 --global-batch 256 --recompute full --json \
    > "$t/full-run.json" || fail "plan --recompute full failed"
"$bin" replan --plan "$t/full-run.json" --cluster l4:5x2,titan-rtx:6x4 --recompute auto --json > "$t/replan.json" ||
    fail "replan --recompute auto of a fully recomputing plan failed"
"$bin" replan --plan "$t/full-run.json" --cluster l4:5x2,titan-rtx:6x4 --recompute selective 2>/dev/null; [ $? -eq 1 ] ||
    fail "replan --recompute selective of a plan that fits only with full recomputation must exit 1"
"$bin" price --model llama3-8b --cluster h100:1x8 --parallel tp=1,pp=1,dp=8,mbs=1 --recompute auto 2> "$t/err"; [ $? -eq 2 ] ||
    fail "price --recompute auto must exit 2"
grep -q "only plan and replan choose the mode" "$t/err" || fail "price --recompute auto: $(cat "$t/err")"
"$bin" plan --model llama3-8b --cluster h100:1x8 --rollout --recompute auto 2>/dev/null; [ $? -eq 2 ] ||
    fail "plan --rollout --recompute auto must exit 2"
"$bin" plan --model llama3-8b --cluster h100:1x8 --recompute sometimes 2>/dev/null; [ $? -eq 2 ] ||
    fail "plan --recompute sometimes must exit 2"

# a composition whose best plan by the surplus-charging rank keeps a surplus
# (260 of 256 samples) though its structure runs 256 exactly, which plan
# refused: plan now plans again with ARACHNE_OPT_EXACT_DIVISION and keeps
# the faster of that plan and the first at its exact division (here the
# new one, faster than the first ran with its surplus) and says so; the
# first plan, kept with --allow-batch-rounding, is repriced with its exact
# division (the command says so) where price is asked for 256
EX="--model qwen3-8b --cluster a100-40:1x4,h200:1x4,h100:8x1+2x4,b300:3x2 --global-batch 256 --max-vp 8"
"$bin" plan $EX --json > "$t/exact.json" 2> "$t/exact.err" || fail "plan of the surplus composition failed"
grep -q "runs 260 samples at .* runs the 256 asked only with a slower division; planned again" "$t/exact.err" ||
    fail "no note on planning again: $(cat "$t/exact.err")"
"$bin" export --format ranks "$t/exact.json" > /dev/null 2>&1 || fail "export of the exact plan failed"
# a composition whose best plan is interleaved (1 replica, micro-batch 4, 5
# stages with vp 2) and runs 260 samples: an interleaved template takes its
# micro-batches in groups of its depth, steps of 20, so no division runs
# 256. plan refused it; it now plans again ranking the plans that run 256
# first (ARACHNE_OPT_EXACT_DIVISION), says so, and returns such a plan
VP="--model llama3-8b --cluster h100:2x4,gh-96:1x4,b200:2x4 --global-batch 256 --max-vp 8"
"$bin" plan $VP --json > "$t/vp.json" 2> "$t/vp.err" || fail "plan of the interleaved composition: $(cat "$t/vp.err")"
grep -q "runs 260 samples at .* cannot run the 256 asked; planned again" "$t/vp.err" ||
    fail "no note on planning again: $(cat "$t/vp.err")"
python3 - "$t/vp.json" <<'PY' || fail "the plan planned again runs the batch asked"
import json, sys
p = json.load(open(sys.argv[1]))
assert sum(x["replicas"] * x["micro_batch"] * x["micro_batches"] for x in p["templates"]) == 256
PY
"$bin" search --method random --budget 300 $VP > /dev/null 2> "$t/vps.err" || fail "search: $(cat "$t/vps.err")"
# a first plan with full recomputation (the probe's choice) and FSDP, 2
# replicas at micro-batch 2: steps of 4, so 248 or 252 but not 250; the
# plan planned again runs 250, and the note names the batches the first
# plan runs
"$bin" plan --model qwen3-30b-a3b --cluster l40s:22x1 --global-batch 250 --json > "$t/full250.json" \
    2> "$t/full250.err" || fail "plan of the full-recomputation composition: $(cat "$t/full250.err")"
grep -q "runs 252 samples at .*planned again.*(the first plan runs 248 and 252 exactly" "$t/full250.err" ||
    fail "the note on planning again: $(cat "$t/full250.err")"
python3 - "$t/full250.json" <<'PY' || fail "the plan planned again runs 250"
import json, sys
p = json.load(open(sys.argv[1]))
assert sum(x["replicas"] * x["micro_batch"] * x["micro_batches"] for x in p["templates"]) == 250
PY
# replan onto that cluster plans again the same way, and its decision and
# plan are the second run's
"$bin" plan --model llama3-8b --cluster h100:2x4,b200:2x4 --global-batch 256 --max-vp 8 --json > "$t/vprun.json" 2>/dev/null ||
    fail "plan of the running interleaved plan"
"$bin" replan --plan "$t/vprun.json" $VP --out "$t/vpnext.json" > /dev/null 2> "$t/vpre.err" ||
    fail "replan onto the interleaved composition: $(cat "$t/vpre.err")"
grep -q "replan: the best plan found runs 260 samples" "$t/vpre.err" || fail "no replan note: $(cat "$t/vpre.err")"
python3 - "$t/vpnext.json" <<'PY' || fail "the plan replan planned again runs the batch asked"
import json, sys
p = json.load(open(sys.argv[1]))
assert sum(x["replicas"] * x["micro_batch"] * x["micro_batches"] for x in p["templates"]) == 256
PY
# the batches the error names are ones the interleaved plan runs (it
# claimed an exact split of 256 before): 240 and 260
"$bin" plan $VP --allow-batch-rounding --json > "$t/vp260.json" 2>/dev/null || fail "plan --allow-batch-rounding"
"$bin" price "$t/vp260.json" --global-batch 256 > /dev/null 2> "$t/vp.err"
[ $? -eq 1 ] && grep -q "batches its structure runs exactly: 240 and 260" "$t/vp.err" ||
    fail "the interleaved plan's batch error: $(cat "$t/vp.err")"
"$bin" plan $EX --allow-batch-rounding --json > "$t/round.json" 2>/dev/null || fail "plan --allow-batch-rounding failed"
"$bin" price "$t/round.json" --global-batch 256 > "$t/exact-price.txt" 2>&1 || fail "price of the first plan at 256 failed"
grep -q "fastest division runs 260 samples at .* it runs the 256 asked at" "$t/exact-price.txt" ||
    fail "price of the first plan at 256: $(cat "$t/exact-price.txt")"
python3 - "$t" <<'PY' || fail "the exact plan"
import json, re, sys
t = sys.argv[1]
e, r = json.load(open(t + "/exact.json")), json.load(open(t + "/round.json"))
runs = lambda p: sum(x["replicas"] * x["micro_batch"] * x["micro_batches"] for x in p["templates"])
assert runs(e) == 256 and e["global_batch"] == 256, runs(e)
assert r["global_batch"] == 260 and runs(r) == 260, (r["global_batch"], runs(r))
# the plan kept is at least as fast as the first plan at its exact division
repriced = float(re.search(r"it runs the 256 asked at ([0-9.]+)", open(t + "/exact-price.txt").read()).group(1))
assert e["iter_per_s"] >= repriced - 5e-5, (e["iter_per_s"], repriced)
PY

# usage errors: exit 2
"$bin" price 2>/dev/null; [ $? -eq 2 ] || fail "price without a file must exit 2"
"$bin" export "$t/plan.json" 2>/dev/null; [ $? -eq 2 ] || fail "export without --format must exit 2"
"$bin" export --format yaml "$t/plan.json" 2>/dev/null; [ $? -eq 2 ] || fail "export --format yaml must exit 2"
"$bin" price "$t/plan.json" --bogus 2>/dev/null; [ $? -eq 2 ] || fail "unknown option must exit 2"
exit 0
