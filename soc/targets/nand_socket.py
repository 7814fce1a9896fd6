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
