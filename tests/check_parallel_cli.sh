#!/bin/sh
# arachne price --parallel (a configuration the user already runs, priced
# with the planner's cost model) and arachne plan --compare.
set -u
bin=${ARACHNE_BIN:-bin/arachne}
[ -x "$bin" ] || { echo "no $bin"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "check_parallel_cli: $*"; exit 1; }

# The Megatron-Core README's GPT 16B row (tests/data/published-runs.json, id
# 339: 192 H100, TP 4, global batch 192, sequence 4096, --tp-comm-overlap,
# 489.1 model TFLOP/s per GPU = 4820 tokens/s per GPU by Megatron's FLOP
# count) from the command line alone: within the calibration's 20 % line.
out=$("$bin" price --parallel tp=4,pp=1,dp=48,mbs=1 --model examples/models/megatron-gpt-16b.json \
      --cluster h100:24x8 --global-batch 192 --seq-len 4096 --tp-comm-overlap --headroom 0) || fail "price --parallel: $out"
echo "$out" | grep -q "^given configuration tp=4,pp=1,dp=48,mbs=1, priced for megatron-gpt-16b on h100:24x8" \
    || fail "no title: $out"
tok=$(echo "$out" | sed -n 's/.* samples\/s, \([0-9]*\) tokens\/s.*/\1/p')
[ -n "$tok" ] || fail "no tokens/s: $out"
python3 -c "import sys; e = float(sys.argv[1]) / 192 / 4820.2 - 1; sys.exit(0 if abs(e) <= 0.20 else 1)" "$tok" \
    || fail "GPT 16B: $tok tokens/s is not within 20 % of 192 x 4820 tokens/s"

# the batch is never rounded: an error naming the nearest batches
out=$("$bin" price --parallel tp=2,pp=2,dp=8 --model llama3-8b --cluster h100:4x8 --global-batch 500 2>&1); rc=$?
[ $rc -eq 1 ] || fail "batch 500: exit $rc: $out"
echo "$out" | grep -q "496 or 504" || fail "batch 500: no nearest batches: $out"
# unsupported dimensions and bad keys name themselves
out=$("$bin" price --parallel tp=1,vp=2 --model llama3-8b --cluster h100:4x8 2>&1); [ $? -eq 1 ] || fail "vp=2 with pp=1 accepted"
echo "$out" | grep -q "vp=2 needs pp >= 2" || fail "vp=2 with pp=1: $out"
# context parallelism: tp x cp GPUs per stage, shown in the table; a cp the
# sequence cannot be split for (4096 = 2 x 3 x 682.67) names itself
out=$("$bin" price --parallel tp=4,cp=2,pp=2 --model llama3-8b --cluster h100:4x8 2>&1) || fail "cp=2 refused: $out"
echo "$out" | grep -q "context parallel 2" || fail "cp=2: no CP in the table: $out"
echo "$out" | grep -q "32 of 32 GPUs" || fail "cp=2: not tp x cp x pp x dp = 32 GPUs: $out"
out=$("$bin" price --parallel tp=1,cp=3 --model llama3-8b --cluster h100:4x8 2>&1); [ $? -eq 1 ] || fail "cp=3 accepted"
echo "$out" | grep -q "cp=3" || fail "cp=3: $out"
out=$("$bin" price --parallel tq=2 --model llama3-8b --cluster h100:4x8 2>&1); [ $? -eq 1 ] || fail "tq=2 accepted"
echo "$out" | grep -q "unknown key 'tq'" || fail "tq=2: $out"
out=$("$bin" price --parallel tp=16 --model llama3-8b --cluster h100:4x8 2>&1); [ $? -eq 1 ] || fail "tp=16 accepted: $out"
"$bin" price --parallel tp=2 plan.json --model llama3-8b --cluster h100:4x8 >/dev/null 2>&1; [ $? -eq 2 ] \
    || fail "--parallel with a plan file is not a usage error"
# layers= sets the split; JSON output is a plan the price command accepts back
"$bin" price --parallel tp=1,pp=2,dp=16,layers=14/18 --model llama3-8b --cluster h100:4x8 --json > "$t/p.json" \
    || fail "layers=14/18"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['templates'][0]['stages']; sys.exit(0 if [x['layers'] for x in s]==[[0,14],[14,32]] else 1)" \
    "$t/p.json" || fail "layers=14/18 gave another split"
out=$("$bin" price "$t/p.json") || fail "price of the given plan: $out"
echo "$out" | grep -q "(+0.00%)" || fail "the given plan reprices differently: $out"

# fsdp=F: sharded weights, gradients and optimizer state take less memory,
# the gathers are priced, and the plan file keeps the group
"$bin" price --parallel tp=1,pp=1,dp=8,mbs=1,fsdp=8 --model llama3-8b --cluster h200:1x8 --global-batch 64 --json \
    > "$t/f.json" || fail "fsdp=8"
"$bin" price --parallel tp=1,pp=1,dp=8,mbs=1 --model llama3-8b --cluster h200:1x8 --global-batch 64 --json \
    > "$t/z.json" || fail "fsdp off"
python3 -c "
import json, sys
f, z = (json.load(open(p)) for p in sys.argv[1:3])
tf, tz = f['templates'][0], z['templates'][0]
assert tf.get('fsdp') == 8 and 'fsdp' not in tz, (tf.get('fsdp'), tz.get('fsdp'))
assert tf['stages'][0]['memory_bytes'] < tz['stages'][0]['memory_bytes'] - 20e9
assert tf['stages'][0]['stage_s'] >= tz['stages'][0]['stage_s']
" "$t/f.json" "$t/z.json" || fail "fsdp=8 does not shard memory or price the gathers"
out=$("$bin" price "$t/f.json") || fail "price of the fsdp plan: $out"
echo "$out" | grep -q "(+0.00%)" || fail "the fsdp plan reprices differently: $out"
out=$("$bin" price --parallel tp=1,pp=1,dp=8,fsdp=3 --model llama3-8b --cluster h100:1x8 --global-batch 64 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q "does not divide" || fail "fsdp=3 with dp=8: $out"

# plan --compare: the planned plan against the user's configuration, both priced alike
out=$("$bin" plan --model llama3-8b --cluster h100:4x8 --samples 1 --compare tp=2,pp=2,dp=8,mbs=1) || fail "plan --compare: $out"
line=$(echo "$out" | grep "^compare: ")
[ -n "$line" ] || fail "no compare line: $out"
planned=$(echo "$out" | sed -n 's/^iteration \([0-9.]*\) s,.*/\1/p')
given=$("$bin" price --parallel tp=2,pp=2,dp=8,mbs=1 --model llama3-8b --cluster h100:4x8 | sed -n 's/^iteration \([0-9.]*\) s,.*/\1/p')
echo "$line" | grep -q "takes $given s per iteration, the planned plan $planned s: " || fail "compare line vs prices: $line ($given, $planned)"
python3 -c "
import re, sys
m = re.search(r': ([0-9.]+)x (faster|slower)', sys.argv[1]); g, p = float(sys.argv[2]), float(sys.argv[3])
want = g / p if p <= g else p / g
sys.exit(0 if m and abs(float(m.group(1)) - want) < 2e-3 and (m.group(2) == 'faster') == (p <= g) else 1)" "$line" "$given" "$planned" \
    || fail "compare ratio wrong: $line"
"$bin" plan --model llama3-8b --cluster h100:4x8 --samples 1 --compare tp=2,pp=2,dp=8 --json > "$t/o.json" 2> "$t/e" \
    || fail "plan --compare --json"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$t/o.json" || fail "--json output is not JSON with --compare"
grep -q "^compare: " "$t/e" || fail "--json: the compare line is not on stderr"
out=$("$bin" plan --model llama3-8b --cluster h100:4x8 --samples 1 --compare tp=3 2>&1); [ $? -eq 1 ] || fail "bad --compare accepted"
# vp=N: interleaved 1F1B, layers split evenly over pp x vp chunks; the table
# names the chunks, the JSON carries "vp", and it prices below plain 1F1B
# here (free NVLink sends, the bubble shrinks)
out=$("$bin" price --parallel tp=1,pp=4,vp=2,dp=8 --model llama3-8b --cluster h100:4x8) || fail "vp=2: $out"
echo "$out" | grep -q "interleaved 1F1B with 2 chunks per stage" || fail "vp=2: no interleaving in the table: $out"
echo "$out" | grep -q "^  0 .*chunks 0-4,16-20$" || fail "vp=2: stage 0 chunks: $out"
"$bin" price --parallel tp=1,pp=4,vp=2,dp=8 --model llama3-8b --cluster h100:4x8 --json > "$t/vp.json" || fail "vp=2 --json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['templates'][0]['vp']==2 else 1)" "$t/vp.json" \
    || fail "vp=2: no vp in the JSON"
"$bin" price --parallel tp=1,pp=4,dp=8 --model llama3-8b --cluster h100:4x8 --json > "$t/novp.json" || fail "vp=1 --json"
grep -q '"vp"' "$t/novp.json" && fail "vp=1: the JSON carries vp"
"$bin" price "$t/vp.json" > /dev/null || fail "the vp plan does not reprice"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if a['iteration_s'] < b['iteration_s'] else 1)" \
    "$t/vp.json" "$t/novp.json" || fail "vp=2 does not price below plain 1F1B"
out=$("$bin" price --parallel tp=1,pp=4,vp=3,dp=8 --model llama3-8b --cluster h100:4x8 2>&1); [ $? -eq 1 ] || fail "vp=3 accepted"
echo "$out" | grep -q "32 blocks do not split evenly into pp x vp = 4 x 3 = 12 chunks" || fail "vp=3: $out"
# plan --max-vp: the fill interleaves where it pays (here a 2-stage template
# over A100 and H100 nodes), the plan is faster than without, and reprices as made
"$bin" plan --model llama3-8b --cluster a100-40:4x4,h100:2x8 --global-batch 96 --samples 4 --json > "$t/p1.json" \
    || fail "plan --max-vp 1"
"$bin" plan --model llama3-8b --cluster a100-40:4x4,h100:2x8 --global-batch 96 --samples 4 --max-vp 8 --json \
    > "$t/p8.json" || fail "plan --max-vp 8"
python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert all('vp' not in t for t in a['templates']), 'default interleaves'
assert any(t.get('vp', 1) > 1 for t in b['templates']), 'max-vp 8 does not interleave'
assert b['iteration_s'] < a['iteration_s'], (b['iteration_s'], a['iteration_s'])" "$t/p1.json" "$t/p8.json" \
    || fail "plan --max-vp 8 did not interleave to a faster plan"
"$bin" price "$t/p8.json" | grep -q "(+0.00%)" || fail "the interleaved plan does not reprice as made"
out=$("$bin" plan --model llama3-8b --cluster h100:4x8 --max-vp 17 2>&1); [ $? -eq 2 ] || fail "--max-vp 17 accepted: $out"
echo "$out" | grep -q "max-vp" || fail "--max-vp 17: $out"
# an FSDP plan exports its sharding: torchtitan HSDP degrees (shard F,
# replicate dp / F); Megatron keeps ZeRO-1 and says so
"$bin" price --parallel tp=1,pp=1,dp=32,fsdp=8 --model llama3-8b --cluster h100:4x8 --json > "$t/fsdp.json" \
    || fail "fsdp=8 plan"
"$bin" export --format torchtitan "$t/fsdp.json" > "$t/fsdp.toml" || fail "torchtitan export of fsdp=8"
grep -q "^data_parallel_shard_degree = 8$" "$t/fsdp.toml" && grep -q "^data_parallel_replicate_degree = 4$" "$t/fsdp.toml" \
    || fail "torchtitan: not shard 8 x replicate 4: $(grep degree "$t/fsdp.toml")"
"$bin" export --format torchtitan-cli "$t/fsdp.json" | grep -q "data_parallel_replicate_degree 4 --parallelism.data_parallel_shard_degree 8 " \
    || fail "torchtitan-cli: not shard 8 x replicate 4"
"$bin" export --format megatron "$t/fsdp.json" | grep -q "^# NOTE: the plan shards weights, gradients and optimizer state over groups of 8" \
    || fail "megatron: no note on the FSDP groups it cannot express"
echo "parallel CLI ok"
