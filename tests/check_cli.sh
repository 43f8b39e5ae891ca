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
# a directory named like a preset does not hide the preset (a preset wins over files)
case $bin in /*) abin=$bin ;; *) abin=$PWD/$bin ;; esac
d=$(mktemp -d) || exit 1
mkdir "$d/llama3-8b"
(cd "$d" && "$abin" price --parallel tp=8,pp=1,dp=2,mbs=1 --model llama3-8b --cluster h100:2x8 >/dev/null) ||
    { rm -rf "$d"; fail "a directory named llama3-8b hid the preset"; }
# an empty Sailor directory name is refused, not read as /profiles.json
out=$(cd "$d" && "$abin" profile --import-sailor '' --model llama3-8b 2>&1); rc=$?
rm -rf "$d"
[ $rc -eq 1 ] || fail "profile --import-sailor '': exit $rc, want 1"
case "$out" in *"directory name is empty"*) ;; *) fail "profile --import-sailor '': $out";; esac
# output that did not arrive is a failure, not a cut-off file behind exit 0
if [ -c /dev/full ]; then
    out=$("$bin" models --json 2>&1 >/dev/full); rc=$?
    [ $rc -eq 1 ] || fail "models --json > /dev/full: exit $rc, want 1"
    case "$out" in *"writing standard output"*) ;; *) fail "models --json > /dev/full: no message: $out";; esac
fi
exit 0
