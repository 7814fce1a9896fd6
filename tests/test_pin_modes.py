"""Issue 21's all-modes acceptance run: the simulated SoC with the pin-level die model
(`--nand-pin-model xc7`) at the worst-case corners of the datasheet ranges, in every async SDR mode 0-5
and NV-DDR mode 0-5: RESET, READ ID and the parameter page (`ctl ident`), erase, program and read
through the BCH ECC (`ctl test`), with 0 data errors and every one of the die's timing checkers
(tWHR, tADL, tCCS, tRR, tWB max, tCS, tRHW, busy: nand_model/die/timing.py, with the mode's own ONFI
limits) at 0. The dies drop R/B# at tWB max; the model's lanes sit at the output-delay maximum (NV-DDR: tDQSCK
max, 25 ns; async SDR: ASYNC_OUT_DELAY_PS, tREA being the chip's access time there) with the
whole board skew on DQ or on DQS, and the narrowest windows (nand_model.pinmodel.worst_case_lane_timings);
in async SDR the chip answers tREA max after RE# falls and holds its byte only tRHOH / tRLOH min
(pinmodel.sdr_worst_case), so a controller that samples before tREA or after the hold reads wrong bytes.


At tDQSCK max the chip is 5 phases late at every tap; the controller counts DQS's toggles in every phase of
the data output (up to tDQSCK max and the board late), so every NV-DDR mode must train and read there."""

import re

import pytest

from nandlab.nand_model.die import TIMING_CHECKS
from nandlab.nand_model.pinmodel import ASYNC_OUT_DELAY_PS, sdr_worst_case, training, worst_case_lane_timings
from nandlab.simulator import command_failed

from test_pin_training import FAMILY, brought_up, set_lanes  # noqa: E402

pytestmark = [pytest.mark.sim, pytest.mark.slow]

MODES = [("async", m) for m in range(6)] + [("nvddr", m) for m in range(6)]
NAMES = {"async": "async SDR", "nvddr": "NV-DDR"}


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    with brought_up(tmp_path_factory) as c:
        yield c


def violations(console):
    got = {}
    for check in TIMING_CHECKS:
        out = console.command(f"csr read nand_die0_viol_{check}")
        m = re.search(r"(0x[0-9a-fA-F]+|\b\d+\b)\s*$", out.strip())
        assert m and not command_failed(out), out
        got[check] = int(m.group(1), 0)
    return got


@pytest.mark.parametrize("late", ["dq", "dqs"])
def test_every_mode_at_the_worst_case(console, late):
    """For each mode: the corner's lanes (each with a window the model says exists), the mode set by SET
    FEATURES and checked by GET FEATURES (NV-DDR: read training first), then ident and a 2-page ECC test
    on a block of its own; the die's checkers stay at 0 throughout."""
    base = violations(console)
    assert not any(base.values()), base
    for i, (interface, mode) in enumerate(MODES):
        if interface == "nvddr":
            lanes = worst_case_lane_timings(mode, late)
            assert not training(lanes, FAMILY).error, (mode, late, lanes)
        else:
            lanes = worst_case_lane_timings(5, late, out_delay=ASYNC_OUT_DELAY_PS)
        set_lanes(console, lanes)
        # Async SDR: the chip's access time at its maximum and its data holds at their minima.
        access, hold = sdr_worst_case(mode) if interface == "async" else (0, 0)
        for csr, value in (("sdr_access", access), ("sdr_hold", hold)):
            out = console.command(f"csr write nand_pin_model_{csr} {value}")
            assert not command_failed(out), out
        name = f"{NAMES[interface]} mode {mode}"
        out = console.command(f"ctl mode {interface} {mode}", timeout=600)
        assert name in out and not command_failed(out), out
        if interface == "nvddr":
            assert f"die 0 NV-DDR mode {mode}: trained" in out, out
        out = console.command("ctl ident", timeout=300)
        assert f"RESET, READ ID ONFI, parameter page copy 0 (CRC ok) in {name}" in out and not command_failed(out), out
        block = 2 + i + (len(MODES) if late == "dqs" else 0)
        out = console.command(f"ctl test 2 {block}", timeout=900)
        assert re.search(rf"{name}, \d+ bytes written and read back, 0 bytes differ", out), out
        assert "0 bits corrected" in out and not command_failed(out), out
        got = violations(console)
        assert not any(got.values()), (name, got)
