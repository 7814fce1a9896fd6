"""Power ring (MTPM / KMTPM): cocotb on Verilator with scripted dies, and the token compiler."""

import sys

import pytest
from nandlab.errors import NandLabError
from nandlab.gateware.power.ring import PowerRing
from nandlab.nand_model.parts import MTPMPaperMLC
from nandlab.testing import run_cocotb, TB_DIR, PortedTop
from nandlab import tokens

sys.path.insert(0, str(TB_DIR))

NODES = 4
NODE_IN  = ("request", "oi", "oi_first", "phase_end", "atomic_end")
NODE_OUT = ("oe", "ht", "ut", "key", "key_used", "tx_tokens", "tx_key", "tx_valid", "tx_data", "rx_done", "grant", "grants",
            "waited", "in_atomic")
RING_IN  = ("req_mode", "req_tg", "req_alpha", "apply", "table_we", "table_adr", "table_dat", "table_clear", "pause")
RING_OUT = ("mode", "tt", "nbits", "running", "error", "table_max", "applies")


class RingTop(PortedTop):
    def __init__(self, n=NODES):
        PortedTop.__init__(self)
        self.ring = ring = PowerRing(n)
        port = self.port
        for i, node in enumerate(ring.nodes):
            for name in NODE_IN:
                port(f"n{i}_{name}", getattr(node, name), False)
            for name in NODE_OUT:
                port(f"n{i}_{name}", getattr(node, name), True)
        for name in RING_IN:
            port(name, getattr(ring, name), False)
        for name in RING_OUT:
            port(name, getattr(ring, name), True)


@pytest.mark.cocotb
def test_ring(tmp_path):
    top = RingTop()
    n = run_cocotb(top, top.ios, "nandlab_ring", "ring_tb", tmp_path)
    assert n >= 6


# Token compiler ------------------------------------------------------------------------------------

@pytest.mark.unit
def test_compiler_paper_worked_numbers():
    """P_A1 at TG = 4 needs 15 tokens, split 15/8/2 into sub-atomic operations (Fig. 10); TT and the
    packet size of TG = 4, alpha = 4 are 60 tokens and 7 bits (Section III-E)."""
    t = tokens.compile_tables(MTPMPaperMLC(), tg=4, alpha=4)
    assert t.tt == 60 and t.packet_bits == 7 and t.pb == 4
    assert t.atomic["P_A1"] == 15
    p_a1 = [rt for oi, rt, _ in t.phases["program_lsb"] if oi >> 4 == 1]
    assert p_a1 == [15, 8, 2]
    # Six program, six read (eight with data out, which the die models as bus current) and nine erase
    # sub-atomic operations (Section III-D2).
    assert len({oi for oi, _, _ in t.phases["program_lsb"]}) == 6
    assert len(t.phases["erase"]) == 9
    # Read and erase peaks: 85.43 % and 72.29 % of I_max, eq. (1) at TG = 4.
    assert t.atomic["R_A2"] == 13 and t.atomic["E_A1"] == 11
    # Every atomic RT is its first sub-atomic RT (monotone), the rule the ring relies on.
    for op, rows in t.phases.items():
        for oi, rt, _ in rows:
            if t.first[oi]:
                name = {1: "P_A1", 2: "P_A2", 3: "R_A1", 4: "R_A2", 6: "E_A1", 7: "E_A2"}[oi >> 4]
                assert rt == t.atomic[name]


@pytest.mark.unit
@pytest.mark.parametrize("tg", [2, 3, 4, 5])
def test_compiler_eq1_against_hand_computation(tg):
    t = tokens.compile_tables(MTPMPaperMLC(), tg=tg, alpha=4)
    import math
    assert t.atomic["P_A1"] == 2**tg - 1                                 # I_max itself
    assert t.atomic["R_A2"] == math.ceil(0.8543 * (2**tg - 1) - 1e-9)
    assert t.atomic["E_A1"] == math.ceil(0.7229 * (2**tg - 1) - 1e-9)


@pytest.mark.unit
def test_compiler_refuses_bad_configuration():
    with pytest.raises(NandLabError, match=r"TG = 6 is out of range"):
        tokens.compile_tables(MTPMPaperMLC(), tg=6, alpha=4)
    with pytest.raises(NandLabError, match=r"alpha = 0 is out of range"):
        tokens.compile_tables(MTPMPaperMLC(), tg=4, alpha=0)
    t = tokens.compile_tables(MTPMPaperMLC(), tg=4, alpha=1)
    t.rt[0x11] = 16
    with pytest.raises(NandLabError, match=r"OI 0x11 needs RT = 16 tokens, above TT = 15"):
        t.check()
    t = tokens.compile_tables(MTPMPaperMLC(), tg=4, alpha=4)
    t.rt[0x13] = 9
    with pytest.raises(NandLabError, match=r"OI 0x13 needs 9 tokens, more than the 8"):
        t.check()
