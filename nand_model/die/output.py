"""Output path of the die: status, ID, parameter page, features and page data onto DQ (and DQS)."""

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.common import id_bytes
from nandlab.nand_model.die.common import SRC_NONE, SRC_STATUS, SRC_ID, SRC_PARAM, SRC_FEATURE, SRC_PAGE, words


class NandLabDieOutput(LiteXModule):
    """Gives the bytes of the selected source (`decoder.out_src`) one per data-out request of the
    bus (`edges.dout_req`), two a cycle in NV-DDR with DQS toggling per byte.

    A prefetcher keeps up to 8 bytes of the source ready: a 32-bit word fetched per cycle, up to 2
    bytes leave per cycle. Page data comes from the bus-facing page register (`page_data`, a cycle
    after `pref_fetch`/`pref_word`); status bytes are the die's status at the request."""
    def __init__(self, config, die, edges, decoder):
        pw = words(config.page_bytes)
        # Inputs: the page register's side of a page fetch.
        self.page_data  = Signal(32)          # The word of `pref_word`, a cycle after `pref_fetch`.
        self.port_busy  = Signal()            # A data-in word takes the bus-facing register's port.
        # Page fetch requests to the page registers.
        self.pref_fetch = Signal()
        self.pref_word  = Signal(max=max(pw, 2))
        # Bytes given to the bus this cycle (phase 0, phase 1).
        self.give       = [Signal(name=f"give{p}") for p in range(2)]

        # # #

        self.buf = [Signal(8, name=f"obuf{i}") for i in range(8)]
        self.count = Signal(4)
        self.pop = Signal(2)
        self._add_prefetcher(config, die, decoder, pw)
        self._add_bus_outputs(die, edges, decoder)

    def _sources(self, config, die, decoder, in_word, src_len, src_word):
        """Length and word `in_word` of each source; the parameter page is a ROM."""
        param_bytes = list(config.part.param_page(copies=3))
        param_rom = Memory(32, words(len(param_bytes)), init=[
            int.from_bytes(bytes(param_bytes[i:i + 4]), "little") for i in range(0, len(param_bytes), 4)])
        param_rd = param_rom.get_port(async_read=False)
        self.specials += param_rom, param_rd
        id_tables = [id_bytes(config, onfi.READ_ID_JEDEC), id_bytes(config, onfi.READ_ID_ONFI)]
        id_words = [[int.from_bytes(bytes(t).ljust(8, b"\0")[4 * w:4 * w + 4], "little") for w in range(2)]
                    for t in id_tables]
        id_onfi = Signal()
        self.comb += id_onfi.eq(decoder.addr0 == onfi.READ_ID_ONFI)
        self.comb += Case(decoder.out_src, {
            SRC_PAGE:    src_len.eq(config.page_bytes),
            SRC_PARAM:   src_len.eq(len(param_bytes)),
            SRC_ID:      src_len.eq(Mux(id_onfi, len(id_tables[1]), len(id_tables[0]))),
            SRC_FEATURE: src_len.eq(4),
            "default":   src_len.eq(1),
        })
        self.comb += Case(decoder.out_src, {
            SRC_PAGE:    src_word.eq(self.page_data),
            # Bring-up tests: a copy of the parameter page read with a data byte flipped (bad CRC).
            SRC_PARAM:   src_word.eq(param_rd.dat_r ^ Mux(
                             (die.param_corrupt >> in_word[6:8])[0] & (in_word[:6] == 2), 0x1, 0)),
            SRC_ID:      src_word.eq(Mux(in_word[0],
                             Mux(id_onfi, id_words[1][1], id_words[0][1]),
                             Mux(id_onfi, id_words[1][0], id_words[0][0]))),
            SRC_FEATURE: src_word.eq(Cat(*decoder.feat_p)),
            "default":   src_word.eq(0),
        })
        return param_rd

    def _add_prefetcher(self, config, die, decoder, pw):
        pb = config.page_bytes
        part = config.part
        small_pb = (part.small_page_size + part.small_spare_size) if part.is_mpnfm else pb
        buf, count, pop = self.buf, self.count, self.pop
        buf_ext  = Array(buf + [Signal(8, name="obuf_pad0"), Signal(8, name="obuf_pad1")])
        ptr      = Signal(16)
        inflight = Signal()
        in_k     = Signal(3)
        in_off   = Signal(2)
        in_word  = Signal(14)
        src_len  = Signal(16)
        src_word = Signal(32)
        param_rd = self._sources(config, die, decoder, in_word, src_len, src_word)
        out_src, restart = decoder.out_src, decoder.restart
        wrap = Signal()           # Sources other than the page start over after their last byte.
        self.comb += wrap.eq(out_src != SRC_PAGE)
        fetch   = Signal()
        fetch_k = Signal(3)
        left    = Signal(16)
        src_ok  = Signal()
        land    = Signal()
        new_count = Signal(4)
        self.comb += [
            self.pref_word.eq(Mux(ptr[2:] < pw, ptr[2:], 0)),
            param_rd.adr.eq(ptr[2:]),
            left.eq(src_len - ptr),
            fetch_k.eq(Mux(wrap & (left < 4 - ptr[:2]), left, 4 - ptr[:2])),
            src_ok.eq((out_src != SRC_NONE) & (out_src != SRC_STATUS) & ~die.busy & ~restart),
            land.eq(inflight & ~restart),
            new_count.eq(count - pop),
            # A data-in word being written to the bus-facing register takes its read port first.
            fetch.eq(src_ok & (new_count + Mux(land, in_k, 0) <= 4)
                     & ~((out_src == SRC_PAGE) & self.port_busy)),
            self.pref_fetch.eq(fetch & (out_src == SRC_PAGE)),
        ]
        self.sync += [
            If(restart,
                count.eq(0), inflight.eq(0), ptr.eq(decoder.restart_ptr),
            ).Else(
                inflight.eq(fetch),
                If(fetch,
                    in_k.eq(fetch_k), in_off.eq(ptr[:2]), in_word.eq(ptr[2:]),
                    If(wrap & (fetch_k == left), ptr.eq(0)).Else(ptr.eq(ptr + fetch_k)),
                ),
                count.eq(new_count + Mux(land, in_k, 0)),
            ),
        ]
        # The fetched bytes land behind those still waiting; MPNFM small pages read 00h past their end.
        for i in range(8):
            idx = Signal(4, name=f"land_idx{i}")
            byte = Signal(8, name=f"land_byte{i}")
            past_end = Signal(name=f"past_end{i}")
            self.comb += [
                idx.eq(i - new_count + in_off),
                byte.eq(Array(src_word[8 * j:8 * j + 8] for j in range(4))[idx[:2]]),
                past_end.eq((out_src == SRC_PAGE) & ((in_word << 2) + idx[:2] >= Mux(decoder.out_small, small_pb, pb))),
            ]
            self.sync += If(~restart,
                If(land & (i >= new_count) & (i < new_count + in_k),
                    buf[i].eq(Mux(past_end, 0, byte)),
                ).Else(
                    buf[i].eq(buf_ext[i + pop]),
                ),
            )

    def _add_bus_outputs(self, die, edges, decoder):
        bus, give, buf, dout_req, nvddr = die.bus, self.give, self.buf, edges.dout_req, edges.nvddr
        first_byte, second_byte = Signal(8), Signal(8)
        dout      = Signal(8)    # Async: the byte of the last RE# falling edge stays on DQ.
        dqs_level = Signal()
        phase_byte = [Signal(8, name=f"phase_byte{p}") for p in range(2)]
        phase_dqs  = [Signal(name=f"phase_dqs{p}") for p in range(2)]
        is_status = Signal()
        self.comb += [
            is_status.eq(decoder.out_src == SRC_STATUS),
            If(is_status,
                give[0].eq(dout_req[0]), give[1].eq(dout_req[1]), self.pop.eq(0),
            ).Elif(decoder.out_src != SRC_NONE,
                give[0].eq(dout_req[0] & (self.count >= 1)),
                give[1].eq(dout_req[1] & (self.count >= Mux(give[0], 2, 1))),
                self.pop.eq(give[0] + give[1]),
            ),
            first_byte.eq(Mux(is_status, die.status, buf[0])),
            second_byte.eq(Mux(is_status, die.status, Mux(give[0], buf[1], buf[0]))),
            If(nvddr,
                phase_byte[0].eq(Mux(give[0], first_byte, 0)),
                phase_byte[1].eq(Mux(give[1], second_byte, 0)),
                phase_dqs[0].eq(dqs_level ^ give[0]),
                phase_dqs[1].eq(dqs_level ^ give[0] ^ give[1]),
            ).Else(
                phase_byte[0].eq(Mux(give[0], first_byte, dout)),
                phase_byte[1].eq(Mux(give[1], second_byte, Mux(give[0], first_byte, dout))),
            ),
            bus.dq_i.eq(Mux(edges.selected, Cat(phase_byte[0], phase_byte[1]), 0)),
            bus.dqs_i.eq(Mux(edges.selected & nvddr, Cat(phase_dqs[0], phase_dqs[1]), 0)),
        ]
        self.sync += [
            If(give[1], dout.eq(second_byte)).Elif(give[0], dout.eq(first_byte)),
            dqs_level.eq(Mux(nvddr, phase_dqs[1], 0)),
        ]
