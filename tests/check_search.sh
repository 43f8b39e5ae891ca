#!/bin/sh
# arachne search: usage errors (exit 2), a small random and exhaustive search
# (JSON on stdout only), the plan table, exact batches ranked first, and an
# infeasible model (exit 1).
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || py=""
"$bin" search --help | grep -q "practical up to about 64 GPUs" || fail "help does not say where exhaustive is practical"
"$bin" search --model llama3-8b --cluster a100-40:1x4 2>/dev/null; [ $? -eq 2 ] || fail "missing --method must exit 2"
"$bin" search --method greedy --model llama3-8b --cluster a100-40:1x4 2>/dev/null; [ $? -eq 2 ] || fail "bad --method must exit 2"
"$bin" search --method random --budget 0 --model llama3-8b --cluster a100-40:1x4 2>/dev/null; [ $? -eq 2 ] || fail "--budget 0 must exit 2"
"$bin" search --method random --max-templates 2 --model llama3-8b --cluster a100-40:1x4 2>/dev/null; [ $? -eq 2 ] || fail "--max-templates with random must exit 2"
"$bin" search --method random --model llama3-8b 2>/dev/null; [ $? -eq 2 ] || fail "missing --cluster must exit 2"
out=$("$bin" search --method random --budget 40 --seed 3 --model llama3-8b --cluster a100-40:2x4,h100:1x4 --json) || fail "random search failed"
if [ -n "$py" ]; then
    printf '%s' "$out" | "$py" -c 'import json,sys; d=json.load(sys.stdin); assert d["planner"]["method"] == "random", d["planner"]' \
        || fail "random --json is not a plan: $out"
fi
out2=$("$bin" search --method random --budget 40 --seed 3 --model llama3-8b --cluster a100-40:2x4,h100:1x4 --json) || fail "second run failed"
# same seed, same plan (planning time aside)
a=$(printf '%s' "$out" | sed 's/"planning_s":[^,}]*//')
b=$(printf '%s' "$out2" | sed 's/"planning_s":[^,}]*//')
[ "$a" = "$b" ] || fail "same seed gave different plans"
out=$("$bin" search --method exhaustive --max-depth 2 --model llama3-8b --cluster a100-40:1x4,h100:1x2 --json) || fail "exhaustive search failed"
if [ -n "$py" ]; then
    printf '%s' "$out" | "$py" -c 'import json,sys; d=json.load(sys.stdin); assert d["planner"]["method"] == "exhaustive", d["planner"]' \
        || fail "exhaustive --json is not a complete exhaustive plan: $out"
fi
"$bin" search --method random --budget 20 --model llama3-8b --cluster a100-40:2x4 | grep -q "planner: random" || fail "table output"
# three H100 nodes, batch 64: the fastest plan (three replicas) runs 72
# samples; by default the search splits it to run 64 exactly (one replica
# runs a micro-batch fewer); --allow-batch-rounding lets speed alone decide
# (then the batch becomes what the plan runs)
ex="search --method exhaustive --max-depth 4 --model llama3-8b --cluster h100:3x8 --global-batch 64"
"$bin" $ex > /dev/null || fail "exhaustive search at batch 64 on h100:3x8 found no exact plan"
err=$("$bin" $ex --allow-batch-rounding 2>&1 >/dev/null) || fail "--allow-batch-rounding search failed"
case "$err" in *"rounded to 72"*) ;; *) fail "--allow-batch-rounding did not return the fastest (72-sample) plan: $err" ;; esac
err=$("$bin" search --method random --budget 5 --model deepseek-v3 --cluster a6000:1x4 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "infeasible model: exit $rc, want 1"
case "$err" in "arachne: "*"does not fit"*) ;; *) fail "infeasible message: $err" ;; esac
exit 0
