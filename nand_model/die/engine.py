"""Array engine of the die: moves pages between the array and the page registers, and flips bits on reads."""

from migen import *

from litex.gen import LiteXModule

from nandlab.nand_model.common import flip_position, FLIP_STRIDE, LFSR_SEED, LFSR_TAPS
from nandlab.nand_model.die.common import OP_READ, OP_PROGRAM, OP_ERASE, words, phys, row_page, row_block
from nandlab.nand_model.die.storage import NandLabDieBramStorage, NandLabDieWishboneStorage, NandLabDieSimStorage


class NandLabDieEngine(LiteXModule):
    """Runs the operation the decoder starts over its queued pages, one word at a time: READ copies
    array words into the page register (random bit flips ride on the copy), PROGRAM ANDs the
    register into the array, ERASE writes FFh over the block. Injected flips (`die.flip_*`) then
    go into a single-plane READ's register, a read and a write per flip.

    The array is behind a storage port (`storage`: block RAM, a Wishbone master on `storage_bus`
    from `storage_base`, or, for "sim", the simulator's storage pads given as `storage_bus`)."""
    def __init__(self, config, die, decoder, storage="bram", storage_bus=None, storage_base=0, max_flips=15):
        part      = config.part
        pw        = words(config.page_bytes)
        npages    = part.pages_per_block * part.blocks_per_lun
        nphys     = config.registers * (2 if config.with_cache else 1)
        phys_bits = max((nphys - 1).bit_length(), 1)
        # Inputs.
        self.reg_data = Signal(32)            # Register word of `word` (of `plane_q`), a cycle after.
        self.hold     = Signal()              # A data-in word is being written (program confirm): wait.
        # The engine's side of the page registers.
        self.active   = Signal()
        self.op       = Signal(2)
        self.plane    = Signal(phys_bits)     # Physical register of the page being moved.
        self.plane_q  = Signal(phys_bits)     # ... a cycle ago: the register `reg_data` comes from.
        self.base     = Signal(max=max(npages * pw, 2))
        self.word     = Signal(max=pw + 1)
        self.pass_end = Signal()              # Pulse: a READ or PROGRAM pass over a register ends.
        self.flipping  = Signal()
        self.flip_word = Signal(max=max(pw, 2))
        # Page register write request: an array word copied (READ) or a word with a flipped bit.
        self.wr_en    = Signal()
        self.wr_word  = Signal(max=max(pw, 2))
        self.wr_data  = Signal(32)
        self.wr_plane = Signal(phys_bits)

        # # #

        if config.sim_fast_erase and storage != "sim":
            raise ValueError(f"sim_fast_erase is for storage 'sim' (the simulator's store), not '{storage}'")
        if storage == "bram":
            self.storage = port = NandLabDieBramStorage(config, self)
        elif storage == "sim":
            self.storage = port = NandLabDieSimStorage(config, self, storage_bus)
        else:
            self.storage = port = NandLabDieWishboneStorage(config, self, storage_bus, storage_base)
        self.rw, self.rw_word, self.tail = port.rw, port.rw_word, port.tail
        self.sync += self.plane_q.eq(self.plane)

        # Random bit flips on array reads: a 32-bit Galois LFSR steps once per word read into a
        # page register; the word gets bit lfsr[20:16] flipped when lfsr[15:0] < flip_rate.
        copy = Signal()
        lfsr = Signal(32, reset=LFSR_SEED)
        rand_mask = Signal(32)
        self.comb += rand_mask.eq(Mux(lfsr[:16] < die.flip_rate, 1 << lfsr[16:21], 0))
        self.sync += If(copy, lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ LFSR_TAPS, lfsr >> 1)))
        flip_i, flip_pos, flip_we = Signal(max=max_flips + 1), Signal(max=max(config.page_bytes, 2)), Signal()
        self.comb += [
            copy.eq(port.rw & (self.op == OP_READ)),
            If(copy,
                self.wr_en.eq(1), self.wr_word.eq(port.rw_word), self.wr_data.eq(port.rd_data ^ rand_mask),
                self.wr_plane.eq(port.rw_plane),
            ).Elif(flip_we,
                self.wr_en.eq(1), self.wr_word.eq(self.flip_word), self.wr_plane.eq(self.plane),
                self.wr_data.eq(self.reg_data ^ (1 << Cat(flip_i[:3], flip_pos[:2]))),
            ),
            self.flip_word.eq(flip_pos[2:]),
        ]
        self._add_sequencing(config, decoder, port.step, pw)
        self._add_flips(config, die, decoder, port.fin, flip_i, flip_pos, flip_we)

    def _add_sequencing(self, config, decoder, step, pw):
        """Word by word over a page; an erase over every page of the block (with `sim_fast_erase`, one
        step per block: the store frees it); then the next queued page."""
        ppb, erase = config.part.pages_per_block, self.op == OP_ERASE
        page = Signal(max=ppb + 1)
        idx  = Signal(max=config.registers + 1)
        last_word = Signal()
        self.comb += [
            last_word.eq(self.word == pw - 1),
            self.pass_end.eq(self.active & step & last_word & (self.op != OP_ERASE)),
        ]

        def entry_base(r, whole_block):
            return (row_block(config, r) * ppb + Mux(whole_block, 0, row_page(config, r))) * pw
        q_row, q_reg, arr_alt = decoder.q_row, decoder.q_reg, decoder.arr_alt
        self.sync += If(decoder.start,
            self.active.eq(1),
            self.op.eq(decoder.start_op),
            idx.eq(0),
            self.plane.eq(phys(config, q_reg[0], arr_alt)),
            self.base.eq(entry_base(q_row[0], decoder.start_op == OP_ERASE)),
            self.word.eq(0),
            page.eq(0),
        ).Elif(self.active & step,
            If(last_word | (erase if config.sim_fast_erase else 0),
                self.word.eq(0),
                If(erase & (page != ppb - 1) & (0 if config.sim_fast_erase else 1),
                    page.eq(page + 1),
                    self.base.eq(self.base + pw),
                ).Elif(idx + 1 < decoder.n_pages,
                    idx.eq(idx + 1),
                    page.eq(0),
                    self.plane.eq(phys(config, q_reg[idx + 1], arr_alt)),
                    self.base.eq(entry_base(q_row[idx + 1], erase)),
                ).Else(
                    self.active.eq(0),
                ),
            ).Else(
                self.word.eq(self.word + 1),
            ),
        )

    def _add_flips(self, config, die, decoder, fin, flip_i, flip_pos, flip_we):
        """Injected bit flips, once a single-plane READ's copy has landed: read, then write, per flip
        (at the positions of `flip_position`)."""
        pb = config.page_bytes
        flip_rd = Signal()
        self.sync += [
            flip_we.eq(0),
            If(fin & (self.op == OP_READ) & (decoder.n_pages == 1) & (decoder.row == die.flip_row)
                    & (die.flip_count != 0),
                self.flipping.eq(1), flip_i.eq(0), flip_pos.eq(flip_position(0, pb)[0]), flip_rd.eq(0),
            ).Elif(self.flipping & ~flip_we,
                flip_rd.eq(~flip_rd),
                If(flip_rd, flip_we.eq(1)),
            ),
            If(flip_we,
                flip_rd.eq(0),
                flip_i.eq(flip_i + 1),
                If(flip_pos + FLIP_STRIDE >= pb, flip_pos.eq(flip_pos + FLIP_STRIDE - pb)
                ).Else(flip_pos.eq(flip_pos + FLIP_STRIDE)),
                If(flip_i == die.flip_count - 1, self.flipping.eq(0)),
            ),
        ]
