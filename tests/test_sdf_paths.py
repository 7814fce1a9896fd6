"""nandlab.sdf_paths: the longest path of a clock from a nextpnr SDF, against a hand-summed path and
against nextpnr's own Fmax for a placed design."""

import re
import subprocess

import pytest

from nandlab import env
from nandlab.sdf_paths import parse_sdf, report, worst_paths

SDF = r"""(DELAYFILE
  (CELL
    (CELLTYPE "top")
    (INSTANCE )
    (DELAY
      (ABSOLUTE
        (INTERCONNECT \$gbuf/CLKO a/CLK (0:0:0) (0:0:0))
        (INTERCONNECT \$gbuf/CLKO b/CLK (0:0:0) (0:0:0))
        (INTERCONNECT \$gbuf/CLKO c/CLK (0:0:0) (0:0:0))
        (INTERCONNECT other/CLKO d/CLK (0:0:0) (0:0:0))
        (INTERCONNECT a/Q lut\[1\]/A (90:95:100) (90:95:100))
        (INTERCONNECT a/Q lut\[1\]/B (10:10:10) (10:10:10))
        (INTERCONNECT lut\[1\]/Z b/M (50:50:50) (50:50:50))
        (INTERCONNECT b/Q c/M (900:900:900) (900:900:900))
        (INTERCONNECT d/Q c/DI (5000:5000:5000) (5000:5000:5000))
  ))))
  (CELL
    (CELLTYPE "LUT4")
    (INSTANCE lut\[1\])
    (DELAY
      (ABSOLUTE
        (IOPATH A Z (150:180:200) (150:180:200))
        (IOPATH B Z (100:100:100) (100:100:100))
      )
    )
    )
"""
for name in "abcd":
    SDF += f"""  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE {name})
    (DELAY
      (ABSOLUTE
        (IOPATH CLK Q (250:280:300) (250:280:300))
      )
    )
    (TIMINGCHECK
      (SETUPHOLD (posedge M) (posedge CLK) (10:15:20) (0:0:0))
      (SETUPHOLD (posedge DI) (posedge CLK) (10:15:20) (0:0:0))
    )
    )
"""


@pytest.mark.unit
def test_longest_path_is_summed_by_hand():
    nets, arcs, setups = parse_sdf(SDF.splitlines())
    domain, paths = worst_paths(nets, arcs, setups)
    assert domain == "$gbuf"
    # b -> c: clock-to-Q 300 + net 900 + setup 20; a -> lut[1] (A, the slower input) -> b: 300 + 100 +
    # 200 + 50 + 20. d's 5000 ps path starts in another clock domain: not this clock's.
    assert [p[0] for p in paths[:2]] == [1220, 670]
    assert [pin for _, pin in paths[1][1]] == [("a", "CLK"), ("a", "Q"), ("lut[1]", "A"), ("lut[1]", "Z"), ("b", "M")]
    assert [t for t, _ in paths[1][1]] == [0, 300, 400, 600, 650]


@pytest.mark.board
def test_worst_path_gives_nextpnrs_placement_fmax(tmp_path):
    """A placed design's worst path here is the Fmax nextpnr prints after placement."""
    (tmp_path / "t.v").write_text(
        "module top(input clk, input [7:0] a, output reg [15:0] q);\n"
        "  reg [15:0] c; always @(posedge clk) begin c <= c + a; q <= c * a + q; end\nendmodule\n")
    run = lambda *cmd: subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=True)
    run(env.which("yosys"), "-q", "-p", "synth_ecp5 -top top -json t.json", "t.v")
    out = run(env.which("nextpnr-ecp5"), "--json", "t.json", "--25k", "--package", "CABGA381", "--freq", "60",
              "--no-route", "--sdf", "t.sdf", "--timing-allow-fail")
    fmax = float(re.search(r"Max frequency for clock '[^']*': ([\d.]+) MHz", out.stderr + out.stdout).group(1))
    text = report(tmp_path / "t.sdf", 3)
    assert f"{fmax:.2f} MHz" in text.splitlines()[0], (fmax, text)
