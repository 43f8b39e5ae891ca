"""Compatibility shim: the binding is the package python/arachne/.

Code that puts examples/python on sys.path and imports arachne (the README's
older form, tests/python, examples/python/plan.py) gets that package, loaded
from this source tree.  Installed use: `pip install ./python`, then
`import arachne` from anywhere (docs/python.md).
"""
import importlib.util
import os
import sys

_PKG = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     os.pardir, os.pardir, "python", "arachne"))
_spec = importlib.util.spec_from_file_location("arachne", os.path.join(_PKG, "__init__.py"),
                                               submodule_search_locations=[_PKG])
_mod = importlib.util.module_from_spec(_spec)
# The import system returns sys.modules["arachne"] once this file has run, so
# the package takes this module's place for every importer.
sys.modules["arachne"] = _mod
_spec.loader.exec_module(_mod)
