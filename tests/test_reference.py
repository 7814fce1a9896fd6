"""Reference die model: multi-plane rules per plane architecture (the gateware's scoreboard)."""

import pytest

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.parts import MTPMPaperMLC, NandLabSLC
from nandlab.nand_model.reference import (ReferenceDie, DieConfig, ARCH_CNFM, ARCH_DW, ARCH_SDW,
    REASON_PLANE_ADDR, REASON_PAGE_TYPE, REASON_PLANE_REPEAT, REASON_RANGE)

pytestmark = pytest.mark.unit


def _die(part=None, **kw):
    part = part or MTPMPaperMLC().scaled(blocks_per_lun=16, pages_per_block=8)
    return ReferenceDie(DieConfig(part, time_scale=1, **kw))


def _addr(die, column, row):
    p = die.cfg.part
    return [column >> (8 * i) & 0xFF for i in range(p.column_cycles)] + \
           [row >> (8 * i) & 0xFF for i in range(p.row_cycles)]


def _multi_program(die, rows, data=b"\x00"):
    for k, r in enumerate(rows):
        die.command(onfi.CMD_PROGRAM)
        for a in _addr(die, 0, r):
            die.address(a)
        for d in data:
            die.data_in(d)
        die.command(onfi.CMD_PROGRAM_CONFIRM if k == len(rows) - 1 else onfi.CMD_PROGRAM_MULTIPLANE)
        busy = die.busy
        die.advance(10**9)
    return die.status() & onfi.STATUS_FAIL, busy


def row(die, block, page):
    return block << die.cfg.page_bits | page


@pytest.mark.parametrize("arch, pages, reason", [
    (ARCH_CNFM, (2, 2), None),
    (ARCH_CNFM, (2, 4), REASON_PLANE_ADDR),      # mated planes need one page address
    (ARCH_DW,   (2, 4), None),                   # decoupled word lines: both LSB pages
    (ARCH_DW,   (2, 3), REASON_PAGE_TYPE),       # LSB with MSB: not supported (paper)
    (ARCH_SDW,  (2, 4), None),
    (ARCH_SDW,  (2, 5), REASON_PAGE_TYPE),
])
def test_plane_rules(arch, pages, reason):
    die = _die(with_sdw=True)
    die.set_arch(arch)
    fail, _ = _multi_program(die, [row(die, 0, pages[0]), row(die, 1, pages[1])])
    assert fail == (reason is not None)
    if reason is not None:
        assert die.reasons[reason] == 1 and sum(die.reasons) == 1
        assert not die.pages                     # nothing programmed
    else:
        assert len(die.pages) == 2


def test_same_plane_twice_and_sdw_subplanes():
    die = _die(with_sdw=True)
    die.set_arch(ARCH_DW)
    assert _multi_program(die, [row(die, 0, 0), row(die, 2, 0)])[0]      # both plane 0
    assert die.reasons[REASON_PLANE_REPEAT] == 1
    # SDW-NFM: plane 0 has 4 subplanes (blocks 0,2 / 4,6 / 8,10 / 12,14): 8 pages at once.
    die.set_arch(ARCH_SDW)
    rows = [row(die, b, 0) for b in (0, 4, 8, 12, 1, 5, 9, 13)]
    assert _multi_program(die, rows)[0] == 0 and len(die.pages) == 8
    assert _multi_program(die, [row(die, 0, 2), row(die, 2, 2)])[0]      # same subplane
    assert die.reasons[REASON_PLANE_REPEAT] == 2
    # Only the operation that ran is counted, by its page count (the die's mp_program8).
    assert _multi_program(die, [row(die, 3, 0)])[0] == 0                  # single page: not counted
    assert die.mp_ops["program"] == {2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 1}
    assert die.mp_ops["read"] == die.mp_ops["erase"] == dict.fromkeys(range(2, 9), 0)


def test_sdw_needs_its_registers_and_is_faster():
    plain = _die()
    plain.set_arch(ARCH_SDW)
    assert plain.arch == ARCH_DW                 # not built: stays DW-NFM
    dw, sdw = _die(with_sdw=True), _die(with_sdw=True)
    dw.set_arch(ARCH_DW)
    sdw.set_arch(ARCH_SDW)
    _, t_dw = _multi_program(dw, [row(dw, 0, 0)])
    _, t_sdw = _multi_program(sdw, [row(sdw, 0, 0)])
    assert t_sdw == pytest.approx(0.85 * t_dw, rel=0.01)   # tPROG -15 %


def test_first_failure_in_order_is_counted():
    die = _die()
    die.set_arch(ARCH_CNFM)
    bad = row(die, die.cfg.part.blocks_per_lun, 0)           # out of range and a different page
    assert _multi_program(die, [row(die, 0, 1), bad])[0]
    assert die.reasons[REASON_RANGE] == 1 and die.reasons[REASON_PLANE_ADDR] == 0


def test_multiplane_read_and_register_select():
    die = _die(part=NandLabSLC().scaled(blocks_per_lun=8, pages_per_block=4))
    die.set_arch(ARCH_CNFM)
    _multi_program(die, [row(die, 0, 1)], b"\x12\x34")
    _multi_program(die, [row(die, 1, 1)], b"\x56\x78")
    for k, r in enumerate((row(die, 0, 1), row(die, 1, 1))):
        die.command(onfi.CMD_READ)
        for a in _addr(die, 0, r):
            die.address(a)
        die.command(onfi.CMD_READ_CONFIRM if k else onfi.CMD_READ_MULTIPLANE)
        die.advance(10**9)
    for r, expect in ((row(die, 0, 1), b"\x12\x34"), (row(die, 1, 1), b"\x56\x78")):
        die.command(onfi.CMD_CHANGE_READ_COL_ENH)
        for a in _addr(die, 0, r):
            die.address(a)
        die.command(onfi.CMD_CHANGE_READ_COL_2)
        assert bytes(die.data_out() for _ in range(2)) == expect
