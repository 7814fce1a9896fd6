"""What the die emulator (gateware) and its reference model share: the die configuration, failure
reasons, plane architectures, ID bytes, and the fault-injection patterns.

Both sides import these from here so that the gateware does not depend on the tests' scoreboard
(`reference.py`), and the scoreboard cannot drift from the constants the gateware is built with.
"""

from dataclasses import dataclass

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.parts import NandPart

ARCH_CNFM, ARCH_DW, ARCH_SDW = 0, 1, 2
ARCH_NAMES = {ARCH_CNFM: "CNFM", ARCH_DW: "DW-NFM", ARCH_SDW: "SDW-NFM"}
SUBPLANES = 4

# Reasons an operation fails (index = reason counter).
REASON_RANGE, REASON_WP, REASON_BAD_BLOCK, REASON_INJECTED, REASON_PLANE_ADDR, \
    REASON_PAGE_TYPE, REASON_PLANE_REPEAT, REASON_SEQUENCE = range(8)
REASON_NAMES = ["address out of range", "write protected", "factory bad block", "injected fault",
                "multi-plane page address differs (CNFM)", "multi-plane page types differ (DW-NFM)",
                "plane or subplane used twice", "command sequence"]

# Busy time of an operation the die refuses (FAIL set, nothing started): longer than R/B# can take to
# fall (tWB max, 200 ns in SDR mode 0), so that R/B# does fall as on a real chip.
T_FAIL_NS = 300

JEDEC_MANUFACTURER = 0x9A   # Unassigned in JEP106 bank 1: nandlab's emulated dies.
LFSR_SEED = 0xACE1ACE1      # Random bit flips: 32-bit Galois LFSR (x^32 + x^22 + x^2 + x + 1).
LFSR_TAPS = 0x80200003
FLIP_STRIDE = 97            # Bytes between injected bit flips (the gateware steps its position by it).


@dataclass
class DieConfig:
    """What a die is built from: the part (full or scaled geometry) and emulation choices."""
    part          : NandPart
    sys_clk_freq  : float = 100e6
    time_scale    : int   = 1                  # Array times are divided by this (simulation only).
    bad_blocks    : tuple = ()
    device_id     : int   = 0x01
    t_feat_ns     : int   = onfi.T_FEAT_NS
    t_rst_ns      : int   = 5000
    t_dbsy_ns     : int   = 500                # Multi-plane / cache register busy.
    with_sdw      : bool  = False              # Subplane page registers (SDW-NFM) are built.
    with_cache    : bool  = True               # READ CACHE / PROGRAM CACHE (a register pair each).
    sdw_t_r_percent    : int = 75              # SDW-NFM tR and tPROG as % of CNFM: the paper
    sdw_t_prog_percent : int = 85              # gives 25-30 % and 15-20 % reductions.
    # Storage "sim" only: an erase frees the block in the simulator's store in one step, so the die is
    # busy for tBERS alone (a word a cycle over the block takes pages x page words cycles: 11 ms for
    # an 8 KiB x 512-page block, three times the DW/SDW part's tBERS). Off: block RAM's timing exactly.
    sim_fast_erase     : bool = False
    # R/B# falls this long (ns) after the WE# (CLK) edge that makes the die busy; None: tWB max of the
    # mode the die is in (onfi.mode_timings), the latest ONFI allows, which a controller must wait out.
    rb_fall_ns         : int | None = None
    # The die's current against the waveform the token tables are compiled from (issue 18 b: process
    # variation, aging): (level %, stretch %): every phase at (100 + level) % of its current, each
    # segment (100 + stretch) % longer (gateware/power/deviation.py). (0, 0): the nominal die.
    current_deviation  : tuple = (0, 0)

    @property
    def registers(self):
        """Page registers: one per plane, or one per subplane when SDW-NFM is built."""
        return self.part.planes * (SUBPLANES if self.with_sdw else 1)

    def cycles(self, t_us=None, t_ns=None, scaled=True):
        ns = t_ns if t_ns is not None else t_us * 1000
        c = NandPart.cycles(ns, self.sys_clk_freq)
        return max(1, c // self.time_scale) if scaled else c

    @property
    def page_bytes(self):
        return self.part.page_size + self.part.spare_size

    @property
    def page_bits(self):
        return (self.part.pages_per_block - 1).bit_length()

    @property
    def block_bits(self):
        return (self.part.blocks_per_lun - 1).bit_length()

    @property
    def plane_bits(self):
        return (self.part.planes - 1).bit_length()

    def split_row(self, row):
        """(block, page) of a row address (LUN bits above them must be zero for this die)."""
        return (row >> self.page_bits) & ((1 << self.block_bits) - 1), row & ((1 << self.page_bits) - 1)

    def row_valid(self, row):
        block, page = self.split_row(row)
        return (row >> (self.page_bits + self.block_bits)) == 0 and block < self.part.blocks_per_lun \
            and page < self.part.pages_per_block

    def plane_of(self, block):
        return block & (self.part.planes - 1)

    def subplane_of(self, block):
        """SDW-NFM: the blocks of a plane are split into 4 subplanes by their high block bits."""
        per_plane = self.part.blocks_per_lun // self.part.planes
        return min(SUBPLANES - 1, (block >> self.plane_bits) * SUBPLANES // max(per_plane, 1))

    def register_of(self, row, arch):
        block, _ = self.split_row(row)
        plane = self.plane_of(block)
        if arch == ARCH_SDW and self.with_sdw:
            return plane * SUBPLANES + self.subplane_of(block)
        return plane

    def page_type(self, page):
        """LSB (0) / MSB (1) page of an MLC word line (even/odd pages); SLC pages are all type 0."""
        return page & 1 if self.part.bits_per_cell > 1 else 0


def id_bytes(config, addr):
    """READ ID answer of a die for address `addr` (00h: JEDEC bytes, 20h: "ONFI")."""
    if addr == onfi.READ_ID_ONFI:
        return list(b"ONFI")
    if addr == onfi.READ_ID_JEDEC:
        p = config.part
        b3 = (p.bits_per_cell - 1) << 2
        b4 = ((p.page_size >> 11).bit_length() & 3) | (((p.page_size * p.pages_per_block) >> 17).bit_length() & 3) << 4
        b5 = ((p.planes - 1).bit_length() & 3) << 2
        return [JEDEC_MANUFACTURER, config.device_id, b3, b4, b5]
    return [0x00]


def flip_position(i, page_bytes):
    """(byte, bit) of the i-th injected bit flip of a page: spread over the page, distinct bytes."""
    return (i * FLIP_STRIDE + 13) % page_bytes, i % 8
