"""Storage ports of the die's array: block RAM, a region of main RAM behind a Wishbone master, or
(simulation) a litex_sim module outside the Verilated model."""

from migen import *
from migen.genlib.record import DIR_M_TO_S, DIR_S_TO_M

from litex.gen import LiteXModule

from nandlab.nand_model.die.common import OP_READ, OP_PROGRAM, OP_ERASE, words, bad_block_markers


class _NandLabDieStoragePort(LiteXModule):
    """What the engine sees of a storage port, per word of its operation: `step` moves the engine
    on; `rw` says the array word (`rd_data`) and the page register word of `rw_word` (of register
    `rw_plane`) are here now (READ writes the register, PROGRAM re-stamps a stale register word);
    `tail` covers the cycles after the last step; `fin` pulses once all of the words are done.

    The engine (`active`, `op`, `base`, `word`, `hold`, `reg_data`) drives the port."""
    def __init__(self, config, engine):
        pw = words(config.page_bytes)
        self.step     = Signal()
        self.rw       = Signal()
        self.rw_word  = Signal(max=pw + 1)
        self.rw_plane = Signal(len(engine.plane))
        self.rd_data  = Signal(32)
        self.tail     = Signal()
        self.fin      = Signal()


class NandLabDieBramStorage(_NandLabDieStoragePort):
    """Array in block RAM, erased (FFh) with the factory bad-block markers: one word a cycle, read
    the array (and the register) at `word`, write the next cycle."""
    def __init__(self, config, engine):
        _NandLabDieStoragePort.__init__(self, config, engine)

        # # #

        part   = config.part
        pw     = words(config.page_bytes)
        npages = part.pages_per_block * part.blocks_per_lun
        init   = [0xFFFFFFFF] * (npages * pw)
        for w, v in bad_block_markers(config).items():
            init[w] &= v
        array  = Memory(32, npages * pw, init=init)
        arr_rd = array.get_port(async_read=False)
        arr_wr = array.get_port(write_capable=True)
        self.specials += array, arr_rd, arr_wr
        pipe   = Signal()                  # A word read last cycle is written now.
        pipe_a = Signal(max=max(npages * pw, 2))
        pipe_r = Signal(max=pw + 1)
        self.comb += [
            self.step.eq(~engine.hold),
            self.rw.eq(pipe), self.rw_word.eq(pipe_r), self.rd_data.eq(arr_rd.dat_r),
            # The word is written a cycle after it was read: by then a multi-plane read's engine
            # may be on the next plane.
            self.rw_plane.eq(engine.plane_q),
            self.tail.eq(pipe), self.fin.eq(pipe & ~engine.active),
            arr_rd.adr.eq(engine.base + engine.word),
            arr_wr.adr.eq(pipe_a),
            arr_wr.dat_w.eq(Mux(engine.op == OP_ERASE, 0xFFFFFFFF, arr_rd.dat_r & engine.reg_data)),
            arr_wr.we.eq(pipe & (engine.op != OP_READ)),
        ]
        self.sync += [
            # A data-in word still being written (program confirm) holds the engine for a cycle.
            pipe.eq(engine.active & ~engine.hold),
            pipe_a.eq(engine.base + engine.word),
            pipe_r.eq(engine.word),
        ]


class NandLabDieWishboneStorage(_NandLabDieStoragePort):
    """Array in memory behind a Wishbone master (a DRAM region on boards with DRAM).

    One word at a time: read the array word (READ, PROGRAM), then either write it into the page
    register (READ) or write it back ANDed with the register word (PROGRAM); ERASE only writes
    FFFFFFFFh. Any latency and back-pressure of the bus is fine: the die stays busy until the
    last word is through. At reset the die formats its region (every word FFFFFFFFh, the factory
    bad-block markers written) with R/B# low, as a die is busy after power-on.
    """
    def __init__(self, config, engine, bus, storage_base):
        _NandLabDieStoragePort.__init__(self, config, engine)

        # # #

        part    = config.part
        pw      = words(config.page_bytes)
        npages  = part.pages_per_block * part.blocks_per_lun
        base    = storage_base // 4
        markers = bad_block_markers(config)
        fmt_word = Signal(max=max(npages * pw, 2))
        fmt_data = Signal(32)
        data = Signal(32)
        op, adr = engine.op, base + engine.base + engine.word
        self.comb += [
            fmt_data.eq(0xFFFFFFFF),
            Case(fmt_word, {w: fmt_data.eq(v) for w, v in markers.items()}),
            self.rw_word.eq(engine.word),
            self.rw_plane.eq(engine.plane),
            self.rd_data.eq(data),
            bus.sel.eq(0xF),
        ]
        self.fsm = fsm = FSM(reset_state="FORMAT")
        fsm.act("FORMAT",
            self.tail.eq(1),
            bus.cyc.eq(1), bus.stb.eq(1), bus.we.eq(1),
            bus.adr.eq(base + fmt_word), bus.dat_w.eq(fmt_data),
            If(bus.ack,
                NextValue(fmt_word, fmt_word + 1),
                If(fmt_word == npages * pw - 1, NextState("IDLE")),
            ),
        )
        fsm.act("IDLE",
            If(engine.active & ~engine.hold,
                If(op == OP_ERASE, NextState("WRITE")).Else(NextState("READ")),
            ),
        )
        fsm.act("READ",
            self.tail.eq(1),
            bus.cyc.eq(1), bus.stb.eq(1), bus.adr.eq(adr),
            If(bus.ack,
                NextValue(data, bus.dat_r),
                NextState("REGISTER"),
            ),
        )
        # The engine's register port has been reading `word` since the step: its word is here.
        fsm.act("REGISTER",
            self.tail.eq(1), self.rw.eq(1),
            If(op == OP_READ,
                self.step.eq(1), NextState("DONE"),
            ).Else(
                NextValue(data, data & engine.reg_data), NextState("WRITE"),
            ),
        )
        fsm.act("WRITE",
            self.tail.eq(1),
            bus.cyc.eq(1), bus.stb.eq(1), bus.we.eq(1), bus.adr.eq(adr),
            bus.dat_w.eq(Mux(op == OP_ERASE, 0xFFFFFFFF, data)),
            If(bus.ack, self.step.eq(1), NextState("DONE")),
        )
        # One cycle for the step to land (the register port moves to the next word).
        fsm.act("DONE",
            self.tail.eq(1),
            If(~engine.active, self.fin.eq(1)),
            NextState("IDLE"),
        )


def sim_storage_layout(config):
    """Pads of a die's array in the simulator (`storage="sim"`): a word address (page index x page
    words + word, as the block RAM's), a read enable, the write port, and the word read back; with
    `sim_fast_erase`, an erase enable: the block whose first word is at `rd_adr` is erased at once."""
    pw     = words(config.page_bytes)
    npages = config.part.pages_per_block * config.part.blocks_per_lun
    aw     = (max(npages * pw, 2) - 1).bit_length()
    return [
        ("rd_en",   1,  DIR_M_TO_S),
        ("rd_adr",  aw, DIR_M_TO_S),
        ("rd_data", 32, DIR_S_TO_M),
        ("wr_en",   1,  DIR_M_TO_S),
        ("wr_adr",  aw, DIR_M_TO_S),
        ("wr_data", 32, DIR_M_TO_S),
    ] + ([("er_en", 1, DIR_M_TO_S)] if config.sim_fast_erase else [])


class NandLabDieSimStorage(_NandLabDieStoragePort):
    """Array outside the Verilated model, in the `nandstore` litex_sim module (sw/sim/modules/), with
    the block RAM port's timing cycle for cycle: one word a cycle, the array word of the address
    presented in cycle n in `rd_data` in cycle n + 1, the word written back a cycle after its read.

    `pads` (`sim_storage_layout`) go to the module. The module is an asynchronous-read memory: it
    samples the pads once a cycle, after the rising edge has been evaluated (everything it reads
    comes from registers, so it is settled then), applies the write of that cycle, then drives the
    word at `rd_adr` on `pads.rd_data` before the next evaluation; `rd_q` here takes it at the next
    rising edge, so the read is synchronous exactly as the block RAM's. The write is applied before
    the read in the same cycle, as the simulated block RAM (registered read address) shows a word
    written at the edge that ends the read's cycle. `rd_data` changes only in cycles that read a
    word, so an idle die's gate sees no input change.

    With `config.sim_fast_erase` an erase takes one cycle per block (`er_en`, the block's first word
    on `rd_adr`): the module frees it at once, and the die is busy for tBERS alone. That is the one
    place the timing leaves the block RAM's (the simulated SoC builds its dies so; the cycle-for-cycle
    comparison, tests/test_die_sim_storage.py, builds them without)."""
    def __init__(self, config, engine, pads):
        _NandLabDieStoragePort.__init__(self, config, engine)

        # # #

        npages = config.part.pages_per_block * config.part.blocks_per_lun
        pw     = words(config.page_bytes)
        rd_q   = Signal(32)
        pipe   = Signal()                  # A word read last cycle is written now.
        pipe_a = Signal(max=max(npages * pw, 2))
        pipe_r = Signal(max=pw + 1)
        self.comb += [
            self.step.eq(~engine.hold),
            self.rw.eq(pipe), self.rw_word.eq(pipe_r), self.rd_data.eq(rd_q),
            self.rw_plane.eq(engine.plane_q),
            self.tail.eq(pipe), self.fin.eq(pipe & ~engine.active),
            # An erase reads nothing (it writes FFFFFFFFh whatever the array held).
            pads.rd_en.eq(engine.active & ~engine.hold & (engine.op != OP_ERASE)),
            pads.rd_adr.eq(engine.base + engine.word),
            pads.wr_en.eq(pipe & ((engine.op == OP_PROGRAM) if config.sim_fast_erase else (engine.op != OP_READ))),
            pads.wr_adr.eq(pipe_a),
            pads.wr_data.eq(Mux(engine.op == OP_ERASE, 0xFFFFFFFF, rd_q & engine.reg_data)),
        ]
        if config.sim_fast_erase:
            # One cycle per block: the engine presents the block's first word and moves on.
            self.comb += pads.er_en.eq(engine.active & ~engine.hold & (engine.op == OP_ERASE))
        self.sync += [
            If(pads.rd_en, rd_q.eq(pads.rd_data)),
            pipe.eq(engine.active & ~engine.hold),
            pipe_a.eq(engine.base + engine.word),
            pipe_r.eq(engine.word),
        ]
