"""The DCC schedulers in C for the tests (tests/test_dcc*.py): sw/firmware/dcc.c or the first one
(tests/c/dcc_rebuild) built with the one ctypes shim, tests/c/dcc_shim.c, and models passed to it."""

import ctypes
import shutil
import subprocess
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
SHIM = TESTS / "c" / "dcc_shim.c"


def build(tmp, name, include, source, defines=()):
    """The shim and `source` (its dcc.h in `include`) as a shared library in `tmp`, loaded."""
    cc = shutil.which("gcc") or shutil.which("cc")
    assert cc, "a host C compiler is needed for the DCC scheduler tests"
    lib = Path(tmp) / f"lib{name}.so"
    subprocess.run([cc, "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", *defines, f"-I{include}", "-o",
                    str(lib), str(SHIM), str(source)], check=True)
    so = ctypes.CDLL(str(lib))
    so.shim_schedule.restype = ctypes.c_longlong
    so.shim_schedule.argtypes = [ctypes.c_uint, ctypes.c_ulonglong]
    so.shim_at.argtypes = [ctypes.c_ulonglong]
    so.shim_length.restype = ctypes.c_ulonglong
    if hasattr(so, "shim_check"):
        so.shim_check.restype = ctypes.c_long
    return so


def init(so, cap, model_list):
    """dcc_init with `model_list` ([[(cycles, level), ...], ...]); its return code."""
    n = (ctypes.c_uint * len(model_list))(*[len(m) for m in model_list])
    flat = [x for m in model_list for piece in m for x in piece]
    return so.shim_init(cap, len(model_list), n, (ctypes.c_uint * max(len(flat), 1))(*flat))
