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
