#!/bin/sh
# arachne plan's default decoding: best of 16 (greedy plus 15 samples, seed 0).
# The default plan equals --samples 16 --seed 0 (all but the planning time), and its plan
# is never slower than the greedy one (--samples 1), which it contains.
bin=${ARACHNE_BIN:-bin/arachne}
pol=examples/policies/default.arpol
fail() { echo "$*"; exit 1; }
[ -f "$pol" ] || { echo "skip: no bundled policy"; exit 0; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
set -- --policy "$pol" --model qwen3-8b --cluster a100-40:2x4,a6000:2x4+4x1 --global-batch 256 --json
"$bin" plan "$@" > "$t/default.json" || fail "plan with the default samples failed"
"$bin" plan "$@" --samples 16 --seed 0 > "$t/k16.json" || fail "plan --samples 16 failed"
"$bin" plan "$@" --samples 1 > "$t/greedy.json" || fail "plan --samples 1 failed"
python3 - "$t/default.json" "$t/k16.json" "$t/greedy.json" <<'PY' || fail "default plan: see the assertion above"
import json, sys
d, k, g = (json.load(open(p)) for p in sys.argv[1:4])
for p in (d, k, g):
    del p["planner"]["planning_s"]   # wall time, the only field that may differ
assert d == k, "the default plan is not the --samples 16 --seed 0 plan"
assert d["planner"]["samples"] == 16 and g["planner"]["samples"] == 1, (d["planner"], g["planner"])
assert d["iter_per_s"] >= g["iter_per_s"], ("slower than greedy", d["iter_per_s"], g["iter_per_s"])
PY
# issue 27 item 10: the maximum stays interactive.  --samples 100000 ran for
# minutes; above 1024 is now a usage error (exit 2) at once.
for cmd in plan; do
    start=$(date +%s)
    "$bin" $cmd --model llama3-8b --cluster a100-40:4x4,a6000:4x4,h100:2x8 --samples 100000 > /dev/null 2> "$t/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "$cmd --samples 100000: exit $rc, want 2 (usage)"
    grep -q 1024 "$t/err" || fail "$cmd --samples 100000: message does not give the maximum: $(cat "$t/err")"
    [ $(( $(date +%s) - start )) -lt 10 ] || fail "$cmd --samples 100000 took more than 10 s"
done
"$bin" replan --plan /nonexistent --cluster h100:1x8 --samples 1025 > /dev/null 2>&1
[ $? -eq 2 ] || fail "replan --samples 1025 is not a usage error"
exit 0
