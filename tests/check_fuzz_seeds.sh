#!/bin/sh
# check_fuzz_seeds.sh -- every fuzz target (tests/fuzz/fuzz_*.c) run on its
# committed seeds (tests/fuzz/corpus/NAME/*) without libFuzzer, through the
# replay builds of `make check` ($ARACHNE_FUZZ_REPLAY/fuzz_NAME).  A target
# checks its properties with FUZZ_CHECK, which aborts, so a property that
# no longer holds on a seed fails here.  Skipped (77) when the replay
# builds were not made (the sanitizer suites; `make fuzz` runs the targets
# under ASan).
dir=${ARACHNE_FUZZ_REPLAY:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "no replay builds (ARACHNE_FUZZ_REPLAY unset): run through make check"
    exit 77
fi
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
# the cli target works in a scratch directory of its own (it changes into
# it), so the seeds are named by absolute paths
scratch=$(mktemp -d) || exit 1
trap 'rm -rf "$scratch"' EXIT
ARACHNE_FUZZ_SCRATCH=$scratch/cli; export ARACHNE_FUZZ_SCRATCH
# the targets that read or write files make their own directory under
# $TMPDIR and must remove it at exit: each gets an empty one to prove it
tmproot=$scratch/tmp
fail=0; targets=0; inputs=0
for src in tests/fuzz/fuzz_*.c; do
    name=${src#tests/fuzz/fuzz_}; name=${name%.c}
    seeds=$PWD/tests/fuzz/corpus/$name
    bin=$dir/fuzz_$name
    if [ ! -x "$bin" ]; then echo "FAIL $name: $bin was not built"; fail=1; continue; fi
    set -- "$seeds"/*
    if [ ! -f "$1" ]; then echo "FAIL $name: no seeds in $seeds"; fail=1; continue; fi
    rm -rf "$tmproot"; mkdir "$tmproot" || exit 1
    if out=$(TMPDIR=$tmproot "$bin" "$@" 2>&1); then
        targets=$((targets + 1)); inputs=$((inputs + $#))
        left=$(ls -A "$tmproot")
        if [ -n "$left" ]; then echo "FAIL $name: left in \$TMPDIR: $left"; fail=1; fi
    else
        echo "FAIL $name (exit $?):"; echo "$out" | tail -n 5
        fail=1
    fi
done
echo "fuzz seeds: $inputs inputs through $targets targets"
exit $fail
