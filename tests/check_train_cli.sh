#!/bin/sh
# arachne train: a tiny config writes a loadable policy with metadata, the CSV
# log and the SVG curve; --stop-after + --resume gives the same policy bytes
# as one uninterrupted run; bad usage and bad configs fail with one line.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/cfg.json" <<JSON
{
  "name": "cli-check", "seed": 5, "updates": 4, "log_every": 2,
  "policy": { "hidden": 32, "layers": 1, "init_seed": 4 },
  "setup": { "global_batch": 256 },
  "hyper": { "group_size": 4, "ppo_epochs": 2, "sil_interval": 2, "learning_rate": 0.002 },
  "compositions": [
    { "model": "llama3-8b", "cluster": "a100-40:2x4,h100:1x8", "name": "small" },
    { "models": ["qwen3-8b"], "clusters": ["a6000:2x4,h100:1x8"] }
  ],
  "output": { "policy": "$t/a.arpol", "csv": "$t/a.csv", "svg": "$t/a.svg", "checkpoint": "$t/a.ckpt" }
}
JSON
"$bin" train --config "$t/cfg.json" 2> "$t/err" || { cat "$t/err"; fail "train failed"; }
grep -q "^update 4/4" "$t/err" || { cat "$t/err"; fail "no progress line for update 4"; }
[ -s "$t/a.arpol" ] && [ -s "$t/a.ckpt" ] || fail "policy or checkpoint missing"
head -n 1 "$t/a.csv" | grep -q "^update,mean_reward_norm,mean_best_norm,entropy,grad_norm,seconds$" || fail "CSV header"
[ "$(wc -l < "$t/a.csv")" -eq 5 ] || fail "CSV rows: $(cat "$t/a.csv")"
grep -q "^<svg" "$t/a.svg" && grep -q "polyline" "$t/a.svg" && grep -q "best plan found" "$t/a.svg" || fail "SVG content"
"$bin" policy info "$t/a.arpol" > "$t/info" 2>&1 || { cat "$t/info"; fail "policy info"; }
grep -q "cli-check" "$t/info" || { cat "$t/info"; fail "metadata does not name the config"; }
grep -q "qwen3-8b@a6000:2x4,h100:1x8" "$t/info" || { cat "$t/info"; fail "metadata lacks the compositions"; }
# interrupted after 2 updates, then resumed: identical policy
sed -e "s|$t/a\.|$t/b.|g" "$t/cfg.json" > "$t/cfg_b.json"
"$bin" train --config "$t/cfg_b.json" --stop-after 2 2> "$t/err" || { cat "$t/err"; fail "stop-after run"; }
grep -q "resume" "$t/err" || fail "no resume hint"
"$bin" train --config "$t/cfg_b.json" --resume "$t/b.ckpt" 2> "$t/err" || { cat "$t/err"; fail "resumed run"; }
cmp "$t/a.arpol" "$t/b.arpol" || fail "resumed policy differs from the uninterrupted one"
[ "$(wc -l < "$t/b.csv")" -eq 5 ] || fail "resumed CSV rows: $(cat "$t/b.csv")"
# model selection: scored every update, the snapshot file is gone afterwards,
# the metadata's greedy score is the best of the scored updates, and an
# interrupted + resumed run still ends with the same bytes
sed -e "s|$t/a\.|$t/c.|g" -e 's|"checkpoint": "\([^"]*\)" }|"checkpoint": "\1", "select_every": 1 }|' "$t/cfg.json" > "$t/cfg_c.json"
grep -q '"select_every": 1' "$t/cfg_c.json" || fail "test setup: $(cat "$t/cfg_c.json")"
"$bin" train --config "$t/cfg_c.json" 2> "$t/err" || { cat "$t/err"; fail "train with select_every"; }
[ -s "$t/c.arpol" ] && [ ! -e "$t/c.arpol.select" ] || fail "selected policy missing or snapshot left behind"
"$bin" policy info --json "$t/c.arpol" > "$t/cinfo" 2>&1 || { cat "$t/cinfo"; fail "policy info (selected)"; }
grep -q "mean_norm_greedy" "$t/cinfo" || { cat "$t/cinfo"; fail "selected policy metadata"; }
if grep -q "keeping the weights of update" "$t/err"; then
    grep -q "selected_update" "$t/cinfo" || fail "a kept earlier update is not recorded in the metadata"
fi
sed -e "s|$t/c\.|$t/d.|g" "$t/cfg_c.json" > "$t/cfg_d.json"
"$bin" train --config "$t/cfg_d.json" --stop-after 2 2> "$t/err" || { cat "$t/err"; fail "select stop-after run"; }
[ -e "$t/d.arpol.select" ] || fail "no selection snapshot kept for --resume"
"$bin" train --config "$t/cfg_d.json" --resume "$t/d.ckpt" 2> "$t/err" || { cat "$t/err"; fail "select resumed run"; }
cmp "$t/c.arpol" "$t/d.arpol" || fail "resumed selection differs from the uninterrupted one"
# model selection on a validation list: the kept score is
# sqrt(greedy iter/s x best-of-16 iter/s) of the kept policy on the one
# validation composition, recorded in the metadata
sed -e "s|$t/c\.|$t/v.|g" -e 's|^  "output":|  "validation": [ { "model": "qwen3-8b", "cluster": "a100-40:1x4,h100:1x8", "name": "val" } ],\n  "output":|' \
    "$t/cfg_c.json" > "$t/cfg_v.json"
grep -q '"validation"' "$t/cfg_v.json" || fail "test setup: $(cat "$t/cfg_v.json")"
"$bin" train --config "$t/cfg_v.json" 2> "$t/err" || { cat "$t/err"; fail "train with validation"; }
[ -s "$t/v.arpol" ] && [ ! -e "$t/v.arpol.select" ] || fail "validation: policy missing or snapshot left behind"
"$bin" policy info --json "$t/v.arpol" > "$t/vinfo" 2>&1 || { cat "$t/vinfo"; fail "policy info (validation)"; }
grep -q '"validation":\["val"\]' "$t/vinfo" || { cat "$t/vinfo"; fail "metadata lacks the validation names"; }
score=$(sed -n 's/.*"validation_score_iter_per_s":\([0-9.eE+-]*\).*/\1/p' "$t/vinfo")
[ -n "$score" ] || { cat "$t/vinfo"; fail "metadata lacks the validation score"; }
# the score is of the policy's own plans (greedy and best-of-16), so no refinement
for k in 1 16; do
    "$bin" plan --policy "$t/v.arpol" --model qwen3-8b --cluster a100-40:1x4,h100:1x8 --global-batch 256 --samples $k --seed 1 --refine 0 \
        --json > "$t/vplan$k" 2>&1 || { cat "$t/vplan$k"; fail "plan with the selected policy"; }
done
g=$(sed -n 's/.*"iter_per_s": *\([0-9.eE+-]*\).*/\1/p' "$t/vplan1" | head -n 1)
b=$(sed -n 's/.*"iter_per_s": *\([0-9.eE+-]*\).*/\1/p' "$t/vplan16" | head -n 1)
python3 -c "import sys, math; s, g, b = map(float, sys.argv[1:]); sys.exit(0 if abs(s - math.sqrt(g * b)) <= 1e-9 * s else 1)" \
    "$score" "$g" "$b" || fail "validation score $score is not sqrt(greedy $g x best-of-16 $b) of the kept policy"
sed -e 's|, "select_every": 1 }| }|' "$t/cfg_v.json" > "$t/cfg_v2.json"
"$bin" train --config "$t/cfg_v2.json" 2> "$t/err"; [ $? -eq 1 ] || fail "validation without select_every should fail"
grep -q "needs output.select_every" "$t/err" || fail "message: $(cat "$t/err")"
sed -e 's|"cluster": "a100-40:1x4,h100:1x8"|"cluster": "zz300:1x4"|' "$t/cfg_v.json" > "$t/cfg_v3.json"
"$bin" train --config "$t/cfg_v3.json" 2> "$t/err"; [ $? -eq 1 ] || fail "a bad validation cluster should fail"
grep -q "val" "$t/err" || fail "message should name the validation entry: $(cat "$t/err")"
# usage errors (exit 2) and failures (exit 1), one "arachne:" line
"$bin" train 2> "$t/err"; [ $? -eq 2 ] || fail "missing --config should exit 2"
"$bin" train --config "$t/cfg.json" --threads x 2> "$t/err"; [ $? -eq 2 ] || fail "bad --threads should exit 2"
"$bin" train --config "$t/nope.json" 2> "$t/err"; [ $? -eq 1 ] || fail "missing config should exit 1"
grep -q "^arachne: " "$t/err" || fail "message: $(cat "$t/err")"
echo '{"updates": 2, "compositions": [], "output": {"policy": "x"}, "typo": 1}' > "$t/bad.json"
"$bin" train --config "$t/bad.json" 2> "$t/err"; [ $? -eq 1 ] || fail "unknown key should fail"
grep -q "typo" "$t/err" || fail "message should name the key: $(cat "$t/err")"
echo '{"updates": 2, "compositions": [{"model": "llama3-8b", "cluster": "h100:1x8"}], "hyper": {"clip": 3}, "output": {"policy": "x"}}' > "$t/bad2.json"
"$bin" train --config "$t/bad2.json" 2> "$t/err"; [ $? -eq 1 ] || fail "clip 3 should fail"
grep -q "CLIP" "$t/err" || fail "message should name the option: $(cat "$t/err")"
echo '{"updates": 2, "compositions": [{"model": "llama3-8b", "cluster": "h100:1x8"}], "setup": {"exact_batch": "yes"}, "output": {"policy": "x"}}' > "$t/bad3.json"
"$bin" train --config "$t/bad3.json" 2> "$t/err"; [ $? -eq 1 ] || fail "a string exact_batch should fail"
grep -q "exact_batch" "$t/err" || fail "message should name exact_batch: $(cat "$t/err")"
# setup.exact_batch false (the bundled policy's config) is taken
sed -e "s|\"setup\": { \"global_batch\": 256 }|\"setup\": { \"global_batch\": 256, \"exact_batch\": false }|" -e "s|$t/a\.|$t/e.|g" "$t/cfg.json" > "$t/cfg_e.json"
grep -q '"exact_batch": false' "$t/cfg_e.json" || fail "test setup: $(cat "$t/cfg_e.json")"
"$bin" train --config "$t/cfg_e.json" 2> "$t/err" || { cat "$t/err"; fail "exact_batch false run"; }
[ -s "$t/e.arpol" ] || fail "exact_batch false wrote no policy"
"$bin" train --config "$t/cfg.json" --resume "$t/a.csv" 2> "$t/err"; [ $? -eq 1 ] || fail "a CSV is not a checkpoint"
grep -q "magic" "$t/err" || fail "message: $(cat "$t/err")"
# two outputs naming one file are refused before training (the CSV log
# used to overwrite the policy), also through another name of the file
sed -e 's|"csv": "[^"]*"|"csv": "'"$t"'/./a.arpol"|' "$t/cfg.json" > "$t/cfg_same.json"
cp "$t/a.arpol" "$t/keep.arpol"
"$bin" train --config "$t/cfg_same.json" 2> "$t/err"; [ $? -eq 1 ] || fail "csv = policy should fail"
grep -q "output.policy and output.csv name the same file" "$t/err" || fail "message: $(cat "$t/err")"
cmp "$t/a.arpol" "$t/keep.arpol" || fail "the refused run changed the policy"
echo "train CLI ok"
