"""ECC torture (nandbiterrs-style) of the channel controller's BCH path: cocotb on Verilator against
emulated dies and bchlib (tests/tb/ecc_torture_tb.py, also run by `nandlab ecc torture`)."""

import pytest

from nandlab.ecc_torture import check_plan, run_torture, format_tables
from nandlab.errors import NandLabError


def _check(r, reads):
    t = r["t"]
    steps = {(row["area"], row["flips"]): row for row in r["incremental"]}
    for area in ("data", "parity", "mixed"):
        for flips in range(1, t + 1):
            row = steps[(area, flips)]
            assert (row["result"], row["count"], row["outcome"]) == ("OK", flips, "corrected"), row
        row = steps[(area, t + 1)]
        assert (row["result"], row["count"], row["outcome"]) == ("ECC_UNCORRECTABLE", None, "uncorrectable"), row
    h = r["histogram"]
    assert h["reads"] == reads and sum(h["histogram"].values()) == reads * r["codewords"]


@pytest.mark.cocotb
def test_ecc_torture(tmp_path):
    """1..t flips corrected and counted, t + 1 uncorrectable (data, parity, both), then 30 reads
    with random flips: every count is bchlib's; the tables print."""
    r = run_torture(check_plan(seed=1, reads=30, rate=2500, beyond=3), build_dir=tmp_path)
    print("\n".join(format_tables(r)))
    _check(r, 30)
    assert r["histogram"]["flips"] > 0


@pytest.mark.cocotb
@pytest.mark.slow
def test_ecc_torture_long(tmp_path):
    """Flips up to t + 12 per codeword, 1000 reads at a rate that makes uncorrectable codewords common."""
    r = run_torture(check_plan(seed=7, reads=1000, rate=3500, beyond=12), build_dir=tmp_path)
    print("\n".join(format_tables(r)))
    _check(r, 1000)
    assert r["histogram"]["histogram"].get("uncorrectable", 0) > 0


@pytest.mark.unit
@pytest.mark.parametrize("kw", [dict(reads=0), dict(rate=70000), dict(rate=-1), dict(beyond=-1)])
def test_ecc_torture_refuses_bad_values(kw):
    plan = dict(seed=1, reads=10, rate=100, beyond=0)
    plan.update(kw)
    with pytest.raises(NandLabError):
        check_plan(**plan)
