"""API misuse, walking the whole public header (issue: reliability).

Every function declared ARACHNE_API in include/arachne.h is called
  1. with every pointer NULL and every number 0: no crash, and a function
     returning int returns a negative status with a last-error message;
  2. with valid handles and out-parameters but an out-of-range integer
     (option key, field, index, format, kind) of 9999: a negative status
     with a message, never a crash;
  3. functions that copy into a caller buffer (char *buf, size_t cap) with
     a one-byte buffer: ARACHNE_E_BUFFER_TOO_SMALL and the needed size.
Each call runs in a forked child so a crash is reported, not fatal.
"""
import ctypes
import os
import re
import unittest

import support  # noqa: F401  (puts examples/python on sys.path, finds the library)
import arachne
from support import read
from test_core import header_functions, HEADER

INTS = (ctypes.c_int, ctypes.c_long, ctypes.c_uint, ctypes.c_uint64, ctypes.c_size_t)


def param_names():
    text = re.sub(r"/\*.*?\*/", " ", read(HEADER), flags=re.S)
    out = {}
    for name, params in re.findall(r"ARACHNE_API\s+[^;(]*?\b(arachne_\w+)\s*\(([^)]*)\)\s*;", text):
        names = []
        for p in params.split(","):
            words = re.findall(r"\w+", p)
            names.append(words[-1] if words and p.strip() != "void" else "")
        out[name] = names
    return out


def run_forked(call):
    """Runs call() in a child; returns (signal or None, exit code)."""
    pid = os.fork()
    if pid == 0:
        try:
            code = call()
        except BaseException:
            code = 99
        os._exit(code)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        return os.WTERMSIG(st), None
    return None, os.WEXITSTATUS(st)


class Fixture(object):
    """One valid handle of every type, made through the Python binding."""

    def __init__(self):
        self.model = arachne.Model.preset("llama3-8b")
        self.cluster = arachne.Cluster.parse("a100-40:2x4,h100:1x8")
        self.profile = arachne.Profile.generate(self.model, self.cluster, 4096)
        self.cm = arachne.CostModel(self.model, self.cluster, self.profile)
        self.policy = arachne.Policy.create(1)
        self.plan = self.policy.plan(self.cm, samples=1, seed=0)
        self.handles = {
            arachne._ClusterS: self.cluster._h(), arachne._ModelS: self.model._h(),
            arachne._ProfileS: self.profile._h(), arachne._CostModelS: self.cm._h(),
            arachne._PolicyS: self.policy._h(), arachne._PlanS: self.plan._h(),
        }


class MisuseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = arachne.load_library()
        cls.lib.arachne_last_error.restype = ctypes.c_char_p
        cls.funcs = header_functions()
        cls.names = param_names()

    def _fn(self, name):
        restype, argtypes = self.funcs[name]
        fn = getattr(self.lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
        return fn, restype, argtypes

    def test_null_and_zero_arguments(self):
        bad = []
        for name in sorted(self.funcs):
            fn, restype, argtypes = self._fn(name)
            if not argtypes:
                continue
            args = []
            for t in argtypes:
                if t in INTS:
                    args.append(0)
                elif t is ctypes.c_double:
                    args.append(0.0)
                elif t is arachne.TRAIN_CALLBACK:
                    args.append(t())
                else:
                    args.append(None)

            def call(fn=fn, args=args, restype=restype):
                self.lib.arachne_clear_error()
                r = fn(*args)
                if restype is ctypes.c_int and r >= 0 and not self.lib.arachne_last_error():
                    # a few int functions legitimately succeed on 0 (counts): they must not crash
                    return 0
                if restype is ctypes.c_int and r < 0 and not self.lib.arachne_last_error():
                    return 4
                return 0
            sig, code = run_forked(call)
            if sig is not None:
                bad.append("%s crashed (signal %d)" % (name, sig))
            elif code != 0:
                bad.append("%s: failed without a message (code %d)" % (name, code))
        self.assertEqual(bad, [])

    def test_out_of_range_integers_with_valid_handles(self):
        fx = Fixture()
        keys = ("option", "field", "index", "format", "kind", "t", "s", "r", "node", "composition", "i")
        bad, tried = [], 0
        for name in sorted(self.funcs):
            fn, restype, argtypes = self._fn(name)
            pnames = self.names.get(name, [])
            if restype is not ctypes.c_int or not argtypes or len(pnames) != len(argtypes):
                continue
            if not any(n in keys for n, t in zip(pnames, argtypes) if t in INTS):
                continue
            args, keep, ok = [], [], True
            for n, t in zip(pnames, argtypes):
                if t in INTS:
                    args.append(9999 if n in keys else 1)
                elif t is ctypes.c_double:
                    args.append(1.0)
                elif t is ctypes.c_char_p:
                    args.append(b"h100")
                elif t is arachne.TRAIN_CALLBACK:
                    args.append(t())
                elif hasattr(t, "_type_") and t._type_ in fx.handles:
                    args.append(fx.handles[t._type_])
                elif hasattr(t, "_type_") and t._type_ in arachne._HANDLE_STRUCTS.values():
                    ok = False  # a handle type the fixture does not make (trainer, replan)
                elif hasattr(t, "_type_"):
                    # an out-parameter: point it at scratch memory of its type
                    target = t._type_()
                    keep.append(target)
                    args.append(ctypes.pointer(target))
                else:
                    ok = False
            if not ok:
                continue
            tried += 1

            def call(fn=fn, args=args):
                self.lib.arachne_clear_error()
                r = fn(*args)
                if r >= 0:
                    return 3
                return 0 if self.lib.arachne_last_error() else 4
            sig, code = run_forked(call)
            if sig is not None:
                bad.append("%s crashed (signal %d)" % (name, sig))
            elif code == 3:
                bad.append("%s accepted 9999" % name)
            elif code != 0:
                bad.append("%s: no message (code %d)" % (name, code))
        self.assertGreater(tried, 15)
        self.assertEqual(bad, [], "\n".join(bad))

    def test_small_buffers_report_the_needed_size(self):
        fx = Fixture()
        cases = [("arachne_plan_to_svg", fx.plan._h()), ("arachne_profile_to_json", fx.profile._h())]
        for name, h in cases:
            fn, restype, argtypes = self._fn(name)
            buf = ctypes.create_string_buffer(1)
            need = ctypes.c_size_t(0)
            self.lib.arachne_clear_error()
            r = fn(h, buf, 1, ctypes.byref(need))
            self.assertEqual(r, arachne.E_BUFFER_TOO_SMALL if hasattr(arachne, "E_BUFFER_TOO_SMALL") else -8, name)
            self.assertGreater(need.value, 1, name)
            self.assertTrue(self.lib.arachne_last_error(), name)


if __name__ == "__main__":
    unittest.main()
