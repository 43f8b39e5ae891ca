#!/bin/sh
# `arachne cluster`: summary, --json round trip through --file, bad specs.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
spec='a100-40:32x4,a6000:8x4+16x1,h100:16x8'
out=$("$bin" cluster "$spec") || fail "cluster: exit $?"
printf '%s\n' "$out" | grep -q "^cluster $spec\$" || fail "no spec line: $out"
printf '%s\n' "$out" | grep -Eq '^A6000 +48 +24 +8x4\+16x1 +4 ' || fail "A6000 row: $out"
printf '%s\n' "$out" | grep -Eq '^total +304 +72 +8$' || fail "total row: $out"
# --json reads back to the same cluster: same JSON bytes, same compact string
"$bin" cluster "$spec" --json > "$t/c.json" || fail "cluster --json: exit $?"
"$bin" cluster --file "$t/c.json" --json > "$t/c2.json" || fail "cluster --file: exit $?"
cmp -s "$t/c.json" "$t/c2.json" || fail "JSON round trip differs: $(diff "$t/c.json" "$t/c2.json")"
"$bin" cluster --file "$t/c.json" | grep -q "^cluster $spec\$" || fail "compact string after round trip"
"$bin" cluster "$t/c.json" | grep -q "^cluster $spec\$" || fail "a path given as SPEC is read as a file"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"] == "arachne-cluster" and len(d["nodes"]) == 4' \
        "$t/c.json" || fail "--json is not the cluster JSON"
fi
# bad specs: exit 1, one line "arachne: ..." naming the spec and the offset
check_bad() { # spec expected-substring
    err=$("$bin" cluster "$1" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 1 ] || fail "'$1': exit $rc, want 1"
    [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "'$1': want one line, got: $err"
    case "$err" in "arachne: "*"$2"*) ;; *) fail "'$1': message '$err' lacks '$2'";; esac
}
check_bad 'a100:4x' "cluster spec 'a100:4x': offset 8: expected a GPU count"
check_bad 'a100:x4' "offset 6: expected a node count"
check_bad 'h10:2x4' "offset 1: unknown GPU type 'h10'"
check_bad 'a100:0x4' "offset 6: node count must be at least 1"
check_bad 'a100:1x2048' "offset 6: a node of 2048 GPUs exceeds"
check_bad 'a100:2x4 junk' "offset 10: unexpected 'j'"
check_bad ':' "offset 1: expected a GPU type name"
[ -z "$("$bin" cluster 'a100:4x' 2>/dev/null)" ] || fail "a failure printed on stdout"
# a bad file names the file, line and column
printf '{"nodes": [\n  {"type": "a100", "count": 1, "gpus": 4, "gpus": 8}]}\n' > "$t/dup.json"
err=$("$bin" cluster --file "$t/dup.json" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "duplicate key: exit $rc"
case "$err" in "arachne: $t/dup.json:2:43: duplicate key"*) ;; *) fail "duplicate key message: $err";; esac
# usage errors
"$bin" cluster 2>/dev/null; [ $? -eq 2 ] || fail "no SPEC must exit 2"
"$bin" cluster "$spec" --file "$t/c.json" 2>/dev/null; [ $? -eq 2 ] || fail "SPEC and --file must exit 2"
exit 0
