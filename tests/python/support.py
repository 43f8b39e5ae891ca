"""Shared helpers of the Python tests: puts examples/python on sys.path,
imports the binding, and offers skips for library parts not built yet."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
PYDIR = os.path.join(REPO, "examples", "python")
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)

import arachne  # noqa: E402

# A small heterogeneous cluster: planning and profile generation stay fast.
SMALL_SPEC = "a100-40:2x4,h100:1x8"
BIG_SPEC = "a100-40:32x4,a6000:8x4+16x1,h100:16x8"
LLAMA3_8B_PARAMS = 8030261248


def need(*names):
    """Skips the calling test when the library lacks one of the C functions."""
    missing = [n for n in names if not arachne.has_function(n)]
    if missing:
        more = " (+%d more)" % (len(missing) - 1) if len(missing) > 1 else ""
        raise unittest.SkipTest("the library does not export %s%s yet" % (missing[0], more))


def sailor_dir():
    """The measured Sailor profiles beside the repository, or None."""
    for base in (os.environ.get("ARACHNE_SHARED_DATA"),
                 os.path.join(REPO, "shared", "data", "sailor-profiles"),
                 os.path.join(REPO, os.pardir, "shared", "data", "sailor-profiles")):
        if base and os.path.isfile(os.path.join(base, "profiles.json")):
            return base
    return None
