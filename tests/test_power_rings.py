"""The SoC's rings over every channel (gateware/power/rings.py): topologies, one configuration for all,
per-node table writes (table_keep); the per-die peaks (gateware/power/diepeak.py). The rings running (one
apply for all, the global token sum, loans between rings) are checked in the simulated SoC
(tests/test_soc_power.py): Migen's simulator cannot evaluate the ring's packet shifts."""

import pytest

from migen import Signal, run_simulation

from nandlab.gateware.power.common import TOPOLOGIES
from nandlab.gateware.power.rings import PowerRings, check_topology
from nandlab.gateware.power.diepeak import DiePeaks


@pytest.mark.unit
def test_topology_refused_with_one_channel():
    with pytest.raises(ValueError, match="'exchange' shares a budget between the rings of several channels"):
        check_topology("exchange", 1)
    with pytest.raises(ValueError, match="power topology 'ring' unknown; valid: single, per_channel, exchange"):
        check_topology("ring", 2)
    for t in TOPOLOGIES[:2]:
        check_topology(t, 1)


@pytest.mark.unit
@pytest.mark.parametrize("topology, rings, faults", [("single", 1, True), ("per_channel", 2, True),
                                                     ("exchange", 2, False)])
def test_layout(topology, rings, faults):
    """Two channels of two dies: the rings and their nodes in die order; packet protection except with
    exchange nodes (which forward the paper's packets only)."""
    r = PowerRings(2, 2, topology, with_faults=True)
    assert len(r.rings) == rings and len(r.nodes) == 4 and r.with_faults == faults
    assert r.nodes == [nd for ring in r.rings for nd in ring.nodes]
    assert hasattr(r, "exchange") == (topology == "exchange")


@pytest.mark.unit
def test_table_keep_writes_one_node():
    """A table write reaches every node but those whose table_keep bit is set (per-die tables)."""
    r = PowerRings(2, 2, "exchange", oi_ahead=True)
    got = []

    def write(oi, rt, keep):
        yield r.table_keep.eq(keep)
        yield r.table_adr.eq(oi)
        yield r.table_dat.eq(rt)
        yield r.table_we.eq(1)
        yield
        yield r.table_we.eq(0)
        yield r.table_keep.eq(0)
        yield

    def bench():
        yield from write(0x21, 5, 0)
        yield from write(0x21, 9, 0b1011)          # node 2 only (ring 1's first node)
        for nd in r.nodes:
            yield nd.oi_next.eq(0x21)
        yield
        yield
        for nd in r.nodes:
            got.append((yield nd.rt_now))
    run_simulation(r, bench())
    assert got == [5, 5, 9, 5], got


@pytest.mark.unit
def test_die_peaks_follow_the_phase():
    """Each die's largest current inside a phase and the phase's OI; outside a phase (OI 0) nothing
    counts; the OI filter counts one phase; clear restarts them."""
    cur, oi = [Signal(14), Signal(14)], [Signal(8), Signal(8)]
    dut = DiePeaks(cur, oi)
    got = {}

    def step(values):
        for (c, o), sc, so in zip(values, cur, oi):
            yield sc.eq(c)
            yield so.eq(o)
        yield

    def read():
        out = []
        for p, q in zip(dut.peak, dut.peak_oi):
            out.append(((yield p), (yield q)))
        return out

    def bench():
        for v in ([(900, 0), (100, 0x11)], [(300, 0x11), (200, 0x12)], [(250, 0x12), (150, 0x12)], [(0, 0), (0, 0)]):
            yield from step(v)
        got["all"] = yield from read()
        yield dut.clear.eq(1)
        yield
        yield dut.clear.eq(0)
        yield dut.oi_filter.eq(0x12)
        for v in ([(400, 0x11), (120, 0x12)], [(260, 0x12), (90, 0x13)], [(0, 0), (0, 0)]):
            yield from step(v)
        got["filtered"] = yield from read()
    run_simulation(dut, bench())
    assert got["all"] == [(300, 0x11), (200, 0x12)], got
    assert got["filtered"] == [(260, 0x12), (120, 0x12)], got


@pytest.mark.unit
def test_die_excess_over_its_rt():
    """Where each die drew most above what its node's RT pays for, current x (2^TG - 1) > RT x 4096: a
    current its RT covers never counts (die 0: 4096 at RT 15, TG 4, exactly a pre-charge's), a deviated
    one does (die 1: 4915 at RT 15), the largest excess wins even at a lower current (1640 at RT 5 is
    above 4915 at RT 18, which is 3 below its cover), and clear restarts them. (Two cycles from a sample
    to the register: the excess is registered before the comparison.)"""
    cur, oi, rt = [Signal(14), Signal(14)], [Signal(8), Signal(8)], [Signal(8), Signal(8)]
    tg = Signal(3)
    dut = DiePeaks(cur, oi, rts=rt, tg=tg)
    got = {}

    def step(values):
        for (c, o, r), sc, so, sr in zip(values, cur, oi, rt):
            yield sc.eq(c)
            yield so.eq(o)
            yield sr.eq(r)
        yield

    def read():
        out = []
        for a, b in zip(dut.over, dut.over_oi):
            out.append(((yield a), (yield b)))
        return out

    def bench():
        yield tg.eq(4)
        for v in ([(4096, 0x11, 15), (4915, 0x11, 15)], [(2000, 0x12, 8), (0, 0, 0)], *[[(0, 0, 0), (0, 0, 0)]] * 2):
            yield from step(v)
        got["first"] = yield from read()
        yield dut.clear.eq(1)
        yield
        yield dut.clear.eq(0)
        for v in ([(4096, 0x11, 15), (4915, 0x11, 18)], [(100, 0x13, 2), (1640, 0x31, 5)], *[[(0, 0, 0), (0, 0, 0)]] * 2):
            yield from step(v)
        got["second"] = yield from read()
    run_simulation(dut, bench())
    assert got["first"] == [(0, 0), (4915, 0x11)], got
    assert got["second"] == [(0, 0), (1640, 0x31)], got


class _Bus:
    """A SoC of 2 channels x 2 dies behind a bridge, as PowerControl sees it: die peaks to read, writes kept."""
    def __init__(self, peaks):
        from nandlab.soc.constants import constants as exported
        self.constants = type("C", (), {})()
        self.constants.d = {k.lower(): str(v).lower() if isinstance(v, str) else v for k, v in exported().items()}
        self.constants.d.update(nandlab_die_part="nl-slc-2k", nandlab_dies=2, nandlab_channels=2,
                                nandlab_die_time_scale=10, config_clock_frequency=100e6)
        self.peaks, self.sel, self.writes = peaks, 0, []
        bus = self

        class Reg:
            def __init__(self, name):
                self.name = name

            def read(self):
                assert self.name in ("power_monitor_die_peak", "power_monitor_die_over_peak")
                cur, oi = bus.peaks[bus.sel]
                return cur | oi << 16

            def write(self, value):
                if self.name == "power_monitor_die_sel":
                    bus.sel = value
                else:
                    bus.writes.append((self.name, value))
        self.regs = type("R", (), {"__getattr__": lambda _, name: Reg(name)})()


@pytest.mark.unit
def test_adaptation_step_rewrites_a_deviating_die_only():
    """PowerControl.adapt: a die whose peak in a phase is above what the phase's RT covers gets the RT
    re-compiled from its peak, in its own node only (table_keep set for every other node, cleared after);
    a die at its nominal peak gets nothing; the peaks are cleared after reading; a second step with the
    same peaks writes nothing more."""
    from nandlab.control import PowerControl, TABLE, unpack
    # TG 4, alpha 2 (TT 30): OI 0x12 (P_A1's second phase) has RT 8, covering 8 x 4096 / 15 = 2184.
    peaks = [(2000, 0x12), (3000, 0x12), (1800, 0x21), (0, 0)]
    bus = _Bus(peaks)
    rts, writes = PowerControl(bus).adapt(tg=4, alpha=2)
    assert writes == [(1, 0x12, 11)], writes                  # ceil(3000 x 15 / 4096); 0x11 has 15 already
    assert bus.writes[0] == ("power_monitor_die_clear", 1)
    assert bus.writes[1:3] == [("power_ring_table_keep", 0b1101), ("power_ring_table", 11 | 0x12 << 8)]
    assert unpack(TABLE, bus.writes[2][1]) == {"rt": 11, "oi": 0x12}
    assert bus.writes[3:] == [("power_ring_table_keep", 0)]
    assert rts[1][0x12] == 11 and rts[0][0x12] == 8
    bus.writes.clear()
    assert PowerControl(bus).adapt(tg=4, alpha=2, rts=rts)[1] == []


@pytest.mark.unit
@pytest.mark.parametrize("rt, refused", [(8, True), (7, False)])
def test_exchange_refuses_an_rt_above_the_home_share(rt, refused):
    """Exchange, 2 rings, TG 4, alpha 1 (TT 15, home shares 8 and 7): a table with an RT above 7 is
    refused (ERR_RT, the rings not started): two rings each holding its share and waiting for more
    would wait for ever; an RT of 7 is taken."""
    from nandlab.gateware.power.common import ERR_RT, ERR_NONE, MODE_KMTPM_SUB
    r = PowerRings(2, 2, "exchange")
    got = {}

    def bench():
        yield r.table_adr.eq(0x11)
        yield r.table_dat.eq(rt)
        yield r.table_we.eq(1)
        yield
        yield r.table_we.eq(0)
        yield r.req_mode.eq(MODE_KMTPM_SUB)
        yield r.req_tg.eq(4)
        yield r.req_alpha.eq(1)
        yield r.apply.eq(1)
        yield
        forwarded = []
        for ring in r.rings:
            forwarded.append((yield ring.apply))
        yield r.apply.eq(0)
        yield
        # (Not further: Migen's simulator cannot run the ring's packets, which shift by -1 once idle.)
        got.update(error=(yield r.error), forwarded=forwarded)
    run_simulation(r, bench())
    assert got == {"error": ERR_RT if refused else ERR_NONE, "forwarded": [0, 0] if refused else [1, 1]}, got
