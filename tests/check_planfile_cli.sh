#!/bin/sh
# Self-contained plan files: a plan made from a model JSON file, a cluster
# JSON file with a user-defined GPU type and a given profile reprices with
# `arachne price PLAN.json` alone to the same bytes; other inputs are named
# with the price they move; a plan file's model/cluster fields are never
# opened as paths; plans on a user-defined GPU type can be drawn (SVG) and
# replanned from the CLI.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not available"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/model.json" <<'JSON'
{"format": "arachne-model", "version": 1, "name": "my-3b", "blocks": 24, "hidden": 3072, "heads": 24,
 "kv_heads": 8, "head_dim": 128, "ffn": 8192, "vocab": 128256}
JSON
cat > "$t/cluster.json" <<'JSON'
{"format": "arachne-cluster", "version": 1,
 "gpu_types": [{"name": "mi300x", "memory_bytes": 192000000000, "flops": 1.307e15, "hbm_bytes_per_s": 5.3e12,
                "intra_bytes_per_s": 4.48e11, "inter_bytes_per_s": 5e10}],
 "nodes": [{"type": "h100", "count": 1, "gpus": 8}, {"type": "mi300x", "count": 2, "gpus": 8}]}
JSON
sed 's/"count": 2/"count": 3/' "$t/cluster.json" > "$t/bigger.json"
"$bin" profile --model "$t/model.json" --cluster "$t/cluster.json" --seq-len 2048 --out "$t/prof.json" >/dev/null \
    || fail "profile failed"
"$bin" plan --model "$t/model.json" --cluster "$t/cluster.json" --profile "$t/prof.json" --global-batch 256 \
    --samples 2 --dist-optimizer --json --svg "$t/plan.svg" > "$t/plan.json" || fail "plan on a user-defined GPU type failed"
grep -q "mi300x" "$t/plan.svg" || fail "the SVG does not draw the user-defined GPU type"

# 1. alone: the same bytes (model, cluster, profile and setup from the file)
"$bin" price "$t/plan.json" --json > "$t/again.json" || fail "price PLAN.json alone failed"
python3 - "$t/plan.json" "$t/again.json" <<'PY' || fail "price PLAN.json alone did not give the same bytes"
import sys
a = open(sys.argv[1]).read().rstrip("\n"); b = open(sys.argv[2]).read().rstrip("\n")
assert a == b, "differs"
PY
out=$("$bin" price "$t/plan.json") || fail "price table failed"
echo "$out" | grep -q "(+0.00%)" || fail "price alone moved the price: $out"
echo "$out" | grep -A1 "inputs that differ" | grep -q "none" || fail "price alone reports differences: $out"

# 2. other inputs: what differs, and how far the price moved
"$bin" profile --model "$t/model.json" --cluster "$t/cluster.json" --seq-len 2048 --out "$t/gen.json" >/dev/null
python3 - "$t/prof.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["entries"]:
    if e["gpu"] == "mi300x": e["fwd_s"] *= 1.5
json.dump(d, open(sys.argv[1] + ".slow", "w"))
PY
out=$("$bin" price "$t/plan.json" --profile "$t/prof.json.slow" --global-batch 128 --allow-batch-rounding 2>/dev/null) \
    || fail "price with other inputs failed"
echo "$out" | grep -q "profile: .* entries changed (times by up to 50.0%)" || fail "changed profile not named: $out"
echo "$out" | grep -q "global batch: plan 256 -> given 128" || fail "changed batch not named: $out"
echo "$out" | grep -q "repriced .* s ([+-][0-9]" || fail "no price movement shown: $out"
echo "$out" | grep -q "(+0.00%)" && fail "a slower profile and a smaller batch did not move the price: $out"
python3 - "$t/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["ffn"] = 9216
json.dump(d, open(sys.argv[1] + ".wide", "w"))
PY
out=$("$bin" price "$t/plan.json" --model "$t/model.json.wide") || fail "price with another model failed"
echo "$out" | grep -q 'model: plan "ffn": 8192, -> given "ffn": 9216,' || fail "changed model field not named: $out"

# ... and a model of another name is priced on a profile generated for it
# (the embedded one times the plan's model)
python3 - "$t/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["name"] = "my-3b-renamed"
json.dump(d, open(sys.argv[1] + ".renamed", "w"))
PY
out=$("$bin" price "$t/plan.json" --model "$t/model.json.renamed" 2>&1) || fail "price with a renamed model failed: $out"
echo "$out" | grep -q "iter/s" || fail "price with a renamed model printed no price: $out"

# 3. an edited embedded profile is refused with a clear message
python3 - "$t/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["inputs"]["profile"]["entries"][0]["fwd_s"] *= 2
json.dump(d, open(sys.argv[1] + ".edited", "w"))
PY
out=$("$bin" price "$t/plan.json.edited" 2>&1) && fail "an edited profile was accepted"
echo "$out" | grep -q "changed after the plan was priced" || fail "edited profile message: $out"

# 4. a plan file's model and cluster fields are text, never paths
mkfifo "$t/fifo" || { echo "mkfifo unavailable"; exit 77; }
python3 - "$t" <<'PY'
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/plan.json")); del d["inputs"]; d["version"] = 1
for name, key, val in (("fifo", "model", t + "/fifo"), ("zero", "model", "/dev/zero"),
                       ("passwd", "cluster", "/etc/passwd"), ("cpath", "cluster", t + "/cluster.json")):
    e = dict(d); e[key] = val
    json.dump(e, open("%s/v1_%s.json" % (t, name), "w"))
PY
for n in fifo zero passwd cpath; do
    for cmd in "price" "export --format ranks" "replan --cluster h100:2x8 --plan"; do
        out=$(timeout 20 "$bin" $cmd "$t/v1_$n.json" 2>&1); rc=$?
        [ $rc -eq 1 ] || fail "$cmd: v1 plan with a path in a field ($n): exit $rc (124 = hung): $out"
    done
done
out=$(timeout 20 "$bin" price "$t/plan.json" --model "$t/fifo" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--model FIFO: exit $rc: $out"
echo "$out" | grep -q "is not a regular file" || fail "--model FIFO message: $out"
out=$(timeout 20 "$bin" price "$t/fifo" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a FIFO as the plan file: exit $rc: $out"
# a version-1 plan still reads when the user names the inputs
python3 - "$t" <<'PY'
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/plan.json")); del d["inputs"]; d["version"] = 1
json.dump(d, open(t + "/v1.json", "w"))
PY
"$bin" price "$t/v1.json" --model "$t/model.json" --cluster "$t/cluster.json" --profile "$t/prof.json" \
    | grep -q "(+0.00%)" || fail "a version-1 plan with its inputs named does not reprice the same"

# drawn from the plan file alone (the embedded cluster, not the catalog)
"$bin" price "$t/plan.json" --svg "$t/again.svg" > /dev/null || fail "price --svg of a user-defined GPU type failed"
grep -q "mi300x" "$t/again.svg" || fail "price --svg does not draw the user-defined GPU type"

# 5. replan a plan on a user-defined GPU type (cluster from the plan file)
"$bin" replan --plan "$t/plan.json" --cluster "$t/bigger.json" --samples 2 --out "$t/next.json" \
    --allow-batch-rounding > "$t/replan.txt" \
    || fail "replan of a plan on a user-defined GPU type failed: $(cat "$t/replan.txt")"
grep -q "decision:" "$t/replan.txt" || fail "replan printed no decision"
"$bin" price "$t/next.json" --json > /dev/null || fail "the replanned plan does not reprice alone"

# 6. the global batch is never changed silently: the plan runs exactly the
#    batch asked for, or the command fails naming the nearest exact batches;
#    --allow-batch-rounding makes the batch what the plan runs
for b in 500 501 503; do
    for how in "plan --samples 2" "search --method random --budget 40"; do
        out=$("$bin" $how --model llama3-8b --cluster h100:4x8 --global-batch $b --json 2>"$t/err"); rc=$?
        if [ $rc -eq 0 ]; then
            echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin); b = int(sys.argv[1])
runs = sum(t["replicas"] * t["micro_batch"] * t["micro_batches"] for t in d["templates"])
assert d["global_batch"] == b and runs == b, (d["global_batch"], runs)' $b \
                || fail "$how --global-batch $b: exit 0 with a plan that does not run $b samples"
        else
            [ $rc -eq 1 ] || fail "$how --global-batch $b: exit $rc"
            grep -q "global batch $b: the \(plan\|cost model's micro-batch assignment for this plan\) runs [0-9]* samples per iteration; .*exact" "$t/err" \
                || fail "$how --global-batch $b: message: $(cat "$t/err")"
            out=$("$bin" $how --model llama3-8b --cluster h100:4x8 --global-batch $b --json \
                  --allow-batch-rounding 2>"$t/err") || fail "$how --allow-batch-rounding failed"
            grep -q "rounded to" "$t/err" || fail "rounding not announced: $(cat "$t/err")"
            echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
runs = sum(t["replicas"] * t["micro_batch"] * t["micro_batches"] for t in d["templates"])
assert d["global_batch"] == runs, (d["global_batch"], runs)' || fail "rounded plan records another batch"
        fi
    done
done

# 7. Sailor round trip: export --format sailor, import it back, same plan and price (Sailor has no
#    context parallelism and no FSDP: the search keeps them off)
"$bin" search --method random --budget 40 --model llama3-8b --cluster a100-40:4x4 --global-batch 64 --no-context-parallel \
    --no-fsdp-search --json \
    > "$t/s.json" || fail "search for the Sailor round trip failed"
"$bin" export --format sailor "$t/s.json" > "$t/s.sailor" || fail "export sailor failed"
"$bin" import --format sailor "$t/s.sailor" --model llama3-8b --cluster a100-40:4x4 --global-batch 64 --json \
    > "$t/back.json" || fail "import sailor failed"
python3 - "$t/s.json" "$t/back.json" <<'PY' || fail "the imported Sailor plan differs"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
shape = lambda d: sorted((t["replicas"], t["micro_batch"], [(s["gpu"], s["tp"], s["layers"]) for s in t["stages"]]) for t in d["templates"])
assert shape(a) == shape(b), (shape(a), shape(b))
assert b["planner"]["method"] == "sailor-import"
assert abs(a["iteration_s"] - b["iteration_s"]) <= 1e-9 * a["iteration_s"], (a["iteration_s"], b["iteration_s"])
PY
python3 - "$t/s.sailor" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad = json.loads(json.dumps(d)); bad["pipeline_list"][0]["tmp_per_stage"][0][0][0][0][0] = "H100"
json.dump(bad, open(sys.argv[1] + ".h100", "w"))
vm = [[["A100-40", 4, "us-central1-a"]], 2]
uneven = {"pipeline_list": [{"num_stages": 2, "layers_per_stage": [list(range(0, 17)), list(range(17, 34))],
                             "tmp_per_stage": [[vm, vm], [vm]], "dp": [2, 1]}], "mbs": 1}
json.dump(uneven, open(sys.argv[1] + ".uneven", "w"))
bad = json.loads(json.dumps(d)); bad["pipeline_list"][0]["tmp_per_stage"][0][0] = ["A100-40", 4, "us-central1-a", 2]
json.dump(bad, open(sys.argv[1] + ".flat", "w"))
bad = json.loads(json.dumps(d)); bad["pipeline_list"][0]["dp"][0] += 1
json.dump(bad, open(sys.argv[1] + ".dp", "w"))
PY
for k in h100:"GPU type 'H100' is not in the cluster" uneven:"stage 1 has 1 replicas and stage 0 2" flat:"expected [[[gpu, gpus_per_vm, zone]], tp]" \
         dp:"stage 0: dp must be"; do
    ext=${k%%:*}; want=${k#*:}
    out=$("$bin" import --format sailor "$t/s.sailor.$ext" --model llama3-8b --cluster a100-40:4x4 --global-batch 64 2>&1); rc=$?
    [ $rc -eq 1 ] || fail "import of a bad Sailor plan ($ext): exit $rc"
    echo "$out" | grep -qF "$want" || fail "import of a bad Sailor plan ($ext): $out"
done
exit 0
