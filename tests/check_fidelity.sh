#!/bin/sh
# The calibration targets against the measured runs (bench_fidelity --check,
# docs/cost-model.md "Fidelity"), and the numbers docs/cost-model.md quotes.
set -u
bin=${ARACHNE_BIN:-bin/arachne}
bench=$(dirname "$bin")/bench_fidelity
[ -x "$bench" ] || { echo "no $bench (make $bench)"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$bench" --check > "$t/out" 2>&1 || { cat "$t/out"; echo "check_fidelity: a calibration target is missed"; exit 1; }
# every row appears once, expressed or with its reason
n=$(grep -c '^{"bench":"fidelity",' "$t/out")
[ "$n" -eq 71 ] || { echo "check_fidelity: $n rows in the JSON lines, want 71"; exit 1; }
grep '"expressed":false' "$t/out" | grep -q '"reason":""' && { echo "check_fidelity: a row without its reason"; exit 1; }
# the summary docs/cost-model.md quotes (generated block between the markers)
want=$(sed -n '/<!-- fidelity-summary -->/,/<!-- \/fidelity-summary -->/p' docs/cost-model.md | grep -E '^  (all|dense|moe|A100|H100|B200|GB200|fsdp) |^expressed ')
got=$(grep -E '^  (all|dense|moe|A100|H100|B200|GB200|fsdp) |^expressed ' "$t/out")
if [ "$want" != "$got" ]; then
    echo "check_fidelity: docs/cost-model.md quotes a different summary (python3 tests/fidelity_doc_update.py); bench_fidelity prints:"
    echo "$got"
    exit 1
fi
# the row errors docs/cost-model.md quotes for the hybrid stacks and DeepEP dispatch
for want in "295 -17.2" "296 -10.5" "303 -10.2"; do
    id=${want% *}
    got=$(grep "^{\"bench\":\"fidelity\",\"id\":$id," "$t/out" |
          sed -n 's/.*"error":\(-*[0-9.]*\).*/\1/p' | awk '{ printf "%.1f", $1 * 100 }')
    [ "$id $got" = "$want" ] || { echo "check_fidelity: row $id prices at $got %, docs/cost-model.md says ${want#* } %"; exit 1; }
done
echo "fidelity ok"
