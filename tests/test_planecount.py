"""nandlab.planecount: the dies' counters read by CSR name, the run's delta (32-bit wrap) and the
exploitation the DW/SDW paper defines (pages in multi-plane operations over all pages)."""

import pytest

from nandlab import planecount
from nandlab.errors import NandLabError

pytestmark = pytest.mark.unit


class _Reg:
    def __init__(self, value):
        self.value = value

    def read(self):
        return self.value


class _Regs:
    def __init__(self, **values):
        for k, v in values.items():
            setattr(self, k, _Reg(v))


def test_read_delta_and_exploitation():
    before = _Regs(nand_die0_ops_read=10, nand_die0_ops_program=2**32 - 2, nand_die0_ops_erase=0,
                   nand_die0_mp_read2=1, nand_die0_mp_program2=0, nand_die0_mp_erase2=0,
                   nand_die1_ops_read=0, nand_die1_ops_program=0, nand_die1_ops_erase=0,
                   nand_die1_mp_read2=0, nand_die1_mp_program2=0, nand_die1_mp_erase2=0,
                   nand_ctrl_completed=5, timebase_window=7)
    # Over the run: die 0 read 6 ops (2 of them 2-plane), programmed 4 (the counter wrapped; 1 of them
    # 2-plane); die 1 read 4 single pages, erased twice as one 2-plane erase.
    after = _Regs(nand_die0_ops_read=16, nand_die0_ops_program=2, nand_die0_ops_erase=0,
                  nand_die0_mp_read2=3, nand_die0_mp_program2=1, nand_die0_mp_erase2=0,
                  nand_die1_ops_read=4, nand_die1_ops_program=0, nand_die1_ops_erase=1,
                  nand_die1_mp_read2=0, nand_die1_mp_program2=0, nand_die1_mp_erase2=1)
    c0, c1 = planecount.read(before), planecount.read(after)
    assert sorted(c1) == [0, 1] and c1[0]["mp"]["read"] == {2: 3}
    s = planecount.summary(planecount.delta(c0, c1))
    assert s["dies"] == 2
    assert s["read"] == {"operations": 10, "pages": 12, "by_pages": {1: 8, 2: 2},
                         "exploitation_pages": 4 / 12, "exploitation_operations": 2 / 10}
    assert s["program"]["by_pages"] == {1: 3, 2: 1} and s["program"]["pages"] == 5
    assert s["erase"]["by_pages"] == {1: 0, 2: 1} and s["erase"]["pages"] == 2
    # Reads and programs together (erases are not pages of data): (4 + 2) / (12 + 5).
    assert s["exploitation_pages"] == pytest.approx(6 / 17)
    assert s["exploitation_operations"] == pytest.approx(3 / 14)


def test_inconsistent_counters_are_refused_and_no_dies_is_empty():
    regs = _Regs(nand_die0_ops_read=1, nand_die0_ops_program=0, nand_die0_ops_erase=0, nand_die0_mp_read2=2,
                 nand_die0_mp_program2=0, nand_die0_mp_erase2=0)
    with pytest.raises(NandLabError, match="2 multi-plane reads but only 1 reads"):
        planecount.summary(planecount.read(regs))
    assert planecount.read(_Regs(ctrl_reset=0)) == {}
    assert planecount.summary({})["exploitation_pages"] is None


def test_dies_are_numbered_over_every_channel():
    """Channel 0's dies first, then channel 1's (nand_ch1_die<d>), by number, not by name order
    (die 10 after die 2), as the firmware's 'die ops' numbers them."""
    names = {f"nand_die{d}": 1 + d for d in (0, 2, 10)} | {"nand_ch1_die0": 100, "nand_ch1_die1": 101}
    regs = _Regs(**{f"{n}_ops_{op}": v if op == "read" else 0 for n, v in names.items()
                    for op in ("read", "program", "erase")})
    got = planecount.read(regs)
    assert [got[i]["ops"]["read"] for i in range(5)] == [1, 3, 11, 100, 101]


class _StatsDie:
    """One die's stats_index / stats_ready / stats_value over `values` ({name: count}, in the order of
    the SoC's NANDLAB_DIE_STATS list `names`)."""
    def __init__(self, regs, prefix, names, values):
        self.names, self.values, self.index = names, values, None
        die = self

        class _Index:
            def write(self, index):
                die.index = index

        class _Value:
            def read(self):
                return die.values[die.names[die.index]]
        setattr(regs, prefix + "stats_index", _Index())
        setattr(regs, prefix + "stats_ready", _Reg(1))
        setattr(regs, prefix + "stats_value", _Value())


def test_dies_with_statistics_in_memory_read_the_same():
    # The same two dies as test_read_delta_and_exploitation's `after`, once as CSRs and once behind the
    # statistics memory of the ECPIX-5's dies (violation counters in the list too, skipped).
    names = ["viol_t_whr", "fail_reason0", "ops_read", "ops_program", "ops_erase", "mp_read2", "mp_program2",
             "mp_erase2"]
    dies = [dict(ops_read=16, ops_program=2, ops_erase=0, mp_read2=3, mp_program2=1, mp_erase2=0),
            dict(ops_read=4, ops_program=0, ops_erase=1, mp_read2=0, mp_program2=0, mp_erase2=1)]
    plain = _Regs(**{f"nand_die{d}_{k}": v for d, c in enumerate(dies) for k, v in c.items()})
    memory = _Regs(nand_ctrl_completed=5)
    for d, c in enumerate(dies):
        _StatsDie(memory, f"nand_die{d}_", names, dict(c, viol_t_whr=7, fail_reason0=1))
    assert planecount.read(memory, ";".join(names)) == planecount.read(plain)
    assert planecount.read(memory) == {}
