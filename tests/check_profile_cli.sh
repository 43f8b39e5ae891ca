#!/bin/sh
# `arachne profile`: generate (table, --json, --out), import Sailor, exit codes.
bin=${ARACHNE_BIN:-bin/arachne}
py=${PYTHON:-python3}
fail() { echo "$*"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

out=$("$bin" profile --model llama3-8b --cluster h100:2x8,a6000:1x4 --seq-len 2048) || fail "generate: exit $?"
printf '%s\n' "$out" | grep -q "^profile for llama3-8b at seq 2048: 126 entries" || fail "generate summary: $out"
printf '%s\n' "$out" | grep -q "^H100 *dense *8 " || fail "no H100 dense tp 8 row: $out"
"$bin" profile --model llama3-8b --cluster h100:1x8 --json > "$tmp/p.json" || fail "--json: exit $?"
if command -v "$py" >/dev/null 2>&1; then
    "$py" - "$tmp/p.json" <<'PY' || fail "--json output is not the profile JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "arachne-profile" and d["version"] == 1 and d["seq_len"] == 4096
assert len(d["entries"]) == 3 * 4 * 6, len(d["entries"])
assert all(e["fwd_s"] > 0 and e["bwd_s"] > 0 for e in d["entries"])
PY
fi
# --out writes the same JSON; --json then prints a one-line summary
"$bin" profile --model llama3-8b --cluster h100:1x8 --out "$tmp/o.json" --json > "$tmp/s.json" || fail "--out: exit $?"
cmp -s "$tmp/o.json" "$tmp/p.json" || fail "--out file differs from --json output"
grep -q '"entries":72' "$tmp/s.json" || fail "--out --json summary: $(cat "$tmp/s.json")"
# a model JSON file and a cluster JSON file work too
"$bin" profile --model examples/models/custom-moe-17b-a3b.json --cluster a100-40:1x4 --json > "$tmp/moe.json" ||
    fail "model file: exit $?"
grep -q '"kind": "moe"' "$tmp/moe.json" || fail "MoE model has no moe entries"

# usage errors exit 2, library failures exit 1, one "arachne: " line on stderr
"$bin" profile --cluster h100:1x8 2>/dev/null; [ $? -eq 2 ] || fail "missing --model must exit 2"
"$bin" profile --model llama3-8b 2>/dev/null; [ $? -eq 2 ] || fail "missing --cluster must exit 2"
"$bin" profile --model llama3-8b --cluster h100:1x8 --seq-len 0 2>/dev/null; [ $? -eq 2 ] || fail "--seq-len 0 must exit 2"
"$bin" profile --model llama3-8b --cluster h100:1x8 --bogus 2>/dev/null; [ $? -eq 2 ] || fail "unknown option must exit 2"
err=$("$bin" profile --model nosuch --cluster h100:1x8 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "unknown model: exit $rc, want 1"
case "$err" in "arachne: "*) ;; *) fail "message must start with 'arachne: ': $err";; esac
"$bin" profile --model llama3-8b --cluster 'h100:x8' 2>/dev/null; [ $? -eq 1 ] || fail "bad cluster must exit 1"
"$bin" profile --import-sailor "$tmp/none" --model OPT-350 2>/dev/null; [ $? -eq 1 ] || fail "missing dir must exit 1"
"$bin" profile --import-sailor "$tmp" --model OPT-350 --cluster h100:1x8 2>/dev/null; [ $? -eq 2 ] ||
    fail "--import-sailor with --cluster must exit 2"

# import (the vendored measured profiles; ARACHNE_SHARED_DATA overrides)
dir=${ARACHNE_SHARED_DATA:-tests/data/sailor-profiles}
[ -f "$dir/profiles.json" ] || fail "no Sailor profiles in $dir"
"$bin" profile --import-sailor "$dir" --model OPT-350 --out "$tmp/opt.json" > "$tmp/imp.txt" || fail "import: exit $?"
grep -q "^profile for OPT-350 at seq 2048: 387 entries" "$tmp/imp.txt" || fail "import summary: $(cat "$tmp/imp.txt")"
grep -q '"gpu": "RTX-3090", "kind": "dense", "tp": 8, "mbs": 64' "$tmp/opt.json" || fail "import file lacks an entry"
grep -q '"precision": "fp32"' "$tmp/opt.json" || fail "import file does not record the measured precision"
grep -q '"act_recompute": "none"' "$tmp/opt.json" || fail "import file does not record the activation mode"
"$bin" profile --import-sailor "$dir" --model OPT-9000 2>/dev/null; [ $? -eq 1 ] || fail "unknown sailor model must exit 1"
exit 0
