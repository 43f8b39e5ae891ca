#!/bin/sh
# check_export_atomic.sh -- `arachne export --out FILE` replaces FILE
# atomically: when the write fails (here: the file-size limit, which works
# even as root) the old FILE is untouched, the exit status is 1 and no
# temporary file is left; when it succeeds FILE holds the export.  Issue 27:
# the command writes through the library's writer (arachne_file_write), so
# a symlink planted under the old temporary name "FILE.tmp.PID" is never
# followed, `ulimit -f` is exit status 1 (not death by SIGXFSZ, 153), and
# FILE keeps its mode.
bin=${ARACHNE_BIN:-bin/arachne}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
seed=tests/fuzz/corpus/plan/dense-valid
[ -f "$seed" ] || { echo "skip: $seed missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tail -c +2 "$seed" > "$tmp/plan.json"
printf 'old launcher config\n' > "$tmp/out.txt"
# 1 block of 512 bytes: the export (several KB) cannot be written; SIGXFSZ
# keeps its default action (kill) in the shell that execs the command
(ulimit -f 1 && exec "$bin" export --format ranks "$tmp/plan.json" --out "$tmp/out.txt") \
    > "$tmp/stdout" 2> "$tmp/stderr"
rc=$?
[ "$rc" -eq 1 ] || { echo "failed write: exit $rc, want 1"; cat "$tmp/stderr"; exit 1; }
grep -q 'out.txt' "$tmp/stderr" || { echo "failed write: message does not name the file"; cat "$tmp/stderr"; exit 1; }
[ "$(cat "$tmp/out.txt")" = "old launcher config" ] || { echo "old file changed by a failed export"; exit 1; }
left=$(ls "$tmp" | grep -v -e '^plan.json$' -e '^out.txt$' -e '^stdout$' -e '^stderr$')
[ -z "$left" ] || { echo "left behind: $left"; exit 1; }
"$bin" export --format ranks "$tmp/plan.json" --out "$tmp/out.txt" || { echo "export failed"; exit 1; }
grep -q '"rank": *0' "$tmp/out.txt" || { echo "export output unexpected:"; head -3 "$tmp/out.txt"; exit 1; }
# a symlink planted where the old code put its temporary (FILE.tmp.PID of
# the process that execs): the victim must stay as it was
printf 'victim\n' > "$tmp/victim"
(cd "$tmp" && sh -c 'ln -s "$1/victim" "out.txt.tmp.$$" && exec "$2" export --format ranks plan.json --out out.txt' \
    sh "$tmp" "$bin") > /dev/null 2>&1 || { echo "export next to a planted link failed"; exit 1; }
[ "$(cat "$tmp/victim")" = "victim" ] || { echo "export wrote through a planted symlink"; exit 1; }
[ ! -L "$tmp/out.txt" ] && grep -q '"rank": *0' "$tmp/out.txt" || { echo "out.txt is not the export"; exit 1; }
# the mode of a file saved over is kept
chmod 600 "$tmp/out.txt"
"$bin" export --format ranks "$tmp/plan.json" --out "$tmp/out.txt" || { echo "export failed"; exit 1; }
mode=$(stat -c %a "$tmp/out.txt")
[ "$mode" = 600 ] || { echo "out.txt mode $mode after saving over a 600 file"; exit 1; }
echo "ok: export --out is atomic, follows no planted link, keeps the mode"
