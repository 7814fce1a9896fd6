"""The channel controller: its queues, sequencer, beat engine, datapath and (optionally) ECC path, and its CSRs."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import wishbone
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField, CSR
from litex.soc.interconnect.csr_eventmanager import EventManager, EventSourceLevel

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller.common import RESULTS, ECC_SUMMARY, RSVD_SMALL, INTERFACES, cycles
from nandlab.gateware.onfi.controller.queue import NandLabDescriptorQueue, NandLabCompletionQueue
from nandlab.gateware.onfi.controller.sequencer import NandLabSequencer
from nandlab.gateware.onfi.controller.beat_engine import NandLabBeatEngine
from nandlab.gateware.onfi.controller.datapath import NandLabDataPath
from nandlab.gateware.onfi.controller.ecc import NandLabEccPath, ecc_geometry


class NandLabChannelController(LiteXModule):
    """One channel: drives `bus` (a NandBus, one CE# per way) and masters `dma_bus` for data.

    `part` gives the default geometry (firmware may change the geometry CSRs after reading a parameter
    page) and, with the ONFI table of each timing mode, the tWB / tWHR / tRR / tCS / tADL / tCCS it
    waits: `timings(interface, mode)` (ns, an `onfi.InterfaceTimings`; default `onfi.mode_timings` of
    `part`) for every mode is converted to cycles here and the row of the `interface` and `timing_mode`
    in use (the config CSR firmware writes after SET FEATURES) is selected at run time (see "Interfaces
    and timing"). `read_latency`: cycles from the bus cycle that asks for a byte to the cycle it is on
    bus.dq_i / bus.dqs_i (0: emulated dies; a pin PHY's `read_latency` behind one; see "Read
    latency"); `dqs_late_ns`: how much later still an NV-DDR byte may come (default: ONFI's tDQSCK max
    and the board's `onfi.NVDDR_BOARD_NS`; the data FIFOs keep room for the bytes of every ask that may
    still be answered). `rb_latency`: cycles from the bus cycle the controller drives to the cycle
    bus.rb_n shows what the die did in it (a pin PHY's output register and R/B# synchroniser; a
    registered bus mux): added to tWB before R/B# is sampled. `ecc`: None, or the BCH code as
    dict(data_bytes=, t=, m=) (see nandlab.gateware.ecc.bch); without it the controller has no ECC
    logic at all. `with_small_pages` (with `ecc`, on an MPNFM part whose small pages the code fits):
    the descriptors' SMALL bit, ECC operations on the small pages of plane 1 (see "ECC"). `idle_gating`
    (simulation only): blocks are clocked only while they can change (nandlab.gateware.common.idlegate).
    `ecc_decoder`: a port of a BCH decoder shared with other controllers (nandlab.gateware.ecc.shared)."""
    def __init__(self, bus, dma_bus, sys_clk_freq, part, queue_depth=16, timeout_us=100_000, ecc=None,
                 read_latency=0, rb_latency=0, timings=None, with_small_pages=False, idle_gating=False, dqs_late_ns=None, ecc_decoder=None):
        ways = len(bus.ce_n)
        if not (isinstance(read_latency, int) and 0 <= read_latency <= 15):
            raise ValueError(f"read_latency {read_latency!r}: an integer number of cycles, 0..15")
        self.read_latency = read_latency
        assert 1 <= ways <= 16
        self.ways = ways
        self.bus = bus
        dw = len(dma_bus.dat_w)
        self.dma_bytes = dma_bytes = dw // 8
        self.ecc = ecc = dict(ecc) if ecc else None
        if part.page_size + part.spare_size > 0xFFFF:
            raise ValueError(f"pages of {part.page_size} + {part.spare_size} B: the descriptor's 16-bit column and "
                             f"length reach {0xFFFF} bytes")
        if with_small_pages and not ecc:
            raise ValueError("with_small_pages: the SMALL bit selects the small pages' ECC layout (needs `ecc`)")
        # Raises ValueError naming the limit when the part's spare cannot hold the parity.
        self.ecc_geometry = geometry = ecc_geometry(ecc, part, dma_bytes, small_pages=with_small_pages) if ecc else None
        if ecc:
            self.ecc_layout = geometry.layout
        self.ecc_bits = geometry.bits if ecc else 0
        self.with_small_pages = bool(with_small_pages)
        self.col_cycles, self.row_cycles = part.column_cycles, part.row_cycles
        cyc = lambda ns: cycles(ns, sys_clk_freq)
        if not (isinstance(rb_latency, int) and 0 <= rb_latency <= 15):
            raise ValueError(f"rb_latency {rb_latency!r}: an integer number of cycles, 0..15")
        self.rb_latency = rb_latency
        timings = timings or (lambda interface, mode: onfi.mode_timings(part, interface, mode))
        # Cycles of every (interface, mode); tWB is a maximum the die may take to pull R/B# low, and the
        # controller sees it `rb_latency` cycles later still.
        self.mode_cycles = {(interface, mode): {
            "t_whr": cyc(t.t_whr), "t_adl": cyc(t.t_adl), "t_ccs": cyc(t.t_ccs),
            "t_wb": cyc(t.t_wb) + rb_latency, "t_rr": cyc(t.t_rr), "t_cs": cyc(t.t_cs), "t_rhw": cyc(t.t_rhw)}
            for interface in INTERFACES for mode in range(onfi.TIMING_MODES)
            for t in [onfi.InterfaceTimings(*timings(interface, mode))]}

        # Submission (written by add_csr or a testbench): a descriptor is taken when `submit` and
        # `submit_ready` are both high.
        self.submit       = Signal()
        self.submit_ready = Signal()
        self.d_op     = Signal(8)
        self.d_way    = Signal(8)
        self.d_tag    = Signal(8)
        self.d_rsvd   = Signal(8)        # Reserved (bit 0: SMALL, `with_small_pages`); others set: BAD_OP.
        self.d_row    = Signal(32)
        self.d_col    = Signal(16)
        self.d_len    = Signal(16)
        self.d_addr   = Signal(32)
        self.d_param  = Signal(32)
        # Completions: a FIFO; `cpl_pop` drops the head.
        self.cpl_valid  = Signal()
        self.cpl_pop    = Signal()
        self.cpl_tag    = Signal(8)
        self.cpl_way    = Signal(4)
        self.cpl_result = Signal(4)
        self.cpl_status = Signal(8)
        self.cpl_ecc    = Signal(max(self.ecc_bits, 1))   # Corrected bits per codeword, or the summary (READ_ECC).
        # Configuration.
        self.interface   = Signal(2)
        self.timing_mode = Signal(3)
        self.din_late    = Signal()     # NV-DDR data input: DQS edge a phase later (din_dqs_phases).
        self.ways_online = Signal(ways, reset=2**ways - 1)
        self.page_bytes  = Signal(16, reset=part.page_size + part.spare_size)   # Data + spare.
        self.page_bits   = Signal(5, reset=(part.pages_per_block - 1).bit_length())
        self.blocks      = Signal(24, reset=part.blocks_per_lun)
        self.data_bytes  = Signal(16, reset=part.page_size)                   # Data area (ECC ops).
        self.timeout     = Signal(32, reset=cyc(timeout_us * 1000))            # R/B#, data out, ARDY: cycles.
        # DMA window: first and last byte address a descriptor's data may use (else BAD_ADDRESS).
        self.dma_base    = Signal(32)
        self.dma_limit   = Signal(32, reset=2**32 - 1)
        # Observation.
        self.busy_cycles = Signal(32)        # Cycles with a program running on the bus.
        self.data_cycles = Signal(32)        # Cycles moving data.
        self.bytes_in    = Signal(32)        # Bytes written to the NAND.
        self.bytes_out   = Signal(32)        # Bytes read from the NAND.
        self.completed   = Signal(32)
        self.ecc_fixed   = Signal(32)        # Memory words corrected.
        self.in_flight   = Signal(ways)
        self.overflow_lost = Signal(32)      # Descriptors submitted into a full queue and not completed.

        # # #

        self.descriptors = queue = NandLabDescriptorQueue(ways, dma_bytes, queue_depth, self.ways_online,
                                                          self.page_bytes, self.page_bits, self.blocks,
                                                          self.data_bytes, ecc=geometry, dma_base=self.dma_base,
                                                          dma_limit=self.dma_limit)
        self.completions = cplq = NandLabCompletionQueue(queue_depth + ways, self.ecc_bits)
        self.sequencer = seq = self._sequencer(ways, rb_latency)
        self.beat = beat = NandLabBeatEngine(bus, sys_clk_freq, self.col_cycles, self.row_cycles, read_latency, seq.cur,
                                             t_rhw={k: c["t_rhw"] for k, c in self.mode_cycles.items()}, dqs_late_ns=dqs_late_ns)
        self.datapath = dp = NandLabDataPath(dma_bus, beat.dout_latency, seq.cur)
        engines, masters = [beat, dp], [dp.dma_wr.bus, dp.dma_rd.bus]
        if ecc:
            self.ecc_path = ecc_path = NandLabEccPath(geometry, dma_bus, beat.dout_latency, seq.cur, self.data_bytes,
                                                      idle_gating=idle_gating, decoder=ecc_decoder)
            engines.append(ecc_path)
            masters.append(ecc_path.fix_bus)
        self.arbiter = wishbone.Arbiter(masters, dma_bus)

        # Descriptors in, completions out.
        d = queue.sink
        self.comb += [
            d.valid.eq(self.submit), self.submit_ready.eq(d.ready),
            d.op.eq(self.d_op), d.way.eq(self.d_way), d.tag.eq(self.d_tag), d.rsvd.eq(self.d_rsvd), d.row.eq(self.d_row),
            d.col.eq(self.d_col), d.len.eq(self.d_len), d.addr.eq(self.d_addr), d.param_word.eq(self.d_param),
            queue.source.connect(seq.sink), queue.overflow.connect(seq.overflow), self.overflow_lost.eq(queue.lost),
            seq.source.connect(cplq.sink),
            seq.room.eq(cplq.room), cplq.reserved.eq(seq.n_active),
            self.cpl_valid.eq(cplq.source.valid), cplq.source.ready.eq(self.cpl_pop),
            self.cpl_tag.eq(cplq.source.tag), self.cpl_way.eq(cplq.source.way),
            self.cpl_result.eq(cplq.source.result), self.cpl_status.eq(cplq.source.status),
            self.completed.eq(cplq.completed),
            self.in_flight.eq(seq.active),
        ]
        # The sequencer runs the micro-ops on the engines, the beat engine drives the bus.
        self.comb += [
            seq.uop.connect(*[e.uop for e in engines]),
            seq.rb.eq(bus.rb_n[:ways]), seq.timeout.eq(self.timeout),
            beat.timeout.eq(self.timeout), seq.dout_timeout.eq(beat.dout_timeout),
            beat.status.connect(seq.status),
            beat.sel.eq(seq.sel), beat.interface.eq(self.interface), beat.timing_mode.eq(self.timing_mode),
            beat.din_late.eq(self.din_late),
            seq.interface.eq(self.interface), seq.timing_mode.eq(self.timing_mode),
            dp.flush.eq(beat.flush), beat.flushed.eq(dp.flushed),
            self.bytes_in.eq(beat.bytes_in), self.bytes_out.eq(beat.bytes_out),
        ]
        # Data between the bus and memory: directly, or through the ECC path.
        if ecc:
            self.comb += [
                dp.source.connect(ecc_path.mem_sink), ecc_path.bus_source.connect(beat.sink),
                beat.source.connect(ecc_path.bus_sink), ecc_path.mem_source.connect(dp.sink),
                ecc_path.mem_room.eq(dp.room), beat.room.eq(ecc_path.bus_room),
                beat.operand.raw_bits().eq(ecc_path.operand.raw_bits()),
                ecc_path.din_active.eq(beat.din_active), ecc_path.dout_active.eq(beat.dout_active),
                seq.ecc_uncorrectable.eq(ecc_path.uncorrectable), seq.ecc_counts.eq(ecc_path.counts),
                dp.dout_end.eq(ecc_path.dout_end), dp.din_free.eq(ecc_path.din_free),
                self.cpl_ecc.eq(cplq.source.ecc), self.ecc_fixed.eq(ecc_path.fixed),
            ]
        else:
            self.comb += [
                dp.source.connect(beat.sink), beat.source.connect(dp.sink), beat.room.eq(dp.room),
                beat.operand.column.eq(seq.cur.col), beat.operand.din_len.eq(seq.cur.len),
                beat.operand.dout_len.eq(seq.cur.len), beat.operand.to_memory.eq(1),
                dp.dout_end.eq(seq.cur.len),
            ]
        self.sync += [
            If(~seq.idle, self.busy_cycles.eq(self.busy_cycles + 1)),
            If(beat.din_active | beat.dout_active, self.data_cycles.eq(self.data_cycles + 1)),
        ]

    def _sequencer(self, ways, rb_latency):
        """The sequencer, and its transfers' power ports as the controller's (`power_*`: "Power" in the
        package docstring). A byte the controller drives reaches the die `rb_latency` cycles later (the
        mux's register, a pin PHY's output register): a transfer's tokens go back after that and a margin."""
        seq = NandLabSequencer(ways, self.mode_cycles, self.ecc_bits, release_delay=rb_latency + 2)
        for name in ("request", "out", "grant", "end", "free"):
            setattr(self, f"power_{name}", getattr(seq, f"power_{name}"))
        return seq

    def add_csr(self):
        """CSRs: descriptor words and submit, completion and pop, configuration, counters, IRQ."""
        ways = self.ways
        self._desc0 = CSRStorage(fields=[
            CSRField("op",  size=8, description="Operation (see `OPS`; others: BAD_OP)."),
            CSRField("way", size=8, offset=8, description="Way (CE#; beyond the channel's: BAD_WAY)."),
            CSRField("tag", size=8, offset=16, description="Tag returned in the completion."),
            *([CSRField("small", size=1, offset=24 + RSVD_SMALL, description="SMALL: an ECC operation on an MPNFM "
                        "die's small page (plane 1 in MPNFM mode): the small page's ECC layout (else BAD_OP)."),
               CSRField("reserved", size=7, offset=25, description="Reserved, 0 (else the descriptor is refused: "
                        "BAD_OP).")] if self.with_small_pages else
              [CSRField("reserved", size=8, offset=24, description="Reserved, 0 (else the descriptor is refused: "
                        "BAD_OP).")]),
        ], description="Descriptor word 0.")
        self._desc_row   = CSRStorage(32, description="Descriptor: row address (page | block << page bits; "
                                      "beyond the blocks: BAD_ROW).")
        self._desc_col   = CSRStorage(fields=[
            CSRField("col", size=16, description="Column (byte in the page; READ ID / features: the address byte)."),
            CSRField("len", size=16, offset=16, description="Bytes to move (even; DMA-word multiple for data in)."),
        ], description="Descriptor: column and length.")
        self._desc_addr  = CSRStorage(32, description="Descriptor: memory address of the data (DMA-word aligned).")
        self._desc_param = CSRStorage(32, description="Descriptor: SET FEATURES P1-P4 (P1 in bits 7:0).")
        self._submit     = CSR()       # Write: queue the descriptor held in the desc_* registers.
        self._dma_base   = CSRStorage(32, description="DMA window: first byte address descriptors' data may use "
                                      "(outside the window: BAD_ADDRESS).")
        self._dma_limit  = CSRStorage(32, reset=2**32 - 1, description="DMA window: last byte address descriptors' "
                                      "data may use (default: all; an address range wrapping past 2^32 is refused).")
        self._overflow_lost = CSRStatus(32, description="Counter: descriptors submitted while the queue was full that "
                                        "got no completion (one is held and completes as OVERFLOW; more while it "
                                        "is held are counted here).")
        self._queue = CSRStatus(fields=[
            CSRField("ready",     size=1, description="The queue has room."),
            CSRField("in_flight", size=16, offset=8, description="Ways with a descriptor in flight."),
        ], description="Submission queue state.")
        self._cpl = CSRStatus(fields=[
            CSRField("valid",  size=1, description="A completion is waiting."),
            CSRField("result", size=4, offset=4, description="Result.",
                     values=[(str(i), n) for i, n in enumerate(RESULTS)]),
            CSRField("tag",    size=8, offset=8, description="Tag of the descriptor."),
            CSRField("way",    size=4, offset=16, description="Way of the descriptor."),
            CSRField("status", size=8, offset=24, description="NAND status byte (operations ending with 70h)."),
        ], description="The oldest completion.")
        if self.ecc_bits and self.ecc_geometry.summary:
            fields, offset = [], 0
            for name, width, description in ECC_SUMMARY:
                fields.append(CSRField(name, size=width, offset=offset, description=description))
                offset += width
            self._cpl_ecc = CSRStatus(fields=fields, description="The oldest completion's ECC summary (pages of more "
                                      "codewords than per-codeword counts fit).")
            # (A CSRStatus with fields drives its status from them.)
            self.comb += [getattr(self._cpl_ecc.fields, f.name).eq(self.cpl_ecc[f.offset:f.offset + f.size])
                          for f in fields]
        elif self.ecc_bits:
            self._cpl_ecc = CSRStatus(self.ecc_bits, description="The oldest completion's corrected bits per "
                                      f"codeword ({bits_for(self.ecc['t'] + 1)} bits each, codeword 0 in the LSBs; "
                                      "all ones: uncorrectable).")
            self.comb += self._cpl_ecc.status.eq(self.cpl_ecc)
        if self.ecc_bits:
            self._ecc_fixed = CSRStatus(32, description="Counter: memory words corrected.")
            self.comb += self._ecc_fixed.status.eq(self.ecc_fixed)
        self._cpl_pop = CSR()           # Write: drop the oldest completion.
        self._config = CSRStorage(fields=[
            CSRField("interface",   size=2, description="Bus interface.",
                     values=[("0", "async SDR"), ("1", "NV-DDR"), ("3", "sync SDR")]),
            CSRField("dqs_late",    size=1, offset=2, description="NV-DDR data input: DQS edge a phase later in "
                     "bytes of an even number of phases (write training; see din_dqs_phases)."),
            CSRField("timing_mode", size=3, offset=4, description="Timing mode 0-5."),
            CSRField("ways_online", size=16, offset=16, reset=2**ways - 1,
                     description="Ways that take descriptors (a die left out at bring-up is cleared)."),
        ], description="Interface, timing mode, ways in use.")
        self._geometry = CSRStorage(fields=[
            CSRField("page_bytes", size=16, reset=self.page_bytes.reset.value, description="Bytes per page, spare included."),
            CSRField("page_bits",  size=5, offset=16, reset=self.page_bits.reset.value, description="Row bits of the page in the block."),
        ], description="Page geometry (rows and columns beyond it are refused).")
        self._blocks  = CSRStorage(24, reset=self.blocks.reset.value, description="Blocks per LUN.")
        self._data_bytes = CSRStorage(16, reset=self.data_bytes.reset.value,
                                      description="Bytes of the page's data area (ECC operations).")
        self._timeout = CSRStorage(32, reset=self.timeout.reset.value, description="Timeout (cycles): R/B# low (1024-cycle resolution), "
                                     "an NV-DDR data output without a byte, an ARDY poll; the descriptor completes TIMEOUT.")
        for name in ("busy_cycles", "data_cycles", "bytes_in", "bytes_out", "completed"):
            csr = CSRStatus(32, name=name, description=f"Counter: {name.replace('_', ' ')}.")
            setattr(self, f"_{name}", csr)
            self.comb += csr.status.eq(getattr(self, name))
        self.ev = EventManager()
        self.ev.done = EventSourceLevel(description="Completions are waiting.")
        self.ev.finalize()
        self.comb += [
            self.d_op.eq(self._desc0.fields.op), self.d_way.eq(self._desc0.fields.way),
            self.d_tag.eq(self._desc0.fields.tag),
            self.d_rsvd.eq(Cat(self._desc0.fields.small, self._desc0.fields.reserved) if self.with_small_pages else
                           self._desc0.fields.reserved),
            self.d_row.eq(self._desc_row.storage),
            self.dma_base.eq(self._dma_base.storage), self.dma_limit.eq(self._dma_limit.storage),
            self._overflow_lost.status.eq(self.overflow_lost),
            self.d_col.eq(self._desc_col.fields.col), self.d_len.eq(self._desc_col.fields.len),
            self.d_addr.eq(self._desc_addr.storage), self.d_param.eq(self._desc_param.storage),
            self.submit.eq(self._submit.re),
            self._queue.fields.ready.eq(self.submit_ready), self._queue.fields.in_flight.eq(self.in_flight),
            self._cpl.fields.valid.eq(self.cpl_valid), self._cpl.fields.result.eq(self.cpl_result),
            self._cpl.fields.tag.eq(self.cpl_tag), self._cpl.fields.way.eq(self.cpl_way),
            self._cpl.fields.status.eq(self.cpl_status),
            self.cpl_pop.eq(self._cpl_pop.re),
            self.interface.eq(self._config.fields.interface), self.timing_mode.eq(self._config.fields.timing_mode),
            self.din_late.eq(self._config.fields.dqs_late),
            self.ways_online.eq(self._config.fields.ways_online),
            self.page_bytes.eq(self._geometry.fields.page_bytes), self.page_bits.eq(self._geometry.fields.page_bits),
            self.blocks.eq(self._blocks.storage), self.timeout.eq(self._timeout.storage),
            self.data_bytes.eq(self._data_bytes.storage),
            self.ev.done.trigger.eq(self.cpl_valid),
        ]
