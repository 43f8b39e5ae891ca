#!/bin/sh
# examples/launcher.c: one torchrun line per node that runs ranks, one
# environment line per rank (every plan rank once), usage errors exit 2.
bin=${ARACHNE_BIN:-bin/arachne}
launcher=$(dirname "$bin")/launcher
[ -x "$launcher" ] || { echo "$launcher not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$bin" policy init --out "$t/p.arpol" --seed 1 > /dev/null || { echo "policy init failed"; exit 1; }
out=$("$launcher" --model llama3-8b --cluster rtx-pro-6000:1x3,a6000:1x4 --samples 4 --policy "$t/p.arpol" \
      --plan-out "$t/plan.json" 2>&1) || { echo "launcher failed: $out"; exit 1; }
n=$(echo "$out" | grep -c '^  RANK=')
world=$(echo "$out" | sed -n 's/.*WORLD_SIZE=\([0-9]*\).*/\1/p' | head -n 1)
[ "$n" -gt 0 ] && [ "$n" = "$world" ] || { echo "rank lines $n, WORLD_SIZE $world:"; echo "$out"; exit 1; }
ranks=$(echo "$out" | sed -n 's/^  RANK=\([0-9]*\) .*/\1/p' | sort -n | tr '\n' ' ')
want=$(seq 0 $((n - 1)) | tr '\n' ' ')
[ "$ranks" = "$want" ] || { echo "ranks '$ranks', wanted '$want'"; exit 1; }
echo "$out" | grep -q '^torchrun --nnodes=' || { echo "no torchrun line"; exit 1; }
"$bin" price "$t/plan.json" > /dev/null || { echo "--plan-out wrote a plan that does not price"; exit 1; }
"$launcher" --model llama3-8b > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || { echo "missing --cluster: exit $rc, wanted 2"; exit 1; }
"$launcher" --model nosuch --cluster a6000:1x4 > /dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || { echo "unknown model: exit $rc, wanted 1"; exit 1; }
for bad in "--samples 5x" "--samples 0" "--samples ''" "--seed -1" "--seed 1e3"; do
    eval "set -- $bad"
    err=$("$launcher" --model llama3-8b --cluster a6000:1x4 "$@" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] || { echo "$bad: exit $rc, wanted 2"; exit 1; }
    echo "$err" | grep -q "^launcher: $1: " || { echo "$bad: the message does not name $1: $err"; exit 1; }
done
exit 0
