#!/bin/sh
# run.sh RUNNER -- runs every test family and prints ONE summary line:
#   tests: N passed, M failed[, K skipped]
# Families: the C suites (RUNNER --counts), the shell checks tests/check_*.sh
# (one test each; exit 0 pass, 77 skip, other fail) and the Python unittest
# suites under tests/python (tests/python/run.py prints its own #counts line).
runner=$1
P=0; F=0; S=0
add_counts() { # parses "#counts p f s" lines from stdin
    while read -r tag p f s; do
        [ "$tag" = "#counts" ] || { echo "$tag $p $f $s"; continue; }
        P=$((P + p)); F=$((F + f)); S=$((S + s))
    done
}
out=$(mktemp)
"$runner" --counts > "$out"; rc=$?
add_counts < "$out"
if ! grep -q '^#counts' "$out"; then echo "FAIL C runner crashed (exit $rc)" >&2; F=$((F + 1)); fi
for c in tests/check_*.sh; do
    [ -f "$c" ] || continue
    sh "$c" > "$out" 2>&1; rc=$?
    if [ $rc -eq 0 ]; then P=$((P + 1))
    elif [ $rc -eq 77 ]; then S=$((S + 1)); echo "skip $c: $(tail -n 1 "$out")" >&2
    else F=$((F + 1)); echo "FAIL $c:" >&2; sed 's/^/    /' "$out" >&2
    fi
done
if [ -f tests/python/run.py ] && command -v "${PYTHON:-python3}" >/dev/null 2>&1; then
    "${PYTHON:-python3}" tests/python/run.py > "$out"; rc=$?
    add_counts < "$out"
    if ! grep -q '^#counts' "$out"; then echo "FAIL python tests crashed (exit $rc)" >&2; F=$((F + 1)); fi
fi
rm -f "$out"
if [ $S -gt 0 ]; then echo "tests: $P passed, $F failed, $S skipped"
else echo "tests: $P passed, $F failed"; fi
[ $F -eq 0 ]
