#!/bin/sh
# The growing-cluster demo (examples/elastic.c, what `make elastic` runs).
# 1. As `make elastic` runs it (bundled policy when there is one): exits 0,
#    i.e. the throughput never drops at a join, over 5 steps.
# 2. With a fixed untrained policy (seed 1, so the outcome does not depend
#    on which policy is bundled), greedy: also keeps the running plan at
#    least once.  (Best-of-16 of the untrained policy no longer keeps since
#    the width decision: its sampled widths find a faster plan at every join.)
bin=${ARACHNE_BIN:-bin/arachne}
demo=$(dirname "$bin")/elastic
[ -x "$demo" ] || { echo "$demo not built"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
out=$("$demo" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "elastic exited $rc:"; echo "$out"; exit 1; }
echo "$out" | grep -q "throughput never dropped" || { echo "no summary line:"; echo "$out"; exit 1; }
[ "$(echo "$out" | grep -c '^t=')" -eq 5 ] || { echo "expected 5 steps:"; echo "$out"; exit 1; }

"$bin" policy init --out "$t/p.arpol" --seed 1 > /dev/null || { echo "policy init failed"; exit 1; }
out=$("$demo" --policy "$t/p.arpol" --samples 1 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "elastic (untrained policy) exited $rc:"; echo "$out"; exit 1; }
echo "$out" | grep -q "decision: KEEP" || { echo "no join kept the running plan:"; echo "$out"; exit 1; }
# numbers must be whole: a trailing unit or an empty value is a usage error
for bad in "--samples 5x" "--seed ''" "--horizon 300s" "--restart-cost ''"; do
    eval "set -- $bad"
    err=$("$demo" "$@" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] || { echo "$bad: exit $rc, wanted 2"; exit 1; }
    echo "$err" | grep -q "^elastic: $1: " || { echo "$bad: the message does not name $1: $err"; exit 1; }
done
exit 0
