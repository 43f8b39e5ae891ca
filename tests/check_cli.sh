#!/bin/sh
# The arachne command: exit codes and messages of the dispatcher.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
out=$("$bin" nosuchcmd 2>&1); rc=$?
[ $rc -eq 2 ] || fail "nosuchcmd: exit $rc, want 2"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "nosuchcmd: want one line, got: $out"
case "$out" in "arachne: "*) ;; *) fail "nosuchcmd: message must start with 'arachne: ': $out";; esac
"$bin" --help | grep -q '^  plan ' || fail "--help does not list plan"
for c in plan price search train eval replan export models gpus cluster profile policy version; do
    "$bin" --help | grep -q "^  $c " || fail "--help does not list $c"
    "$bin" $c --help | grep -q "usage: arachne $c" || fail "'$c --help' prints no usage"
done
"$bin" version | grep -q "^arachne [0-9]*\.[0-9]*\.[0-9]*$" || fail "version output"
"$bin" version --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["version"]' || fail "version --json is not JSON"
"$bin" version --bogus 2>/dev/null; [ $? -eq 2 ] || fail "unknown option must exit 2"
exit 0
