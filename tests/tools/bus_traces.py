"""Record the channel's bus, cycle for cycle, in the controller and die tests, and compare two records.

    python tests/tools/bus_traces.py record DIR [MATCH]    # run the tests below with NANDLAB_BUS_TRACE
    python tests/tools/bus_traces.py compare A B           # identical? (first difference shown otherwise)

MATCH records only the tests whose node id contains it (e.g. `test_die`); compare then checks the
tests B holds against the same tests in A.

A restructuring that must not change behaviour records before and after and compares. The tests
use fixed seeds, so the same gateware gives the same traces.
"""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NODES = [
    "tests/test_die.py::test_die_async",
    "tests/test_die.py::test_die",
    "tests/test_die.py::test_die_wishbone_storage",
    "tests/test_controller.py::test_controller",
    "tests/test_controller_ecc.py::test_controller_ecc",
    "tests/test_controller_latency.py",
    "tests/test_controller_planes.py::test_controller_planes",
]


def _slug(node):
    return node.replace("tests/", "").replace("/", "_").replace("::", "__").replace("[", "_").replace("]", "")


def record(out, match=""):
    out = Path(out).resolve()
    for node in [n for n in NODES if match in n]:
        d = out / _slug(node)
        print(f"recording {node} -> {d}", flush=True)
        env = dict(os.environ, NANDLAB_BUS_TRACE=str(d))
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", node],
                           cwd=REPO, env=env)
        if r.returncode:
            sys.exit(f"{node} failed")
        # A test that passed without writing a trace recorded nothing to compare.
        assert any(d.rglob("*.trace")), f"{node} passed but recorded no trace in {d}"


def compare(a, b):
    """Compare the traces B holds with the same tests' traces in A; returns (traces, cycles, differing
    files). Raises ValueError when the sets of traces differ or there are none."""
    a, b = Path(a), Path(b)
    tests = {p.name for p in b.iterdir() if p.is_dir()}
    fa = sorted(p.relative_to(a) for p in a.rglob("*.trace") if p.relative_to(a).parts[0] in tests)
    fb = sorted(p.relative_to(b) for p in b.rglob("*.trace"))
    if fa != fb:
        raise ValueError(f"different trace sets: only in {a}: {sorted(set(fa) - set(fb))}; "
                         f"only in {b}: {sorted(set(fb) - set(fa))}")
    if not fa:
        raise ValueError("no traces")
    bad = []
    cycles = 0
    for rel in fa:
        la, lb = (a / rel).read_text().splitlines(), (b / rel).read_text().splitlines()
        cycles += int(la[-1].split()[0]) if la else 0
        if la != lb:
            bad.append(rel)
            first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            print(f"{rel}: differs at change {first}: {la[first:first + 1]} vs {lb[first:first + 1]}")
    return len(fa), cycles, bad


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "record":
        record(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        try:
            n, cycles, bad = compare(sys.argv[2], sys.argv[3])
        except ValueError as e:
            sys.exit(str(e))
        print(f"{n} traces, {cycles} cycles to the last change: {'identical' if not bad else f'{len(bad)} differ'}")
        sys.exit(1 if bad else 0)
    else:
        sys.exit(__doc__)


def gate_ticks(trace_dir, n):
    """(cycles the idle gate clocked the die, cycles in all) over the `n` tests recorded in `trace_dir`
    (the .ticks summaries tests/tb/bus_trace.py writes beside a gated die's traces)."""
    summaries = sorted(Path(trace_dir).glob("*.ticks"))
    assert len(summaries) == n, (len(summaries), n)
    return tuple(sum(int(p.read_text().split()[i]) for p in summaries) for i in (0, 1))
