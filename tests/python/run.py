#!/usr/bin/env python3
"""Runs every tests/python/test_*.py with unittest.

Prints exactly one line "#counts PASSED FAILED SKIPPED" on stdout (tests/run.sh
adds it to the `make check` summary); details of failures and skips go to
stderr (-v: the whole unittest report).  The library comes from ARACHNE_LIB,
else ARACHNE_LIBDIR/libarachne.so (set by tests/run.sh), else the binding's own
lookup.  With ARACHNE_SKIP_SHARED_CHECKS set (make check-asan: an ASan library
cannot be loaded into a plain python3) every test counts as skipped.
"""
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))


def _library_from_libdir():
    libdir = os.environ.get("ARACHNE_LIBDIR")
    if not libdir or os.environ.get("ARACHNE_LIB"):
        return
    for base in (os.getcwd(), REPO):
        cand = os.path.join(base, libdir, "libarachne.so")
        if os.path.exists(cand):
            os.environ["ARACHNE_LIB"] = os.path.abspath(cand)
            return
    os.environ["ARACHNE_LIB"] = os.path.join(REPO, libdir, "libarachne.so")


def main(argv):
    verbose = "-v" in argv
    _library_from_libdir()
    sys.path.insert(0, HERE)
    suite = unittest.TestLoader().discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    if os.environ.get("ARACHNE_SKIP_SHARED_CHECKS"):
        n = suite.countTestCases()
        sys.stderr.write("skip tests/python: %d tests need the release shared library "
                         "(ARACHNE_SKIP_SHARED_CHECKS is set)\n" % n)
        print("#counts 0 0 %d" % n)
        return 0
    stream = sys.stderr if verbose else io.StringIO()
    result = unittest.TextTestRunner(stream=stream, verbosity=2 if verbose else 0).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    if not verbose:
        reasons = {}  # reason -> tests skipped for it, first-seen order
        for test, reason in result.skipped:
            reasons.setdefault(reason, []).append(test.id())
        for reason, ids in reasons.items():
            what = ids[0] if len(ids) == 1 else "%s and %d more" % (ids[0], len(ids) - 1)
            sys.stderr.write("skip python %s: %s\n" % (what, reason))
        for test, trace in result.failures + result.errors:
            sys.stderr.write("FAIL python %s:\n" % test.id())
            sys.stderr.write("".join("    " + line + "\n" for line in trace.rstrip().splitlines()))
        for test in result.unexpectedSuccesses:
            sys.stderr.write("FAIL python %s: unexpected success\n" % test.id())
    print("#counts %d %d %d" % (passed, failed, skipped))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
