"""Pin-level die model (nand_model/pinmodel.py): the samples it gives against the windows its lane timings
imply (computed here from the parameters alone), the windows the firmware's training should find (a DQ lane
right where it samples the byte of the phase DQS's toggle shows, however late the chip), and NV-DDR reads through
the pin PHY, a die and the channel controller: wrong untrained where the skew puts the eye off the clock edge,
right at taps inside every window."""

import random

import pytest

from migen import *

from nandlab.gateware.onfi.common import NandBus
from nandlab.gateware.onfi.controller.common import dqs_late_phases
from nandlab.gateware.onfi.pinphy import DELAY_TAP_PS, DELAY_TAPS, DQS_LANE, LANES, sim_pads
from nandlab.nand_model.pinmodel import (HISTORY, OUT_DELAY_MAX_PS, OUT_DELAY_MIN_PS, SKEW_MAX_PS, LaneTiming,
                                         NandLabPinModel, dqs_phase, expected_windows, lane_sample,
                                         lanes_from_text, max_lane_delay, phase_ps, random_lane_timings,
                                         reads_right, trainable, training, worst_case_lane_timings)

P = phase_ps(100e6)
# Draws of random_lane_timings with no taps that read them (xc7, NV-DDR mode 5), of seeds 0-199.
UNTRAINABLE_XC7 = [5]


@pytest.mark.unit
@pytest.mark.parametrize("family", ["xc7", "ecp5"])
def test_lane_sample_is_the_arithmetic(family):
    """lane_sample against the arithmetic by hand: the sample at tap k lies P - delay - k x tap after the
    boundary of the phase ending at the edge, in the level launched floor-wise `back` phases before it."""
    tap = DELAY_TAP_PS[family]
    late = LaneTiming(24700, 200, 4000)                   # A chip 24.7 ns late: 19.7 ns before the boundary.
    assert lane_sample(late, 0, family) == (4, True)      # f = 300 into the level launched 4 phases back
    k = 300 // tap + 1                                    # f = 300 - k tap <= 0: 5 back, f near P
    assert lane_sample(late, k, family)[0] == 5 and not lane_sample(late, k, family)[1]     # > end
    assert lane_sample(LaneTiming(1, 0, P), 0, family) == (0, True)
    assert lane_sample(LaneTiming(P, 0, P), 0, family) == (1, True)           # r = 0: f = P of the phase before
    for seed in range(50):
        for t in random_lane_timings(seed):
            for k in range(DELAY_TAPS[family]):
                back, valid = lane_sample(t, k, family)
                f = P - t.delay - k * tap + back * P
                assert 0 < f <= P and valid == (t.start <= f <= t.end), (seed, t, k)


@pytest.mark.unit
def test_random_draws_within_ranges():
    """Draws respect the ranges: the chip's output delay over ONFI's tDQSCK (3 .. 25 ns), whole phases late, and
    the model's history holds the latest at the last tap."""
    delays = []
    for seed in range(200):
        lanes = random_lane_timings(seed)
        for t in lanes:
            assert 0 <= t.start <= t.end <= P and OUT_DELAY_MIN_PS <= t.delay <= OUT_DELAY_MAX_PS + SKEW_MAX_PS
        delays.append(lanes[DQS_LANE].delay)
    assert min(delays) < 5000 and max(delays) > 22000          # Spread over the range: 0 to 4 phases late at tap 0.
    assert OUT_DELAY_MAX_PS + SKEW_MAX_PS <= max_lane_delay() < (HISTORY - 2) * P
    # The latest sample (HISTORY - 2 phases back) is within the lateness the controller absorbs.
    assert HISTORY - 2 <= dqs_late_phases(100e6)


@pytest.mark.unit
def test_a_late_chip_reads_right_untrained():
    """A chip 24.7 ns late (4 whole phases) with no skew reads right at tap 0 as the SoC does (wip/lat's
    finding, seed 27 trained at read delay 0): DQS's toggle and the DQ bytes of the same launched phase. The
    controller counts DQS's toggles in every phase of the data output (beat_engine `_nvddr_answers`), so this
    holds in every NV-DDR mode; off DQS's level (its sample in the transition) nothing reads right."""
    lanes = [LaneTiming(24700, 0, P)] * DQS_LANE + [LaneTiming(24700, 0, int(0.8 * P))]
    assert dqs_phase(lanes[DQS_LANE], 0, "xc7") == 4
    assert all(reads_right(t, lanes[DQS_LANE], 0, 0, "xc7") for t in lanes[:DQS_LANE])
    assert trainable(lanes, "xc7")
    off = LaneTiming(4 * P + P - int(0.9 * P), 0, int(0.8 * P))           # DQS sampled 0.9 P into its phase.
    assert lane_sample(off, 0, "xc7") == (4, False) and dqs_phase(off, 0, "xc7") is None
    assert not any(reads_right(t, off, k, 0, "xc7") for t in lanes[:DQS_LANE] for k in range(32))


@pytest.mark.unit
def test_a_dq_lane_a_phase_later_than_dqs_needs_dqs_moved():
    """A DQ lane 1 ns later than DQS, DQS 300 ps into its phase at tap 0: the DQ lane samples the phase before
    DQS's at every tap (taps move samples only earlier in the data), so DQS must move into that phase: DQS's
    window starts where its sample crosses the boundary (and its level is valid), the DQ lane's is where it
    samples that phase inside its eye."""
    dq, dqs = LaneTiming(25700, 0, P), LaneTiming(24700, 0, int(0.8 * P))
    assert lane_sample(dq, 0, "xc7")[0] == 5 and lane_sample(dqs, 0, "xc7")[0] == 4
    assert not any(reads_right(dq, dqs, k, 0, "xc7") for k in range(32))
    w = expected_windows([dq] * DQS_LANE + [dqs], "xc7")
    first = next(k for k in range(32) if dqs_phase(dqs, k, "xc7") == 5)
    # (DQS crosses into phase 5 at f = 300 - k tap <= 0, then is off its level until f = P + 300 - k tap <= 0.8 P.)
    assert w[DQS_LANE] == (first, 31) and first == -(-(P + 300 - int(0.8 * P)) // DELAY_TAP_PS["xc7"])
    assert all(wd == (0, 31) for wd in w[:DQS_LANE])            # the DQ lane reads its phase 5 at every tap


@pytest.mark.unit
@pytest.mark.parametrize("family", ["xc7", "ecp5"])
def test_expected_windows_follow_the_passes(family):
    """For 200 draws: the firmware's procedure as modelled (`training`) trains exactly the draws some taps can
    read (`trainable`; UNTRAINABLE_XC7 lists those that none can); where it does, each DQ lane reads right over
    its window and not just outside it with DQS at its centre, every tap of DQS's window reads every DQ lane
    right at its centre, and the windows of all lanes hold the taps they were set to."""
    untrainable = []
    n = DELAY_TAPS[family]
    for seed in range(200):
        lanes = random_lane_timings(seed)
        tr = training(lanes, family)
        assert (tr.error is None) == trainable(lanes, family), (seed, tr.error)
        if tr.error:
            untrainable.append(seed)
            continue
        s = tr.taps[DQS_LANE]
        for b in range(DQS_LANE):
            lo, hi = tr.windows[b]
            assert lo <= tr.taps[b] <= hi
            assert all(reads_right(lanes[b], lanes[DQS_LANE], k, s, family) for k in range(lo, hi + 1))
            for k in (lo - 1, hi + 1):
                assert not (0 <= k < n and reads_right(lanes[b], lanes[DQS_LANE], k, s, family)), (seed, b, k)
        lo, hi = tr.windows[DQS_LANE]
        assert all(reads_right(lanes[b], lanes[DQS_LANE], tr.taps[b], k, family)
                   for b in range(DQS_LANE) for k in range(lo, hi + 1)), seed
    assert untrainable == (UNTRAINABLE_XC7 if family == "xc7" else []), untrainable


@pytest.mark.unit
def test_worst_case_corners():
    """The corners at tDQSCK max (25 ns + 1 ns of skew: 5 phases late at every tap) train in every NV-DDR mode
    (the controller counts toggles in every phase, up to tDQSCK max + board late); the async corners' lanes
    (ASYNC_OUT_DELAY_PS) are 2 ns + skew."""
    for late in ("dq", "dqs"):
        for mode in range(6):
            lanes = worst_case_lane_timings(mode, late)
            assert lanes[DQS_LANE].delay in (OUT_DELAY_MAX_PS, OUT_DELAY_MAX_PS + SKEW_MAX_PS)
            assert all(lane_sample(t, 0, "xc7")[0] == 5 for t in lanes), (late, mode)
            assert training(lanes, "xc7").error is None, (late, mode)
        assert worst_case_lane_timings(5, late, out_delay=2000)[0].delay <= 2000 + SKEW_MAX_PS


def test_lanes_from_text_checks():
    assert lanes_from_text(",".join(["100:0:5000"] * 9))[0] == LaneTiming(100, 0, 5000)
    with pytest.raises(ValueError, match="give 9 lanes"):
        lanes_from_text("1:2:3")
    with pytest.raises(ValueError, match="window"):
        lanes_from_text(",".join(["100:3000:2000"] * 9))


class _ModelTop(Module):
    def __init__(self, family, lanes):
        self.pads = pads = sim_pads(1, phased=True)
        self.die_bus = NandBus()
        self.taps = [Signal(8, name=f"taps{i}") for i in range(LANES)]
        self.submodules.model = NandLabPinModel(pads, self.die_bus, self.taps, family, 100e6, lanes=lanes)


@pytest.mark.unit
@pytest.mark.parametrize("family,seed", [("xc7", 1), ("xc7", 2), ("ecp5", 3)])
def test_samples_match_the_windows(family, seed):
    """A die giving a random byte (and a toggling DQS) every phase in NV-DDR data output: at each tap, a
    lane's samples at both edges are the byte of the phase `back` phases before the one ending there exactly
    where `lane_sample` says the sample is valid, and wrong in some phase elsewhere."""
    lanes = random_lane_timings(seed)
    top = _ModelTop(family, lanes)
    rng = random.Random(seed)
    n = 40
    taps_list = list(range(0, DELAY_TAPS[family], 3 if family == "xc7" else 9))
    bytes_ = {(c, p): rng.getrandbits(8) for c in range(n * len(taps_list)) for p in (0, 1)}
    seen = {}

    def gen():
        yield top.model.drive.eq(3)
        c = 0
        for tap in taps_list:
            for t in top.taps:
                yield t.eq(tap)
            for k in range(n):
                b0, b1 = bytes_[(c, 0)], bytes_[(c, 1)]
                yield top.die_bus.dq_i.eq(b0 | b1 << 8)
                yield top.die_bus.dqs_i.eq(0b01)         # Toggles every phase (level 1 then 0).
                yield
                if k >= HISTORY:
                    seen[(tap, c)] = ((yield top.pads.dq_s), (yield top.pads.dqs_s))
                c += 1

    run_simulation(top, gen())
    for tap in taps_list:
        cycles = [c for (t, c) in seen if t == tap]
        for lane in range(LANES):
            back, right = lane_sample(lanes[lane], tap, family)
            ok = True
            for c in cycles:
                dq, dqs = seen[(tap, c)]
                for e in (0, 1):
                    q = 2 * c + e - back                # The phase launched `back` before the edge's.
                    if lane == DQS_LANE:
                        got, want = (dqs >> e) & 1, 1 - q % 2
                    else:
                        got, want = (dq >> (8 * e + lane)) & 1, (bytes_[(q // 2, q % 2)] >> lane) & 1
                    ok &= got == want
            assert ok == right, (family, seed, tap, lane, lanes[lane])


class _SdrTop(Module):
    def __init__(self, delay):
        self.pads = sim_pads(1, phased=True)
        self.die_bus = NandBus()
        self.taps = [Signal(8, name=f"taps{i}") for i in range(LANES)]
        self.sdr = Signal(reset=1)
        lanes = [LaneTiming(delay, 0, P)] * LANES
        self.submodules.model = NandLabPinModel(self.pads, self.die_bus, self.taps, "xc7", 100e6, lanes=lanes,
                                                sdr=self.sdr)


def _sdr_read_samples(mode, trea, trhoh, trloh, n=24, delay=3000):
    """Async SDR read beats of `mode` at 100 MHz through the model (a new byte from each RE# fall, as the
    emulated die gives it): {(byte k, phase of the beat): the byte sampled at the end of that phase}."""
    from nandlab.gateware.onfi import common as onfi
    from nandlab.gateware.onfi.controller.common import mode_beats
    b, lo = mode_beats(onfi.IF_ASYNC_SDR, mode, 100e6)["r"]
    top = _SdrTop(delay)
    rng = random.Random(mode)
    data = [rng.getrandbits(8) for _ in range(n)]
    seen = {}

    def gen():
        m = top.model
        yield m.sdr_on.eq(1)
        yield m.trea.eq(trea)
        yield m.trhoh.eq(trhoh)
        yield m.trloh.eq(trloh)
        for k, byte in enumerate(data):
            for c in range(b):
                ph = (2 * c, 2 * c + 1)
                yield top.pads.re_n.eq(sum((ph[e] >= lo) << e for e in range(2)))
                yield top.die_bus.dq_i.eq(byte * 0x101)
                yield
                dq = yield top.pads.dq_s
                for e in range(2):
                    seen[(k, ph[e])] = dq >> (8 * e) & 0xFF

    run_simulation(top, gen())
    return data, seen, b


@pytest.mark.unit
# Modes 0 (no hold after RE# rises) and 5 (EDO) in make test; the others in make test-slow (~10 s each).
@pytest.mark.parametrize("mode", [0, 5] + [pytest.param(m, marks=pytest.mark.slow) for m in (1, 2, 3, 4)])
def test_sdr_access_time_and_the_controllers_sample_point(mode):
    """The model's async SDR output at ONFI's worst case (tREA max, tRHOH and tRLOH min; 3 ns of board):
    the byte is sampled right at the controller's sample phase (sdr_sample_phase) of every beat, wrong (the
    previous byte or unknown) at the edges before tREA; and in modes 0-2, at the beat's last phase (where the
    controller sampled before) some bytes come back wrong: the chip need not hold them that long."""
    from nandlab.gateware.onfi.common import SDR_TREA_NS, SDR_TRHOH_NS, SDR_TRLOH_NS
    from nandlab.gateware.onfi.controller.common import sdr_sample_phase
    data, seen, b = _sdr_read_samples(mode, SDR_TREA_NS[mode] * 1000, SDR_TRHOH_NS[mode] * 1000,
                                      SDR_TRLOH_NS[mode] * 1000)
    smp = sdr_sample_phase(mode, 100e6)
    beats = range(1, len(data))
    assert all(seen[(k, smp)] == data[k] for k in beats)
    early = [ph for ph in range(2 * b) if (ph + 1) * P - 3000 < SDR_TREA_NS[mode] * 1000]
    # (An unknown sample is pseudo-random: a whole byte right by chance is rare, not impossible.)
    assert early and sum(seen[(k, early[0])] == data[k] for k in beats) <= 2
    if mode <= 2:
        assert any(seen[(k, 2 * b - 1)] != data[k] for k in beats)


# Options of the simulated SoC --------------------------------------------------------------------------

@pytest.mark.unit
def test_pin_model_options_checked_before_any_build():
    from nandlab.soc.targets import sim as simtarget
    assert simtarget.pin_model_options() is None
    assert simtarget.pin_model_options("xc7") == {"family": "xc7", "seed": None, "lanes": None}
    for kw, msg in [(dict(seed=3), "need --nand-pin-model"), (dict(family="spartan"), "xc7, ecp5"),
                    (dict(family="xc7", seed=-1), "0 or more"),
                    (dict(family="xc7", seed=1, lanes=",".join(["1:0:5000"] * 9)), "give one"),
                    (dict(family="ecp5", lanes="1:0:5000"), "give 9 lanes")]:
        with pytest.raises(ValueError, match=msg):
            simtarget.pin_model_options(**kw)
    # The build directory and the SoC's lanes follow the options; without them nothing changes.
    assert simtarget.build_dir_name(1, pin_model={"family": "ecp5"}) == "sim1-pinecp5"
    assert "pin_model" not in simtarget.nand_options()
    assert simtarget._pin_model_soc(simtarget.pin_model_options("xc7", seed=4))["lanes"] == random_lane_timings(4)


@pytest.mark.unit
def test_cli_refuses_skew_without_pin_model():
    from nandlab.testing import run_cli
    out = run_cli("sim", "--non-interactive", "--run", "version", "--skew-seed", "2")
    assert out.returncode != 0 and "need --nand-pin-model" in out.stderr and "Traceback" not in out.stderr
    assert "generating" not in out.stderr
    out = run_cli("sim", "--non-interactive", "--run", "version", "--nand-pin-model", "virtex2")
    assert out.returncode != 0 and "xc7, ecp5" in out.stderr


@pytest.mark.unit
def test_soc_puts_channel_0_behind_the_phy():
    """The SoC with the pin model: the PHY's and the model's CSRs, the PHY constants for the firmware, and the
    channel controller built with the mux's and the PHY's latencies."""
    from nandlab.soc.targets.sim import NandLabSimSoC, pin_model_options
    soc = NandLabSimSoC(nand_dies=2, nand_storage="bram", nand_blocks=8, nand_pages=4, with_bridge=False,
                        nand_pin_model=pin_model_options("ecp5", seed=1))
    assert soc.nand_ctrl.read_latency == 4 and soc.nand_ctrl.rb_latency == 4
    assert soc.nand_phy.family == "ecp5" and soc.nand_phy.sim
    assert soc.nand_pin_model.lanes == random_lane_timings(1)
    consts = soc.constants
    assert consts["NANDLAB_NAND_PHY_DELAY_TAPS"] == 128
    assert consts["NANDLAB_NAND_PHY_DELAY_TAP_PS"] == 25
    assert "NANDLAB_NAND_PHY_FAMILY_ECP5" in consts
