"""Pin-level die model (nand_model/pinmodel.py): the samples it gives against the windows its lane timings
imply (computed here from the parameters alone), and NV-DDR reads through the pin PHY, a die and the channel
controller: wrong untrained where the skew puts the eye off the clock edge, right at taps inside every window."""

import random

import pytest

from migen import *

from nandlab.gateware.onfi.common import NandBus
from nandlab.gateware.onfi.pinphy import DELAY_TAP_PS, DELAY_TAPS, DQS_LANE, LANES, sim_pads
from nandlab.nand_model.pinmodel import (OUT_DELAY_MAX_PS, SKEW_MAX_PS, LaneTiming, NandLabPinModel,
                                         expected_window, lanes_from_text,
                                         phase_ps, random_lane_timings, reads_right)

P = phase_ps(100e6)


def window_from_formula(t, family):
    """The taps where P - delay - end <= taps x tap <= P - delay - start (and the sample stays in the
    phase that ends at the edge), by the inequality rather than by trying taps."""
    import math
    tap = DELAY_TAP_PS[family]
    lo = max(0, math.ceil((P - t.delay - t.end) / tap))
    hi = min(DELAY_TAPS[family] - 1, math.floor((P - t.delay - max(t.start, 1)) / tap))
    return (lo, hi) if lo <= hi else None


@pytest.mark.unit
@pytest.mark.parametrize("family", ["xc7", "ecp5"])
def test_expected_window_is_the_inequality(family):
    """expected_window (which tries every tap) agrees with the closed form for 200 random draws."""
    for seed in range(200):
        for t in random_lane_timings(seed):
            assert expected_window(t, family) == window_from_formula(t, family), (seed, t)


@pytest.mark.unit
def test_random_draws_within_ranges_and_some_fail_untrained():
    """Draws respect the ranges; over 50 seeds some lanes read wrong at taps 0 and every lane has a window."""
    untrained_bad = 0
    for seed in range(50):
        lanes = random_lane_timings(seed)
        for i, t in enumerate(lanes):
            assert 0 <= t.start <= t.end <= P and t.delay <= OUT_DELAY_MAX_PS + SKEW_MAX_PS
            assert expected_window(t, "xc7") is not None, (seed, i, t)
            untrained_bad += not reads_right(t, 0, "xc7")
    assert untrained_bad > 20


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
    lane's samples at both edges are the byte of the phase ending there exactly where the window says,
    and wrong in some phase elsewhere."""
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
                if k >= 4:
                    seen[(tap, c)] = ((yield top.pads.dq_s), (yield top.pads.dqs_s))
                c += 1

    run_simulation(top, gen())
    for tap in taps_list:
        cycles = [c for (t, c) in seen if t == tap]
        for lane in range(LANES):
            right = reads_right(lanes[lane], tap, family)
            ok = True
            for c in cycles:
                dq, dqs = seen[(tap, c)]
                for e in (0, 1):
                    if lane == DQS_LANE:
                        got, want = (dqs >> e) & 1, 1 - e
                    else:
                        got, want = (dq >> (8 * e + lane)) & 1, (bytes_[(c, e)] >> lane) & 1
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
