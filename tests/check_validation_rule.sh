#!/bin/sh
# examples/eval/validation_rule.py, the rule that chooses between policy
# files (docs/evaluation.md, "Reproducing"): `config` writes a fast eval
# config that arachne eval accepts (no exhaustive search, no refinement);
# `compare` computes the geometric means of run / base per population and
# pooled, matching hand-computed values, leaves out and counts a
# composition one run did not plan, gives 1 for a run against itself, and
# refuses results of other sets, other files or a composition without a
# name (exit 2, naming the file).  `gap` gives greedy / best-of-16 within
# one run per population, matching hand-computed values; `config` also
# turns an `arachne train` config into a fast eval config that arachne
# eval accepts, and names a bad composition of one.
bin=${ARACHNE_BIN:-bin/arachne}
py=${PYTHON:-python3}
rule=examples/eval/validation_rule.py
fail() { echo "$*"; exit 1; }
command -v "$py" >/dev/null 2>&1 || { echo "check_validation_rule: no python"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tiny_eval_config.sh"
tiny_eval_config "$tmp"
"$py" "$rule" config "$tmp/eval.json" > "$tmp/fast.json" || fail "config failed"
"$bin" policy init --seed 3 --hidden 16 --layers 1 --out "$tmp/p.arpol" >/dev/null || fail "policy init failed"
"$bin" eval --config "$tmp/fast.json" --policy "$tmp/p.arpol" --json --out "$tmp/a.json" >/dev/null \
    || fail "eval of the fast config failed"
"$py" - "$tmp/a.json" <<'PY' || fail "the fast config ran a baseline it should not"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["refine_evaluations"] == 0 and r["random_factor"] == 1, r
c = r["compositions"][0]["results"]
assert not c.get("exhaustive", {}).get("plan"), c.get("exhaustive")
# no refinement: the default-plan column adds only the recompute probe's
# few fills (docs/search.md, "Full recomputation as the planner's choice")
extra = c["policy-best2+refine"]["evaluations"] - c["policy-best2"]["evaluations"]
assert 1 <= extra <= 6, c
assert r["flat"]["source"] == "none", r["flat"]
PY
out=$("$py" "$rule" compare "A=$tmp/a.json" "B=$tmp/a.json") || fail "compare of a run with itself failed"
printf '%s\n' "$out" | grep -q '^B  *set1  *all  *1  *1.0000  *1.0000  *1.0000' || fail "self compare: $out"

# hand-made results: greedy x2 on d1, best-of-16 x0.5 on m1, d2 unplanned by the run
"$py" - "$tmp" <<'PY' || fail "writing the hand-made results failed"
import json, sys
def res(rows):
    comps = [{"name": n, "moe": moe, "results": {"policy": {"plan": g is not None, "iter_per_s": g or 0},
              "policy-best16": {"plan": True, "iter_per_s": b}}} for n, moe, g, b in rows]
    return {"format": "arachne-eval-result", "version": 1, "samples": 16, "compositions": comps}
base = [("d1", False, 1.0, 2.0), ("d2", False, 1.0, 1.0), ("m1", True, 4.0, 4.0)]
run = [("d1", False, 2.0, 2.0), ("d2", False, None, 1.0), ("m1", True, 4.0, 2.0)]
json.dump(res(base), open(sys.argv[1] + "/base.json", "w"))
json.dump(res(run), open(sys.argv[1] + "/run.json", "w"))
json.dump(res(run[:2]), open(sys.argv[1] + "/short.json", "w"))
nameless = res(run)
del nameless["compositions"][1]["name"]
json.dump(nameless, open(sys.argv[1] + "/nameless.json", "w"))
PY
out=$("$py" "$rule" compare "E=$tmp/base.json" "R=$tmp/run.json") || fail "compare failed"
# all: greedy sqrt(2 x 1) = 1.4142, best16 sqrt(1 x 0.5) = 0.7071, score 1; dense: d1 only
printf '%s\n' "$out" | grep -q '^R  *set1  *all  *2  *1.4142  *0.7071  *1.0000  *1.000  *1$' || fail "all row: $out"
printf '%s\n' "$out" | grep -q '^R  *set1  *dense  *1  *2.0000  *1.0000  *1.4142  *2.000  *1$' || fail "dense row: $out"
printf '%s\n' "$out" | grep -q '^R  *set1  *moe  *1  *1.0000  *0.5000  *0.7071  *1.000  *0$' || fail "moe row: $out"
printf '%s\n' "$out" | grep -q '^R  *pooled  *all  *2  *1.0000$' || fail "pooled row: $out"
err=$("$py" "$rule" compare "E=$tmp/base.json" "R=$tmp/short.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "other compositions: exit $rc, want 2"
printf '%s' "$err" | grep -q "short.json" || fail "other compositions: message does not name the file: $err"
err=$("$py" "$rule" compare "E=$tmp/base.json" "R=$tmp/eval.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a config as a result: exit $rc, want 2"
printf '%s' "$err" | grep -q "eval.json: not an arachne-eval result" || fail "config as result: $err"
err=$("$py" "$rule" compare "E=$tmp/base.json" "R=$tmp/nameless.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a composition without a name: exit $rc, want 2"
printf '%s' "$err" | grep -q "nameless.json: composition 1 has no .name. or .results." || fail "nameless: $err"
err=$("$py" "$rule" compare "E=$tmp/base.json" "R=$tmp/base.json,$tmp/run.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "file count mismatch: exit $rc, want 2"

# gap: greedy / best-of-16 within one run; base: d1 0.5, d2 1, m1 1; run: d2 unplanned
out=$("$py" "$rule" gap "$tmp/base.json" "$tmp/run.json") || fail "gap failed"
printf '%s\n' "$out" | grep -q 'base.json  *all  *3  *0.7937  *0.500  *0.67  *0$' || fail "gap all row: $out"
printf '%s\n' "$out" | grep -q 'base.json  *dense  *2  *0.7071  *0.500  *0.50  *0$' || fail "gap dense row: $out"
printf '%s\n' "$out" | grep -q 'run.json  *all  *2  *1.4142  *1.000  *1.00  *1$' || fail "gap run row: $out"
err=$("$py" "$rule" gap "$tmp/eval.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "gap of a config: exit $rc, want 2"

# config of an `arachne train` config: its compositions with the eval setup keys
cat > "$tmp/train.json" <<JSON
{"name": "t", "seed": 1, "updates": 1, "setup": {"global_batch": 64, "seq_len": 2048, "stage_reversal": false},
 "compositions": [ {"name": "c0", "model": "llama3-8b", "cluster": "h100:1x8", "setup": {"global_batch": 32}},
                   {"name": "c1", "model": "llama3-8b", "cluster": "a100-80:1x8"} ]}
JSON
"$py" "$rule" config "$tmp/train.json" > "$tmp/tfast.json" || fail "config of a training config failed"
"$py" - "$tmp/tfast.json" <<'PY' || fail "the training config's fast config is wrong"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["format"] == "arachne-eval" and c["refine_evaluations"] == 0 and c["exhaustive"]["max_gpus"] == 0, c
assert c["compositions"] == [
    {"name": "c0", "model": "llama3-8b", "cluster": "h100:1x8", "global_batch": 32, "seq_len": 2048},
    {"name": "c1", "model": "llama3-8b", "cluster": "a100-80:1x8", "global_batch": 64, "seq_len": 2048}], c
PY
"$bin" eval --config "$tmp/tfast.json" --policy "$tmp/p.arpol" --json --out "$tmp/t.json" >/dev/null \
    || fail "eval of the training config's fast config failed"
printf '{"updates": 1, "setup": {}, "compositions": [{"name": "x", "model": 3}]}' > "$tmp/badtrain.json"
err=$("$py" "$rule" config "$tmp/badtrain.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a bad training config: exit $rc, want 2"
printf '%s' "$err" | grep -q "badtrain.json: composition 0 needs string" || fail "bad training config: $err"
exit 0
