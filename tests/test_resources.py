"""Resource report of the NAND socket's pin PHY: its Verilog through the board platform's overrides, the
yosys cell counts with the I/O cells apart from LUT/FF, and the table `nandlab report controller` prints."""

import re
from types import SimpleNamespace

import pytest

from nandlab import env

LANES = 9               # DQ0-7 and DQS.

# Per family: the board's socket outputs (Arty: CE# x2, CLE, ALE, WE#, RE#, WP#; Colorlight i5: one CE#,
# WP# strapped), the primitives the platform's overrides must produce and the I/O cells yosys keeps.
EXPECTED = {
    "xc7":  {"primitives": ("ODDR", "IDDR", "IDELAYE2", "IOBUF"),
             "io": {"ODDR": 7 + 2 * LANES, "IDDR": LANES, "IDELAYE2": LANES, "IOBUF": LANES}},
    "ecp5": {"primitives": ("ODDRX1F", "IDDRX1F", "DELAYF", "TRELLIS_IO"),
             "io": {"ODDRX1F": 5 + LANES, "IDDRX1F": LANES, "DELAYF": LANES, "TRELLIS_IO": LANES}},
}


@pytest.mark.board
@pytest.mark.parametrize("family", ["xc7", "ecp5"])
def test_phy_resources(family):
    """The PHY's Verilog instantiates the family's primitives (nothing left as a LiteX special), and
    synthesis counts each pin's DDR registers, delay line and buffer as I/O cells, with no pad buffers
    on the module's internal ports and no IDELAYCTRL (the Arty's DDR3 clocking has it)."""
    from nandlab.resources import phy_resources, phy_verilog
    verilog, top = phy_verilog(family, env.BUILD_DIR / "test" / f"resources_pinphy_{family}")
    text = verilog.read_text()
    for prim in EXPECTED[family]["primitives"]:
        assert re.search(rf"^{prim}\s*(#\(|\w+\s*\()", text, re.M), prim
    if family == "xc7":
        assert re.search(r'IDELAY_TYPE\s*\("VAR_LOAD"\)', text)
    assert re.search(r"input\s+wire\s+\[13:0\]\s+\w*bus_adr", text)      # The CSR bank is in.

    r = phy_resources([family], log=lambda msg: None)[family]
    assert r["io"] == EXPECTED[family]["io"]
    assert r["bram"] == 0 and r["lutram"] == 0
    # Tap shadows (9 x 5 or 7 bits), snapshot (19 bits), CSR storage: more than the I/O cells, but small.
    assert 9 * 5 + 19 < r["ff"] < 400
    assert 0 < r["lut"] < 600


@pytest.mark.unit
def test_report_controller_prints_phy_table(monkeypatch, capsys):
    """`report controller` prints the controller table unchanged, then the PHY's with its I/O cells."""
    from nandlab import cli, resources
    fake = {"lut": 10, "ff": 20, "lutram": 0, "bram": 0}
    monkeypatch.setattr(resources, "controller_resources",
                        lambda families, log: {(4, f): fake for f in families})
    monkeypatch.setattr(resources, "phy_resources",
                        lambda families, log: {f: {**fake, "lut": 179, "io": {"IDDR": 9, "ODDR": 25}}
                                               for f in families})
    assert cli.cmd_report(SimpleNamespace(what="controller", family="xc7")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "4        xc7        10     20       0     0" in lines
    head = lines.index(next(line for line in lines if line.startswith("family board")))
    assert lines[head].split() == ["family", "board", "LUT", "FF", "LUTRAM", "BRAM", "I/O", "cells"]
    assert lines[head + 1].split() == ["xc7", "arty", "179", "20", "0", "0", "IDDR", "9,", "ODDR", "25"]
