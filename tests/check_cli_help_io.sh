#!/bin/sh
# check_cli_help_io.sh -- the command line's help, planner line, stdin and
# notes: 'arachne help CMD' is 'arachne CMD --help' for every command;
# 'arachne plan' ends its table with the planner line ('search' does too) and
# keeps --json pure; 'export -' reads the plan from stdin and leaves no
# temporary file; a preset typo gets a suggestion; a profile for another
# model says "cost model:" once; a profile without the cluster's GPU type
# names the type; bare 'a100' gets a note on stderr; price and export --help
# mark no option as required.  Exit 0 pass, 77 skip, 1 fail.
bin=${ARACHNE_BIN:-bin/arachne}
[ -x "$bin" ] || { echo "check_cli_help_io: $bin not built"; exit 77; }
fail() { echo "check_cli_help_io: $*"; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cl=a100-40:2x4,a6000:1x4+2x1

cmds=$("$bin" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
[ -n "$cmds" ] || fail "no commands in --help"
for c in $cmds; do
    "$bin" help "$c" > "$t/a" || fail "help $c: exit $?"
    "$bin" "$c" --help > "$t/b" || fail "$c --help: exit $?"
    cmp -s "$t/a" "$t/b" || fail "'help $c' differs from '$c --help'"
    head -1 "$t/a" | grep -q "^usage: arachne $c" || fail "help $c: $(head -1 "$t/a")"
done
"$bin" help nosuch > /dev/null 2> "$t/e"; rc=$?
[ $rc -eq 2 ] || fail "help nosuch: exit $rc, want 2"
grep -q "unknown command 'nosuch'" "$t/e" || fail "help nosuch: $(cat "$t/e")"

"$bin" plan --model llama3-8b --cluster $cl > "$t/table" 2> "$t/e" || fail "plan: $(cat "$t/e")"
tail -1 "$t/table" | grep -Eq '^planner: policy-best-of-k(\+refine)?, [1-9][0-9]* plans priced in [0-9]+\.[0-9]{3} s$' ||
    fail "plan's last line: $(tail -1 "$t/table")"
"$bin" plan --model llama3-8b --cluster $cl --samples 1 | tail -1 | grep -Eq '^planner: policy-greedy(\+refine)?, ' ||
    fail "greedy plan's planner line"
"$bin" plan --model llama3-8b --cluster $cl --json > "$t/plan.json" || fail "plan --json"
grep -q planner: "$t/plan.json" && fail "plan --json printed the planner line"
[ "$(head -c 1 "$t/plan.json")" = "{" ] || fail "plan --json does not start with {"

mkdir "$t/tmp"
"$bin" export --format ranks "$t/plan.json" > "$t/ranks.file" || fail "export FILE"
"$bin" plan --model llama3-8b --cluster $cl --json | TMPDIR="$t/tmp" "$bin" export --format ranks - > "$t/ranks.stdin" ||
    fail "plan --json | export -"
[ -s "$t/ranks.file" ] && cmp -s "$t/ranks.file" "$t/ranks.stdin" || fail "export - differs from export FILE"
[ -z "$(ls -A "$t/tmp")" ] || fail "export - left $(ls -A "$t/tmp") in TMPDIR"
echo '{"format": "arachne-plan"' | TMPDIR="$t/tmp" "$bin" export --format ranks - > /dev/null 2> "$t/e"; rc=$?
[ $rc -eq 1 ] || fail "export - of a broken plan: exit $rc, want 1"
grep -q '/stdin:' "$t/e" || fail "export - error does not name stdin: $(cat "$t/e")"
[ -z "$(ls -A "$t/tmp")" ] || fail "a failed export - left $(ls -A "$t/tmp") in TMPDIR"

"$bin" plan --model llama-3-8b --cluster $cl > /dev/null 2> "$t/e" && fail "plan --model llama-3-8b succeeded"
grep -q "did you mean llama3-8b?" "$t/e" || fail "no suggestion: $(cat "$t/e")"

"$bin" profile --model qwen3-8b --cluster $cl --out "$t/qwen.json" > /dev/null || fail "profile qwen3-8b"
"$bin" plan --model llama3-8b --cluster $cl --profile "$t/qwen.json" > /dev/null 2> "$t/e" && fail "a qwen3-8b profile planned llama3-8b"
grep -q "^arachne: plan: cost model: the profile is for model 'qwen3-8b', not 'llama3-8b'$" "$t/e" ||
    fail "other-model profile: $(cat "$t/e")"
"$bin" profile --model llama3-8b --cluster h100:1x4 --out "$t/h100.json" > /dev/null || fail "profile h100"
"$bin" plan --model llama3-8b --cluster a100-40:1x4 --profile "$t/h100.json" > /dev/null 2> "$t/e" && fail "planned without A100-40 entries"
grep -q "the profile has no entries for GPU type A100-40" "$t/e" || fail "missing type not named: $(cat "$t/e")"

"$bin" cluster a100:1x4 > /dev/null 2> "$t/e" || fail "cluster a100:1x4"
grep -q "^arachne: note: 'a100' is the 40 GB A100 (A100-40)" "$t/e" || fail "no a100 note: $(cat "$t/e")"
"$bin" cluster a100-40:1x4,a100-80:1x4 > /dev/null 2> "$t/e" || fail "cluster a100-40"
[ -s "$t/e" ] && fail "a note for an explicit a100-40/a100-80: $(cat "$t/e")"
"$bin" search --method random --budget 20 --model llama3-8b --cluster h100:1x8,A100:1x8 > /dev/null 2> "$t/e" || fail "search"
[ "$(grep -c "note: 'a100'" "$t/e")" -eq 1 ] || fail "search: want one a100 note: $(cat "$t/e")"

for c in price export; do
    "$bin" $c --help | grep -q '(required)' && fail "$c --help marks an option as required"
    "$bin" $c --help | grep -q "^  --model M .*(default: the plan file's)" || fail "$c --help: --model line"
done
"$bin" plan --help | grep -q '^  --model M .*(required)' || fail "plan --help no longer marks --model required"
echo "check_cli_help_io: help, planner line, export -, suggestions, notes and required marks as documented"
