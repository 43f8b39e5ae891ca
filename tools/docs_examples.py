#!/usr/bin/env python3
"""docs_examples.py -- run the examples the documentation shows and compare
their output with what the page says (or, with --update, rewrite it).

A fenced block is an example when the line just before its opening fence is
one of these markers:

  <!-- doc-run -->            run it.  A block whose lines start with "$ " is a
                              terminal transcript: each "$ " line (joined with
                              the next while it ends in a backslash) is run with
                              sh, stdout and stderr together; the lines after it
                              up to the next "$ " line are its shown output.
                              A ```python block runs with python3; a ```c block
                              is compiled against the built library and run; a
                              ```sh block without "$ " lines runs as one script.
  <!-- doc-run file=NAME -->  write the block to NAME in the work directory
                              (a later transcript compiles or reads it).
  <!-- doc-output -->         the shown output of the closest doc-run program
                              block above it (python, c or sh script).
  <!-- doc-skip: REASON -->   shown but not run (say why).
  Options after doc-run: tol=R, the relative tolerance for decimal numbers;
  missing-ok, a transcript may show "No such file or directory" (otherwise
  that output is a problem: a file an earlier block should make is missing);
  shared, the example loads the shared library (skipped with --skip-shared,
  as python and c blocks are); needs=PATH[,PATH...], files (relative to the
  scratch directory, e.g. bin/bench_profile_calibration) without which the
  example is skipped, with a note.

Comparing shown with actual output:
  - a line that is only "..." stands for any number of lines (also none);
    "..." inside a line stands for any text;
  - integers must be equal; decimal numbers may differ by tol (default 0.005)
    relative or by one unit in the last shown digit;
  - "~N" (a number written with a tilde) is a measured time or rate that
    varies from run to run: any number matches; --update rewrites it;
  - runs of spaces match any run of spaces; trailing spaces are ignored.

All examples of one page run in order in one scratch directory holding
bin/, lib/, include/, examples/ and tests/ of the build being tested, so a
plan.json written by one block is read by the next and nothing lands in the
repository.  $PATH starts with that bin/, LD_LIBRARY_PATH holds lib/, and
PKG_CONFIG_PATH finds an arachne.pc for the build tree.

In covered pages (all pages given, except --not-covered ones), every block
with a "$ " line, every ```python block and every ```c block holding main()
must carry a marker; an unmarked one is an error, so a new example cannot
slip past the check.

Usage:
  docs_examples.py [--update] [--root DIR] [--bin DIR] [--lib DIR]
                   [--not-covered PAGE ...] [--list] PAGE...
  docs_examples.py --mutate PAGE OUT   copy PAGE to OUT with the first number
                                       of the first checked output edited
Exit status: 0 all examples agree (or were rewritten), 1 otherwise.
"""
import argparse
import difflib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r"^\s*<!--\s*doc-(run|output|skip)\b:?(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([A-Za-z0-9_+-]*)\s*$")
# A number: optional sign, digits, optional fraction, optional exponent.  A
# leading "~" marks a measured value that varies between runs.
NUM = r"~?[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
TOKEN = re.compile(r"(\.\.\.)|(" + NUM + r")|(\s+)|([^\s~\d.+-]+|[~\d.+-])")
TIMEOUT_S = 120
# Pages whose examples are not all marked yet (they are being rewritten):
# their markers run, but an unmarked example there is not an error.  Every
# other page given is covered.  --cover-all ignores this list.
NOT_COVERED = ("docs/exports.md", "docs/launcher.md", "docs/formats.md", "docs/python.md")
# Measured values in the command's own output: when --update writes an
# output whole, these numbers get the "~" mark (they vary between runs).
MEASURED = [re.compile(r"(?<=priced in )(\d+(?:\.\d+)?)(?= s)"),
            re.compile(r"(?<=trained in )(\d+(?:\.\d+)?)(?= s)")]


class Block:
    """One fenced block: its marker, fence lines and body."""

    def __init__(self, page, kind, opts, start, end, indent, lang, body):
        self.page = page          # file name, for messages
        self.kind = kind          # "run", "output", "skip" or None (unmarked)
        self.opts = opts          # dict of marker options
        self.start = start        # index of the opening fence line
        self.end = end            # index of the closing fence line
        self.indent = indent      # the fence's indentation, stripped from the body
        self.lang = lang          # info string ("python", "c", "sh", "")
        self.body = body          # body lines without indentation
        self.output_block = None  # for program blocks: the doc-output block

    def where(self):
        return "%s:%d" % (self.page, self.start + 1)

    def is_transcript(self):
        return any(l.startswith("$ ") for l in self.body)


def parse_opts(text):
    opts = {}
    for word in text.split():
        k, _, v = word.partition("=")
        opts[k] = v if v else True
    return opts


def read_blocks(page, lines):
    """Every fenced block of a page, with the marker on the line before it."""
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, lang = m.group(1), m.group(2), m.group(3)
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*" + ticks + r"\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise SystemExit("%s:%d: fence never closed" % (page, i + 1))
        kind, opts = None, {}
        if i > 0:
            mk = MARK.match(lines[i - 1])
            if mk:
                kind = mk.group(1)
                opts = {"reason": mk.group(2).strip()} if kind == "skip" else parse_opts(mk.group(2))
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        blocks.append(Block(page, kind, opts, i, j, indent, lang, body))
        i = j + 1
    return blocks


# ---------------------------------------------------------------- matching

def line_pattern(shown):
    """Regex for one shown line and the list of its number tokens (text)."""
    parts, nums = [], []
    for m in TOKEN.finditer(shown):
        dots, num, space, other = m.groups()
        if dots:
            parts.append(".*?")
        elif num:
            parts.append("(" + NUM.replace("~?", "") + ")")
            nums.append(num)
        elif space:
            parts.append(r"\s+")
        else:
            parts.append(re.escape(other))
    return re.compile("".join(parts) + r"\Z"), nums


def decimals(text):
    frac = text.split(".")[1] if "." in text else ""
    return len(re.match(r"\d*", frac).group(0))


def number_ok(shown, actual, tol):
    if shown.startswith("~"):
        return True
    if not re.search(r"[.eE]", shown):
        # an integer shown where the output now has a fraction is a change,
        # not a crash of the comparison
        return not re.search(r"[.eE]", actual) and int(shown) == int(actual)
    s, a = float(shown), float(actual)
    return abs(s - a) <= max(tol * abs(s), 10.0 ** -decimals(shown) * 1.0001)


def line_cost(shown, actual, tol):
    """None when the line's text differs; else the count of numbers that do."""
    pat, nums = line_pattern(shown)
    m = pat.match(actual.rstrip())
    if not m:
        return None
    return sum(0 if number_ok(s, a, tol) else 1 for s, a in zip(nums, m.groups()))


def segments(shown):
    """Split shown lines at "..." lines: (segments, open_start, open_end)."""
    segs, cur = [], []
    open_start = bool(shown) and shown[0].strip() == "..."
    for l in shown:
        if l.strip() == "...":
            segs.append(cur)
            cur = []
        else:
            cur.append(l)
    segs.append(cur)
    open_end = bool(shown) and shown[-1].strip() == "..."
    return [s for s in segs if s], open_start, open_end


def align(shown, actual, tol):
    """Best placement of the shown lines on the actual ones.

    Returns (cost, placement) where placement maps every shown line index to
    an actual line index, or (None, None) when the text cannot be placed.
    cost counts numbers outside the tolerance."""
    segs, open_start, open_end = segments([l.rstrip() for l in shown])
    n = len(actual)
    if not segs:
        return (0, {}) if (open_start or n == 0) else (None, None)
    INF = float("inf")
    # best[i][p]: least cost with segment i starting at actual line p.
    best, back = [], []
    for i, seg in enumerate(segs):
        row, brow = [INF] * (n + 1), [None] * (n + 1)
        for p in range(0, n - len(seg) + 1):
            if i == 0 and not open_start and p != 0:
                continue
            if i == len(segs) - 1 and not open_end and p + len(seg) != n:
                continue
            c = 0
            for k, l in enumerate(seg):
                lc = line_cost(l, actual[p + k], tol)
                if lc is None:
                    c = INF
                    break
                c += lc
            if c == INF:
                continue
            if i == 0:
                row[p], brow[p] = c, None
            else:
                prev_len = len(segs[i - 1])
                cands = [(best[i - 1][q], q) for q in range(0, p - prev_len + 1) if best[i - 1][q] < INF]
                if cands:
                    pc, q = min(cands)
                    row[p], brow[p] = c + pc, q
        best.append(row)
        back.append(brow)
    last = best[-1]
    p = min(range(n + 1), key=lambda x: (last[x], x))
    if last[p] == INF:
        return None, None
    starts = [p]
    for i in range(len(segs) - 1, 0, -1):
        starts.append(back[i][starts[-1]])
    starts.reverse()
    placement, si = {}, 0
    idx = [k for k, l in enumerate(shown) if l.strip() != "..."]
    for s, seg in zip(starts, segs):
        for k in range(len(seg)):
            placement[idx[si]] = s + k
            si += 1
    return last[p], placement


def one_figure(v):
    """v to one significant figure, as text ("0.06", "3", "40")."""
    if v <= 0:
        return "0"
    d = max(0, -int(math.floor(math.log10(v))))
    return "%.*f" % (d, round(v, d))


def mark_measured(line):
    for pat in MEASURED:
        line = pat.sub(lambda m: "~" + one_figure(float(m.group(1))), line)
    return line


def rewrite_line(shown, actual):
    """The shown line with its numbers (and "..." gaps kept) taken from actual."""
    if "..." not in shown and "~" not in shown:
        return mark_measured(actual.rstrip())
    pat, nums = line_pattern(shown)
    m = pat.match(actual.rstrip())
    out, gi = [], 0
    for t in TOKEN.finditer(shown):
        dots, num, space, other = t.groups()
        if num:
            val = m.group(gi + 1)
            gi += 1
            if num.startswith("~"):
                # A measured value is an order of magnitude: it is only
                # refreshed when it moved by more than 10x, so that reruns
                # on a busy machine leave it alone.
                shown_v, got = float(num[1:]), float(val)
                if shown_v > 0 and got > 0 and 0.1 <= got / shown_v <= 10:
                    out.append(num)
                    continue
                val = "~" + one_figure(got)
            out.append(val)
        else:
            out.append(t.group(0))
    return "".join(out)


def regenerate(shown, actual, tol):
    """New shown lines: the same elisions, the actual text and numbers."""
    cost, placement = align(shown, actual, tol)
    if placement is None:
        # The output's structure changed; keep only the first "..." trims.
        return None
    return [l if l.strip() == "..." else rewrite_line(l, actual[placement[k]])
            for k, l in enumerate(shown)]


# ---------------------------------------------------------------- running

class Runner:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="arachne-docs-")
        root = os.path.abspath(args.root)
        bindir = os.path.abspath(args.bin or os.path.join(root, "bin"))
        libdir = os.path.abspath(args.lib or os.path.join(root, "lib"))
        for name, target in (("bin", bindir), ("lib", libdir), ("include", os.path.join(root, "include")),
                             ("examples", os.path.join(root, "examples")), ("tests", os.path.join(root, "tests")),
                             ("docs", os.path.join(root, "docs"))):
            os.symlink(target, os.path.join(self.dir, name))
        # A pkg-config file for the build being tested (prefix = the scratch dir).
        pc = os.path.join(self.dir, ".pkgconfig")
        os.mkdir(pc)
        with open(os.path.join(root, "pkgconfig", "arachne.pc.in")) as f:
            text = f.read().replace("@PREFIX@", self.dir).replace("@VERSION@", "0")
        with open(os.path.join(pc, "arachne.pc"), "w") as f:
            f.write(text)
        env = dict(os.environ)
        env["PATH"] = os.path.join(self.dir, "bin") + os.pathsep + env.get("PATH", "")
        env["LD_LIBRARY_PATH"] = os.path.join(self.dir, "lib") + (
            os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["PKG_CONFIG_PATH"] = pc
        # "import arachne" finds the package of the checkout (python/), as
        # it would once installed; it loads the library of the build tree.
        if os.path.isdir(os.path.join(root, "python", "arachne")):
            env["PYTHONPATH"] = os.path.join(root, "python") + (
                os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        # The bundled policy, as bin/arachne finds it next to its source
        # tree; named here so that a binary built elsewhere (build/asan/bin)
        # plans with the same file.
        env.pop("ARACHNE_POLICY", None)
        bundled = os.path.join(root, "examples", "policies", "default.arpol")
        if os.path.isfile(bundled):
            env["ARACHNE_POLICY"] = bundled
        env["LC_ALL"] = "C"
        self.env = env
        self.stdbuf = shutil.which("stdbuf")
        # stdbuf works by LD_PRELOAD, which a sanitizer build refuses (its
        # runtime must load first); such a binary runs unbuffered-less.
        if self.stdbuf:
            _, probe = self.sh("bin/arachne version")
            if "runtime does not come first" in probe:
                self.stdbuf = None

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def sh(self, command, stdin=None):
        """Output of one command as a terminal shows it (stdout+stderr, line order)."""
        argv = ["sh", "-c", command]
        if self.stdbuf:
            argv = [self.stdbuf, "-oL", "-eL"] + argv
        try:
            p = subprocess.run(argv, cwd=self.dir, env=self.env, input=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=TIMEOUT_S, universal_newlines=True)
        except subprocess.TimeoutExpired:
            return 124, "(timed out after %d s)\n" % TIMEOUT_S
        return p.returncode, p.stdout

    def program(self, block):
        """Runs a python, c or sh program block; returns (status, output)."""
        src = "\n".join(block.body) + "\n"
        if block.lang == "python":
            return self.sh(shlex_quote(self.args.python) + " -", stdin=src)
        if block.lang == "c":
            path = os.path.join(self.dir, ".doc_example.c")
            with open(path, "w") as f:
                f.write(src)
            cc = os.environ.get("CC", "cc")
            rc, out = self.sh("%s -std=c11 -Wall -Wextra -Werror -Iinclude .doc_example.c -o .doc_example "
                              "lib/libarachne.a -lm" % cc)
            if rc != 0:
                return rc, out
            return self.sh("./.doc_example")
        return self.sh(src)


def shlex_quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


def transcript(body):
    """[(command, [shown output lines])] of a "$ " transcript."""
    steps, i = [], 0
    while i < len(body):
        l = body[i]
        if not l.startswith("$ "):
            i += 1  # text before the first prompt is not part of the check
            continue
        cmd = l[2:]
        while cmd.endswith("\\") and i + 1 < len(body):
            i += 1
            cmd = cmd + "\n" + body[i]  # sh joins backslash-newline itself
        j = i + 1
        while j < len(body) and not body[j].startswith("$ "):
            j += 1
        k = j
        while k > i + 1 and not body[k - 1].strip():
            k -= 1  # blank lines before the next prompt only space the page
        steps.append((cmd, i, body[i + 1:k]))
        i = j
    return steps


def compare(block, where, shown, actual_text, tol, update):
    """Returns (ok, new_shown or None)."""
    actual = actual_text.rstrip("\n").split("\n") if actual_text.strip() else []
    actual = [a.rstrip() for a in actual]
    shown = [s.rstrip() for s in shown]
    cost, placement = align(shown, actual, tol)
    if cost == 0:
        new = regenerate(shown, actual, tol) if update else None
        return True, new
    if update:
        new = regenerate(shown, actual, tol)
        if new is None:
            print("%s: the output no longer fits the shown elisions; wrote it whole, trim it by hand" % where)
            new = [mark_measured(a) for a in actual]
        return True, new
    if cost is None:
        print("%s: shown output is out of date (the text differs):" % where)
        for d in list(difflib.unified_diff(shown, actual, "shown", "actual", lineterm="", n=1))[:40]:
            print("    " + d)
        return False, None
    print("%s: shown output is out of date (%d number(s) outside the tolerance %g):" % (where, cost, tol))
    for k in sorted(placement):
        if line_cost(shown[k], actual[placement[k]], tol):
            print("    shown:  " + shown[k])
            print("    actual: " + actual[placement[k]])
    return False, None


def check_page(path, runner, args, covered):
    with open(path) as f:
        lines = f.read().split("\n")
    blocks = read_blocks(path, lines)
    problems, ran, skipped = 0, 0, 0
    replace = {}  # block -> new body lines
    last_program = None
    for b in blocks:
        needs_mark = b.is_transcript() or b.lang == "python" or (b.lang == "c" and "main(" in "\n".join(b.body))
        if b.kind is None:
            if covered and needs_mark:
                print("%s: example block without a doc-run/doc-skip marker" % b.where())
                problems += 1
            continue
        if b.kind == "skip":
            if not b.opts.get("reason"):
                print("%s: doc-skip needs a reason" % b.where())
                problems += 1
            skipped += 1
            continue
        if b.kind == "output":
            if last_program is None:
                print("%s: doc-output without a doc-run program block above it" % b.where())
                problems += 1
                continue
            if last_program == "skipped":
                last_program = None
                continue
            prog, rc, out = last_program
            last_program = None
            if rc != 0:
                print("%s: example exited with status %d:\n%s" % (prog.where(), rc, out))
                problems += 1
                continue
            ok, new = compare(b, b.where(), b.body, out, float(prog.opts.get("tol", 0.005)), args.update)
            problems += not ok
            if new is not None and new != b.body:
                replace[b] = new
            continue
        missing = [n for n in str(b.opts.get("needs", "")).split(",") if n and
                   not os.path.exists(os.path.join(runner.dir, n))]
        if missing:
            print("%s: skipped, %s missing" % (b.where(), " and ".join(missing)))
            skipped += 1
            last_program = "skipped"
            continue
        if args.skip_shared and (b.opts.get("shared") or b.lang in ("python", "c")):
            skipped += 1
            last_program = "skipped"  # its doc-output is skipped with it
            continue
        ran += 1
        tol = float(b.opts.get("tol", 0.005))
        if "file" in b.opts:
            name = b.opts["file"]
            if os.path.basename(name) != name or name.startswith("."):
                print("%s: file= must be a plain file name" % b.where())
                problems += 1
                continue
            with open(os.path.join(runner.dir, name), "w") as f:
                f.write("\n".join(b.body) + "\n")
            continue
        if b.is_transcript():
            new_body = list(b.body)
            changed = False
            offset = 0
            for cmd, at, shown in transcript(b.body):
                rc, out = runner.sh(cmd)
                where = "%s:%d" % (path, b.start + 2 + at)
                if "No such file or directory" in out and not b.opts.get("missing-ok"):
                    # an input an earlier block should have made is not
                    # there: the example shows an error nobody meant (and
                    # --update would write it in as the documented output)
                    print("%s: the command names a file the page never makes (\"No such file or directory\");"
                          " make it in an earlier doc-run block, or mark the block doc-run missing-ok" % where)
                    problems += 1
                    continue
                ok, new = compare(b, where, shown, out, tol, args.update)
                problems += not ok
                if new is not None and new != shown:
                    s = at + 1 + offset
                    new_body[s:s + len(shown)] = new
                    offset += len(new) - len(shown)
                    changed = True
            if changed:
                replace[b] = new_body
            continue
        if b.lang not in ("python", "c", "sh", "bash"):
            print("%s: doc-run on a ```%s block: only transcripts, python, c and sh run" % (b.where(), b.lang))
            problems += 1
            continue
        rc, out = runner.program(b)
        last_program = (b, rc, out)
        if rc != 0:
            print("%s: example exited with status %d:\n%s" % (b.where(), rc, out))
            problems += 1
            last_program = None
    if args.update and replace:
        out = []
        prev = 0
        for b in sorted(replace, key=lambda x: x.start):
            out.extend(lines[prev:b.start + 1])
            out.extend([(b.indent + l) if l else l for l in replace[b]])
            prev = b.end
        out.extend(lines[prev:])
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(out))
        os.replace(tmp, path)
        print("%s: rewrote %d block(s)" % (path, len(replace)))
    return problems, ran, skipped


def mutate(page, out):
    """Copies page to out with the first decimal number of the first checked
    output line changed by about 10 %; prints where."""
    with open(page) as f:
        lines = f.read().split("\n")
    for b in read_blocks(page, lines):
        if b.kind not in ("run", "output") or "file" in b.opts:
            continue
        shown = []
        if b.kind == "output":
            shown = list(range(len(b.body)))
        elif b.is_transcript():
            for _, at, s in transcript(b.body):
                shown += range(at + 1, at + 1 + len(s))
        for k in shown:
            for m in re.finditer(r"(?<![\w.~-])\d+\.\d+", b.body[k]):
                old = m.group(0)
                d = decimals(old)
                new = "%.*f" % (d, float(old) * 1.1 + 10.0 ** -d)
                li = b.start + 1 + k
                lines[li] = lines[li][:len(b.indent)] + b.body[k][:m.start()] + new + b.body[k][m.end():]
                with open(out, "w") as f:
                    f.write("\n".join(lines))
                print("%d %s %s" % (li + 1, old, new))
                return 0
    print("%s: no decimal number in a checked output" % page)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pages", nargs="*")
    ap.add_argument("--update", action="store_true", help="rewrite the shown outputs in place")
    ap.add_argument("--root", default=".", help="repository root (default .)")
    ap.add_argument("--bin", help="directory of the arachne binary (default ROOT/bin)")
    ap.add_argument("--lib", help="directory of libarachne (default ROOT/lib)")
    ap.add_argument("--python", default=os.environ.get("PYTHON", "python3"))
    ap.add_argument("--skip-shared", action="store_true",
                    help="skip python and c blocks (a sanitizer build without a loadable library)")
    ap.add_argument("--not-covered", action="append", default=list(NOT_COVERED), metavar="PAGE",
                    help="run this page's markers but do not require every example to carry one")
    ap.add_argument("--cover-all", action="store_true", help="every page given is covered (ignore NOT_COVERED)")
    ap.add_argument("--mutate", nargs=2, metavar=("PAGE", "OUT"))
    args = ap.parse_args()
    if args.mutate:
        return mutate(*args.mutate)
    not_covered = set() if args.cover_all else {os.path.normpath(p) for p in args.not_covered}
    problems = ran = skipped = 0
    for page in args.pages:
        runner = Runner(args)
        try:
            p, r, s = check_page(page, runner, args, os.path.normpath(page) not in not_covered)
        finally:
            runner.close()
        problems += p
        ran += r
        skipped += s
    uncovered = sorted(p for p in args.pages if os.path.normpath(p) in not_covered)
    print("docs_examples: %d pages, %d examples run, %d shown but not run, %d problems%s"
          % (len(args.pages), ran, skipped, problems,
             "; not covered (unmarked examples allowed): " + " ".join(uncovered) if uncovered else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
