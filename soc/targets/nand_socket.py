"""Pin maps of the external ONFI NAND socket per board (LiteX IO lists); tables in constraints/nand_socket.md.

Both are 3.3 V LVCMOS: the adaptor's chip needs VCCQ = 3.3 V (async SDR, or NV-DDR at 3.3 V);
NV-DDR2/3 need 1.8 V/1.2 V VCCQ, which these headers do not give. R/B# is open drain: the
adaptor pulls it up (the FPGA pins add a weak pull-up too). Signal names are those the pin PHY
(`nandlab.gateware.onfi.pinphy`) expects.
"""

from litex.build.generic_platform import IOStandard, Misc, Pins, Subsignal


def arty_nand_socket_io():
    """Arty A7: DQ on Pmod JB, DQS and control on Pmod JC (both high-speed, no series resistors),
    the second target's CE#/R/B# on Pmod JA pins 1-2 (slow signals; JA has 200 ohm series
    resistors). Pmod JD stays free (pin 1 is the telemetry UART fallback)."""
    return [("nand_socket", 0,
        Subsignal("dq",   Pins("pmodb:0 pmodb:1 pmodb:2 pmodb:3 pmodb:4 pmodb:5 pmodb:6 pmodb:7")),
        Subsignal("dqs",  Pins("pmodc:0")),
        Subsignal("we_n", Pins("pmodc:1")),
        Subsignal("re_n", Pins("pmodc:2")),
        Subsignal("cle",  Pins("pmodc:3")),
        Subsignal("ale",  Pins("pmodc:4")),
        Subsignal("wp_n", Pins("pmodc:5")),
        Subsignal("ce_n", Pins("pmodc:6 pmoda:0")),
        Subsignal("rb_n", Pins("pmodc:7 pmoda:1"), Misc("PULLUP TRUE")),
        IOStandard("LVCMOS33"),
    )]


def colorlight_i5_nand_socket_io():
    """Colorlight i5 extension board v7.0: DQ on PMOD E, DQS and control on PMOD F pins 2-8 (pin 1
    is the telemetry UART). That is 15 pins: one target, and WP# is strapped on the adaptor."""
    return [("nand_socket", 0,
        Subsignal("dq",   Pins("pmode:0 pmode:1 pmode:2 pmode:3 pmode:4 pmode:5 pmode:6 pmode:7")),
        Subsignal("dqs",  Pins("pmodf:1")),
        Subsignal("we_n", Pins("pmodf:2")),
        Subsignal("re_n", Pins("pmodf:3")),
        Subsignal("cle",  Pins("pmodf:4")),
        Subsignal("ale",  Pins("pmodf:5")),
        Subsignal("ce_n", Pins("pmodf:6")),
        Subsignal("rb_n", Pins("pmodf:7"), Misc("PULLMODE=UP")),
        IOStandard("LVCMOS33"),
    )]


# Timing of the Arty's socket pins (Vivado) --------------------------------------------------------
#
# The chip has no clock: every ONFI timing (tWP, tDS, tDH, tREA, ...) lies between two pin edges that
# the pin PHY launches from the system clock's edges, in whole phases (half cycles: its DDR output
# registers change a pin on both edges; its DDR input registers sample on both). The PHY's schedule
# holds as long as each output has reached the chip before the next phase begins, leaving the chip
# a guard band, and has not moved before the phase it belongs to; read data is sampled after the
# calibrated input delay, so the static check of the inputs is the board and FPGA part of the path.
# So the pins are constrained against both edges of the system clock with the wiring's delays
# below; R/B# passes a two-flop synchroniser and is a false path.

NAND_SOCKET_WIRING_NS = {
    "trace_min": 0.3,   # Pmod header + a short ribbon/adaptor: about 5 cm ...
    "trace_max": 1.5,   # ... to 20 cm at ~7 ns/m (FR-4 traces plus cable).
    "guard"    : 1.0,   # What the chip keeps of each phase for its own input skew (setup side).
}

# Ports the PHY drives on both clock edges (DDR), drives whole cycles, samples, and synchronises.
_DDR_OUTPUTS   = ["nand_socket_dq[*]", "nand_socket_dqs", "nand_socket_we_n", "nand_socket_re_n"]
_CYCLE_OUTPUTS = ["nand_socket_cle", "nand_socket_ale", "nand_socket_ce_n[*]", "nand_socket_wp_n"]
_DDR_INPUTS    = ["nand_socket_dq[*]", "nand_socket_dqs"]
_ASYNC_INPUTS  = ["nand_socket_rb_n[*]"]
SYS_CLOCK_XDC  = "[get_clocks -of_objects [get_nets sys_clk]]"


def arty_nand_socket_xdc(wiring=NAND_SOCKET_WIRING_NS):
    """XDC lines (for `platform.add_platform_command`) constraining the Arty socket's ONFI pins
    against the system clock: output delays of both phases (max: the wiring's longest delay plus the
    chip's guard band, min: the shortest delay), input delays of the DDR inputs (the wiring's), R/B#
    a false path. `{{`/`}}` escape the braces LiteX formats."""
    ports = lambda names: "[get_ports {{" + " ".join(names) + "}}]"
    clk = SYS_CLOCK_XDC
    out_max = wiring["trace_max"] + wiring["guard"]
    out_min = wiring["trace_min"]
    lines = ["# NAND socket (ONFI pins): nandlab.soc.targets.nand_socket.arty_nand_socket_xdc"]
    for edge in ("", " -clock_fall"):
        add = " -add_delay" if edge else ""
        lines += [
            f"set_output_delay -clock {clk}{edge} -max {out_max:.3f}{add} {ports(_DDR_OUTPUTS)}",
            f"set_output_delay -clock {clk}{edge} -min {out_min:.3f} -add_delay {ports(_DDR_OUTPUTS)}",
            f"set_input_delay -clock {clk}{edge} -max {wiring['trace_max']:.3f}{add} {ports(_DDR_INPUTS)}",
            f"set_input_delay -clock {clk}{edge} -min {wiring['trace_min']:.3f} -add_delay {ports(_DDR_INPUTS)}",
        ]
    lines += [
        f"set_output_delay -clock {clk} -max {out_max:.3f} {ports(_CYCLE_OUTPUTS)}",
        f"set_output_delay -clock {clk} -min {out_min:.3f} -add_delay {ports(_CYCLE_OUTPUTS)}",
        f"set_false_path -from {ports(_ASYNC_INPUTS)}",
    ]
    return lines


TIMING_REPORT_SCRIPT = "nandlab_timing.tcl"


def vivado_timing_report_tcl(build_name):
    """A Vivado batch script (`vivado -mode batch -source nandlab_timing.tcl` in the gateware
    directory, after the build) that opens the routed checkpoint and writes the timing summary, the
    NAND socket's I/O paths and a one-line verdict per check to nandlab_timing.rpt; it exits 1 when a
    constraint is not met."""
    return f"""# nandlab: timing report of the routed {build_name} design (needs Vivado; run after the build).
#   vivado -mode batch -source {TIMING_REPORT_SCRIPT}
open_checkpoint {build_name}_route.dcp
set rpt nandlab_timing.rpt
report_timing_summary -max_paths 10 -file $rpt
set sockets [get_ports -quiet nand_socket_*]
if {{[llength $sockets] > 0}} {{
    report_timing -from [get_ports -quiet {{nand_socket_dq* nand_socket_dqs}}] -to [all_registers] -max_paths 10 -nworst 1 -delay_type min_max \\
        -name nand_socket_in -file $rpt -append
    report_timing -from [all_registers] -to [get_ports -quiet {{nand_socket_*}}] -max_paths 20 -nworst 1 \\
        -delay_type min_max -name nand_socket_out -file $rpt -append
    check_timing -file $rpt -append
}}
set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
set whs [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -hold]]
set fh [open $rpt a]
puts $fh "nandlab: WNS $wns ns, WHS $whs ns, socket ports [llength $sockets]"
close $fh
puts "nandlab: WNS $wns ns, WHS $whs ns, socket ports [llength $sockets]"
if {{$wns < 0 || $whs < 0}} {{
    exit 1
}}
exit 0
"""
