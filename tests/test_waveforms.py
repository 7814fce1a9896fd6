"""Default die current waveforms against the MTPM/KMTPM paper's published numbers."""

import pytest

from nandlab.nand_model import waveforms as wf
from nandlab.nand_model.parts import MTPMPaperMLC, NandLabSLC, DWSDWPaperMLC

pytestmark = pytest.mark.unit

PART = MTPMPaperMLC()


def _us(atomics):
    return sum(a.duration_ns for a in atomics) / 1000


def test_loop_times_follow_from_the_two_program_times():
    # 10 loops: LSB = 10 (e + v) = 770 us, MSB = 10 (e + 3 v) = 1022 us.
    e, v = wf.program_loop_times_us(PART)
    assert (round(e, 6), round(v, 6)) == (64.4, 12.6)


@pytest.mark.parametrize("kind, total_us", [("program_lsb", 770.0), ("program_msb", 1022.0), ("erase", 7400.0)])
def test_operation_times_match_table_iv(kind, total_us):
    assert _us(wf.operation(PART, kind)) == pytest.approx(total_us, abs=0.04 * 40)


def test_read_array_time_is_tr():
    r = wf.operation(PART, "read", data_out_ns=40)
    assert _us(r[:2]) == pytest.approx(PART.t_r, abs=0.08)


def test_structure_of_table_i():
    assert [a.name for a in wf.operation(PART, "read")] == ["R_A1", "R_A2", "R_A3"]
    assert [a.name for a in wf.operation(PART, "erase")] == ["E_A1", "E_A2"]
    lsb = wf.operation(PART, "program_lsb")
    msb = wf.operation(PART, "program_msb")
    assert [a.name for a in lsb[:2]] == ["P_A1", "P_A2"] and len(lsb) == 2 * PART.ispp_loops
    assert [a.name for a in msb[:4]] == ["P_A1", "P_A2", "P_A2", "P_A2"] and len(msb) == 4 * PART.ispp_loops


def test_published_peaks():
    peak = lambda kind: max(a.peak for a in wf.operation(PART, kind))
    assert peak("program_lsb") == 1.0
    assert peak("read") == pytest.approx(0.8543)
    assert peak("erase") == pytest.approx(0.7229)


def test_subatomic_counts_and_tokens_of_fig10():
    split = lambda atomics: [wf.subatomic_split(a) for a in atomics]
    program = split(wf.operation(PART, "program_lsb")[:2])   # one loop
    read = split(wf.operation(PART, "read"))
    erase = split(wf.operation(PART, "erase"))
    assert sum(map(len, program)) == 6 and sum(map(len, read)) == 8 and sum(map(len, erase)) == 9
    # P_A1 at TG = 4: 15 tokens as an atomic operation, 15/8/2 as sub-atomic operations.
    assert wf.tokens(wf.operation(PART, "program_lsb")[0].peak, 4) == 15
    assert [wf.tokens(p, 4) for _, _, p in program[0]] == [15, 8, 2]
    # The merge rule makes peaks fall monotonically inside every atomic operation.
    for subs in program + read + erase:
        peaks = [p for _, _, p in subs]
        assert peaks == sorted(peaks, reverse=True)


def test_long_operations_need_few_segments():
    # A 7.4 ms erase is a handful of segments, not 185 000 samples.
    erase = wf.operation(PART, "erase")
    assert sum(len(a.segments) for a in erase) <= 12
    assert len([s for a in erase for s in a.samples()]) == 7400_000 // 40


@pytest.mark.parametrize("part", [NandLabSLC(), DWSDWPaperMLC()])
def test_other_parts_keep_the_structure(part):
    assert _us(wf.operation(part, "erase")) == pytest.approx(part.t_bers, abs=0.08)
    assert _us(wf.operation(part, "program_lsb")) == pytest.approx(part.t_prog, abs=0.04 * part.ispp_loops * 4)
    assert sum(len(wf.subatomic_split(a)) for a in wf.operation(part, "program_lsb")[:2]) == 6


def test_unknown_operation_is_named():
    with pytest.raises(ValueError, match="valid: program_lsb, program_msb, read, erase"):
        wf.operation(PART, "copyback")
