#!/bin/sh
# arachne replan: an unchanged cluster keeps the running plan with nothing to
# move; a grown cluster gives a decision whose JSON parses and follows the
# switch inequality; a cluster without the running plan's GPUs forces a
# switch; --out writes a plan that 'arachne price' accepts on the new
# cluster; bad usage exits 2 with one line.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
export ARACHNE_POLICY=
# (--refine 0: the running plan is what replan's best-of-4 would build, so the same cluster keeps it with nothing to move)
"$bin" plan --model llama3-8b --cluster rtx-pro-6000:1x3,a6000:1x4 --samples 4 --refine 0 --json > "$t/old.json" 2>/dev/null ||
    fail "arachne plan failed"

"$bin" replan --plan "$t/old.json" --cluster rtx-pro-6000:1x3,a6000:1x4 --samples 4 --refine 0 > "$t/same.txt" 2>/dev/null ||
    fail "replan on the same cluster failed: $(cat "$t/same.txt")"
grep -q "^decision: KEEP" "$t/same.txt" || fail "same cluster did not keep: $(cat "$t/same.txt")"
grep -q "0.000 GB in 0 transfers" "$t/same.txt" || fail "same cluster moved state: $(cat "$t/same.txt")"

"$bin" replan --plan "$t/old.json" --cluster rtx-pro-6000:1x3,a6000:2x4,a5000:1x4 --samples 4 --allow-batch-rounding --json \
    --out "$t/next.json" > "$t/grow.json" 2>"$t/err" || fail "replan on a grown cluster failed: $(cat "$t/err")"
grep -v "rounded to .*--allow-batch-rounding" "$t/err" | grep -q . && fail "--json wrote to stderr: $(cat "$t/err")"
"$bin" price "$t/next.json" > /dev/null 2>"$t/err" || fail "the plan to run does not price: $(cat "$t/err")"
grep -q "rtx-pro-6000:1x3,a6000:2x4,a5000:1x4" "$t/next.json" || fail "the plan to run is not for the new cluster"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$t/grow.json" "$t/next.json" <<'PY' || fail "decision JSON check failed"
import json, sys
d = json.load(open(sys.argv[1]))
# the plan --out wrote (repriced at the batch it runs) trains what the decision counted
p = json.load(open(sys.argv[2]))
assert abs(p["samples_per_s"] - d["new_samples_per_s"]) <= 1e-12 * p["samples_per_s"], (p["samples_per_s"], d["new_samples_per_s"])
assert d["format"] == "arachne-replan" and d["version"] == 1
to, tn, h, c = d["old_samples_per_s"], d["new_samples_per_s"], d["horizon_s"], d["cost_s"]
assert abs(c - d["migration_s"] - d["restart_s"]) < 1e-9 * (1 + c)
want = "switch" if (tn - to) * (h - c) > to * c else "keep"
assert d["action"] == want, (d["action"], want)
assert abs(sum(m["bytes"] for m in d["migration"]) - d["bytes_moved"]) <= 1e-6 * (1 + d["bytes_moved"])
PY
fi

# a plan that cannot run the batch exactly: with --allow-batch-rounding the
# decision counts the samples the plan it writes runs (513 of 512 here)
"$bin" plan --model llama3-8b --cluster a100-40:4x4,a6000:2x4+4x1 --samples 4 --refine 0 --json > "$t/r_old.json" \
    2>/dev/null || fail "arachne plan (rounding case) failed"
"$bin" replan --plan "$t/r_old.json" --cluster a6000:2x4+4x1 --samples 4 --allow-batch-rounding --json \
    --out "$t/r_next.json" > "$t/r_dec.json" 2>"$t/err" || fail "replan (rounding case) failed: $(cat "$t/err")"
grep -q "rounded to 513" "$t/err" || fail "the rounding case no longer rounds: $(cat "$t/err")"
python3 -c 'import json, sys
d, p = (json.load(open(a)) for a in sys.argv[1:3])
assert p["global_batch"] == 513 and p["samples_per_s"] == d["new_samples_per_s"], (p["samples_per_s"], d["new_samples_per_s"])' \
    "$t/r_dec.json" "$t/r_next.json" || fail "the decision counts other samples than the plan it wrote"

"$bin" replan --plan "$t/old.json" --cluster a6000:1x4 --json > "$t/shrink.json" 2>"$t/err" ||
    fail "replan on a shrunk cluster failed: $(cat "$t/err")"
grep -q '"reason": "running-invalid"' "$t/shrink.json" || fail "a removed node did not force a switch: $(cat "$t/shrink.json")"

"$bin" replan --cluster a6000:1x4 > /dev/null 2>"$t/err"; rc=$?
[ $rc -eq 2 ] || fail "missing --plan: exit $rc, wanted 2"
[ "$(wc -l < "$t/err")" -eq 1 ] || fail "usage error is not one line: $(cat "$t/err")"
"$bin" replan --plan "$t/old.json" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "missing --cluster: exit $rc, wanted 2"
"$bin" replan --plan "$t/old.json" --cluster a6000:1x4 --horizon -5 > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "bad --horizon: exit $rc, wanted 2"
"$bin" replan --plan "$t/missing.json" --cluster a6000:1x4 > /dev/null 2>"$t/err"; rc=$?
[ $rc -eq 1 ] || fail "missing plan file: exit $rc, wanted 1"
grep -q "^arachne: " "$t/err" || fail "missing plan file message: $(cat "$t/err")"
"$bin" replan --plan "$t/old.json" --cluster nosuchgpu:1x4 > /dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || fail "unknown GPU: exit $rc, wanted 1"
# the default is best of 16 (seed 0) refined with 500 fills, as `arachne
# plan`: the same decision as --samples 16 --seed 0 --refine 500, and a new
# plan no slower than the unrefined best of 16 or the unrefined greedy one
grow=rtx-pro-6000:1x3,a6000:2x4,a5000:1x4
"$bin" replan --plan "$t/old.json" --cluster $grow --json > "$t/d.json" || fail "replan (default samples) failed"
"$bin" replan --plan "$t/old.json" --cluster $grow --json --samples 16 --seed 0 --refine 500 > "$t/k.json" ||
    fail "replan --samples 16 --refine 500 failed"
"$bin" replan --plan "$t/old.json" --cluster $grow --json --refine 0 > "$t/u.json" || fail "replan --refine 0 failed"
"$bin" replan --plan "$t/old.json" --cluster $grow --json --samples 1 --refine 0 > "$t/g.json" ||
    fail "replan --samples 1 failed"
cmp -s "$t/d.json" "$t/k.json" || fail "the default replan is not the --samples 16 --seed 0 --refine 500 one"
python3 -c 'import json, sys
d, u, g = (json.load(open(p)) for p in sys.argv[1:4])
assert d["new_samples_per_s"] >= u["new_samples_per_s"] >= g["new_samples_per_s"], \
    (d["new_samples_per_s"], u["new_samples_per_s"], g["new_samples_per_s"])' \
    "$t/d.json" "$t/u.json" "$t/g.json" || fail "the default new plan is slower than the unrefined or greedy one"
"$bin" replan --plan "$t/old.json" --cluster $grow --refine -1 > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] || fail "bad --refine: exit $rc, wanted 2"
exit 0
