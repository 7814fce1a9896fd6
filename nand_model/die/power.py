"""Current-sequencer hook of the die: which waveform an array operation plays, and the die's current."""

from migen import *

from litex.gen import LiteXModule

from nandlab.nand_model import waveforms
from nandlab.nand_model.common import ARCH_SDW
from nandlab.nand_model.current import PhaseTables, I_FRAC_BITS, OP_READ_ARRAY, OP_PROGRAM_LSB, OP_PROGRAM_MSB, \
    OP_ERASE_ARRAY
from nandlab.nand_model.die.common import OP_READ, OP_PROGRAM, OP_ERASE


def variant_tables(config):
    """Array-time variants of the sequencer after the part's own tables (variant 0): SDW-NFM
    (shorter tR/tPROG) when built, the MPNFM small-page array (shorter tPROG/tBERS) on MPNFM
    parts, and both together when both apply; NandLabDieCurrentHook numbers them in this order."""
    part = config.part
    sdw_pct   = {"read": config.sdw_t_r_percent, "program": config.sdw_t_prog_percent}
    small_pct = {"program": part.small_time_percent, "erase": part.small_time_percent}
    both_pct  = {k: sdw_pct.get(k, 100) * small_pct.get(k, 100) // 100 for k in ("read", "program", "erase")}
    pcts = ([sdw_pct] if config.with_sdw else []) + ([small_pct] if part.is_mpnfm else []) \
        + ([both_pct] if config.with_sdw and part.is_mpnfm else [])
    return [PhaseTables(part, config.sys_clk_freq, config.time_scale, percent=p) for p in pcts]


class NandLabDieCurrentHook(LiteXModule):
    """Starts the die's sequencer (nand_model/current.py) with the decoder's array operations: the
    operation (MSB program on odd MLC pages), its time variant and the run-time time scale; the
    die's current is the sequencer's plus a bus unit per byte moved this cycle."""
    def __init__(self, config, die, seq, decoder, edges, output):
        part = config.part

        # # #

        # SDW-NFM, and/or an MPNFM small-page operation (single-plane on plane 1; a multi-plane
        # operation takes the large page's times).
        sdw_on   = Signal()
        small_op = Signal()
        variant  = Signal(2)
        self.comb += [
            sdw_on.eq((decoder.arch == ARCH_SDW) if config.with_sdw else 0),
            small_op.eq(decoder.mpnfm_on & (decoder.n_pages == 1) & (decoder.plane == 1) if part.is_mpnfm else 0),
        ]
        if config.with_sdw and part.is_mpnfm:
            self.comb += variant.eq(Mux(sdw_on & small_op, 3, Mux(small_op, 2, Mux(sdw_on, 1, 0))))
        elif config.with_sdw:
            self.comb += variant.eq(sdw_on)
        elif part.is_mpnfm:
            self.comb += variant.eq(small_op)

        msb = Signal()
        self.comb += msb.eq((part.bits_per_cell > 1) & decoder.row_page[0] if config.page_bits else 0)
        self.comb += [
            seq.time_scale_shift.eq(die.time_scale_shift),
            seq.start.eq(decoder.start),
            seq.variant.eq(variant),
            Case(decoder.start_op, {
                OP_READ:    seq.op.eq(OP_READ_ARRAY),
                OP_PROGRAM: seq.op.eq(Mux(msb, OP_PROGRAM_MSB, OP_PROGRAM_LSB)),
                OP_ERASE:   seq.op.eq(OP_ERASE_ARRAY),
            }),
        ]

        bus_unit = int(round(waveforms.BUS_CURRENT * (1 << I_FRAC_BITS)))
        bytes_moved = Signal(2)
        self.comb += [
            bytes_moved.eq(output.give[0] + output.give[1] + edges.din_valid[0] + edges.din_valid[1]),
            die.current.eq(seq.current + bytes_moved * bus_unit),
        ]
