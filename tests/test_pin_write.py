"""The write side of NV-DDR in the simulated SoC with the pin-level model (issue 21): the die takes DQ at
the DQS edges it sees, with per-lane write skew and ONFI's tDS/tDH (nand_model/pinwrite.py). At each
corner of the write skew, in every NV-DDR mode, the firmware's write training ('train write') picks the DQS
placement the margins computed here (pinwrite.write_ok) say works, writes and reads through the ECC with
no error and no violation afterwards; the placement that fails is seen failing (violations counted, bit
errors read back). With DQS edge-aligned (the PHY's shift taken out), writes fail."""

import re

import pytest

from nandlab.nand_model.pinmodel import SKEW_MAX_PS
from nandlab.nand_model.pinwrite import NVDDR_TDH_PS, NVDDR_TDS_PS, write_ok
from nandlab.simulator import command_failed

from test_pin_training import brought_up  # noqa: E402

pytestmark = [pytest.mark.sim, pytest.mark.slow]

SHIFT_PS = 2500          # The PHY's quarter cycle at 100 MHz (NandLabPinPHY.dqs_out_shift_cycles).


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    with brought_up(tmp_path_factory) as c:
        yield c


def _csr(console, name, value=None):
    if value is None:
        out = console.command(f"csr read nand_pin_model_write_{name}")
        m = re.search(r"(0x[0-9a-fA-F]+|\b\d+\b)\s*$", out.strip())
        assert m and not command_failed(out), out
        return int(m.group(1), 0)
    out = console.command(f"csr write nand_pin_model_write_{name} {value}")
    assert not command_failed(out), out


def set_write(console, mode, dq_skew, dqs_skew, shift=SHIFT_PS):
    for i in range(8):
        _csr(console, f"lane{i}_wskew", dq_skew)
    _csr(console, "lane8_wskew", dqs_skew)
    _csr(console, "din_timing", NVDDR_TDS_PS[mode] | NVDDR_TDH_PS[mode] << 16)
    _csr(console, "din_dqs", shift | 1 << 16)


def violations(console):
    return _csr(console, "din_setup"), _csr(console, "din_hold")


def test_write_training_at_each_skew_corner(console):
    block = 40
    seen_late = False
    for mode in range(6):
        for dq_skew, dqs_skew in ((SKEW_MAX_PS, 0), (0, SKEW_MAX_PS)):
            early, late = write_ok(mode, 0, dq_skew, dqs_skew), write_ok(mode, 1, dq_skew, dqs_skew)
            assert early or late, (mode, dq_skew, dqs_skew)
            # The mode first (its SET FEATURES goes out in the last mode, at the last corner's skew and the
            # placement chosen for it), then this corner's skew and the mode's tDS/tDH.
            out = console.command(f"ctl mode nvddr {mode}", timeout=600)
            assert f"NV-DDR mode {mode}" in out and not command_failed(out), out
            set_write(console, mode, dq_skew, dqs_skew)
            before = violations(console)
            out = console.command(f"train write 0 {block}", timeout=600)
            want = "early" if early else "late"
            assert f"using DQS {want}" in out and not command_failed(out), (mode, dq_skew, dqs_skew, out)
            errors = [int(n) for n in re.findall(r"DQS (?:early|late) (\d+) bit errors", out)]
            assert (errors[0] == 0) == early and (errors[1] == 0) == late, (mode, out)
            after = violations(console)
            assert (after != before) == (not early or not late), (mode, before, after)
            seen_late |= not early
            out = console.command(f"ctl test 2 {block + 1}", timeout=900)
            assert re.search(rf"NV-DDR mode {mode}, \d+ bytes written and read back, 0 bytes differ", out), out
            assert "0 bits corrected" in out and not command_failed(out), out
            assert violations(console) == after, mode
            block += 2
    assert seen_late        # (mode 2, DQ late: only the late placement writes right)


def test_edge_aligned_dqs_fails(console):
    """DQS edge-aligned with DQ (no quarter-cycle shift: the PHY before this model): no placement writes
    right in mode 5 and the die counts setup violations."""
    assert not write_ok(5, 0, 0, 0, shift_cycles=0) and not write_ok(5, 1, 0, 0, shift_cycles=0)
    out = console.command("ctl mode nvddr 5", timeout=600)
    assert not command_failed(out), out
    set_write(console, 5, 0, 0, shift=0)
    setup, _ = violations(console)
    out = console.command("train write 0 60", timeout=600)
    assert "FAILED: no DQS placement writes right" in out, out
    assert violations(console)[0] > setup
    set_write(console, 5, 0, 0)
    out = console.command("train write 0 60", timeout=600)
    assert "using DQS early" in out and not command_failed(out), out
