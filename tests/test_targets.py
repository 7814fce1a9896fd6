"""Board targets: generated the way a lab engineer builds them (litex-boards test_targets style).

Arty: the Vivado project is generated, the board options reach the generated TCL, and a full build
without Vivado stops with a clear message. ECP5: the open-flow script is generated; the full
synthesis + place and route + bitstream run is `slow`.
"""

import json
import re

import pytest

from nandlab import env
from nandlab.soc.targets import parse_nextpnr_log

from nandlab.testing import ECP5_BUILD_TIMEOUT, build_target as _build


@pytest.mark.board
def test_arty_vivado_project():
    gw = env.BUILD_DIR / "arty" / "gateware"
    out = _build("arty", "--no-compile", "--variant", "a7-100")
    assert out.returncode == 0, out.stderr
    tcl = (gw / "digilent_arty.tcl").read_text()
    assert "xc7a100t" in tcl
    assert (gw / "digilent_arty.xdc").exists() and (gw / "digilent_arty.v").exists()
    assert (env.BUILD_DIR / "arty" / "software" / "firmware" / "firmware.bin").stat().st_size > 0

    # The default variant, and a full build where Vivado is absent: generated, then a clear stop.
    out = _build("arty")
    tcl = (gw / "digilent_arty.tcl").read_text()
    assert "xc7a35t" in tcl and "xc7a100t" not in tcl
    if env.which("vivado") is None:
        assert out.returncode == 3
        lines = [l for l in out.stderr.splitlines() if l.startswith("nandlab: error")]
        assert len(lines) == 1 and "vivado not found" in lines[0] and "Vivado" in lines[0]
        assert "Traceback" not in out.stderr
    else:
        assert out.returncode == 0, out.stderr
    verilog = (gw / "digilent_arty.v").read_text()
    assert "etherbone" in verilog  # The host bridge is in the design.
    assert "timebase" in verilog   # The NAND subsystem's time base is in the design.
    assert "nand_die1" in verilog and "nand_bitbang" in verilog  # Two emulated dies by default.
    # Telemetry streams over UDP (port 5000, 8 frames a packet) at a rate the 100 Mbit link carries.
    csr = (env.BUILD_DIR / "arty" / "csr.csv").read_text()
    assert "telemetry_udp_ip_address" in csr and "telemetry_udp" in verilog
    from nandlab.gateware.telemetry.frame import frame_length
    from nandlab.soc.targets.arty import udp_payload_rate
    decimation = int(re.search(r"constant,nandlab_telemetry_decimation,(\d+)", csr).group(1))
    frames_per_s = 1 / (decimation * 40e-9)
    assert frames_per_s * frame_length(2) < 0.8 * udp_payload_rate(8 * frame_length(2)) < 12.5e6


@pytest.mark.board
def test_arty_telemetry_uart_without_ethernet():
    """Without Ethernet the Arty sends telemetry on a UART (Pmod JD pin 1, 3 Mbaud) at a rate it carries."""
    out = _build("arty", "--no-compile", "--no-etherbone")
    assert out.returncode == 0, out.stderr
    xdc = (env.BUILD_DIR / "arty" / "gateware" / "digilent_arty.xdc").read_text()
    assert re.search(r"LOC D4 \[get_ports \{telemetry_uart_tx\}\]", xdc)
    csr = (env.BUILD_DIR / "arty" / "csr.csv").read_text()
    assert "telemetry_udp" not in csr and "constant,nandlab_telemetry_uart_baud,3000000" in csr
    from nandlab.gateware.telemetry.frame import frame_length
    decimation = int(re.search(r"constant,nandlab_telemetry_decimation,(\d+)", csr).group(1))
    assert frame_length(2) / (decimation * 40e-9) < 0.8 * 3e6 / 10       # bytes/s under the UART's


@pytest.mark.board
def test_arty_dram_storage():
    """Dies with their arrays in DDR3: bus masters into the top of main RAM, region in soc.h; a
    geometry that does not fit is refused naming the limit."""
    out = _build("arty", "--no-compile", "--nand-storage", "dram", "--nand-blocks", "256", "--nand-pages", "64")
    assert out.returncode == 0, out.stderr
    log = (env.BUILD_DIR / "arty" / "build.log").read_text()
    masters = log[log.rindex("Bus Masters:"):log.rindex("Bus Slaves:")]
    assert "nand_die0_storage" in masters and "nand_die1_storage" in masters
    soc_h = (env.BUILD_DIR / "arty" / "software" / "include" / "generated" / "soc.h").read_text()
    base = int(re.search(r"NANDLAB_DIE_STORAGE_BASE (\d+)", soc_h).group(1))
    size = int(re.search(r"NANDLAB_DIE_STORAGE_BYTES (\d+)", soc_h).group(1))
    assert size >= 256 * 64 * 2112 and size % 4096 == 0
    assert base + 2 * size == 0x40000000 + 256 * 2**20     # The top of the Arty's 256 MiB.
    out = _build("arty", "--no-compile", "--nand-storage", "dram", "--nand-blocks", "1024", "--nand-pages", "64")
    assert out.returncode != 0
    lines = [l for l in out.stderr.splitlines() if l.startswith("nandlab: error")]
    assert len(lines) == 1 and "exceed half of main RAM (128 MiB)" in lines[0], out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.board
def test_ecp5_open_flow_script():
    out = _build("colorlight_i5", "--no-compile")
    assert out.returncode == 0, out.stderr
    gw = env.BUILD_DIR / "colorlight_i5" / "gateware"
    script = (gw / "build_colorlight_i5.sh").read_text()
    assert "yosys" in script and "nextpnr-ecp5" in script and "ecppack" in script
    assert "--25k" in script
    # The ring nodes' look-ahead token tables stay in LUT RAM (a block RAM's read port is slower).
    ys = (gw / "colorlight_i5.ys").read_text()
    assert 'setattr -set ram_style "distributed" m:*token_table*' in ys
    # The dies' answers reach the controller unregistered (only the ECPIX-5 registers them).
    assert not re.search(r"^reg\s.*_rb_n_r = ", (gw / "colorlight_i5.v").read_text(), re.M)
    # Its FIFOs are left to yosys (sync_read_ram "auto"): no memory named one by one.
    assert not re.search(r'ram_style "block" m:\w+\n', ys)
    # Telemetry on the extension board's PMOD F pin 1 (D1), 3 Mbaud.
    assert 'LOCATE COMP "telemetry_uart_tx" SITE "D1"' in (gw / "colorlight_i5.lpf").read_text()
    assert "constant,nandlab_telemetry_uart_baud,3000000" in (env.BUILD_DIR / "colorlight_i5" / "csr.csv").read_text()


@pytest.mark.board
def test_ecpix5_full_soc_open_flow_script():
    """ECPIX-5 85F: the whole SoC (2 channels x 4 dies, a controller with BCH on each, ring, monitor,
    telemetry over UDP, Etherbone on RGMII, DDR3) in an open-flow script for the LFE5UM5G-85F."""
    out = _build("ecpix5", "--no-compile")
    assert out.returncode == 0, out.stderr
    root = env.BUILD_DIR / "ecpix5"
    gw = root / "gateware"
    script = (gw / "build_lambdaconcept_ecpix5.sh").read_text()
    assert "yosys" in script and "ecppack" in script
    assert re.search(r"nextpnr-ecp5 .*--um5g-85k --package CABGA554 --speed 8", script)
    csr = (root / "csr.csv").read_text()
    for constant in ("nandlab_channels,2", "nandlab_dies,4", "nandlab_ctrl_ecc_t,8", "nandlab_telemetry_udp_port,5000"):
        assert f"constant,{constant}," in csr, constant
    assert "csr_register,nand_ctrl1_" in csr and "csr_register,power_ring_" in csr
    assert "csr_register,power_monitor_" in csr and "csr_register,telemetry_udp_ip_address" in csr
    verilog = (gw / "lambdaconcept_ecpix5.v").read_text()
    assert "nand_ch1_die3" in verilog and "etherbone" in verilog and "ECLKSYNCB" in verilog
    # The dies' R/B# back to each channel's controller through a register, ready at reset (nand_return_registered).
    assert re.findall(r"^reg\s+\[3:0\]\s+\w+_rb_n_r = 4'd(\d+);", verilog, re.M) == ["15", "15"]
    # The ring nodes' token tables in block RAM (power_table_ram): LUTs are what this board lacks.
    ys = (gw / "lambdaconcept_ecpix5.ys").read_text()
    assert 'setattr -set ram_style "block" m:*token_table*' in ys
    # And the written synchronous-read memories by size (sync_read_ram, soc/ram_style.py), as the Verilog
    # describes them: the channel controllers' completion and dout FIFOs, LiteEth's, the UART's.
    from test_ram_style import expected, verilog_memories
    memories = verilog_memories(verilog)
    named = set(re.findall(r'setattr -set ram_style "block" m:(\w+)\n', ys))
    assert named == expected(memories)
    for fifo in ("completions", "dout_fifo", "ethcore_mac_core", "uart"):
        assert any(fifo in n for n in _memory_users(verilog, named)), fifo
    # The one-clock FIFOs without yosys' read-during-write logic; the MAC's clock crossings keep it.
    unchecked = set(re.findall(r"setattr -set no_rw_check 1 m:(\w+)\n", ys))
    assert unchecked < named
    users = dict(zip(sorted(named), _memory_users(verilog, sorted(named))))
    assert all(("completions" in users[n] or "dout_fifo" in users[n]) == (n in unchecked)
               for n in named if "nandlabchannelcontroller" in users[n])
    assert not any("mac_core" in users[n] and "cdc" in users[n] for n in unchecked)
    lpf = (gw / "lambdaconcept_ecpix5.lpf").read_text()
    assert 'LOCATE COMP "eth_clocks_rx" SITE "E11"' in lpf         # The RGMII port.
    assert (root / "software" / "firmware" / "firmware.bin").stat().st_size > 0


def _memory_users(verilog, names):
    """The signals each named memory's ports drive or read (`assign X = name_datN` and writes), joined."""
    for name in names:
        block = verilog.split(f"// Memory {name}:", 1)[1].split("// Memory ", 1)[0]
        yield " ".join(re.findall(r"assign (\S+) = ", block))


@pytest.mark.board
@pytest.mark.slow
def test_ecpix5_board_options_reach_the_script():
    """ECPIX-5 with its options changed (45F, one channel, no ECC, no Etherbone, 50 MHz): each reaches the
    script and the SoC (make test-slow: a second generation of the whole SoC; make test generates the
    default one above)."""
    root = env.BUILD_DIR / "ecpix5"
    gw = root / "gateware"
    out = _build("ecpix5", "--no-compile", "--device", "45F", "--nand-channels", "1", "--nand-ecc", "none",
                 "--no-etherbone", "--sys-clk-freq", "50e6")
    assert out.returncode == 0, out.stderr
    assert "--um5g-45k" in (gw / "build_lambdaconcept_ecpix5.sh").read_text()
    csr = (root / "csr.csv").read_text()
    assert "constant,nandlab_channels,1," in csr and "nandlab_ctrl_ecc_t" not in csr
    assert "etherbone" not in (gw / "lambdaconcept_ecpix5.v").read_text()
    assert "constant,config_clock_frequency,50000000," in csr


@pytest.mark.board
def test_ecp5_tools_resolve_to_yowasp():
    for tool in ("yosys", "nextpnr-ecp5", "ecppack"):
        path = env.which(tool)
        assert path is not None, tool
        assert "yowasp" in open(path).read(), path


NEXTPNR_SAMPLE = """\
Info: Device utilisation:
Info: 	          TRELLIS_IO:    20/  197    10%
Info: 	                DCCA:     3/   56     5%
Info: 	              DP16KD:    12/   56    21%
Info: 	          TRELLIS_FF:  2979/24288    12%
Info: 	        TRELLIS_COMB:  5420/24288    22%
Info: Max frequency for clock '$glbnet$crg_clkout': 55.10 MHz (FAIL at 60.00 MHz)
Info: Routing..
Info: Device utilisation:
Info: 	              DP16KD:    12/   56    21%
Info: 	          TRELLIS_FF:  2979/24288    12%
Info: 	        TRELLIS_COMB:  5500/24288    22%
Info: Max frequency for clock '$glbnet$crg_clkout': 63.35 MHz (PASS at 60.00 MHz)
"""


@pytest.mark.unit
def test_nextpnr_report_takes_post_route_figures():
    r = parse_nextpnr_log(NEXTPNR_SAMPLE)
    assert r["utilisation"]["TRELLIS_COMB"] == {"used": 5500, "total": 24288}
    assert r["utilisation"]["DP16KD"]["used"] == 12
    assert r["fmax"]["$glbnet$crg_clkout"] == {"fmax_mhz": 63.35, "target_mhz": 60.0, "pass": True}


@pytest.mark.slow
@pytest.mark.xfail(reason="the full SoC fits the ECP5-85F (about 91 % of its logic slots packed) but misses 60 MHz: "
                          "placement estimate 49.0 MHz, not yet routed (ecpix5.py, beside NAND_DEFAULTS)", strict=True)
def test_ecpix5_bitstream_fmax_utilisation():
    """The full SoC on the ECP5-85F closes timing at its default 60 MHz (about half an hour on 2 cores)."""
    out = _build("ecpix5", timeout=ECP5_BUILD_TIMEOUT)
    assert out.returncode == 0, out.stderr
    report = json.loads((env.BUILD_DIR / "ecpix5" / "report.json").read_text())
    with open(report["bitstream"], "rb") as f:
        assert len(f.read()) > 100_000
    util = report["utilisation"]
    assert util["TRELLIS_COMB"]["total"] > 80_000 and util["TRELLIS_COMB"]["used"] > 20_000
    from nandlab.soc.targets import system_clock
    name, sys_clk = system_clock(report, 60.0)
    assert sys_clk is not None and sys_clk["pass"], report["fmax"]
    assert all(f["pass"] for f in report["fmax"].values()), report["fmax"]


@pytest.mark.slow
def test_ecp5_bitstream_fmax_utilisation():
    out = _build("colorlight_i5", timeout=ECP5_BUILD_TIMEOUT)
    assert out.returncode == 0, out.stderr
    report = json.loads((env.BUILD_DIR / "colorlight_i5" / "report.json").read_text())
    with open(report["bitstream"], "rb") as f:
        assert len(f.read()) > 100_000
    util = report["utilisation"]
    assert util["TRELLIS_COMB"]["used"] > 1000 and util["TRELLIS_FF"]["used"] > 1000
    assert util["DP16KD"]["used"] > 0
    from nandlab.soc.targets import system_clock
    from nandlab.soc.targets.colorlight_i5 import NandLabColorlightSoC
    name, sys_clk = system_clock(report, 50.0)
    assert sys_clk is not None, report["fmax"]
    print(f"Colorlight i5: sys {sys_clk['fmax_mhz']:.2f} MHz, LUT4 {util['TRELLIS_COMB']['used']}, "
          f"FF {util['TRELLIS_FF']['used']}, DP16KD {util['DP16KD']['used']}")
    assert all(f["pass"] for f in report["fmax"].values()), report["fmax"]
    assert "Fmax" in out.stderr  # The report is printed for the user.


# Vivado's commands as the generated scripts use them: name -> options it takes. The stubs check the
# options and return plausible values, so tclsh runs the scripts through (syntax, braces, variables).
VIVADO_COMMANDS = {
    "open_checkpoint": [], "get_ports": ["-quiet"], "get_nets": ["-quiet"], "all_registers": [],
    "get_clocks": ["-of_objects", "-quiet"], "check_timing": ["-file", "-append"],
    "report_timing_summary": ["-max_paths", "-file"],
    "report_timing": ["-from", "-to", "-max_paths", "-nworst", "-delay_type", "-name", "-file", "-append"],
    "get_timing_paths": ["-max_paths", "-nworst", "-setup", "-hold"], "get_property": [],
    "set_output_delay": ["-clock", "-clock_fall", "-max", "-min", "-add_delay"],
    "set_input_delay": ["-clock", "-clock_fall", "-max", "-min", "-add_delay"],
    "set_false_path": ["-from", "-to"],
}


def _run_tcl_with_vivado_stubs(script, cwd, slack="0.25"):
    import shutil
    import subprocess
    tclsh = shutil.which("tclsh")
    assert tclsh, "tclsh not installed: make env installs it (package tcl, sw/host/bootstrap.sh)"
    stubs = ["rename exit _exit", "proc exit {{code 0}} { puts \"EXIT $code\"; _exit $code }"]
    for cmd, options in VIVADO_COMMANDS.items():
        ret = {"get_property": slack, "get_ports": "p0 p1"}.get(cmd, cmd)
        stubs.append(f"proc {cmd} {{args}} {{ foreach a $args {{ if {{[string match -* $a] && "
                     f"[lsearch -exact {{{' '.join(options)}}} $a] < 0}} {{ error \"{cmd}: unknown option $a\" }} }}; "
                     f"return {{{ret}}} }}")
    stubs.append("proc unknown {args} { error \"not a Vivado command the stubs know: $args\" }")
    path = cwd / "check.tcl"
    path.write_text("\n".join(stubs) + "\n" + script + "\nexit 0\n")
    return subprocess.run([tclsh, str(path)], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.board
def test_arty_nand_socket_timing_constraints(tmp_path):
    """The Arty project with the NAND socket carries the ONFI pins' I/O delays (both clock edges for
    the DDR pins, R/B# a false path) and the timing report script; both run through tclsh with stubs
    of the Vivado commands they use, and the script's verdict follows the slack."""
    from nandlab.soc.targets import parse_vivado_timing
    from nandlab.soc.targets.nand_socket import NAND_SOCKET_WIRING_NS as w, TIMING_REPORT_SCRIPT
    out = _build("arty", "--no-compile", "--nand-socket")
    assert out.returncode == 0, out.stderr
    gw = env.BUILD_DIR / "arty" / "gateware"
    xdc = (gw / "digilent_arty.xdc").read_text()
    clk = r"-clock \[get_clocks -of_objects \[get_nets sys_clk\]\]"
    for edge in ("", " -clock_fall"):
        assert re.search(rf"set_output_delay {clk}{edge} -max {w['trace_max'] + w['guard']:.3f}.*"
                         r"\{nand_socket_dq\[\*\] nand_socket_dqs nand_socket_we_n nand_socket_re_n\}", xdc)
        assert re.search(rf"set_input_delay {clk}{edge} -min {w['trace_min']:.3f} -add_delay .*nand_socket_dqs", xdc)
    assert re.search(rf"set_output_delay {clk} -max .*nand_socket_ce_n\[\*\] nand_socket_wp_n", xdc)
    assert "set_false_path -from [get_ports {nand_socket_rb_n[*]}]" in xdc
    assert "sys_clk" in (gw / "digilent_arty.v").read_text()       # The net the constraints name.
    start = xdc.index("# NAND socket (ONFI pins)")
    constraints = xdc[start:xdc.index("\n", xdc.index("set_false_path -from [get_ports {nand_socket_rb_n", start))]
    ok = _run_tcl_with_vivado_stubs(constraints, tmp_path)
    assert ok.returncode == 0, ok.stderr

    script = (gw / TIMING_REPORT_SCRIPT).read_text()
    assert "open_checkpoint digilent_arty_route.dcp" in script and "nand_socket" in script
    ok = _run_tcl_with_vivado_stubs(script, tmp_path, slack="0.25")
    assert ok.returncode == 0 and "EXIT 0" in ok.stdout, ok.stderr
    assert parse_vivado_timing((tmp_path / "nandlab_timing.rpt").read_text()) == \
        {"wns_ns": 0.25, "whs_ns": 0.25, "socket_ports": 2, "met": True}
    bad = _run_tcl_with_vivado_stubs(script, tmp_path, slack="-0.4")
    assert bad.returncode == 1 and "WNS -0.4 ns" in bad.stdout
    typo = _run_tcl_with_vivado_stubs(script.replace("-delay_type", "-dealy_type"), tmp_path)
    assert typo.returncode != 0 and "unknown option -dealy_type" in typo.stderr   # The stubs do check.

    # Without the socket: no socket constraints, the report script all the same.
    out = _build("arty", "--no-compile")
    assert out.returncode == 0, out.stderr
    assert "nand_socket" not in (gw / "digilent_arty.xdc").read_text()
    assert (gw / TIMING_REPORT_SCRIPT).exists()


# The DW/SDW-NFM profile on the boards (issue 17, Step 7) ------------------------------------------

DWSDW = ("--nand-part", "DWSDW-MLC-2K", "--nand-sdw", "--nand-storage", "dram")
# Ways that fit each board (the board's page registers within its block RAM): the Arty A7-35T takes 3, 4
# on the A7-100T; ECPIX-5 on one channel, as the paper's 1, 2 and 4 ways are.
DWSDW_WAYS = {"arty": {1: (), 2: (), 4: ("--variant", "a7-100")},
              "colorlight_i5": {1: ()},
              "ecpix5": {w: ("--nand-channels", "1") for w in (1, 2, 4)}}


def _board_args(board, *argv):
    """A board's options parsed and checked as `nandlab build --target BOARD` does."""
    import argparse
    from nandlab.soc import targets
    parser = argparse.ArgumentParser()
    targets.get_board(board).add_arguments(parser)
    args = parser.parse_args(argv)
    targets.check_arguments(args)
    return args


def _board_soc(board, *argv):
    """The board's SoC generated from its options up to its CSR map (no Verilog, BIOS or firmware:
    seconds), and its csr.csv and csr.json texts."""
    from litex.soc.integration import export
    from nandlab.soc import targets
    soc = targets.get_board(board).make_soc(_board_args(board, *argv))
    soc.finalize()
    return (soc, export.get_csr_csv(soc.csr_regions, soc.constants, soc.mem_regions),
            export.get_csr_json(soc.csr_regions, soc.constants, soc.mem_regions))


@pytest.mark.board
@pytest.mark.parametrize("board, ways", [pytest.param(b, w, marks=[pytest.mark.slow] if w == 2 else [])
                                         for b, ways in DWSDW_WAYS.items() for w in ways])
def test_dwsdw_profile_generates(board, ways):
    """Each board takes the DW/SDW profile at the ways that fit: dies of DWSDW-MLC-2K with SDW-NFM's
    subplane registers, no cache pairs, a block per subplane, arrays in DRAM, and in the CSR map each
    die's multi-plane counters up to 8 pages (a die without SDW counts up to 2) and the part. (3-15 s
    each: the SoC up to its CSR map, no Verilog; the 2-way cases, between 1 and 4, in make test-slow.)"""
    soc, csv, js = _board_soc(board, *DWSDW, "--nand-dies", str(ways), *DWSDW_WAYS[board][ways])
    configs = soc.nand_die_configs
    assert len(configs) == ways
    for c in configs:
        assert (c.part.model, c.with_sdw, c.with_cache, c.registers) == ("DWSDW-MLC-2K", True, False, 8)
        assert (c.part.blocks_per_lun, c.part.page_size, c.part.spare_size) == (8, 2048, 64)
    assert f"constant,nandlab_dies,{ways}," in csv and "constant,nandlab_die_part,dwsdw-mlc-2k," in csv
    assert "constant,nandlab_die_storage_bytes," in csv
    registers = json.loads(js)["csr_registers"]
    # The ECPIX-5's dies keep their statistics in one memory, read by number (NANDLAB_DIE_STATS).
    memory = soc.nand_die_stats == "memory"
    assert memory == (board == "ecpix5")
    stats = json.loads(js)["constants"].get("nandlab_die_stats", "").split(";")
    counters = lambda i: stats if memory else [n[len(f"nand_die{i}_"):] for n in registers
                                               if n.startswith(f"nand_die{i}_")]
    for i in range(ways):
        for op in ("read", "program", "erase"):
            for n in range(2, 9):
                assert f"mp_{op}{n}" in counters(i), (i, op, n)
        assert "fail_reason6" in counters(i) and "mp_read9" not in counters(i)
        assert f"nand_die{i}_control" in registers
        assert (f"nand_die{i}_stats_value" in registers) == memory
        assert (f"nand_die{i}_fail_reason6" in registers) != memory
    assert f"nand_die{ways}_control" not in registers


def _refusal(board, *argv):
    from nandlab.errors import NandLabError
    with pytest.raises(NandLabError) as e:
        _board_args(board, *argv)
    return str(e.value)


@pytest.mark.board
def test_board_nand_options_refused_naming_the_limit():
    """Bad NAND options of a board, each refused with the option and the limit at fault."""
    for board, argv, message in (
        ("arty", ["--nand-part", "NOPE"], "--nand-part NOPE: unknown part 'NOPE'; known parts: NL-SLC-2K"),
        ("ecpix5", ["--nand-part", "SPNFM-64K"], "--nand-part SPNFM-64K: SPNFM-64K: pages of 65536 + 4096 B"),
        ("arty", ["--nand-part", "DWSDW-MLC-2K", "--nand-sdw", "--nand-blocks", "6"],
         "--nand-sdw: 6 blocks cannot give each of the 2 x 4 subplanes a block (at least 8)"),
        ("arty", ["--nand-part", "DWSDW-MLC-2K", "--nand-pages", "513"],
         "--nand-pages 513: 513 pages per block: DWSDW-MLC-2K takes 1..512"),
        ("arty", ["--nand-part", "DWSDW-MLC-2K", "--nand-blocks", "20000"],
         "--nand-blocks 20000: 20000 blocks: DWSDW-MLC-2K takes 2..16384"),
        ("colorlight_i5", ["--nand-blocks", "3"], "--nand-blocks 3: 3 blocks do not divide into 2 planes"),
        ("arty", ["--nand-part", "DWSDW-MLC-2K", "--nand-cache"],
         "--nand-cache: DWSDW-MLC-2K announces no cache commands"),
        ("arty", [*DWSDW, "--nand-dies", "17"], "--nand-dies 17 is out of range: a channel takes 1..16"),
        ("ecpix5", [*DWSDW, "--nand-channels", "9"], "--nand-channels 9 is out of range"),
        ("arty", ["--power-topology", "exchange"], "--power-topology exchange with --nand-channels 1: power topology "
                                                   "'exchange' shares a budget between the rings of several channels"),
        # The paper's own part: 8 KiB + 448 B pages, 16 registers a die with cache pairs.
        ("arty", ["--nand-part", "DWSDW-MLC-64G", "--nand-sdw", "--nand-cache", "--nand-storage", "dram", "--nand-dies", "1"],
         "1 die(s) x 16 page registers of 8640 B take 48 RAMB36 (48 a die); the XC7A35T has 50 RAMB36"),
        ("arty", [*DWSDW, "--nand-dies", "4"], "4 die(s) x 8 page registers of 2112 B take 32 RAMB36 (8 a die); "
                                                "the XC7A35T has 50 RAMB36, the SoC without dies takes about 22, "
                                                "leaving 28 for the dies: at most 3 die(s) fit"),
        ("colorlight_i5", [*DWSDW, "--nand-dies", "2"], "2 die(s) x 8 page registers of 2112 B take 34 DP16KD "
                                                         "(17 a die); the LFE5U-25F has 56 DP16KD"),
    ):
        assert message in _refusal(board, *argv), (board, argv)


@pytest.mark.board
def test_board_nand_options_reach_the_soc():
    """--nand-part/--nand-sdw/--nand-cache reach the dies: the board's defaults (the Arty's cache pairs, the
    Colorlight's none), a part without cache commands, and each option given; --power-topology the SoC."""
    from nandlab.soc import targets
    kw = lambda board, *argv: targets.nand_kwargs(_board_args(board, *argv))
    assert {k: kw("arty")[k] for k in ("nand_part", "nand_sdw", "nand_cache", "nand_blocks")} == \
        dict(nand_part="NL-SLC-2K", nand_sdw=False, nand_cache=True, nand_blocks=4)
    assert kw("colorlight_i5")["nand_cache"] is False and kw("arty", "--no-nand-cache")["nand_cache"] is False
    assert kw("colorlight_i5", "--nand-cache")["nand_cache"] is True
    dw = kw("arty", "--nand-part", "dwsdw-mlc-2k", "--nand-sdw")
    assert (dw["nand_part"], dw["nand_sdw"], dw["nand_cache"], dw["nand_blocks"]) == ("DWSDW-MLC-2K", True, False, 8)
    assert kw("arty", "--nand-part", "DWSDW-MLC-2K", "--nand-sdw", "--nand-blocks", "16")["nand_blocks"] == 16
    assert kw("arty", "--nand-part", "DWSDW-MLC-2K")["nand_blocks"] == 4       # Without SDW: the board's.
    assert kw("ecpix5")["power_topology"] is None                             # The SoC's default (per_channel).
    assert kw("ecpix5", "--power-topology", "exchange")["power_topology"] == "exchange"


@pytest.mark.board
def test_board_nand_option_refused_before_generating(tmp_path):
    """`nandlab build` refuses a DW/SDW profile that does not fit in one line, with nothing generated."""
    import os
    from nandlab.testing import run_cli
    out = run_cli("build", "--target", "colorlight_i5", "--no-compile", *DWSDW, "--nand-dies", "4",
                  env={**os.environ, "NANDLAB_BUILD_DIR": str(tmp_path / "build")}, timeout=120)
    lines = [l for l in out.stderr.splitlines() if l.startswith("nandlab: error: ")]
    assert out.returncode == 2 and len(lines) == 1 and "take 68 DP16KD" in lines[0], out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "build").exists()


@pytest.mark.board
@pytest.mark.slow
def test_dwsdw_arty_project_from_the_command_line():
    """`nandlab build --target arty --variant a7-100 --nand-part DWSDW-MLC-2K --nand-sdw --nand-dies 4
    --nand-storage dram` generates the Vivado project: four SDW dies with their arrays in DDR3, their
    counters in csr.csv."""
    out = _build("arty", "--no-compile", "--variant", "a7-100", *DWSDW, "--nand-dies", "4")
    assert out.returncode == 0, out.stderr
    root = env.BUILD_DIR / "arty"
    csr = (root / "csr.csv").read_text()
    assert "constant,nandlab_dies,4," in csr and "constant,nandlab_die_part,dwsdw-mlc-2k," in csr
    assert "csr_register,nand_die3_mp_program8," in csr and "nand_die4_" not in csr
    log = (root / "build.log").read_text()
    assert "nand_die3_storage" in log[log.rindex("Bus Masters:"):log.rindex("Bus Slaves:")]
    assert "xc7a100t" in (root / "gateware" / "digilent_arty.tcl").read_text()
    assert (root / "software" / "firmware" / "firmware.bin").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.xfail(reason="one SDW die fills 94 % of the 25F's LUT4s (22797 / 24288, 43 / 56 DP16KD): nextpnr's "
                          "placement estimates 37.1 MHz for the 50 MHz clock and its routing stalled", strict=True)
def test_dwsdw_colorlight_bitstream_fmax_utilisation():
    """The DW/SDW profile's one way on the Colorlight i5 through the open flow (over an hour on 2 shared
    cores): placed and routed within the LFE5U-25F at 50 MHz; its Fmax and LUT4/FF/DP16KD reported."""
    out = _build("colorlight_i5", *DWSDW, timeout=ECP5_BUILD_TIMEOUT)
    assert out.returncode == 0, out.stderr
    report = json.loads((env.BUILD_DIR / "colorlight_i5" / "report.json").read_text())
    with open(report["bitstream"], "rb") as f:
        assert len(f.read()) > 100_000
    util = report["utilisation"]
    assert util["DP16KD"]["used"] >= 17 and util["DP16KD"]["used"] <= util["DP16KD"]["total"] == 56
    assert util["TRELLIS_COMB"]["used"] <= util["TRELLIS_COMB"]["total"]
    from nandlab.soc.targets import system_clock
    name, sys_clk = system_clock(report, 50.0)
    assert sys_clk is not None, report["fmax"]
    print(f"Colorlight i5, DWSDW-MLC-2K SDW, 1 way: sys {sys_clk['fmax_mhz']:.2f} MHz, LUT4 "
          f"{util['TRELLIS_COMB']['used']}, FF {util['TRELLIS_FF']['used']}, DP16KD {util['DP16KD']['used']}")
    assert all(f["pass"] for f in report["fmax"].values()), report["fmax"]
