#!/bin/sh
# Context parallelism from the command line (issue 23's acceptance line):
# llama3-70b at 32,768 tokens on 16 nodes of 8 H100s.  `arachne plan` chooses
# context parallelism, its table says so, and the plan is faster than the
# best plan `arachne plan --no-context-parallel` finds; the CP plan's file
# reprices to itself and its Megatron export carries --context-parallel-size.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "check_cp_cli: $*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not available"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# FSDP groups (the refinement's last fill) beat CP here: kept off, this is about CP
args="--model llama3-70b --cluster h100:16x8 --seq-len 32768 --no-fsdp-search"

# shellcheck disable=SC2086
"$bin" plan $args > "$t/on.txt" || fail "plan failed"
# shellcheck disable=SC2086
"$bin" plan $args --json > "$t/on.json" || fail "plan --json failed"
# shellcheck disable=SC2086
"$bin" plan $args --no-context-parallel --json > "$t/off.json" || fail "plan --no-context-parallel failed"
grep -q "context parallel [0-9]" "$t/on.txt" || fail "the table shows no context parallelism: $(cat "$t/on.txt")"
python3 - "$t/on.json" "$t/off.json" <<'PY' || exit 1
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
cps = [t.get("cp", 1) for t in on["templates"]]
assert max(cps) > 1, "planner did not choose context parallelism: %r" % cps
assert all("cp" not in t for t in off["templates"]), "cp in a --no-context-parallel plan"
assert on["iteration_s"] < off["iteration_s"], "CP plan %.4f s is not faster than %.4f s" % (
    on["iteration_s"], off["iteration_s"])
for t in on["templates"]:
    cp = t.get("cp", 1)
    assert len(t["ranks"]) == t["replicas"] * cp * sum(s["tp"] for s in t["stages"])
    assert {r.get("cp_rank", 0) for r in t["ranks"]} == set(range(cp))
PY
"$bin" price "$t/on.json" > "$t/re.txt" || fail "repricing the CP plan failed"
grep -q "repriced .*(+0.00%)" "$t/re.txt" || fail "CP plan does not reprice to itself: $(tail -2 "$t/re.txt")"
"$bin" export --format megatron "$t/on.json" | grep -q -- "--context-parallel-size" \
    || fail "megatron export without --context-parallel-size"
echo "cp cli ok"
