"""The bus trace comparison (tests/tools/bus_traces.py) tells identical records from differing ones."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import bus_traces  # noqa: E402


def _write(root, test, name, lines):
    d = root / test
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text("".join(f"{c} {v}\n" for c, v in lines))


@pytest.mark.unit
def test_compare_identical_and_differing(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    trace = [(0, "0"), (5, "1f"), (9, "3")]
    for root in (a, b):
        _write(root, "t1", "channel.00.trace", trace)
        _write(root, "t2", "die.00.trace", trace)
    assert bus_traces.compare(a, b) == (2, 18, [])
    # A value one cycle late is a difference; B holding one test compares that test only.
    _write(c, "t1", "channel.00.trace", [(0, "0"), (6, "1f"), (9, "3")])
    n, _, bad = bus_traces.compare(a, c)
    assert n == 1 and [str(p) for p in bad] == ["t1/channel.00.trace"]


@pytest.mark.unit
def test_compare_refuses_different_or_empty_sets(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _write(a, "t1", "channel.00.trace", [(0, "0")])
    _write(b, "t1", "channel.01.trace", [(0, "0")])
    with pytest.raises(ValueError, match="different trace sets"):
        bus_traces.compare(a, b)
    (tmp_path / "e" / "t9").mkdir(parents=True)
    with pytest.raises(ValueError, match="no traces"):
        bus_traces.compare(a, tmp_path / "e")
