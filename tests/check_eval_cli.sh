#!/bin/sh
# arachne eval: a one-composition config trains and saves its flat policy;
# --flat reloads that file (JSON says "loaded", the flat results are the
# same, nothing is trained); --flat with a missing or corrupt file fails
# naming it, so the file is really what the flat columns come from; an
# over-long --flat path is a usage error (exit 2).
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "check_eval_cli: no python"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$bin" policy init --seed 3 --hidden 16 --layers 1 --out "$tmp/p.arpol" >/dev/null || fail "policy init failed"
. "$(dirname "$0")/tiny_eval_config.sh"
tiny_eval_config "$tmp"
"$bin" eval --config "$tmp/eval.json" --policy "$tmp/p.arpol" --out "$tmp/a.json" >/dev/null || fail "eval failed"
[ -f "$tmp/flat.arflat" ] || fail "the config's flat.save file was not written"
"$bin" eval --config "$tmp/eval.json" --policy "$tmp/p.arpol" --flat "$tmp/flat.arflat" --out "$tmp/b.json" >/dev/null \
    || fail "eval --flat failed"
"$py" - "$tmp/a.json" "$tmp/b.json" <<'PY' || fail "eval --flat: results differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["flat"]["source"] == "trained", a["flat"]
assert b["flat"]["source"] == "loaded" and b["flat"]["train_evaluations"] == 0, b["flat"]
for m in ("flat", "flat-best2", "policy", "policy-best2"):
    ra, rb = a["compositions"][0]["results"][m], b["compositions"][0]["results"][m]
    assert ra["iter_per_s"] == rb["iter_per_s"] and ra["evaluations"] == rb["evaluations"], (m, ra, rb)
PY
err=$("$bin" eval --config "$tmp/eval.json" --policy "$tmp/p.arpol" --flat "$tmp/missing.arflat" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "--flat with a missing file: exit $rc, want 1"
printf '%s' "$err" | grep -q "missing.arflat" || fail "--flat error does not name the file: $err"
head -c 100 "$tmp/flat.arflat" > "$tmp/cut.arflat"
err=$("$bin" eval --config "$tmp/eval.json" --policy "$tmp/p.arpol" --flat "$tmp/cut.arflat" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "--flat with a truncated file: exit $rc, want 1"
printf '%s' "$err" | grep -q "cut.arflat" || fail "--flat truncated-file error does not name the file: $err"
long=$(printf '%05000d' 0)
err=$("$bin" eval --config "$tmp/eval.json" --policy "$tmp/p.arpol" --flat "$tmp/$long" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "--flat with an over-long path: exit $rc, want 2"
printf '%s' "$err" | grep -q "\-\-flat: path longer than" || fail "--flat over-long path message: $err"
exit 0
