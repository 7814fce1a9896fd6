"""nandlab die emulator: one ONFI LUN on the phased NAND bus, storage in block RAM.

What it does (reference.py models the same semantics and is the tests' scoreboard):

* commands: RESET, READ ID (00h: JEDEC bytes, 20h: "ONFI"), READ PARAMETER PAGE (three copies),
  READ STATUS, READ STATUS ENHANCED, READ (00h-30h), CHANGE READ COLUMN (05h-E0h, and 06h-E0h),
  PROGRAM (80h-10h) with CHANGE WRITE COLUMN (85h), ERASE (60h-D0h), their multi-plane forms,
  READ CACHE (31h/3Fh), PROGRAM CACHE (15h), GET/SET FEATURES (feature 01h switches the data
  interface between async SDR and NV-DDR and sets the timing mode);
* data moves one byte per WE#/RE# edge in async SDR, one per CLK rising edge in sync SDR and one
  per phase (two per cycle) in NV-DDR (see gateware/onfi/common.py for the bus);
* erased pages read FFh, programming ANDs data into the page; out-of-range rows, WP# low and
  factory bad blocks fail in the status, each failure counted by reason; faults are injected
  through `inject_*`/`flip_*` (N flips on reads of one row, or random flips at a rate);
* array operations play the part's current waveform phase by phase (nand_model/current.py):
  before each phase the die presents OI and waits for OE (tie OE high to run free); R/B# stays
  low for the waveform's time (tR, tPROG with its ISPP loops, LSB or MSB, tBERS) divided by the
  simulation time scale, never shorter than the data movement inside the emulator; `current`
  gives the die's current every cycle, bus transfers included;
* a timing checker counts host violations of tWHR, tADL, tCCS, tRR and tWB.

Storage: the array is one 32-bit wide memory (the LUN's pages back to back, page + spare bytes
each, rounded up to words); the page register is a memory per plane of 32 data bits and a 4-bit
generation tag per word, so the register clear of PROGRAM (80h) is one generation step: a word
whose tag is stale reads FFFFFFFFh. Data-in bytes gather in a staging word written once per word.

Multi-plane commands (32h/11h/D1h, 06h-E0h) queue a page per register and follow the run-time
plane architecture (CNFM / DW-NFM / SDW-NFM, the last with subplane registers when built); READ
CACHE and PROGRAM CACHE swap a register pair. MPNFM parts (two page sizes) run with small
pages on plane 1 when `mpnfm` is set, with their shorter tPROG/tBERS. With `storage="wishbone"`
the array lives behind a Wishbone master (a DRAM region) instead of block RAM.
"""

from functools import reduce
from operator import add, or_

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField

from nandlab.nand_model.current import PhaseTables, NandLabDieSequencer, I_FRAC_BITS, \
    OP_READ_ARRAY, OP_PROGRAM_LSB, OP_PROGRAM_MSB, OP_ERASE_ARRAY
from nandlab.nand_model import waveforms
from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.common import NandBus, phase_edges
from nandlab.nand_model.reference import DieConfig, ReferenceDie, flip_position, LFSR_SEED, LFSR_TAPS, REASON_NAMES, \
    REASON_RANGE, REASON_WP, REASON_BAD_BLOCK, REASON_INJECTED, REASON_SEQUENCE, REASON_PLANE_ADDR, \
    REASON_PAGE_TYPE, REASON_PLANE_REPEAT, ARCH_CNFM, ARCH_DW, ARCH_SDW, SUBPLANES

# Output sources.
SRC_NONE, SRC_STATUS, SRC_ID, SRC_PARAM, SRC_FEATURE, SRC_PAGE = range(6)
# Array engine operations.
OP_READ, OP_PROGRAM, OP_ERASE = range(3)
NO_REASON = 15
# Cache commands waiting for the array: 31h, 3Fh, 15h, and 10h after a 15h.
PEND_READ_NEXT, PEND_READ_END, PEND_PROG_CACHE, PEND_PROG_FINAL = 1, 2, 3, 4

STORAGES = ("bram", "wishbone")
GEN_BITS = 4      # Page-register generation tag (a 36-bit BRAM word with the data).

TIMING_CHECKS = ["t_whr", "t_adl", "t_ccs", "t_rr", "t_wb"]


def _words(n):
    return (n + 3) // 4


def die_storage_bytes(config):
    """Bytes of array storage of a die: every page with its spare, rounded up to 32-bit words."""
    part = config.part
    return part.pages_per_block * part.blocks_per_lun * _words(config.page_bytes) * 4


def _bit(vector, index):
    """Bit `index` (a signal) of `vector`."""
    return (vector >> index)[0]


class NandLabDie(LiteXModule):
    def __init__(self, config, bus=None, max_flips=15, storage="bram", storage_base=0):
        assert isinstance(config, DieConfig)
        if storage not in STORAGES:
            raise ValueError(f"storage '{storage}' unknown; valid: {', '.join(STORAGES)}")
        if storage_base % 4:
            raise ValueError(f"storage_base 0x{storage_base:x} is not a multiple of 4 bytes")
        part = config.part
        self.config = config
        self.storage = storage
        self.storage_base = storage_base
        self.bus = bus = bus if bus is not None else NandBus(targets=1, luns=1)

        pb       = config.page_bytes
        pw       = _words(pb)
        ppb      = part.pages_per_block
        npages   = ppb * part.blocks_per_lun
        planes   = part.planes
        col_cyc  = part.column_cycles
        row_cyc  = part.row_cycles
        page_bits  = (ppb - 1).bit_length()
        block_bits = (part.blocks_per_lun - 1).bit_length()
        plane_bits = (planes - 1).bit_length()
        nregs      = config.registers
        reg_bits   = max((nregs - 1).bit_length(), 1)
        self.page_words = pw

        # Run-time controls (CSRs in add_csr(), or driven by a testbench).
        self.inject_program_fail = Signal()    # Pulse: the next program fails.
        self.inject_erase_fail   = Signal()    # Pulse: the next erase fails.
        self.flip_row            = Signal(24)  # Reads of this row get `flip_count` bit flips.
        self.flip_count          = Signal(max=max_flips + 1)
        self.flip_rate           = Signal(16)  # Random flips: a word read from the array gets one
                                               # flipped bit with probability flip_rate / 65536.
        self.time_scale_shift    = Signal(5)   # Run-time division of array times by 2**n.
        self.arch                = Signal(2)   # ARCH_CNFM / ARCH_DW / ARCH_SDW (DW when not built).
        self.mpnfm               = Signal()    # MPNFM: plane 1 has the part's small pages.
        self.param_corrupt       = Signal(3)   # Copies of the parameter page read with a bad CRC (a
                                               # data byte flipped), for bring-up tests.
        # Observation.
        self.busy        = Signal()
        self.data_interface   = Signal(2)           # onfi.IF_*
        self.timing_mode = Signal(4)
        self.status      = Signal(8)
        self.reasons     = [Signal(16, name=f"reason{i}") for i in range(len(REASON_NAMES))]
        self.violations  = {n: Signal(16, name=f"viol_{n}") for n in TIMING_CHECKS}
        self.ops         = {n: Signal(32, name=f"ops_{n}") for n in ("read", "program", "erase")}
        # Power-manager hook and current (nand_model/current.py): OI/OE before every phase of an
        # array operation; the die's current every cycle in I_max / 4096, bus transfers included.
        # Array-time variants: SDW-NFM (shorter tR/tPROG) and the MPNFM small-page array (shorter
        # tPROG/tBERS), alone or together.
        self.tables      = PhaseTables(part, config.sys_clk_freq, config.time_scale)
        sdw_pct   = {"read": config.sdw_t_r_percent, "program": config.sdw_t_prog_percent}
        small_pct = {"program": part.small_time_percent, "erase": part.small_time_percent}
        both_pct  = {k: sdw_pct.get(k, 100) * small_pct.get(k, 100) // 100 for k in ("read", "program", "erase")}
        variant_pcts = ([sdw_pct] if config.with_sdw else []) + ([small_pct] if part.is_mpnfm else []) \
            + ([both_pct] if config.with_sdw and part.is_mpnfm else [])
        variants = [PhaseTables(part, config.sys_clk_freq, config.time_scale, percent=p) for p in variant_pcts]
        self.seq         = seq = NandLabDieSequencer(self.tables, variants=variants)
        self.oi          = seq.oi
        self.oi_first    = seq.oi_first
        self.oe          = seq.oe
        self.phase_end   = seq.phase_end
        self.atomic_end  = seq.atomic_end
        self.waiting     = seq.waiting
        self.request     = seq.request
        self.current     = Signal(I_FRAC_BITS + 2)

        # Durations in cycles (array times scaled for simulation, interface times never); array
        # operations take theirs from the sequencer, READ PARAMETER PAGE from the read waveform.
        t_r    = self.tables.cycles("read")
        t_feat = config.cycles(t_ns=config.t_feat_ns, scaled=False)
        t_rst  = config.cycles(t_ns=config.t_rst_ns, scaled=False)
        t_fail = config.cycles(t_ns=onfi.T_WB_NS, scaled=False)
        t_dbsy = config.cycles(t_ns=config.t_dbsy_ns, scaled=False)

        # # #

        # Bus edges ---------------------------------------------------------------------------------
        selected = Signal()
        nvddr    = Signal()
        sync_sdr = Signal()
        self.comb += [
            selected.eq(~bus.ce_n[0]),
            nvddr.eq(self.data_interface == onfi.IF_NVDDR),
            sync_sdr.eq(self.data_interface == onfi.IF_SYNC_SDR),
        ]
        prev_we, prev_re, prev_dqs = Signal(reset=1), Signal(reset=1), Signal()
        prev_dq  = Signal(8)
        we_rise, _ = phase_edges(bus.we_n, prev_we)
        _, re_fall = phase_edges(bus.re_n, prev_re)
        dqs_rise, dqs_fall = phase_edges(bus.dqs_o, prev_dqs)
        self.sync += [
            prev_we.eq(bus.we_n[-1]),
            prev_re.eq(bus.re_n[-1]),
            prev_dqs.eq(bus.dqs_o[-1]),
            prev_dq.eq(bus.dq_o[8:16]),
        ]
        dq_phase  = [bus.dq_o[0:8], bus.dq_o[8:16]]
        dq_before = [prev_dq, dq_phase[0]]

        # At most one command/address latch per cycle (a WE#/CLK rising edge).
        latch      = Signal()
        latch_byte = Signal(8)
        cmd_ev     = Signal()
        addr_ev    = Signal()
        data_cycle = Signal()   # NV-DDR data cycle: CLE = ALE = 1.
        self.comb += [
            latch.eq(we_rise[0] | we_rise[1]),
            latch_byte.eq(Mux(we_rise[0], dq_before[0], dq_before[1])),
            data_cycle.eq((nvddr | sync_sdr) & bus.cle & bus.ale),
            cmd_ev.eq(selected & latch & bus.cle & ~bus.ale),
            addr_ev.eq(selected & latch & bus.ale & ~bus.cle),
        ]
        # Data in: async, a byte per WE# rising edge with CLE = ALE = 0; NV-DDR, a byte per DQS edge;
        # sync SDR, a byte per CLK rising edge of a data cycle with W/R# high.
        din_valid = [Signal(name=f"din_valid{p}") for p in range(2)]
        din_byte  = [Signal(8, name=f"din_byte{p}") for p in range(2)]
        # Data out: async, a byte per RE# falling edge; NV-DDR, a byte per phase with W/R# low;
        # sync SDR, a byte per CLK rising edge of a data cycle with W/R# low.
        dout_req  = [Signal(name=f"dout_req{p}") for p in range(2)]
        for p in range(2):
            self.comb += If(nvddr,
                din_valid[p].eq(selected & data_cycle & bus.re_n[p] & (dqs_rise[p] | dqs_fall[p])),
                din_byte[p].eq(dq_phase[p]),
                dout_req[p].eq(selected & data_cycle & ~bus.re_n[p]),
            ).Elif(sync_sdr,
                din_valid[p].eq(selected & data_cycle & bus.re_n[p] & we_rise[p]),
                din_byte[p].eq(dq_before[p]),
                dout_req[p].eq(selected & data_cycle & ~bus.re_n[p] & we_rise[p]),
            ).Else(
                din_valid[p].eq(selected & ~bus.cle & ~bus.ale & we_rise[p]),
                din_byte[p].eq(dq_before[p]),
                dout_req[p].eq(selected & re_fall[p]),
            )

        # Command state --------------------------------------------------------------------------------
        cmd       = Signal(8)
        naddr     = Signal(4)
        col       = Signal(8 * col_cyc)
        row       = Signal(8 * row_cyc)
        addr0     = Signal(8)
        out_src   = Signal(3)
        in_page   = Signal()
        in_feat   = Signal()
        feat_addr = Signal(8)
        feat_p    = Array(Signal(8, name=f"feat_p{i}") for i in range(4))
        feat_n    = Signal(3)
        fail      = Signal()
        failc     = Signal()
        inj_prog  = Signal()
        inj_erase = Signal()
        page_ok   = Signal()     # The page register may be read out (after 30h or E0h).

        row_page  = Signal(max(page_bits, 1))
        row_block = Signal(max(block_bits, 1))
        row_valid = Signal()
        bad_block = Signal()
        plane     = Signal(max(plane_bits, 1))
        arch      = Signal(2)
        reg_sel   = Signal(reg_bits)          # Page register of `row` under the architecture.
        subplane  = Signal(2)
        per_plane = part.blocks_per_lun // planes
        in_plane  = Signal(max(block_bits, 1))
        self.comb += [
            arch.eq(Mux((self.arch == ARCH_SDW) & (not config.with_sdw), ARCH_DW, self.arch)),
            in_plane.eq(row_block >> plane_bits),
            subplane.eq(reduce(add, [in_plane >= -(-k * per_plane // SUBPLANES) for k in range(1, SUBPLANES)])),
            reg_sel.eq(Mux(arch == ARCH_SDW, plane * SUBPLANES + subplane, plane) if config.with_sdw else plane),
        ]
        self.comb += [
            row_page.eq(row[:page_bits] if page_bits else 0),
            row_block.eq(row[page_bits:page_bits + block_bits] if block_bits else 0),
            row_valid.eq((row[page_bits + block_bits:] == 0) & (row_block < part.blocks_per_lun)
                         & (row_page < ppb)),
            bad_block.eq(reduce(or_, [row_block == b for b in config.bad_blocks], 0)),
            plane.eq(row_block[:plane_bits] if plane_bits else 0),
        ]

        # MPNFM: plane 1 pages end at the small page (data past it is ignored / reads 00h).
        small_pb = (part.small_page_size + part.small_spare_size) if part.is_mpnfm else pb
        mpnfm_on = Signal()
        in_small = Signal()
        out_small = Signal()
        self.comb += mpnfm_on.eq(self.mpnfm if part.is_mpnfm else 0)

        # Memories -----------------------------------------------------------------------------------
        if storage == "bram":
            array = Memory(32, npages * pw, init=self._array_init(pw))
            arr_rd = array.get_port(async_read=False)
            arr_wr = array.get_port(write_capable=True)
            self.specials += array, arr_rd, arr_wr
        # With cache operations every (logical) page register is a pair of physical ones: the one
        # facing the bus (`io`) and the one facing the array (`arr`); READ CACHE and PROGRAM CACHE
        # swap their roles instead of copying. Without them both roles are the same register.
        cache  = config.with_cache
        nphys  = nregs * (2 if cache else 1)
        phys_bits = max((nphys - 1).bit_length(), 1)
        # Page registers: 32 data bits and a 4-bit generation tag per word. A word whose tag is not
        # its register's generation reads FFFFFFFFh, so the clear of PROGRAM (80h) is one increment;
        # a scrubber per register re-stamps stale words (FFFFFFFFh, current generation) in free
        # port cycles so that a tag cannot come round again (see `reg_overruns`).
        regs   = [Memory(32 + GEN_BITS, pw, name=f"page_reg{i}") for i in range(nphys)]
        reg_rd = [m.get_port(async_read=False) for m in regs]
        reg_wr = [m.get_port(write_capable=True) for m in regs]
        self.specials += regs + reg_rd + reg_wr
        reg_gen = [Signal(GEN_BITS, reset=1, name=f"reg_gen{i}") for i in range(nphys)]
        in_reg    = Signal(reg_bits)          # Register taking data in (after 80h).
        out_reg   = Signal(reg_bits)          # Register giving data out (30h, 06h-E0h).
        io_alt    = Signal(nregs)             # Which of the pair faces the bus.
        arr_alt   = Signal(nregs)             # Which of the pair faces the array.
        def phys(r, alt):
            return Cat(_bit(alt, r), r) if cache else r

        # Engine state.
        eng_active = Signal()
        eng_op     = Signal(2)
        eng_plane  = Signal(phys_bits)        # Physical register of the page being moved.
        eng_base   = Signal(max=max(npages * pw, 2))
        eng_word   = Signal(max=pw + 1)
        eng_page   = Signal(max=ppb + 1)
        eng_pipe   = Signal()                  # A word read last cycle is written now.
        # Storage side of the engine (see the engine below).
        eng_step, eng_rw, eng_tail, eng_fin = Signal(), Signal(), Signal(), Signal()
        eng_rd_data, eng_rw_word = Signal(32), Signal(max=pw + 1)
        eng_pipe_a = Signal(max=max(npages * pw, 2))
        eng_pipe_r = Signal(max=pw + 1)
        timer      = Signal(32)
        # Multi-plane queue: a page per register; the final confirm moves them one after another
        # while the sequencer plays the array time once.
        q_row    = Array(Signal(8 * row_cyc, name=f"q_row{k}") for k in range(nregs))
        q_reg    = Array(Signal(reg_bits, name=f"q_reg{k}") for k in range(nregs))
        q_n      = Signal(max=nregs + 1)
        q_used   = Signal(nregs)
        q_page   = Signal(max(page_bits, 1))
        q_reason = Signal(4, reset=NO_REASON)
        eng_n    = Signal(max=nregs + 1)
        eng_idx  = Signal(max=nregs + 1)
        flipping   = Signal()
        flip_i     = Signal(max=max_flips + 1)
        flip_pos   = Signal(max=max(pb, 2))
        flip_rd    = Signal()
        flip_we    = Signal()
        # Busy: the array (engine, sequencer, flips) and the die (R/B#, RDY). A cache operation
        # leaves the die ready while its array operation runs.
        start    = Signal()                   # Pulse: the engine and the sequencer begin (start_op).
        start_op = Signal(2)
        self.array_busy = array_busy = Signal()
        cache_running = Signal()              # The array operation running was started by 31h/15h.
        pending       = Signal(3)             # Cache command waiting for the array to finish.
        self.comb += [
            array_busy.eq(start | eng_active | eng_tail | flipping | seq.busy),
            self.busy.eq((timer != 0) | (pending != 0) | (array_busy & ~cache_running)),
        ]

        # Page register reads: the engine and bit flips on the engine's register, the read half of a
        # data-in word write (below) on the bus-facing one, the output prefetcher when that is free,
        # the scrubber in any cycle left over.
        pref_word   = Signal(max=max(pw, 2))
        pref_fetch  = Signal()                # The prefetcher reads this cycle.
        flip_word   = Signal(max=max(pw, 2))
        out_phys    = Signal(phys_bits)
        in_phys     = Signal(phys_bits)
        eng_phys_q  = Signal(phys_bits)
        out_phys_q  = Signal(phys_bits)
        reg_rd_data = Signal(32)              # Engine / flips side.
        pref_rd_data = Signal(32)             # Prefetcher side.
        fl_en, fl_word = Signal(), Signal(max=max(pw, 2))
        masked = []
        port_free = []
        self.comb += [flip_word.eq(flip_pos[2:]), out_phys.eq(phys(out_reg, io_alt))]
        for i in range(nphys):
            m = Signal(32, name=f"reg_masked{i}")
            mine = eng_plane == i
            free = Signal(name=f"reg_port_free{i}")
            self.comb += [
                free.eq(0),
                If(eng_active & mine, reg_rd[i].adr.eq(eng_word)
                ).Elif(flipping & mine, reg_rd[i].adr.eq(flip_word)
                ).Elif(fl_en & (in_phys == i), reg_rd[i].adr.eq(fl_word)
                ).Elif(pref_fetch & (out_phys == i), reg_rd[i].adr.eq(pref_word)
                ).Else(free.eq(1)),
                m.eq(Mux(reg_rd[i].dat_r[32:] == reg_gen[i], reg_rd[i].dat_r[:32], 0xFFFFFFFF)),
            ]
            masked.append(m)
            port_free.append(free)
        self.sync += eng_phys_q.eq(eng_plane), out_phys_q.eq(out_phys)
        self.comb += [
            reg_rd_data.eq(Array(masked)[eng_phys_q]),
            pref_rd_data.eq(Array(masked)[out_phys_q]),
        ]

        # Page register write port: the engine (read copy, bit flips) or a data-in word; the scrubber
        # writes when none of them does.
        wr_en   = Signal()
        wr_word = Signal(max=max(pw, 2))
        wr_data = Signal(32)
        wr_plane = Signal(phys_bits)
        self.reg_overruns = Signal(16)       # Times a register was cleared 16 times within two
                                             # scrubber sweeps (a stale word may then read as data).
        overrun = Signal(nphys)
        self.sync += If(overrun != 0, self.reg_overruns.eq(self.reg_overruns + (self.reg_overruns != 0xFFFF)))
        clear_reg  = Signal()     # 80h address complete: the plane's register reads FFh again.
        clear_phys = Signal(phys_bits)
        # The engine's pass over a register counts as a sweep: a READ writes every word, a PROGRAM
        # re-stamps the stale words it reads (FFh went to the array for them).
        eng_stamp = [Signal(name=f"eng_stamp{i}") for i in range(nphys)]
        pass_end  = [Signal(name=f"pass_end{i}") for i in range(nphys)]
        for i in range(nphys):
            mine = wr_en & (wr_plane == i)
            sc_ptr  = Signal(max=max(pw, 2), name=f"scrub_ptr{i}")
            sc_hit  = Signal(name=f"scrub_hit{i}")      # The scrubber read sc_ptr last cycle and
                                                        # nothing wrote this register then.
            sc_we   = Signal(name=f"scrub_we{i}")
            sc_done = Signal(name=f"scrub_done{i}")     # The word is current (or rewritten now).
            n_now, n_prev = Signal(5, name=f"clears_now{i}"), Signal(5, name=f"clears_prev{i}")
            cleared = clear_reg & (clear_phys == i)
            self.comb += [
                If(port_free[i], reg_rd[i].adr.eq(sc_ptr)),
                sc_we.eq(sc_hit & ~mine & ~eng_stamp[i] & (reg_rd[i].dat_r[32:] != reg_gen[i])),
                sc_done.eq(sc_hit & (sc_we | (reg_rd[i].dat_r[32:] == reg_gen[i]))),
                reg_wr[i].adr.eq(Mux(mine, wr_word, Mux(eng_stamp[i], eng_rw_word, sc_ptr))),
                reg_wr[i].dat_w.eq(Mux(mine, Cat(wr_data, reg_gen[i]), Cat(C(0xFFFFFFFF, 32), reg_gen[i]))),
                reg_wr[i].we.eq(mine | eng_stamp[i] | sc_we),
                overrun[i].eq(cleared & (n_now + n_prev >= (1 << GEN_BITS) - 1)),
            ]
            self.sync += [
                sc_hit.eq(port_free[i] & ~sc_done & ~mine),
                If(sc_done, sc_ptr.eq(Mux(sc_ptr == pw - 1, 0, sc_ptr + 1))),
                If((sc_done & (sc_ptr == pw - 1)) | pass_end[i],
                    n_prev.eq(n_now), n_now.eq(cleared),
                ).Elif(cleared & (n_now != 31),
                    n_now.eq(n_now + 1),
                ),
                If(cleared, reg_gen[i].eq(reg_gen[i] + 1)),
            ]

        # Data-in staging ------------------------------------------------------------------------------
        # Bytes gather in a word; the word is written when a byte for another word comes, or on an
        # explicit flush (program confirm, column change). Two bytes a cycle touch at most two words.
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
                byte_in.eq(din_valid[k] & in_page & ~self.busy),
                take.eq(byte_in & (s_ptr[k] < Mux(in_small, small_pb, pb))),
                s_fl[k].eq(take & (s_be[k] != 0) & (w != s_word[k])),
                If(take & (w != s_word[k]),
                    s_data[k + 1].eq(din_byte[k] << lane),
                    s_be[k + 1].eq(1 << s_ptr[k][:2]),
                    s_word[k + 1].eq(w),
                ).Elif(take,
                    s_data[k + 1].eq((s_data[k] & ~(C(0xFF, 32) << lane)) | (din_byte[k] << lane)),
                    s_be[k + 1].eq(s_be[k] | (1 << s_ptr[k][:2])),
                    s_word[k + 1].eq(w),
                ).Else(
                    s_data[k + 1].eq(s_data[k]), s_be[k + 1].eq(s_be[k]), s_word[k + 1].eq(s_word[k]),
                ),
                s_ptr[k + 1].eq(s_ptr[k] + byte_in),
            ]
        flush_req = Signal()      # Explicit flush of the staged word (set by the command logic).
        fl_data, fl_be = Signal(32), Signal(4)
        self.comb += [
            If(s_fl[0], fl_data.eq(s_data[0]), fl_be.eq(s_be[0]), fl_word.eq(s_word[0])
            ).Elif(s_fl[1], fl_data.eq(s_data[1]), fl_be.eq(s_be[1]), fl_word.eq(s_word[1])
            ).Else(fl_data.eq(stage), fl_be.eq(stage_be), fl_word.eq(stage_word)),
            fl_en.eq(s_fl[0] | s_fl[1] | (flush_req & (stage_be != 0))),
        ]
        self.sync += [
            If(clear_reg | flush_req,
                stage_be.eq(0),
            ).Else(
                stage.eq(s_data[2]), stage_be.eq(s_be[2]), stage_word.eq(s_word[2]),
            ),
            If(~clear_reg, in_ptr.eq(s_ptr[2])),
        ]
        self.comb += clear_phys.eq(phys(reg_sel, io_alt))
        self.sync += If(clear_reg, in_reg.eq(reg_sel), in_small.eq(mpnfm_on & (plane == 1)))
        self.comb += in_phys.eq(phys(in_reg, io_alt))
        # A data-in word is written in two cycles: its register word is read as it leaves the
        # staging, the bytes not written are taken from it the next cycle (FFh if the word is stale).
        fw_en, fw_data, fw_be, fw_word, fw_phys = Signal(), Signal(32), Signal(4), Signal(max=max(pw, 2)), Signal(phys_bits)
        fw_old = Signal(32)
        self.sync += [
            fw_en.eq(fl_en), fw_data.eq(fl_data), fw_be.eq(fl_be), fw_word.eq(fl_word), fw_phys.eq(in_phys),
        ]
        self.comb += fw_old.eq(Array(masked)[fw_phys])

        # Engine (array <-> page register) -------------------------------------------------------------
        eng_wr_en = Signal()
        # Random bit flips on array reads: a 32-bit Galois LFSR steps once per word read into a
        # page register; the word gets bit lfsr[20:16] flipped when lfsr[15:0] < flip_rate.
        lfsr = Signal(32, reset=LFSR_SEED)
        rand_mask = Signal(32)
        self.comb += rand_mask.eq(Mux(lfsr[:16] < self.flip_rate, 1 << lfsr[16:21], 0))
        self.sync += If(eng_wr_en, lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ LFSR_TAPS, lfsr >> 1)))
        # The storage side of the engine: per word, `eng_step` moves on; `eng_rw` says the array word
        # (`eng_rd_data`) and the register word of `eng_rw_word` are here now (READ writes the
        # register, PROGRAM re-stamps a stale register word); `eng_tail` covers the cycles after the
        # last step; `eng_fin` pulses once all of an operation's words are done.
        if storage == "bram":
            # One word a cycle: read the array (and the register) at eng_word, write the next cycle.
            self.comb += [
                eng_step.eq(~fw_en),
                eng_rw.eq(eng_pipe), eng_rw_word.eq(eng_pipe_r), eng_rd_data.eq(arr_rd.dat_r),
                eng_tail.eq(eng_pipe), eng_fin.eq(eng_pipe & ~eng_active),
                arr_rd.adr.eq(eng_base + eng_word),
                arr_wr.adr.eq(eng_pipe_a),
                arr_wr.dat_w.eq(Mux(eng_op == OP_ERASE, 0xFFFFFFFF, arr_rd.dat_r & reg_rd_data)),
                arr_wr.we.eq(eng_pipe & (eng_op != OP_READ)),
            ]
            self.sync += [
                # A data-in word still being written (program confirm) holds the engine for a cycle.
                eng_pipe.eq(eng_active & ~fw_en),
                eng_pipe_a.eq(eng_base + eng_word),
                eng_pipe_r.eq(eng_word),
            ]
        else:
            self._add_wishbone_engine(pw, npages, eng_active, eng_op, eng_base, eng_word, fw_en,
                                      reg_rd_data, eng_step, eng_rw, eng_rw_word, eng_rd_data, eng_tail, eng_fin)
        self.comb += [
            eng_wr_en.eq(eng_rw & (eng_op == OP_READ)),
            If(eng_wr_en,
                wr_en.eq(1), wr_word.eq(eng_rw_word), wr_data.eq(eng_rd_data ^ rand_mask),
                # (The BRAM engine writes a word a cycle after reading it: by then a multi-plane
                # read's engine may be on the next plane.)
                wr_plane.eq(eng_phys_q if storage == "bram" else eng_plane),
            ).Elif(flip_we,
                wr_en.eq(1), wr_word.eq(flip_word), wr_plane.eq(eng_plane),
                wr_data.eq(reg_rd_data ^ (1 << Cat(flip_i[:3], flip_pos[:2]))),
            ).Elif(fw_en,
                wr_en.eq(1), wr_word.eq(fw_word), wr_plane.eq(fw_phys),
                wr_data.eq(Cat(*[Mux(fw_be[b], fw_data[8*b:8*b+8], fw_old[8*b:8*b+8]) for b in range(4)])),
            ),
        ]
        last_word = Signal()
        self.comb += last_word.eq(eng_word == pw - 1)
        for i in range(nphys):
            self.comb += [
                eng_stamp[i].eq(eng_rw & (eng_op == OP_PROGRAM) & (eng_phys_q == i)
                                & (reg_rd[i].dat_r[32:] != reg_gen[i])),
                pass_end[i].eq(eng_active & eng_step & last_word & (eng_plane == i) & (eng_op != OP_ERASE)),
            ]

        def entry_base(r, erase):
            block = r[page_bits:page_bits + block_bits] if block_bits else 0
            page = r[:page_bits] if page_bits else 0
            return (block * ppb + Mux(erase, 0, page)) * pw
        flip_first = flip_position(0, pb)[0]
        self.sync += [
            If(timer != 0, timer.eq(timer - 1)),
            flip_we.eq(0),
            If(start,
                eng_active.eq(1),
                eng_op.eq(start_op),
                eng_idx.eq(0),
                eng_plane.eq(phys(q_reg[0], arr_alt)),
                eng_base.eq(entry_base(q_row[0], start_op == OP_ERASE)),
                eng_word.eq(0),
                eng_page.eq(0),
            ).Elif(eng_active & eng_step,
                If(last_word,
                    eng_word.eq(0),
                    If((eng_op == OP_ERASE) & (eng_page != ppb - 1),
                        eng_page.eq(eng_page + 1),
                        eng_base.eq(eng_base + pw),
                    ).Elif(eng_idx + 1 < eng_n,
                        eng_idx.eq(eng_idx + 1),
                        eng_page.eq(0),
                        eng_plane.eq(phys(q_reg[eng_idx + 1], arr_alt)),
                        eng_base.eq(entry_base(q_row[eng_idx + 1], eng_op == OP_ERASE)),
                    ).Else(
                        eng_active.eq(0),
                    ),
                ).Else(
                    eng_word.eq(eng_word + 1),
                ),
            ),
            # Injected bit flips, once the read copy has landed: read, then write, per flip.
            If(eng_fin & (eng_op == OP_READ) & (eng_n == 1) & (row == self.flip_row)
                    & (self.flip_count != 0),
                flipping.eq(1), flip_i.eq(0), flip_pos.eq(flip_first), flip_rd.eq(0),
            ).Elif(flipping & ~flip_we,
                flip_rd.eq(~flip_rd),
                If(flip_rd, flip_we.eq(1)),
            ),
            If(flip_we,
                flip_rd.eq(0),
                flip_i.eq(flip_i + 1),
                If(flip_pos + 97 >= pb, flip_pos.eq(flip_pos + 97 - pb)).Else(flip_pos.eq(flip_pos + 97)),
                If(flip_i == self.flip_count - 1, flipping.eq(0)),
            ),
        ]

        # Variant of the array times: SDW-NFM, and/or an MPNFM small-page operation (single-plane on
        # plane 1; a multi-plane operation takes the large page's times).
        sdw_on = Signal()
        small_op = Signal()
        variant = Signal(2)
        self.comb += [
            sdw_on.eq((arch == ARCH_SDW) if config.with_sdw else 0),
            small_op.eq(mpnfm_on & (eng_n == 1) & (plane == 1) if part.is_mpnfm else 0),
        ]
        if config.with_sdw and part.is_mpnfm:
            self.comb += variant.eq(Mux(sdw_on & small_op, 3, Mux(small_op, 2, Mux(sdw_on, 1, 0))))
        elif config.with_sdw:
            self.comb += variant.eq(sdw_on)
        elif part.is_mpnfm:
            self.comb += variant.eq(small_op)

        # Array time: the sequencer plays the operation's phases (MSB program on odd MLC pages).
        msb = Signal()
        self.comb += msb.eq((part.bits_per_cell > 1) & row_page[0] if page_bits else 0)
        self.comb += [
            seq.time_scale_shift.eq(self.time_scale_shift),
            seq.start.eq(start),
            seq.variant.eq(variant),
            Case(start_op, {
                OP_READ:    seq.op.eq(OP_READ_ARRAY),
                OP_PROGRAM: seq.op.eq(Mux(msb, OP_PROGRAM_MSB, OP_PROGRAM_LSB)),
                OP_ERASE:   seq.op.eq(OP_ERASE_ARRAY),
            }),
        ]

        # Output prefetcher ----------------------------------------------------------------------------
        # Up to 8 bytes of the selected source kept ready; a 32-bit word fetched per cycle; up to
        # 2 bytes leave per cycle.
        buf      = [Signal(8, name=f"obuf{i}") for i in range(8)]
        buf_ext  = Array(buf + [Signal(8, name="obuf_pad0"), Signal(8, name="obuf_pad1")])
        count    = Signal(4)
        ptr      = Signal(16)
        inflight = Signal()
        in_k     = Signal(3)
        in_off   = Signal(2)
        in_word  = Signal(14)
        restart  = Signal()
        restart_ptr = Signal(16)
        pop      = Signal(2)

        param_bytes = list(part.param_page(copies=3))
        param_rom = Memory(32, _words(len(param_bytes)), init=[
            int.from_bytes(bytes(param_bytes[i:i + 4]), "little") for i in range(0, len(param_bytes), 4)])
        param_rd = param_rom.get_port(async_read=False)
        self.specials += param_rom, param_rd
        ref = ReferenceDie(config)
        id_tables = [ref._id_bytes(onfi.READ_ID_JEDEC), ref._id_bytes(onfi.READ_ID_ONFI)]
        id_words = [[int.from_bytes(bytes(t).ljust(8, b"\0")[4 * w:4 * w + 4], "little") for w in range(2)]
                    for t in id_tables]
        id_onfi = Signal()
        self.comb += id_onfi.eq(addr0 == onfi.READ_ID_ONFI)

        src_len = Signal(16)
        self.comb += Case(out_src, {
            SRC_PAGE:    src_len.eq(pb),
            SRC_PARAM:   src_len.eq(len(param_bytes)),
            SRC_ID:      src_len.eq(Mux(id_onfi, len(id_tables[1]), len(id_tables[0]))),
            SRC_FEATURE: src_len.eq(4),
            "default":   src_len.eq(1),
        })
        wrap = Signal()
        self.comb += wrap.eq(out_src != SRC_PAGE)
        src_word = Signal(32)
        self.comb += Case(out_src, {
            SRC_PAGE:    src_word.eq(pref_rd_data),
            SRC_PARAM:   src_word.eq(param_rd.dat_r ^ Mux(
                             (self.param_corrupt >> in_word[6:8])[0] & (in_word[:6] == 2), 0x1, 0)),
            SRC_ID:      src_word.eq(Mux(in_word[0],
                             Mux(id_onfi, id_words[1][1], id_words[0][1]),
                             Mux(id_onfi, id_words[1][0], id_words[0][0]))),
            SRC_FEATURE: src_word.eq(Cat(*feat_p)),
            "default":   src_word.eq(0),
        })
        fetch   = Signal()
        fetch_k = Signal(3)
        left    = Signal(16)
        src_ok  = Signal()
        land    = Signal()
        new_count = Signal(4)
        self.comb += [
            pref_word.eq(Mux(ptr[2:] < pw, ptr[2:], 0)),
            param_rd.adr.eq(ptr[2:]),
            left.eq(src_len - ptr),
            fetch_k.eq(Mux(wrap & (left < 4 - ptr[:2]), left, 4 - ptr[:2])),
            src_ok.eq((out_src != SRC_NONE) & (out_src != SRC_STATUS) & ~self.busy & ~restart),
            land.eq(inflight & ~restart),
            new_count.eq(count - pop),
            # A data-in word being written to the bus-facing register takes its read port first.
            fetch.eq(src_ok & (new_count + Mux(land, in_k, 0) <= 4)
                     & ~((out_src == SRC_PAGE) & fl_en & (in_phys == out_phys))),
            pref_fetch.eq(fetch & (out_src == SRC_PAGE)),
        ]
        self.sync += [
            If(restart,
                count.eq(0), inflight.eq(0), ptr.eq(restart_ptr),
            ).Else(
                inflight.eq(fetch),
                If(fetch,
                    in_k.eq(fetch_k), in_off.eq(ptr[:2]), in_word.eq(ptr[2:]),
                    If(wrap & (fetch_k == left), ptr.eq(0)).Else(ptr.eq(ptr + fetch_k)),
                ),
                count.eq(new_count + Mux(land, in_k, 0)),
            ),
        ]
        for i in range(8):
            idx = Signal(4, name=f"land_idx{i}")
            byte = Signal(8, name=f"land_byte{i}")
            past_end = Signal(name=f"past_end{i}")
            self.comb += [
                idx.eq(i - new_count + in_off),
                byte.eq(Array(src_word[8 * j:8 * j + 8] for j in range(4))[idx[:2]]),
                past_end.eq((out_src == SRC_PAGE) & ((in_word << 2) + idx[:2] >= Mux(out_small, small_pb, pb))),
            ]
            self.sync += If(~restart,
                If(land & (i >= new_count) & (i < new_count + in_k),
                    buf[i].eq(Mux(past_end, 0, byte)),
                ).Else(
                    buf[i].eq(buf_ext[i + pop]),
                ),
            )

        # Bus outputs ------------------------------------------------------------------------------------
        give = [Signal(name=f"give{p}") for p in range(2)]
        first_byte, second_byte = Signal(8), Signal(8)
        dout      = Signal(8)    # Async: the byte of the last RE# falling edge stays on DQ.
        dqs_level = Signal()
        phase_byte = [Signal(8, name=f"phase_byte{p}") for p in range(2)]
        phase_dqs  = [Signal(name=f"phase_dqs{p}") for p in range(2)]
        is_status = Signal()
        ardy = Signal()
        self.comb += ardy.eq(~array_busy & (timer == 0))
        self.comb += [
            is_status.eq(out_src == SRC_STATUS),
            If(is_status,
                give[0].eq(dout_req[0]), give[1].eq(dout_req[1]), pop.eq(0),
            ).Elif(out_src != SRC_NONE,
                give[0].eq(dout_req[0] & (count >= 1)),
                give[1].eq(dout_req[1] & (count >= Mux(give[0], 2, 1))),
                pop.eq(give[0] + give[1]),
            ),
            first_byte.eq(Mux(is_status, self.status, buf[0])),
            second_byte.eq(Mux(is_status, self.status, Mux(give[0], buf[1], buf[0]))),
            If(nvddr,
                phase_byte[0].eq(Mux(give[0], first_byte, 0)),
                phase_byte[1].eq(Mux(give[1], second_byte, 0)),
                phase_dqs[0].eq(dqs_level ^ give[0]),
                phase_dqs[1].eq(dqs_level ^ give[0] ^ give[1]),
            ).Else(
                phase_byte[0].eq(Mux(give[0], first_byte, dout)),
                phase_byte[1].eq(Mux(give[1], second_byte, Mux(give[0], first_byte, dout))),
            ),
            bus.dq_i.eq(Mux(selected, Cat(phase_byte[0], phase_byte[1]), 0)),
            bus.dqs_i.eq(Mux(selected & nvddr, Cat(phase_dqs[0], phase_dqs[1]), 0)),
            bus.rb_n.eq(~self.busy),
            self.status.eq(Cat(fail & ardy, failc & ~self.busy, 0, 0, 0, ardy, ~self.busy, bus.wp_n)),
        ]
        bus_unit = int(round(waveforms.BUS_CURRENT * (1 << I_FRAC_BITS)))
        bytes_moved = Signal(2)
        self.comb += [
            bytes_moved.eq(give[0] + give[1] + din_valid[0] + din_valid[1]),
            self.current.eq(seq.current + bytes_moved * bus_unit),
        ]
        self.sync += [
            If(give[1], dout.eq(second_byte)).Elif(give[0], dout.eq(first_byte)),
            dqs_level.eq(Mux(nvddr, phase_dqs[1], 0)),
        ]

        # Commands ----------------------------------------------------------------------------------------
        # Why the addressed page cannot join the queued ones (the reference model's order).
        confirm_write = Signal()
        confirm_erase = Signal()
        entry_reason  = Signal(4)
        final_reason  = Signal(4)
        ptype = (lambda pg: pg[0]) if part.bits_per_cell > 1 and page_bits else (lambda pg: 0)
        self.comb += [
            confirm_erase.eq((latch_byte == onfi.CMD_ERASE_CONFIRM) | (latch_byte == onfi.CMD_ERASE_MULTIPLANE)),
            confirm_write.eq(confirm_erase | (latch_byte == onfi.CMD_PROGRAM_CONFIRM)
                             | (latch_byte == onfi.CMD_PROGRAM_MULTIPLANE)),
            If(~row_valid, entry_reason.eq(REASON_RANGE)
            ).Elif(confirm_write & ~bus.wp_n, entry_reason.eq(REASON_WP)
            ).Elif(confirm_write & bad_block, entry_reason.eq(REASON_BAD_BLOCK)
            ).Elif((q_n != 0) & _bit(q_used, reg_sel), entry_reason.eq(REASON_PLANE_REPEAT)
            ).Elif((q_n != 0) & ~confirm_erase & (arch == ARCH_CNFM) & (row_page != q_page),
                entry_reason.eq(REASON_PLANE_ADDR)
            ).Elif((q_n != 0) & ~confirm_erase & (arch != ARCH_CNFM) & (ptype(row_page) != ptype(q_page)),
                entry_reason.eq(REASON_PAGE_TYPE)
            ).Else(entry_reason.eq(NO_REASON)),
            final_reason.eq(Mux(q_reason != NO_REASON, q_reason, entry_reason)),
        ]
        cache_ok = Signal()
        last_row = Signal(8 * row_cyc)
        cache_r  = Signal(reg_bits)
        prog_row = Signal(8 * row_cyc)
        prog_reg = Signal(reg_bits)
        push = [
            q_row[q_n].eq(row), q_reg[q_n].eq(reg_sel), q_used.eq(q_used | (1 << reg_sel)),
            q_n.eq(q_n + 1), If(q_n == 0, q_page.eq(row_page)),
            If(q_reason == NO_REASON, q_reason.eq(entry_reason)),
        ]
        def finish(op, inject=None):
            """Final confirm: run the queued pages and this one, or fail with the first reason."""
            return [
                q_row[q_n].eq(row), q_reg[q_n].eq(reg_sel), arr_alt.eq(io_alt),
                cache_ok.eq((op == OP_READ) & (q_n == 0) & (final_reason == NO_REASON)),
                last_row.eq(row), cache_r.eq(reg_sel),
                q_n.eq(0), q_used.eq(0), q_reason.eq(NO_REASON), failc.eq(fail),
                If(final_reason != NO_REASON,
                    fail.eq(1), reason_inc.eq(1 << final_reason), timer.eq(t_fail),
                ).Elif(inject if inject is not None else 0,
                    *([inject.eq(0)] if inject is not None else []),
                    fail.eq(1), reason_inc.eq(1 << REASON_INJECTED), timer.eq(t_fail),
                ).Else(
                    fail.eq(0), start.eq(1), start_op.eq(op), eng_n.eq(q_n + 1),
                ),
            ]
        reason_inc = Signal(len(REASON_NAMES))
        for i, r in enumerate(self.reasons):
            self.sync += If(reason_inc[i], r.eq(r + 1))
        col_done  = Signal()
        page_done = Signal()
        rows_done = Signal()
        self.comb += [
            col_done.eq(naddr == col_cyc),
            page_done.eq(naddr == col_cyc + row_cyc),
            rows_done.eq(naddr == row_cyc),
        ]
        is_cmd = lambda c: cmd == c
        feat_apply = Signal()
        self.sync += [
            start.eq(0),
            restart.eq(0),
            reason_inc.eq(0),
            clear_reg.eq(0),
            flush_req.eq(0),
            feat_apply.eq(0),
            If(self.inject_program_fail, inj_prog.eq(1)),
            If(self.inject_erase_fail, inj_erase.eq(1)),
            # Feature parameters (SET FEATURES data): one byte a cycle, or two in NV-DDR (one per DQS edge).
            If(in_feat & (din_valid[0] | din_valid[1]) & ~self.busy,
                *[If(din_valid[0] & (feat_n == k), feat_p[k].eq(din_byte[0])) for k in range(4)],
                *[If(din_valid[1] & (feat_n + din_valid[0] == k), feat_p[k].eq(din_byte[1])) for k in range(4)],
                feat_n.eq(feat_n + din_valid[0] + din_valid[1]),
                If(feat_n + din_valid[0] + din_valid[1] >= 4, in_feat.eq(0), feat_apply.eq(1)),
            ),
            If(feat_apply,
                If(feat_addr == onfi.FEATURE_TIMING_MODE,
                    self.timing_mode.eq(feat_p[0][:4]),
                    self.data_interface.eq(feat_p[0][4:6]),
                ),
                timer.eq(t_feat),
            ),
            If(cmd_ev,
                If(latch_byte == onfi.CMD_RESET,
                    cmd.eq(0), out_src.eq(SRC_NONE), in_page.eq(0), in_feat.eq(0),
                    fail.eq(0), failc.eq(0), timer.eq(t_rst),
                    q_n.eq(0), q_used.eq(0), q_reason.eq(NO_REASON), cache_ok.eq(0),
                ).Elif(latch_byte == onfi.CMD_READ_STATUS,
                    out_src.eq(SRC_STATUS),
                ).Elif(latch_byte == onfi.CMD_READ_STATUS_ENH,
                    cmd.eq(latch_byte), naddr.eq(0), out_src.eq(SRC_NONE),
                ).Elif(self.busy,
                    reason_inc.eq(1 << REASON_SEQUENCE),
                ).Else(Case(latch_byte, {
                    onfi.CMD_READ_CACHE_SEQ: [
                        If(cache_ok if cache else 0, pending.eq(PEND_READ_NEXT)
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_READ_CACHE_END: [
                        If(cache_ok if cache else 0, pending.eq(PEND_READ_END)
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_PROGRAM_CACHE: [
                        cmd.eq(0), in_page.eq(0),
                        If(((is_cmd(onfi.CMD_PROGRAM) & page_done) | (is_cmd(onfi.CMD_CHANGE_WRITE_COL) & col_done))
                                & (q_n == 0) if cache else 0,
                            flush_req.eq(1), pending.eq(PEND_PROG_CACHE), prog_row.eq(row), prog_reg.eq(reg_sel),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_READ_CONFIRM: [
                        cmd.eq(0),
                        If(is_cmd(onfi.CMD_READ) & page_done & ~array_busy,
                            out_src.eq(SRC_PAGE), page_ok.eq(1), restart.eq(1), restart_ptr.eq(col),
                            out_reg.eq(reg_sel), out_small.eq(mpnfm_on & (plane == 1)), *finish(OP_READ),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_READ_MULTIPLANE: [
                        cmd.eq(0),
                        If(is_cmd(onfi.CMD_READ) & page_done & (q_n < nregs) & ~array_busy,
                            out_src.eq(SRC_PAGE), page_ok.eq(1), restart.eq(1), restart_ptr.eq(col),
                            out_reg.eq(reg_sel), out_small.eq(mpnfm_on & (plane == 1)), *push, timer.eq(t_dbsy),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_CHANGE_READ_COL_2: [
                        cmd.eq(0),
                        If(is_cmd(onfi.CMD_CHANGE_READ_COL) & col_done,
                            out_src.eq(SRC_PAGE), page_ok.eq(1), restart.eq(1), restart_ptr.eq(col),
                        ).Elif(is_cmd(onfi.CMD_CHANGE_READ_COL_ENH) & page_done,
                            out_src.eq(SRC_PAGE), page_ok.eq(1), restart.eq(1), restart_ptr.eq(col),
                            out_reg.eq(reg_sel), out_small.eq(mpnfm_on & (plane == 1)),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_PROGRAM_CONFIRM: [
                        cmd.eq(0), in_page.eq(0),
                        If(((is_cmd(onfi.CMD_PROGRAM) & page_done) | (is_cmd(onfi.CMD_CHANGE_WRITE_COL) & col_done))
                                & array_busy,
                            # After PROGRAM CACHE: wait for the array, then program.
                            flush_req.eq(1), pending.eq(PEND_PROG_FINAL), cmd.eq(onfi.CMD_PROGRAM),
                        ).Elif((is_cmd(onfi.CMD_PROGRAM) & page_done) | (is_cmd(onfi.CMD_CHANGE_WRITE_COL) & col_done),
                            flush_req.eq(1), *finish(OP_PROGRAM, inj_prog),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_PROGRAM_MULTIPLANE: [
                        cmd.eq(0), in_page.eq(0),
                        If(((is_cmd(onfi.CMD_PROGRAM) & page_done) | (is_cmd(onfi.CMD_CHANGE_WRITE_COL) & col_done))
                                & (q_n < nregs) & ~array_busy,
                            flush_req.eq(1), *push, timer.eq(t_dbsy),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_ERASE_CONFIRM: [
                        cmd.eq(0),
                        If(is_cmd(onfi.CMD_ERASE) & rows_done & ~array_busy,
                            *finish(OP_ERASE, inj_erase),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_ERASE_MULTIPLANE: [
                        cmd.eq(0),
                        If(is_cmd(onfi.CMD_ERASE) & rows_done & (q_n < nregs) & ~array_busy,
                            *push, timer.eq(t_dbsy),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_CHANGE_WRITE_COL: [
                        If((is_cmd(onfi.CMD_PROGRAM) & page_done) | (is_cmd(onfi.CMD_CHANGE_WRITE_COL) & col_done),
                            cmd.eq(latch_byte), naddr.eq(0), flush_req.eq(1), in_page.eq(0),
                        ).Else(reason_inc.eq(1 << REASON_SEQUENCE)),
                    ],
                    onfi.CMD_READ: [
                        # Either a new READ (an address follows) or, after a status poll, back to
                        # the page data where it was left.
                        cmd.eq(latch_byte), naddr.eq(0), in_page.eq(0), in_feat.eq(0),
                        out_src.eq(Mux(page_ok, SRC_PAGE, SRC_NONE)),
                    ],
                    "default": [
                        cmd.eq(latch_byte), naddr.eq(0), out_src.eq(SRC_NONE), in_page.eq(0),
                        in_feat.eq(0), page_ok.eq(0),
                        If((latch_byte != onfi.CMD_CHANGE_READ_COL) & (latch_byte != onfi.CMD_CHANGE_READ_COL_ENH),
                            cache_ok.eq(0)),
                    ],
                })),
            ).Elif(addr_ev & (~self.busy | is_cmd(onfi.CMD_READ_STATUS_ENH)),
                naddr.eq(naddr + 1),
                If(naddr == 0, addr0.eq(latch_byte)),
                If(is_cmd(onfi.CMD_READ), out_src.eq(SRC_NONE), page_ok.eq(0)),
                If((is_cmd(onfi.CMD_READ) | is_cmd(onfi.CMD_PROGRAM) | is_cmd(onfi.CMD_CHANGE_READ_COL)
                        | is_cmd(onfi.CMD_CHANGE_READ_COL_ENH) | is_cmd(onfi.CMD_CHANGE_WRITE_COL)) & (naddr < col_cyc),
                    Case(naddr, {i: col[8 * i:8 * i + 8].eq(latch_byte) for i in range(col_cyc)}),
                ).Elif(is_cmd(onfi.CMD_READ) | is_cmd(onfi.CMD_PROGRAM) | is_cmd(onfi.CMD_CHANGE_READ_COL_ENH),
                    Case(naddr - col_cyc, {i: row[8 * i:8 * i + 8].eq(latch_byte) for i in range(row_cyc)}),
                ).Elif(is_cmd(onfi.CMD_ERASE) | is_cmd(onfi.CMD_READ_STATUS_ENH),
                    Case(naddr, {i: row[8 * i:8 * i + 8].eq(latch_byte) for i in range(row_cyc)}),
                ),
                Case(cmd, {
                    onfi.CMD_READ_ID: If(naddr == 0,
                        out_src.eq(SRC_ID), restart.eq(1), restart_ptr.eq(0)),
                    onfi.CMD_READ_PARAM_PAGE: If(naddr == 0,
                        out_src.eq(SRC_PARAM), restart.eq(1), restart_ptr.eq(0),
                        timer.eq(t_r >> self.time_scale_shift)),
                    onfi.CMD_GET_FEATURES: If(naddr == 0,
                        feat_addr.eq(latch_byte), out_src.eq(SRC_FEATURE), restart.eq(1), restart_ptr.eq(0),
                        timer.eq(t_feat),
                        feat_p[0].eq(Mux(latch_byte == onfi.FEATURE_TIMING_MODE,
                                         Cat(self.timing_mode, self.data_interface), 0)),
                        [feat_p[i].eq(0) for i in range(1, 4)]),
                    onfi.CMD_SET_FEATURES: If(naddr == 0,
                        feat_addr.eq(latch_byte), in_feat.eq(1), feat_n.eq(0)),
                    onfi.CMD_READ_STATUS_ENH: If(naddr == row_cyc - 1, out_src.eq(SRC_STATUS)),
                    onfi.CMD_PROGRAM: If(naddr == col_cyc + row_cyc - 1,
                        in_page.eq(1), clear_reg.eq(1)),
                    onfi.CMD_CHANGE_WRITE_COL: If(naddr == col_cyc - 1, in_page.eq(1)),
                }),
            ),
        ]
        # Data-in pointer: the column given by the address of 80h or 85h.
        last_col = Signal(8 * col_cyc)
        self.comb += last_col.eq(Cat(col[:8 * (col_cyc - 1)], latch_byte) if col_cyc > 1 else latch_byte)
        self.sync += [
            If(addr_ev & is_cmd(onfi.CMD_PROGRAM) & (naddr == col_cyc + row_cyc - 1), in_ptr.eq(col)),
            If(addr_ev & is_cmd(onfi.CMD_CHANGE_WRITE_COL) & (naddr == col_cyc - 1), in_ptr.eq(last_col)),
        ]
        self.sync += If(start, Case(start_op, {
            OP_READ:    self.ops["read"].eq(self.ops["read"] + 1),
            OP_PROGRAM: self.ops["program"].eq(self.ops["program"] + 1),
            OP_ERASE:   self.ops["erase"].eq(self.ops["erase"] + 1),
        }))

        # Cache commands run once the array is free -----------------------------------------------------
        def row_ok(r):
            blk = r[page_bits:page_bits + block_bits] if block_bits else 0
            pg = r[:page_bits] if page_bits else 0
            return (r[page_bits + block_bits:] == 0) & (blk < part.blocks_per_lun) & (pg < ppb)
        def row_bad(r):
            blk = r[page_bits:page_bits + block_bits] if block_bits else 0
            return reduce(or_, [blk == b for b in config.bad_blocks], 0)
        def set_bit(vec, index, value):
            return vec.eq((vec & ~(1 << index)) | (value << index))
        next_row = Signal(8 * row_cyc)
        self.comb += next_row.eq(last_row + 1)
        run_pending = Signal()
        self.comb += run_pending.eq((pending != 0) & ~array_busy & (timer == 0))
        if cache:
            self.sync += [
                If(~array_busy, cache_running.eq(0)),
                If(run_pending,
                    pending.eq(0),
                    Case(pending, {
                        PEND_READ_NEXT: [
                            set_bit(io_alt, cache_r, _bit(arr_alt, cache_r)),
                            set_bit(arr_alt, cache_r, ~_bit(arr_alt, cache_r)),
                            out_reg.eq(cache_r), out_src.eq(SRC_PAGE), page_ok.eq(1),
                            restart.eq(1), restart_ptr.eq(0), timer.eq(t_dbsy),
                            If(row_ok(next_row),
                                q_row[0].eq(next_row), q_reg[0].eq(cache_r), eng_n.eq(1),
                                start.eq(1), start_op.eq(OP_READ), cache_running.eq(1), last_row.eq(next_row),
                            ).Else(
                                cache_ok.eq(0), fail.eq(1), reason_inc.eq(1 << REASON_RANGE),
                            ),
                        ],
                        PEND_READ_END: [
                            set_bit(io_alt, cache_r, _bit(arr_alt, cache_r)),
                            out_reg.eq(cache_r), out_src.eq(SRC_PAGE), page_ok.eq(1),
                            restart.eq(1), restart_ptr.eq(0), timer.eq(t_dbsy), cache_ok.eq(0),
                        ],
                        PEND_PROG_CACHE: [
                            failc.eq(fail), timer.eq(t_dbsy),
                            If(~row_ok(prog_row),
                                fail.eq(1), reason_inc.eq(1 << REASON_RANGE),
                            ).Elif(~bus.wp_n,
                                fail.eq(1), reason_inc.eq(1 << REASON_WP),
                            ).Elif(row_bad(prog_row),
                                fail.eq(1), reason_inc.eq(1 << REASON_BAD_BLOCK),
                            ).Elif(inj_prog,
                                inj_prog.eq(0), fail.eq(1), reason_inc.eq(1 << REASON_INJECTED),
                            ).Else(
                                fail.eq(0),
                                set_bit(arr_alt, prog_reg, _bit(io_alt, prog_reg)),
                                set_bit(io_alt, prog_reg, ~_bit(io_alt, prog_reg)),
                                q_row[0].eq(prog_row), q_reg[0].eq(prog_reg), eng_n.eq(1),
                                start.eq(1), start_op.eq(OP_PROGRAM), cache_running.eq(1),
                            ),
                        ],
                        PEND_PROG_FINAL: [cmd.eq(0), *finish(OP_PROGRAM, inj_prog)],
                    }),
                ),
            ]

        self._add_timing_checker(cmd_ev, addr_ev, latch_byte, din_valid, dout_req, cmd, naddr, is_status)

    def _add_wishbone_engine(self, pw, npages, eng_active, eng_op, eng_base, eng_word, fw_en,
                             reg_rd_data, eng_step, eng_rw, eng_rw_word, eng_rd_data, eng_tail, eng_fin):
        """Array in memory behind a Wishbone master (a DRAM region on boards with DRAM).

        One word at a time: read the array word (READ, PROGRAM), then either write it into the page
        register (READ) or write it back ANDed with the register word (PROGRAM); ERASE only writes
        FFFFFFFFh. Any latency and back-pressure of the bus is fine: the die stays busy until the
        last word is through. At reset the die formats its region (every word FFFFFFFFh, the factory
        bad-block markers written) with R/B# low, as a die is busy after power-on.
        """
        from litex.soc.interconnect import wishbone
        self.storage_bus = bus = wishbone.Interface(data_width=32, address_width=32, addressing="word")
        cfg, part = self.config, self.config.part
        base = self.storage_base // 4
        markers = {block * part.pages_per_block * pw + part.page_size // 4:
                   0xFFFFFFFF & ~(0xFF << (8 * (part.page_size % 4))) for block in cfg.bad_blocks}
        fmt_word = Signal(max=max(npages * pw, 2))
        fmt_data = Signal(32)
        data = Signal(32)
        self.comb += [
            fmt_data.eq(0xFFFFFFFF),
            Case(fmt_word, {w: fmt_data.eq(v) for w, v in markers.items()}),
            eng_rw_word.eq(eng_word),
            eng_rd_data.eq(data),
            bus.sel.eq(0xF),
        ]
        self.submodules.storage_fsm = fsm = FSM(reset_state="FORMAT")
        fsm.act("FORMAT",
            eng_tail.eq(1),
            bus.cyc.eq(1), bus.stb.eq(1), bus.we.eq(1),
            bus.adr.eq(base + fmt_word), bus.dat_w.eq(fmt_data),
            If(bus.ack,
                NextValue(fmt_word, fmt_word + 1),
                If(fmt_word == npages * pw - 1, NextState("IDLE")),
            ),
        )
        fsm.act("IDLE",
            If(eng_active & ~fw_en,
                If(eng_op == OP_ERASE, NextState("WRITE")).Else(NextState("READ")),
            ),
        )
        fsm.act("READ",
            eng_tail.eq(1),
            bus.cyc.eq(1), bus.stb.eq(1), bus.adr.eq(base + eng_base + eng_word),
            If(bus.ack,
                NextValue(data, bus.dat_r),
                NextState("REGISTER"),
            ),
        )
        # The engine's register port has been reading eng_word since the step: its word is here.
        fsm.act("REGISTER",
            eng_tail.eq(1), eng_rw.eq(1),
            If(eng_op == OP_READ,
                eng_step.eq(1), NextState("DONE"),
            ).Else(
                NextValue(data, data & reg_rd_data), NextState("WRITE"),
            ),
        )
        fsm.act("WRITE",
            eng_tail.eq(1),
            bus.cyc.eq(1), bus.stb.eq(1), bus.we.eq(1), bus.adr.eq(base + eng_base + eng_word),
            bus.dat_w.eq(Mux(eng_op == OP_ERASE, 0xFFFFFFFF, data)),
            If(bus.ack, eng_step.eq(1), NextState("DONE")),
        )
        # One cycle for the step to land (the register port moves to the next word).
        fsm.act("DONE",
            eng_tail.eq(1),
            If(~eng_active, eng_fin.eq(1)),
            NextState("IDLE"),
        )

    def _array_init(self, pw):
        """Erased array (FFh) with the factory bad-block markers; None when all FFh is not needed."""
        cfg, part = self.config, self.config.part
        words = [0xFFFFFFFF] * (part.pages_per_block * part.blocks_per_lun * pw)
        for block in cfg.bad_blocks:
            w, lane = divmod(part.page_size, 4)
            words[block * part.pages_per_block * pw + w] &= ~(0xFF << (8 * lane)) & 0xFFFFFFFF
        return words

    def _add_timing_checker(self, cmd_ev, addr_ev, latch_byte, din_valid, dout_req, cmd, naddr, is_status):
        config, part = self.config, self.config.part
        c = lambda ns: config.cycles(t_ns=ns, scaled=False)
        limits = {"t_whr": c(onfi.T_WHR_NS), "t_adl": c(part.t_adl), "t_ccs": c(part.t_ccs),
                  "t_rr": c(onfi.T_RR_NS), "t_wb": c(onfi.T_WB_NS)}
        self.timing_limits = limits
        top = 2**16 - 1
        since = {n: Signal(16, reset=top, name=f"since_{n}") for n in ("cmdaddr", "lastaddr", "colchg", "ready", "confirm")}
        data_open, ccs_in, ccs_out, dout_open, was_busy = Signal(), Signal(), Signal(), Signal(), Signal()
        din_any, dout_any = Signal(), Signal()
        col_cyc, row_cyc = part.column_cycles, part.row_cycles
        self.comb += din_any.eq(din_valid[0] | din_valid[1]), dout_any.eq(dout_req[0] | dout_req[1])
        v = self.violations
        inc = lambda n: v[n].eq(v[n] + 1)
        confirm = reduce(or_, [latch_byte == b for b in (onfi.CMD_READ_CONFIRM, onfi.CMD_PROGRAM_CONFIRM,
                                                         onfi.CMD_ERASE_CONFIRM, onfi.CMD_RESET)])
        self.sync += [
            [If(s != top, s.eq(s + 1)) for s in since.values()],
            was_busy.eq(self.busy),
            If(was_busy & ~self.busy, since["ready"].eq(0)),
            If(cmd_ev | addr_ev, since["cmdaddr"].eq(0), dout_open.eq(1)),
            If(addr_ev & (cmd == onfi.CMD_PROGRAM) & (naddr == col_cyc + row_cyc - 1),
                since["lastaddr"].eq(0), data_open.eq(1)),
            If(addr_ev & (cmd == onfi.CMD_CHANGE_WRITE_COL) & (naddr == col_cyc - 1),
                since["colchg"].eq(0), ccs_in.eq(1)),
            If(cmd_ev & (latch_byte == onfi.CMD_CHANGE_READ_COL_2),
                since["colchg"].eq(0), ccs_out.eq(1)),
            If(cmd_ev & confirm, since["confirm"].eq(0)),
            # tWB: no status poll in the first tWB after a confirm.
            If(cmd_ev & (latch_byte == onfi.CMD_READ_STATUS) & (since["confirm"] < limits["t_wb"]), inc("t_wb")),
            If(din_any,
                data_open.eq(0), ccs_in.eq(0),
                If(data_open & (since["lastaddr"] < limits["t_adl"]), inc("t_adl")),
                If(ccs_in & (since["colchg"] < limits["t_ccs"]), inc("t_ccs")),
            ),
            If(dout_any,
                dout_open.eq(0), ccs_out.eq(0),
                If(ccs_out,
                    If(since["colchg"] < limits["t_ccs"], inc("t_ccs")),
                ).Elif(dout_open & (since["cmdaddr"] < limits["t_whr"]), inc("t_whr")),
                If(~is_status & (since["ready"] < limits["t_rr"]), inc("t_rr")),
            ),
        ]

    def add_csr(self):
        self._control = CSRStorage(fields=[
            CSRField("inject_program_fail", size=1, pulse=True, description="Fail the next program."),
            CSRField("inject_erase_fail",   size=1, pulse=True, description="Fail the next erase."),
            CSRField("time_scale_shift",    size=5, offset=8,
                     description="Divide array times by 2**n more (simulation only)."),
            CSRField("arch",                size=2, offset=16, description="Plane architecture.",
                     values=[("0", "CNFM"), ("1", "DW-NFM"), ("2", "SDW-NFM (DW-NFM unless built with subplane registers)")]),
            CSRField("mpnfm",               size=1, offset=20,
                     description="MPNFM: plane 1 uses the part's small pages (MPNFM-capable parts)."),
            CSRField("param_corrupt",       size=3, offset=24,
                     description="Parameter page copies read with a flipped byte (bad CRC), one bit per copy."),
        ], description="Die control: fault injection, time scale, plane architecture.")
        self._flip_rate = CSRStorage(16, description="Random bit flips on array reads: probability per "
            "32-bit word, in 1/65536 (0: none).")
        self.comb += self.flip_rate.eq(self._flip_rate.storage)
        self._flip = CSRStorage(fields=[
            CSRField("row",   size=24, description="Row whose reads get bit flips."),
            CSRField("count", size=len(self.flip_count), offset=24, description="Bit flips per read (0: none)."),
        ], description="Bit flips injected on reads of one row.")
        self._state = CSRStatus(fields=[
            CSRField("busy",        size=1, description="An array operation is running."),
            CSRField("interface",   size=2, offset=4, description="Data interface.",
                     values=[("0", "async SDR"), ("1", "NV-DDR"), ("3", "sync SDR")]),
            CSRField("timing_mode", size=4, offset=8, description="Timing mode set by SET FEATURES."),
            CSRField("status",      size=8, offset=16, description="ONFI status register."),
        ], description="Die state.")
        self.comb += [
            self.inject_program_fail.eq(self._control.fields.inject_program_fail),
            self.inject_erase_fail.eq(self._control.fields.inject_erase_fail),
            self.time_scale_shift.eq(self._control.fields.time_scale_shift),
            self.arch.eq(self._control.fields.arch),
            self.mpnfm.eq(self._control.fields.mpnfm),
            self.param_corrupt.eq(self._control.fields.param_corrupt),
            self.flip_row.eq(self._flip.fields.row),
            self.flip_count.eq(self._flip.fields.count),
            self._state.fields.busy.eq(self.busy),
            self._state.fields.interface.eq(self.data_interface),
            self._state.fields.timing_mode.eq(self.timing_mode),
            self._state.fields.status.eq(self.status),
        ]
        for name, sig in self.violations.items():
            csr = CSRStatus(16, name=f"viol_{name}", description=f"Host violations of {name}.")
            setattr(self, f"_viol_{name}", csr)
            self.comb += csr.status.eq(sig)
        for i, sig in enumerate(self.reasons):
            csr = CSRStatus(16, name=f"fail_reason{i}", description=f"Failed operations: {REASON_NAMES[i]}.")
            setattr(self, f"_fail_reason{i}", csr)
            self.comb += csr.status.eq(sig)
        self._reg_overruns = CSRStatus(16, description="Times a page register was cleared (80h) 16 times "
            "within two scrubber sweeps, faster than its generation tags are re-stamped (0 in normal use).")
        self.comb += self._reg_overruns.status.eq(self.reg_overruns)
        for name, sig in self.ops.items():
            csr = CSRStatus(32, name=f"ops_{name}", description=f"{name} operations started.")
            setattr(self, f"_ops_{name}", csr)
            self.comb += csr.status.eq(sig)
