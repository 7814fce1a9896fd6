"""Digilent Arty A7 (Xilinx 7-series, Vivado): the nandlab SoC with DDR3 main RAM and Etherbone.

`build` generates the Vivado project (Verilog, XDC, TCL) and runs Vivado when it is on PATH;
`load` programs the FPGA through OpenOCD. The firmware is loaded by the BIOS (serial or network).
"""

from pathlib import Path

from migen import *

from litex.build.generic_platform import IOStandard, Pins, Subsignal
from litex.build.openocd import OpenOCD

from litex.soc.cores.led import LedChaser
from litex_boards.platforms import digilent_arty
from litex_boards.targets.digilent_arty import _CRG
from litedram.modules import MT41K128M16
from litedram.phy import s7ddrphy
from liteeth.phy.mii import LiteEthPHYMII

from nandlab.soc import targets
from nandlab.soc.nandlab_soc import NandLabSoC

NAME        = "arty"
DESCRIPTION = "Digilent Arty A7-35T/100T: Vivado project (bitstream needs Vivado), OpenOCD load"
VARIANTS    = ["a7-35", "a7-100"]


TELEMETRY_UDP_PORT   = 5000
# Without Ethernet, telemetry leaves on a UART: Pmod JD pin 1 (FPGA pin D4), 3 Mbaud 8N1, to a
# USB-serial adaptor's RX (and ground to pin 5).
TELEMETRY_UART_BAUD  = 3_000_000
_telemetry_uart_io   = [("telemetry_uart", 0, Subsignal("tx", Pins("pmodd:0")), IOStandard("LVCMOS33"))]
TELEMETRY_FRAMES_PER_PACKET = 8
# 100 Mbit/s Ethernet: per packet 8 preamble + 14 header + 20 IP + 8 UDP + 4 FCS + 12 gap bytes.
ETH_OVERHEAD_BYTES   = 8 + 14 + 20 + 8 + 4 + 12


def udp_payload_rate(payload_bytes, line_bits_per_s=100e6):
    """Payload bytes per second of UDP packets of `payload_bytes` on the line."""
    return line_bits_per_s / 8 * payload_bytes / (payload_bytes + ETH_OVERHEAD_BYTES)


class NandLabArtySoC(NandLabSoC):
    def __init__(self, variant="a7-35", sys_clk_freq=100e6, eth_ip="192.168.1.50",
        with_etherbone=True, toolchain="vivado", telemetry_ip="192.168.1.100", **kwargs):
        self.with_ethernet = with_etherbone
        self.telemetry_ip  = telemetry_ip
        platform = digilent_arty.Platform(variant=variant, toolchain=toolchain)
        self.crg = _CRG(platform, sys_clk_freq, with_dram=True)
        NandLabSoC.__init__(self, platform, sys_clk_freq, f"arty-{variant}",
            integrated_rom_size  = 0x8000,   # BIOS ~30 KiB; block RAM goes to the emulated dies.
            integrated_sram_size = 0x2000,
            **kwargs)

        # DDR3 main RAM.
        self.ddrphy = s7ddrphy.A7DDRPHY(platform.request("ddram"),
            memtype      = "DDR3",
            nphases      = 4,
            sys_clk_freq = sys_clk_freq)
        self.add_sdram("sdram", phy=self.ddrphy, module=MT41K128M16(sys_clk_freq, "1:4"),
            l2_cache_size=8192)

        # Host bridge: Etherbone on the 100 Mbit Ethernet port (the console UART stays free).
        if with_etherbone:
            self.ethphy = LiteEthPHYMII(
                clock_pads = platform.request("eth_clocks"),
                pads       = platform.request("eth"))
            self.add_etherbone(phy=self.ethphy, ip_address=eth_ip)
            self.attach_telemetry_link()       # Dies in block RAM exist already; DRAM ones come later.

        self.leds = LedChaser(pads=platform.request_all("user_led"), sys_clk_freq=sys_clk_freq)


    def telemetry_link_bytes_per_s(self, frame_bytes):
        if not self.with_ethernet:
            return TELEMETRY_UART_BAUD / 10                    # 8N1: ten bits a byte
        return udp_payload_rate(TELEMETRY_FRAMES_PER_PACKET * frame_bytes)

    def attach_telemetry_link(self):
        """Telemetry frames to UDP port 5000 of the telemetry host (CSRs telemetry_udp_*), eight frames
        a packet, once both the telemetry block and the Ethernet core exist; without Ethernet, to the
        UART on Pmod JD."""
        if not hasattr(self, "telemetry") or hasattr(self, "telemetry_udp") or hasattr(self, "telemetry_uart"):
            return
        if not self.with_ethernet:
            self.platform.add_extension(_telemetry_uart_io)
            self.add_telemetry_uart(self.platform.request("telemetry_uart"), TELEMETRY_UART_BAUD)
            return
        if not hasattr(self, "ethcore_etherbone"):
            return                              # Called again once add_etherbone has run.
        self.add_telemetry_udp(self.telemetry_ip, TELEMETRY_UDP_PORT, TELEMETRY_FRAMES_PER_PACKET)


def add_arguments(parser):
    targets.add_nand_arguments(parser, NAND_DEFAULTS, board=NAME)
    parser.add_argument("--variant", default="a7-35", choices=VARIANTS, help="Board variant.")
    parser.add_argument("--sys-clk-freq", default=100e6, type=float, help="System clock (Hz).")
    parser.add_argument("--eth-ip", default="192.168.1.50", help="Etherbone IP address of the board.")
    parser.add_argument("--no-etherbone", action="store_true",
        help="Leave out the Ethernet host bridge (and with it the telemetry UDP stream).")
    parser.add_argument("--telemetry-ip", default="192.168.1.100",
        help="Host the telemetry UDP stream goes to, port 5000 (default 192.168.1.100; CSR at run time).")
    parser.add_argument("--nand-socket", action="store_true",
        help="Add the external ONFI NAND socket (pin PHY; bit-bang master and channel controller behind a mux) on Pmod JB/JC/JA (constraints/nand_socket.md).")


NAND_DEFAULTS = {"dies": 2, "blocks": 4, "pages": 4}   # Emulated dies that fit the block RAM.
RAMB36 = {"a7-35": 50, "a7-100": 135}

# RAMB36 of the SoC without dies, estimated from the memories of its generated Verilog (yosys's synthesis
# of the whole SoC did not finish in the time given): the 32 KiB ROM 8, the L2 cache's 16 byte lanes of
# 512 x 8 as RAMB18 8, the 8 KiB SRAM 2, the CPU's caches and their tags about 3, the L2 tags and a FIFO 1.
SOC_BRAM = 22


def block_ram(args):
    """The block RAM the dies' page registers may take (targets.check_arguments): the variant's RAMB36
    (1024 x 36 bits each), of which the SoC without dies takes about SOC_BRAM (estimated, above)."""
    return {"device": f"XC7A{args.variant[3:].upper()}T", "unit": "RAMB36", "words36": 1024, "rom": 0,
            "tiles": RAMB36[args.variant], "soc": SOC_BRAM}


def make_soc(args):
    soc = NandLabArtySoC(variant=args.variant, sys_clk_freq=int(args.sys_clk_freq),
        eth_ip=args.eth_ip, with_etherbone=not args.no_etherbone, telemetry_ip=args.telemetry_ip,
        **targets.nand_kwargs(args))
    if args.nand_socket:
        from nandlab.gateware.onfi.pinphy import add_nand_socket
        from nandlab.soc.targets.nand_socket import arty_nand_socket_io, arty_nand_socket_xdc
        add_nand_socket(soc, arty_nand_socket_io())
        for line in arty_nand_socket_xdc():
            soc.platform.add_platform_command(line)
    return soc


def write_extra_files(soc, gateware):
    """Beside LiteX's project: the timing report script (run after Vivado's build, by `build` when
    Vivado is on PATH, or by hand)."""
    from nandlab.soc.targets.nand_socket import TIMING_REPORT_SCRIPT, vivado_timing_report_tcl
    path = gateware / TIMING_REPORT_SCRIPT
    path.write_text(vivado_timing_report_tcl(soc.get_build_name()))
    return path


def compiler():
    """Name of the tool that turns the generated project into a bitstream."""
    return "vivado"


def install_hint():
    return "install Xilinx Vivado and put it on PATH (only needed for Arty bitstreams)"


def programmer(args):
    """(programmer, tool it runs, how to install the tool)."""
    config = Path(__file__).with_name("openocd_arty.cfg")
    return OpenOCD(str(config)), "openocd", "apt-get install openocd"
