"""Architecture rules the rooms keep (issue 14): short functions, short files, no host imports in gateware."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOMS = ("gateware", "nand_model", "soc")
MAX_FUNCTION_LINES = 150
MAX_FILE_LINES = 600


def _sources():
    return sorted(p for room in ROOMS for p in (REPO / room).rglob("*.py"))


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.unit
def test_no_long_functions():
    long = []
    for path in _sources():
        for fn in _functions(ast.parse(path.read_text())):
            n = fn.end_lineno - fn.lineno + 1
            if n > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(REPO)}:{fn.lineno} {fn.name}: {n} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


@pytest.mark.unit
def test_no_long_files():
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in _sources()
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES]
    assert not long, f"files over {MAX_FILE_LINES} lines:\n" + "\n".join(long)


@pytest.mark.unit
def test_gateware_imports_no_host_module():
    """Gateware, the die emulator and the SoC import nothing from the host package (nandlab.*
    outside nandlab.gateware / nandlab.nand_model / nandlab.soc)."""
    allowed = ("nandlab.gateware", "nandlab.nand_model", "nandlab.soc")
    bad = []
    for path in _sources():
        if path.parts[-3:-1] == ("soc", "targets") or path.parent.name == "soc":
            continue        # Targets build the firmware and read the host's environment (soc is the application).
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for name in names:
                if name == "nandlab" or name.startswith("nandlab.") and not name.startswith(allowed):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} imports {name}")
    assert not bad, "\n".join(bad)
