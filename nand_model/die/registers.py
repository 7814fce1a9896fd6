"""Page registers of the die: block RAM per register with generation tags, their ports, and data in."""

from migen import *

from litex.gen import LiteXModule

from nandlab.nand_model.die.common import OP_PROGRAM, GEN_BITS, words, phys


class NandLabDiePageRegisters(LiteXModule):
    """The page registers (1, 2 or 8 per plane: a pair per register with cache operations, subplane
    registers when SDW-NFM is built), each a memory of 32 data bits and a 4-bit generation tag per
    word. A word whose tag is not its register's generation reads FFFFFFFFh, so the clear of
    PROGRAM (80h) is one increment; a scrubber per register re-stamps stale words (FFFFFFFFh,
    current generation) in free port cycles so that a tag cannot come round again (see
    `die.reg_overruns`).

    Read ports serve, in this order, the engine and its bit flips (engine's register), the read
    half of a data-in word write (bus-facing register), the output prefetcher, then the scrubber.
    Data-in bytes gather in a staging word written once per word."""
    def __init__(self, config, die, edges, decoder, engine, output):
        # Read data.
        self.eng_rd_data  = Signal(32)        # Word `engine.word` of register `engine.plane_q`, a cycle after.
        self.pref_rd_data = Signal(32)        # Word `output.pref_word` of the bus-facing register, a cycle after.
        # Data in.
        self.fw_en     = Signal()             # A data-in word is written now (the engine waits).
        self.port_busy = Signal()             # A data-in word reads the register data goes out of.

        # # #

        pw        = words(config.page_bytes)
        nphys     = config.registers * (2 if config.with_cache else 1)
        phys_bits = max((nphys - 1).bit_length(), 1)
        reg_bits  = max((config.registers - 1).bit_length(), 1)
        regs   = [Memory(32 + GEN_BITS, pw, name=f"page_reg{i}") for i in range(nphys)]
        self.reg_rd = [m.get_port(async_read=False) for m in regs]
        self.reg_wr = [m.get_port(write_capable=True) for m in regs]
        self.specials += regs + self.reg_rd + self.reg_wr
        self.reg_gen = [Signal(GEN_BITS, reset=1, name=f"reg_gen{i}") for i in range(nphys)]
        self.in_reg  = Signal(reg_bits)       # Register taking data in (after 80h).
        self.in_small = Signal()              # ... a small MPNFM page.
        self.in_phys = Signal(phys_bits)
        self.out_phys = Signal(phys_bits)
        # The staged data-in word leaving for its register (read now, written a cycle later).
        self.fl_en, self.fl_word = Signal(), Signal(max=max(pw, 2))
        self.port_free = [Signal(name=f"reg_port_free{i}") for i in range(nphys)]
        # The register write port: the engine (array copy, bit flips) or a data-in word.
        self.wr_en    = Signal()
        self.wr_word  = Signal(max=max(pw, 2))
        self.wr_data  = Signal(32)
        self.wr_plane = Signal(phys_bits)

        self._add_read_ports(config, decoder, engine, output, nphys, phys_bits)
        self._add_scrubbers(config, die, decoder, engine, nphys, pw)
        self._add_data_in(config, die, edges, decoder, pw, phys_bits)
        self.comb += [
            If(engine.wr_en,
                self.wr_en.eq(1), self.wr_word.eq(engine.wr_word), self.wr_data.eq(engine.wr_data),
                self.wr_plane.eq(engine.wr_plane),
            ).Elif(self.fw_en,
                self.wr_en.eq(1), self.wr_word.eq(self.fw_word), self.wr_plane.eq(self.fw_phys),
                self.wr_data.eq(Cat(*[Mux(self.fw_be[b], self.fw_data[8*b:8*b+8], self.fw_old[8*b:8*b+8])
                                      for b in range(4)])),
            ),
            self.port_busy.eq(self.fl_en & (self.in_phys == self.out_phys)),
        ]

    def _add_read_ports(self, config, decoder, engine, output, nphys, phys_bits):
        out_phys_q = Signal(phys_bits)
        self.masked = []
        self.comb += self.out_phys.eq(phys(config, decoder.out_reg, decoder.io_alt))
        for i in range(nphys):
            m = Signal(32, name=f"reg_masked{i}")
            mine = engine.plane == i
            rd = self.reg_rd[i]
            self.comb += [
                self.port_free[i].eq(0),
                If(engine.active & mine, rd.adr.eq(engine.word)
                ).Elif(engine.flipping & mine, rd.adr.eq(engine.flip_word)
                ).Elif(self.fl_en & (self.in_phys == i), rd.adr.eq(self.fl_word)
                ).Elif(output.pref_fetch & (self.out_phys == i), rd.adr.eq(output.pref_word)
                ).Else(self.port_free[i].eq(1)),
                m.eq(Mux(rd.dat_r[32:] == self.reg_gen[i], rd.dat_r[:32], 0xFFFFFFFF)),
            ]
            self.masked.append(m)
        self.sync += out_phys_q.eq(self.out_phys)
        self.comb += [
            self.eng_rd_data.eq(Array(self.masked)[engine.plane_q]),
            self.pref_rd_data.eq(Array(self.masked)[out_phys_q]),
        ]

    def _add_scrubbers(self, config, die, decoder, engine, nphys, pw):
        """Per register: the scrubber, the generation step of a clear, and the overrun count."""
        overrun = Signal(nphys)
        self.sync += If(overrun != 0, die.reg_overruns.eq(die.reg_overruns + (die.reg_overruns != 0xFFFF)))
        clear_phys = Signal(len(self.in_phys))
        self.comb += clear_phys.eq(phys(config, decoder.reg_sel, decoder.io_alt))
        for i in range(nphys):
            rd, wr, gen = self.reg_rd[i], self.reg_wr[i], self.reg_gen[i]
            stale = rd.dat_r[32:] != gen
            mine = self.wr_en & (self.wr_plane == i)
            # The engine's pass over a register counts as a sweep: a READ writes every word, a
            # PROGRAM re-stamps the stale words it reads (FFh went to the array for them).
            eng_stamp = Signal(name=f"eng_stamp{i}")
            pass_end  = Signal(name=f"pass_end{i}")
            sc_ptr  = Signal(max=max(pw, 2), name=f"scrub_ptr{i}")
            sc_hit  = Signal(name=f"scrub_hit{i}")      # The scrubber read sc_ptr last cycle and
                                                        # nothing wrote this register then.
            sc_we   = Signal(name=f"scrub_we{i}")
            sc_done = Signal(name=f"scrub_done{i}")     # The word is current (or rewritten now).
            n_now, n_prev = Signal(5, name=f"clears_now{i}"), Signal(5, name=f"clears_prev{i}")
            # Two sweep ends after the last clear every word is current: the scrubber rests until
            # the next clear (a resting die changes no register: nandlab.gateware.common.idlegate).
            # `fresh`: the words are stale from reset until the first sweep ends.
            fresh  = Signal(reset=1, name=f"scrub_fresh{i}")
            active = Signal(name=f"scrub_active{i}")
            cleared = decoder.clear_reg & (clear_phys == i)
            self.comb += [
                active.eq(fresh | (n_now != 0) | (n_prev != 0)),
                eng_stamp.eq(engine.rw & (engine.op == OP_PROGRAM) & (engine.plane_q == i) & stale),
                pass_end.eq(engine.pass_end & (engine.plane == i)),
                If(self.port_free[i], rd.adr.eq(sc_ptr)),
                sc_we.eq(sc_hit & ~mine & ~eng_stamp & stale),
                sc_done.eq(sc_hit & (sc_we | (rd.dat_r[32:] == gen))),
                wr.adr.eq(Mux(mine, self.wr_word, Mux(eng_stamp, engine.rw_word, sc_ptr))),
                wr.dat_w.eq(Mux(mine, Cat(self.wr_data, gen), Cat(C(0xFFFFFFFF, 32), gen))),
                wr.we.eq(mine | eng_stamp | sc_we),
                # A stale tag would come round again: 16 clears within two sweeps.
                overrun[i].eq(cleared & (n_now + n_prev >= (1 << GEN_BITS) - 1)),
            ]
            self.sync += [
                sc_hit.eq(self.port_free[i] & ~sc_done & ~mine & active),
                If(sc_done, sc_ptr.eq(Mux(sc_ptr == pw - 1, 0, sc_ptr + 1))),
                If((sc_done & (sc_ptr == pw - 1)) | pass_end,
                    fresh.eq(0),
                    n_prev.eq(n_now), n_now.eq(cleared),
                ).Elif(cleared & (n_now != 31),
                    n_now.eq(n_now + 1),
                ),
                If(cleared, gen.eq(gen + 1)),
            ]

    def _add_data_in(self, config, die, edges, decoder, pw, phys_bits):
        """Bytes gather in a word; the word is written when a byte for another word comes, or on an
        explicit flush (program confirm, column change). Two bytes a cycle touch at most two words."""
        part, pb = config.part, config.page_bytes
        small_pb = (part.small_page_size + part.small_spare_size) if part.is_mpnfm else pb
        stage, stage_be, stage_word = Signal(32), Signal(4), Signal(max=max(pw, 2))
        in_ptr = Signal(16)
        s_data = [Signal(32, name=f"s_data{k}") for k in range(3)]
        s_be   = [Signal(4, name=f"s_be{k}") for k in range(3)]
        s_word = [Signal(max=max(pw, 2), name=f"s_word{k}") for k in range(3)]
        s_ptr  = [Signal(16, name=f"s_ptr{k}") for k in range(3)]
        s_fl   = [Signal(name=f"s_fl{k}") for k in range(2)]
        self.comb += s_data[0].eq(stage), s_be[0].eq(stage_be), s_word[0].eq(stage_word), s_ptr[0].eq(in_ptr)
        for k in range(2):
            # Shift amounts as wide signals: Verilog sizes a product in an index by its operands.
            w, lane = s_ptr[k][2:], Cat(C(0, 3), s_ptr[k][:2])
            byte_in = Signal(name=f"byte_in{k}")
            take    = Signal(name=f"take{k}")
            self.comb += [
                byte_in.eq(edges.din_valid[k] & decoder.in_page & ~die.busy),
                take.eq(byte_in & (s_ptr[k] < Mux(self.in_small, small_pb, pb))),
                s_fl[k].eq(take & (s_be[k] != 0) & (w != s_word[k])),
                If(take & (w != s_word[k]),
                    s_data[k + 1].eq(edges.din_byte[k] << lane),
                    s_be[k + 1].eq(1 << s_ptr[k][:2]),
                    s_word[k + 1].eq(w),
                ).Elif(take,
                    s_data[k + 1].eq((s_data[k] & ~(C(0xFF, 32) << lane)) | (edges.din_byte[k] << lane)),
                    s_be[k + 1].eq(s_be[k] | (1 << s_ptr[k][:2])),
                    s_word[k + 1].eq(w),
                ).Else(
                    s_data[k + 1].eq(s_data[k]), s_be[k + 1].eq(s_be[k]), s_word[k + 1].eq(s_word[k]),
                ),
                s_ptr[k + 1].eq(s_ptr[k] + byte_in),
            ]
        fl_data, fl_be = Signal(32), Signal(4)
        clear_reg, flush_req = decoder.clear_reg, decoder.flush_req
        self.comb += [
            If(s_fl[0], fl_data.eq(s_data[0]), fl_be.eq(s_be[0]), self.fl_word.eq(s_word[0])
            ).Elif(s_fl[1], fl_data.eq(s_data[1]), fl_be.eq(s_be[1]), self.fl_word.eq(s_word[1])
            ).Else(fl_data.eq(stage), fl_be.eq(stage_be), self.fl_word.eq(stage_word)),
            self.fl_en.eq(s_fl[0] | s_fl[1] | (flush_req & (stage_be != 0))),
        ]
        self.sync += [
            If(clear_reg | flush_req,
                stage_be.eq(0),
            ).Else(
                stage.eq(s_data[2]), stage_be.eq(s_be[2]), stage_word.eq(s_word[2]),
            ),
            # The column of 80h's or 85h's address, else where the bytes got to.
            If(decoder.prog_addr_end | decoder.wcol_addr_end,
                in_ptr.eq(decoder.din_col),
            ).Elif(~clear_reg,
                in_ptr.eq(s_ptr[2]),
            ),
            If(clear_reg, self.in_reg.eq(decoder.reg_sel), self.in_small.eq(decoder.mpnfm_on & (decoder.plane == 1))),
        ]
        self.comb += self.in_phys.eq(phys(config, self.in_reg, decoder.io_alt))
        # A data-in word is written in two cycles: its register word is read as it leaves the
        # staging, the bytes not written are taken from it the next cycle (FFh if the word is stale).
        self.fw_data, self.fw_be, self.fw_word = Signal(32), Signal(4), Signal(max=max(pw, 2))
        self.fw_phys, self.fw_old = Signal(phys_bits), Signal(32)
        self.sync += [
            self.fw_en.eq(self.fl_en), self.fw_data.eq(fl_data), self.fw_be.eq(fl_be),
            self.fw_word.eq(self.fl_word), self.fw_phys.eq(self.in_phys),
        ]
        self.comb += self.fw_old.eq(Array(self.masked)[self.fw_phys])
