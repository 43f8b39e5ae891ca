"""Version, status strings, errors, library lookup, the GPU catalog, and the
binding's signature table against include/arachne.h."""
import ast
import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import sys
import unittest

from support import PYDIR, REPO, arachne, read

HEADER = os.path.join(REPO, "include", "arachne.h")


def _header_version():
    text = read(HEADER)
    parts = [re.search(r"#define ARACHNE_VERSION_%s (\d+)" % k, text).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class VersionTest(unittest.TestCase):
    def test_version_matches_header(self):
        self.assertEqual(arachne.version(), _header_version())
        major, minor, patch = [int(x) for x in _header_version().split(".")]
        self.assertEqual(arachne.version_number(), major * 10000 + minor * 100 + patch)

    def test_status_strings(self):
        self.assertEqual(arachne.status_string(0), "ok")
        self.assertEqual(arachne.status_string(arachne.E_PARSE), "parse error")
        self.assertEqual(arachne.status_string(-999), "unknown status")
        for code in arachne.STATUS_NAMES:
            self.assertTrue(arachne.status_string(code))

    def test_status_constants_match_header(self):
        text = read(HEADER)
        found = dict((name, int(v)) for name, v in re.findall(r"\b(ARACHNE_(?:OK|E_\w+))\s*=\s*(-?\d+)", text))
        self.assertEqual(len(found), len(arachne.STATUS_NAMES))
        for code, name in arachne.STATUS_NAMES.items():
            self.assertEqual(found[name], code, name)
            self.assertEqual(getattr(arachne, name[len("ARACHNE_"):]), code)


class ErrorTest(unittest.TestCase):
    def test_error_carries_status_name_and_message(self):
        with self.assertRaises(arachne.Error) as cm:
            arachne.Cluster.parse("a100:4x")
        e = cm.exception
        self.assertIsInstance(e, Exception)
        self.assertEqual(e.status, arachne.E_PARSE)
        self.assertEqual(e.status_name, arachne.status_string(arachne.E_PARSE))
        self.assertEqual(e.code_name, "ARACHNE_E_PARSE")
        self.assertIn("offset", e.message)
        self.assertIn("a100:4x", e.message)
        self.assertIn(e.message, str(e))

    def test_error_pickles(self):
        import pickle
        e = arachne.Error(arachne.E_IO, "x.json: cannot open")
        f = pickle.loads(pickle.dumps(e))
        self.assertEqual((f.status, f.message, f.status_name), (e.status, e.message, e.status_name))
        self.assertEqual(str(f), str(e))

    def test_not_found(self):
        with self.assertRaises(arachne.Error) as cm:
            arachne.gpu_canonical_name("no-such-gpu")
        self.assertEqual(cm.exception.status, arachne.E_NOT_FOUND)
        self.assertIn("no-such-gpu", cm.exception.message)

    def test_python_side_errors(self):
        with self.assertRaises(arachne.Error) as cm:
            arachne.gpu_get("h100", "no_such_field")
        self.assertEqual(cm.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertIn("no_such_field", cm.exception.message)

    def test_errors_per_thread(self):
        import threading
        bad = {}

        def work(i):
            spec = "h100:%dy8" % (i + 1)
            for _ in range(200):
                try:
                    arachne.Cluster.parse(spec)
                except arachne.Error as e:
                    if spec not in e.message:
                        bad[i] = e.message
                        return

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(bad, {})

    def test_last_error(self):
        try:
            arachne.Cluster.parse("h100:0x8")
        except arachne.Error as e:
            self.assertEqual(arachne.last_error(), e.message)
        else:
            self.fail("a zero node count must fail")


class GpuCatalogTest(unittest.TestCase):
    def test_catalog(self):
        names = arachne.gpu_catalog()
        for want in ("A100-40", "A100-80", "H100", "A6000", "A5000", "L40S", "GH-96"):
            self.assertIn(want, names)
        self.assertEqual(len(names), len(set(names)))

    def test_aliases_and_fields(self):
        self.assertEqual(arachne.gpu_canonical_name("a100_40"), "A100-40")
        info = arachne.gpu_info("A100-40GB")
        self.assertEqual(info["name"], "A100-40")
        self.assertEqual(set(info), set(arachne.GPU_FIELDS) | {"name"})
        for k in arachne.GPU_FIELDS:
            self.assertGreater(info[k], 0)
        self.assertEqual(arachne.gpu_get("h100", "memory_bytes"), arachne.gpu_get("h100", 0))
        self.assertGreater(arachne.gpu_get("h100", "flops"), arachne.gpu_get("a100-40", "flops"))


class LibraryLookupTest(unittest.TestCase):
    def _run(self, code, env_extra):
        env = dict(os.environ)
        env.pop("ARACHNE_LIB", None)
        env.update(env_extra)
        return subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); %s" % (PYDIR, code)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)

    def test_loaded_library_exists(self):
        self.assertTrue(os.path.exists(arachne.library_path()))

    def test_env_var_directory(self):
        libdir = os.path.dirname(arachne.library_path())
        r = self._run("import arachne; print(arachne.library_path()); print(arachne.version())",
                      {"ARACHNE_LIB": libdir})
        self.assertEqual(r.returncode, 0, r.stderr)
        path, ver = r.stdout.split()
        self.assertEqual(os.path.dirname(path), libdir)
        self.assertEqual(ver, arachne.version())

    def test_explicit_bad_path_fails(self):
        r = self._run("import arachne\ntry:\n    arachne.load_library('/nonexistent/libarachne.so')\n"
                      "except OSError as e:\n    print('OSError', e)\n", {})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OSError", r.stdout)
        self.assertIn("/nonexistent/libarachne.so", r.stdout)

    def test_bad_env_is_an_error(self):
        # A wrong ARACHNE_LIB is an error naming it, never a silent fallback
        # to another library (the source tree's lib/ would load here).
        r = self._run("import arachne; print(arachne.library_path())", {"ARACHNE_LIB": "/nonexistent/x.so"})
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("OSError", r.stderr)
        self.assertIn("ARACHNE_LIB", r.stderr)
        self.assertIn("/nonexistent/x.so", r.stderr)

    def test_not_found_lists_every_place(self):
        # With ARACHNE_LIB unset and a package copy outside the source tree,
        # nothing is found and the error names each place tried.
        tmp = tempfile.mkdtemp()
        try:
            shutil.copytree(os.path.join(REPO, "python", "arachne"), os.path.join(tmp, "arachne"),
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
            env = dict(os.environ)
            env.pop("ARACHNE_LIB", None)
            env["LD_LIBRARY_PATH"] = ""
            code = ("import sys; sys.path.insert(0, %r); import arachne\n"
                    "arachne.install_prefix = lambda: %r\n"
                    "try:\n    arachne.load_library()\nexcept OSError as e:\n    print(e)\n"
                    "else:\n    print('LOADED', arachne.library_path())\n" % (tmp, os.path.join(tmp, "prefix")))
            r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
        finally:
            shutil.rmtree(tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        if r.stdout.startswith("LOADED"):
            self.skipTest("a libarachne is installed system-wide: %s" % r.stdout.strip())
        for how in ("next to the package", "install prefix", "Python prefix", "system loader"):
            self.assertIn(how + ":", r.stdout)
        self.assertIn(os.path.join(tmp, "arachne", "libarachne.so"), r.stdout)
        self.assertIn(os.path.join(tmp, "prefix", "lib", "libarachne.so.0"), r.stdout)
        self.assertNotIn("source tree", r.stdout)  # the copy is not in a checkout


# ---------------------------------------------------------------------------
# Signatures: every C declaration of the header against the binding's table.

_SCALARS = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "double": ctypes.c_double, "long": ctypes.c_long, "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
}


def _ctype(decl):
    """ctypes type of a C parameter or return type such as 'const arachne_model *m'."""
    decl = re.sub(r"\bconst\b", " ", decl)
    stars = decl.count("*")
    words = decl.replace("*", " ").split()
    if not words:
        raise ValueError(decl)
    # drop the parameter name when there is one
    base_words = words
    if len(words) > 1 and words[-1] not in ("int", "double", "long", "unsigned", "size_t", "uint64_t", "char", "void"):
        base_words = words[:-1]
    base = " ".join(base_words)
    if base == "void" and stars == 0:
        return None
    if base == "void" and stars == 1:
        return ctypes.c_void_p
    if base == "char":
        if stars == 1:
            return ctypes.c_char_p
        if stars == 2:
            return ctypes.POINTER(ctypes.c_char_p)
    if base == "arachne_train_callback" and stars == 0:
        return arachne.TRAIN_CALLBACK
    if base in arachne._HANDLE_STRUCTS:
        t = arachne._HANDLE_STRUCTS[base]
    elif base in _SCALARS:
        t = _SCALARS[base]
    else:
        raise ValueError("unknown C type %r" % decl)
    for _ in range(stars):
        t = ctypes.POINTER(t)
    return t


def _expected(ret, params):
    plist = [p.strip() for p in params.split(",")] if params.strip() not in ("", "void") else []
    args = []
    for p in plist:
        # a writable char buffer (char *buf) is a POINTER(c_char), a const char * a string
        if re.match(r"^char\s*\*\s*\w+$", p):
            args.append(ctypes.POINTER(ctypes.c_char))
        else:
            args.append(_ctype(p))
    return _ctype(ret + " x") if ret.strip() != "void" else None, args


def header_functions():
    text = read(HEADER)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out = {}
    for ret, name, params in re.findall(r"ARACHNE_API\s+([^;(]*?)\b(arachne_\w+)\s*\(([^)]*)\)\s*;", text):
        out[name] = _expected(ret.replace("*", " * ").strip() if "*" in ret else ret.strip(), " ".join(params.split()))
    return out


class SignatureTest(unittest.TestCase):
    def test_header_parses(self):
        funcs = header_functions()
        self.assertIn("arachne_cluster_parse", funcs)
        self.assertEqual(funcs["arachne_cluster_parse"][1],
                         [ctypes.POINTER(ctypes.POINTER(arachne._ClusterS)), ctypes.c_char_p])
        self.assertEqual(funcs["arachne_version_string"], (ctypes.c_char_p, []))

    def test_bound_signatures_match_header(self):
        funcs = header_functions()
        for name, (res, args) in sorted(funcs.items()):
            if name not in arachne._SIGNATURES:
                continue
            bres, bargs = arachne._SIGNATURES[name]
            self.assertEqual(bres, res, "%s: return type" % name)
            self.assertEqual(len(bargs), len(args), "%s: argument count" % name)
            for i, (b, h) in enumerate(zip(bargs, args)):
                self.assertEqual(b, h, "%s: argument %d is %s in the binding, %s in the header"
                                 % (name, i + 1, b, h))

    def test_every_header_function_is_bound(self):
        funcs = header_functions()
        missing = sorted(n for n in funcs if n not in arachne._SIGNATURES and n not in arachne._NOT_BOUND)
        if missing:
            self.skipTest("not bound yet: " + ", ".join(missing))

    def test_every_exported_function_is_in_the_header(self):
        funcs = header_functions()
        exported = [n for n in arachne._SIGNATURES if arachne.has_function(n)]
        self.assertEqual([n for n in exported if n not in funcs], [])


class SourceCompatibilityTest(unittest.TestCase):
    """The binding must run on Python 3.8: no newer syntax, no runtime generics."""

    def test_python38_syntax(self):
        for path in [os.path.join(PYDIR, f) for f in sorted(os.listdir(PYDIR)) if f.endswith(".py")]:
            src = read(path)
            tree = ast.parse(src, filename=path, feature_version=(3, 8))
            for node in ast.walk(tree):
                self.assertFalse(isinstance(node, ast.NamedExpr), "%s: walrus operator" % path)
                ann = getattr(node, "annotation", None) or getattr(node, "returns", None)
                if ann is not None:
                    for sub in ast.walk(ann):
                        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name):
                            self.assertNotIn(sub.value.id, ("list", "dict", "tuple", "set", "type"),
                                             "%s:%d: builtin generic in an annotation" % (path, sub.lineno))


if __name__ == "__main__":
    unittest.main()
