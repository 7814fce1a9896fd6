"""nandlab profile's host side: the firmware's histogram dump parsed and its buckets named."""

import pytest

from nandlab.errors import NandLabError
from nandlab.profile import parse_dump, attribute


DUMP = """prof base=0x40000000 shift=3 period=1000 samples=10 outside=0
prof 0 2
prof 1 1
prof 16 4
prof 40 3
prof end
"""


@pytest.mark.unit
def test_buckets_go_to_the_function_holding_them():
    head, counts = parse_dump(DUMP)
    assert head == dict(base=0x40000000, shift=3, period=1000, samples=10, outside=0)
    assert counts == {0: 2, 1: 1, 16: 4, 40: 3}
    syms = [(0x40000000, 0x10, "a"), (0x40000080, 0x40, "b"), (0x40000100, 0x8, "c")]
    rows = attribute(head, counts, syms)
    # bucket 0 and 1 (0x...00, 0x...08) in a; 16 (0x...80) in b; 40 (0x...140) past c's end.
    assert [(r["function"], r["samples"]) for r in rows] == [("b", 4), ("a", 3), ("(unknown)", 3)]
    assert abs(sum(r["share"] for r in rows) - 1) < 1e-9


@pytest.mark.unit
def test_a_dump_without_header_is_a_clear_error():
    with pytest.raises(NandLabError, match="no header"):
        parse_dump("error: unknown command 'prof'\n")
