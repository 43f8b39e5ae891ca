#!/bin/sh
# `arachne gpus`: the catalog table and its JSON form.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
out=$("$bin" gpus) || fail "gpus: exit $?"
for g in A100-40 A100-80 H100 H100-PCIe A6000 A5000 RTX-PRO-6000 L40S V100-16 GH-96 Titan-RTX RTX-2080Ti RTX-3090 \
         H200 B200 B300 GB200 GB300 RTX-4090 L4; do
    printf '%s\n' "$out" | grep -q "^$g " || fail "gpus table lacks $g"
done
printf '%s\n' "$out" | grep -q '^A100-40  *42\.95  *312\.0  *1555 .* nvlink$' || fail "A100-40 row: $(printf '%s\n' "$out" | grep '^A100-40')"
json=$("$bin" gpus --json) || fail "gpus --json: exit $?"
case "$json" in "["*"]") ;; *) fail "gpus --json is not an array: $json";; esac
if command -v python3 >/dev/null 2>&1; then
    printf '%s\n' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [g["name"] for g in d]
assert len(names) == 20 and names[0] == "A100-40", names
a = d[0]
assert a["memory_bytes"] == 40 * 2**30 and a["flops"] == 312e12 and a["intra_bytes_per_s"] == 300e9, a
for g in d:
    assert set(g) == {"name", "memory_bytes", "flops", "hbm_bytes_per_s", "intra_bytes_per_s",
                      "inter_bytes_per_s", "intra_latency_s", "inter_latency_s", "intra_link"}, g
    assert g["memory_bytes"] % 2**30 == 0, g
links = {g["name"]: g["intra_link"] for g in d}
assert links["GB200"] == "nvlink" and links["RTX-4090"] == "pcie-host" and links["L4"] == "pcie-p2p", links
' || fail "gpus --json content"
fi
"$bin" gpus extra 2>/dev/null; [ $? -eq 2 ] || fail "gpus with an argument must exit 2"
# NVL72: a rack is one node of 72 GPUs; it parses and plans
"$bin" cluster gb200:4x72 | grep -q '^GB200  *288  *4 4x72  *72 ' || fail "gb200:4x72: $("$bin" cluster gb200:4x72)"
"$bin" plan --model llama3-8b --cluster gb200:4x72 > /dev/null || fail "plan on gb200:4x72 failed"
# the old name of the 2080 Ti entry still parses, and Sailor's plans keep Sailor's name for it
tmp=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
"$bin" cluster rtx-2080:4x8 | grep -q '^RTX-2080Ti ' || fail "rtx-2080 is not the RTX-2080Ti entry"
"$bin" plan --model qwen3-8b --cluster rtx-2080:4x8,a100:1x4 --no-context-parallel --json > "$tmp/p.json" || fail "plan on rtx-2080 failed"
grep -q '"RTX-2080Ti"' "$tmp/p.json" || fail "plan does not name RTX-2080Ti"
"$bin" export --format sailor "$tmp/p.json" > "$tmp/s.json" || fail "sailor export failed"
grep -q '"RTX-2080"' "$tmp/s.json" && ! grep -q 'RTX-2080Ti' "$tmp/s.json" || fail "sailor export must say RTX-2080: $(cat "$tmp/s.json")"
exit 0
