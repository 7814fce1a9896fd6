"""Command decoder of the die: ONFI commands and addresses to array operations, data paths and status."""

from functools import reduce
from operator import add

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.common import T_FAIL_NS, ARCH_CNFM, ARCH_DW, ARCH_SDW, SUBPLANES, REASON_NAMES, REASON_RANGE, \
    REASON_WP, REASON_BAD_BLOCK, REASON_INJECTED, REASON_SEQUENCE, REASON_PLANE_ADDR, REASON_PAGE_TYPE, \
    REASON_PLANE_REPEAT
from nandlab.nand_model.die.timing import mode_values, die_mode_timings
from nandlab.nand_model.die.common import SRC_NONE, SRC_STATUS, SRC_ID, SRC_PARAM, SRC_FEATURE, SRC_PAGE, \
    OP_READ, OP_PROGRAM, OP_ERASE, NO_REASON, PEND_READ_NEXT, PEND_READ_END, PEND_PROG_CACHE, PEND_PROG_FINAL, \
    bit, row_page, row_block, row_in_range, row_bad


class NandLabDieDecoder(LiteXModule):
    """Decodes command and address cycles (`edges`), keeps the die's state (busy time, FAIL, the
    multi-plane queue, cache commands waiting for the array) and starts array operations.

    Drives the die's status, R/B#, data interface, timing mode, failure reasons and operation
    counters (`die`); the other parts follow its outputs below."""
    def __init__(self, config, die, edges):
        part     = config.part
        col_cyc  = part.column_cycles
        row_cyc  = part.row_cycles
        nregs    = config.registers
        reg_bits = max((nregs - 1).bit_length(), 1)
        self.array_busy = Signal()            # Input: the engine, the sequencer or bit flips at work.

        # Command, address, and the row they name.
        self.cmd       = Signal(8)
        self.naddr     = Signal(4)
        self.col       = Signal(8 * col_cyc)
        self.row       = Signal(8 * row_cyc)
        self.addr0     = Signal(8)
        self.row_page  = Signal(max(config.page_bits, 1))
        self.row_block = Signal(max(config.block_bits, 1))
        self.row_valid = Signal()
        self.bad_block = Signal()
        self.plane     = Signal(max(config.plane_bits, 1))
        self.arch      = Signal(2)            # The die's architecture (DW-NFM for SDW-NFM when not built).
        self.reg_sel   = Signal(reg_bits)     # Page register of `row` under the architecture.
        self.mpnfm_on  = Signal()             # MPNFM part in MPNFM mode: plane 1 has small pages.
        self.prog_addr_end = Signal()         # Pulse: last address cycle of PROGRAM (80h).
        self.wcol_addr_end = Signal()         # Pulse: last address cycle of CHANGE WRITE COLUMN (85h).
        self.din_col   = Signal(8 * col_cyc)  # With them: the column data in starts at.
        # Data out (output path) and data in (page registers).
        self.out_src     = Signal(3)
        self.out_reg     = Signal(reg_bits)   # Register giving data out (30h, 06h-E0h).
        self.out_small   = Signal()
        self.restart     = Signal()           # Pulse: data out starts over at `restart_ptr`.
        self.restart_ptr = Signal(16)
        self.feat_p      = Array(Signal(8, name=f"feat_p{i}") for i in range(4))
        self.in_page     = Signal()           # Data in goes to the page register.
        self.clear_reg   = Signal()           # Pulse: 80h address complete, the register reads FFh again.
        self.flush_req   = Signal()           # Pulse: write the staged data-in word now.
        self.io_alt      = Signal(nregs)      # Which of a register pair faces the bus.
        self.arr_alt     = Signal(nregs)      # Which of a register pair faces the array.
        # Array operation (engine and sequencer): `start` pulses with the operation; the engine
        # moves `n_pages` queued pages (q_row / q_reg) one after another.
        self.start    = Signal()
        self.start_op = Signal(2)
        self.q_row    = Array(Signal(8 * row_cyc, name=f"q_row{k}") for k in range(nregs))
        self.q_reg    = Array(Signal(reg_bits, name=f"q_reg{k}") for k in range(nregs))
        self.n_pages  = Signal(max=nregs + 1)
        # State.
        self.busy  = die.busy                 # R/B# low.
        self.timer = Signal(32)               # Busy time of the die itself (not the array).

        # # #

        self.t_feat = config.cycles(t_ns=config.t_feat_ns, scaled=False)
        self.t_rst  = config.cycles(t_ns=config.t_rst_ns, scaled=False)
        self.t_fail = config.cycles(t_ns=T_FAIL_NS, scaled=False)
        self.t_dbsy = config.cycles(t_ns=config.t_dbsy_ns, scaled=False)
        # READ PARAMETER PAGE takes the read waveform's time, as an array read does.
        self.t_r    = die.tables.cycles("read")
        self.cache  = config.with_cache
        self.nregs  = nregs

        self.in_feat   = Signal()
        self.feat_addr = Signal(8)
        self.feat_n    = Signal(3)
        self.feat_apply = Signal()
        self.fail      = Signal()
        self.failc     = Signal()
        self.inj_prog  = Signal()
        self.inj_erase = Signal()
        self.page_ok   = Signal()             # The page register may be read out (after 30h or E0h).
        # Multi-plane queue: a page per register; the final confirm moves them one after another
        # while the sequencer plays the array time once.
        self.q_n      = Signal(max=nregs + 1)
        self.q_used   = Signal(nregs)
        self.q_page   = Signal(max(config.page_bits, 1))
        self.q_reason = Signal(4, reset=NO_REASON)
        # A cache operation leaves the die ready while its array operation runs.
        self.cache_running = Signal()         # The array operation running was started by 31h/15h.
        self.pending  = Signal(3)             # Cache command waiting for the array to finish.
        self.cache_ok = Signal()
        self.last_row = Signal(8 * row_cyc)
        self.cache_r  = Signal(reg_bits)
        self.prog_row = Signal(8 * row_cyc)
        self.prog_reg = Signal(reg_bits)
        self.reason_inc = Signal(len(REASON_NAMES))

        self._decode_row(config, die)
        self._add_status(config, die)
        self._add_entry_reason(config, die, edges)
        for i in range(len(REASON_NAMES)):
            die.stat_events[f"fail_reason{i}"] = self.reason_inc[i]
        self._add_commands(config, die, edges)
        for op, name in ((OP_READ, "read"), (OP_PROGRAM, "program"), (OP_ERASE, "erase")):
            die.stat_events[f"ops_{name}"] = self.start & (self.start_op == op)
        for op, name in ((OP_READ, "read"), (OP_PROGRAM, "program"), (OP_ERASE, "erase")):
            for n in range(2, config.registers + 1):
                die.stat_events[f"mp_{name}{n}"] = self.start & (self.start_op == op) & (self.n_pages == n)
        if self.cache:
            self._add_cache_pending(config, die)

    def _decode_row(self, config, die):
        """Fields of the addressed row, its plane and page register, and the MPNFM mode."""
        part, plane_bits = config.part, config.plane_bits
        subplane  = Signal(2)
        per_plane = part.blocks_per_lun // part.planes
        in_plane  = Signal(max(config.block_bits, 1))
        self.comb += [
            self.arch.eq(Mux((die.arch == ARCH_SDW) & (not config.with_sdw), ARCH_DW, die.arch)),
            in_plane.eq(self.row_block >> plane_bits),
            subplane.eq(reduce(add, [in_plane >= -(-k * per_plane // SUBPLANES) for k in range(1, SUBPLANES)])),
            self.reg_sel.eq(Mux(self.arch == ARCH_SDW, self.plane * SUBPLANES + subplane, self.plane)
                            if config.with_sdw else self.plane),
        ]
        self.comb += [
            self.row_page.eq(row_page(config, self.row)),
            self.row_block.eq(row_block(config, self.row)),
            self.row_valid.eq(row_in_range(config, self.row, self.row_page, self.row_block)),
            self.bad_block.eq(row_bad(config, self.row_block)),
            self.plane.eq(self.row_block[:plane_bits] if plane_bits else 0),
            self.mpnfm_on.eq(die.mpnfm if part.is_mpnfm else 0),
        ]

    def _add_status(self, config, die):
        """Busy, R/B# and the status register (RDY and ARDY split during cache operations).

        R/B# falls `config.rb_fall_ns` after the WE# (CLK) edge that made the die busy, by default as
        late as ONFI allows: tWB max of the mode the die is in (200 ns in SDR mode 0), the worst case
        a controller has to wait out before it may sample R/B#. The die is busy (status RDY low, only
        status and reset taken) from the edge on."""
        ardy = Signal()
        # Cycles from the latching edge to R/B# low: whole cycles within the limit (the edge may be in
        # either phase of its cycle, so it is never later than the limit).
        fall = {key: {"rb_fall": int((t.t_wb if config.rb_fall_ns is None else config.rb_fall_ns)
                                     * config.sys_clk_freq / 1e9 + 1e-9)}
                for key, t in die_mode_timings(config).items()}
        fall, top = mode_values(self, die, fall, "mode")
        self.rb_fall = fall["rb_fall"]
        # Busy starts the cycle after the edge: R/B# stays high for rb_fall - 1 cycles of it.
        # (Reset values: a die busy from power-on, formatting its Wishbone storage, holds R/B# low at once.)
        busy_q, hold = Signal(reset=1), Signal()
        age = Signal(max=top["rb_fall"] + 1, reset=top["rb_fall"])
        self.sync += [
            busy_q.eq(self.busy),
            If(self.busy & ~busy_q, age.eq(1)).Elif(self.busy & (age != top["rb_fall"]), age.eq(age + 1)),
        ]
        self.comb += hold.eq(self.busy & (Mux(busy_q, age, 0) + 1 < self.rb_fall))
        self.comb += [
            self.busy.eq((self.timer != 0) | (self.pending != 0) | (self.array_busy & ~self.cache_running)),
            ardy.eq(~self.array_busy & (self.timer == 0)),
            die.bus.rb_n.eq(~self.busy | hold),
            die.status.eq(Cat(self.fail & ardy, self.failc & ~self.busy, 0, 0, 0, ardy, ~self.busy, die.bus.wp_n)),
        ]

    def _add_entry_reason(self, config, die, edges):
        """Why the addressed page cannot join the queued ones (the reference model's order)."""
        lb, part = edges.latch_byte, config.part
        confirm_erase = Signal()
        confirm_write = Signal()
        self.entry_reason = entry_reason = Signal(4)
        self.final_reason = Signal(4)
        ptype = (lambda pg: pg[0]) if part.bits_per_cell > 1 and config.page_bits else (lambda pg: 0)
        queued = self.q_n != 0
        self.comb += [
            confirm_erase.eq((lb == onfi.CMD_ERASE_CONFIRM) | (lb == onfi.CMD_ERASE_MULTIPLANE)),
            confirm_write.eq(confirm_erase | (lb == onfi.CMD_PROGRAM_CONFIRM) | (lb == onfi.CMD_PROGRAM_MULTIPLANE)),
            If(~self.row_valid, entry_reason.eq(REASON_RANGE)
            ).Elif(confirm_write & ~die.bus.wp_n, entry_reason.eq(REASON_WP)
            ).Elif(confirm_write & self.bad_block, entry_reason.eq(REASON_BAD_BLOCK)
            ).Elif(queued & bit(self.q_used, self.reg_sel), entry_reason.eq(REASON_PLANE_REPEAT)
            ).Elif(queued & ~confirm_erase & (self.arch == ARCH_CNFM) & (self.row_page != self.q_page),
                entry_reason.eq(REASON_PLANE_ADDR)
            ).Elif(queued & ~confirm_erase & (self.arch != ARCH_CNFM) & (ptype(self.row_page) != ptype(self.q_page)),
                entry_reason.eq(REASON_PAGE_TYPE)
            ).Else(entry_reason.eq(NO_REASON)),
            self.final_reason.eq(Mux(self.q_reason != NO_REASON, self.q_reason, entry_reason)),
        ]

    # Building blocks of the command cases ------------------------------------------------------------
    def _count(self, reason):
        return self.reason_inc.eq(1 << reason)

    def _seq_error(self):
        return self._count(REASON_SEQUENCE)

    def _page_out(self, ptr, select=True):
        """Data out from the page register (of the addressed row when `select`) at `ptr`."""
        return [self.out_src.eq(SRC_PAGE), self.page_ok.eq(1), self.restart.eq(1), self.restart_ptr.eq(ptr),
                *([self.out_reg.eq(self.reg_sel), self.out_small.eq(self.mpnfm_on & (self.plane == 1))]
                  if select else [])]

    def _push(self):
        """Multi-plane confirm: queue the addressed page."""
        return [
            self.q_row[self.q_n].eq(self.row), self.q_reg[self.q_n].eq(self.reg_sel),
            self.q_used.eq(self.q_used | (1 << self.reg_sel)),
            self.q_n.eq(self.q_n + 1), If(self.q_n == 0, self.q_page.eq(self.row_page)),
            If(self.q_reason == NO_REASON, self.q_reason.eq(self.entry_reason)),
        ]

    def _finish(self, op, inject=None):
        """Final confirm: run the queued pages and this one, or fail with the first reason."""
        return [
            self.q_row[self.q_n].eq(self.row), self.q_reg[self.q_n].eq(self.reg_sel), self.arr_alt.eq(self.io_alt),
            self.cache_ok.eq((op == OP_READ) & (self.q_n == 0) & (self.final_reason == NO_REASON)),
            self.last_row.eq(self.row), self.cache_r.eq(self.reg_sel),
            self.q_n.eq(0), self.q_used.eq(0), self.q_reason.eq(NO_REASON), self.failc.eq(self.fail),
            If(self.final_reason != NO_REASON,
                self.fail.eq(1), self.reason_inc.eq(1 << self.final_reason), self.timer.eq(self.t_fail),
            ).Elif(inject if inject is not None else 0,
                *([inject.eq(0)] if inject is not None else []),
                self.fail.eq(1), self._count(REASON_INJECTED), self.timer.eq(self.t_fail),
            ).Else(
                self.fail.eq(0), self.start.eq(1), self.start_op.eq(op), self.n_pages.eq(self.q_n + 1),
            ),
        ]

    # Commands and addresses ----------------------------------------------------------------------------
    def _add_commands(self, config, die, edges):
        """Command and address cycles, SET FEATURES data, and where data in starts."""
        col_cyc, row_cyc = config.part.column_cycles, config.part.row_cycles
        self.col_done, self.page_done, self.rows_done = Signal(), Signal(), Signal()
        self.comb += [
            self.col_done.eq(self.naddr == col_cyc),
            self.page_done.eq(self.naddr == col_cyc + row_cyc),
            self.rows_done.eq(self.naddr == row_cyc),
        ]
        # The die's own time runs out first; any command of this cycle sets it again.
        self.sync += If(self.timer != 0, self.timer.eq(self.timer - 1))
        self.sync += [
            self.start.eq(0),
            self.restart.eq(0),
            self.reason_inc.eq(0),
            self.clear_reg.eq(0),
            self.flush_req.eq(0),
            self.feat_apply.eq(0),
            If(die.inject_program_fail, self.inj_prog.eq(1)),
            If(die.inject_erase_fail, self.inj_erase.eq(1)),
            *self._features(die, edges),
            If(edges.cmd_ev,
                self._command(die, edges.latch_byte),
            ).Elif(edges.addr_ev & (~self.busy | (self.cmd == onfi.CMD_READ_STATUS_ENH)),
                *self._address(config, die, edges.latch_byte),
            ),
        ]
        # Data in starts at the column of the address of 80h or 85h (85h's last byte is latched now).
        last_col = Cat(self.col[:8 * (col_cyc - 1)], edges.latch_byte) if col_cyc > 1 else edges.latch_byte
        self.comb += [
            self.prog_addr_end.eq(edges.addr_ev & (self.cmd == onfi.CMD_PROGRAM) & (self.naddr == col_cyc + row_cyc - 1)),
            self.wcol_addr_end.eq(edges.addr_ev & (self.cmd == onfi.CMD_CHANGE_WRITE_COL) & (self.naddr == col_cyc - 1)),
            self.din_col.eq(Mux(self.cmd == onfi.CMD_PROGRAM, self.col, last_col)),
        ]

    def _features(self, die, edges):
        """SET FEATURES data (one byte a cycle, two in NV-DDR: one per DQS edge), then applied."""
        dv, db, feat_p, feat_n = edges.din_valid, edges.din_byte, self.feat_p, self.feat_n
        return [
            If(self.in_feat & (dv[0] | dv[1]) & ~self.busy,
                *[If(dv[0] & (feat_n == k), feat_p[k].eq(db[0])) for k in range(4)],
                *[If(dv[1] & (feat_n + dv[0] == k), feat_p[k].eq(db[1])) for k in range(4)],
                feat_n.eq(feat_n + dv[0] + dv[1]),
                If(feat_n + dv[0] + dv[1] >= 4, self.in_feat.eq(0), self.feat_apply.eq(1)),
            ),
            If(self.feat_apply,
                If(self.feat_addr == onfi.FEATURE_TIMING_MODE,
                    die.timing_mode.eq(feat_p[0][:4]),
                    die.data_interface.eq(feat_p[0][4:6]),
                ),
                self.timer.eq(self.t_feat),
            ),
        ]

    def _command(self, die, lb):
        """A command cycle: status and reset at any time, the others when the die is ready."""
        return If(lb == onfi.CMD_RESET,
            self.cmd.eq(0), self.out_src.eq(SRC_NONE), self.in_page.eq(0), self.in_feat.eq(0),
            self.fail.eq(0), self.failc.eq(0), self.timer.eq(self.t_rst),
            self.q_n.eq(0), self.q_used.eq(0), self.q_reason.eq(NO_REASON), self.cache_ok.eq(0),
        ).Elif(lb == onfi.CMD_READ_STATUS,
            self.out_src.eq(SRC_STATUS),
        ).Elif(lb == onfi.CMD_READ_STATUS_ENH,
            self.cmd.eq(lb), self.naddr.eq(0), self.out_src.eq(SRC_NONE),
        ).Elif(self.busy,
            self._seq_error(),
        ).Else(Case(lb, {**self._cache_cases(), **self._read_cases(), **self._write_cases(lb),
                         **self._setup_cases(lb)}))

    def _is(self, c):
        return self.cmd == c

    def _loaded(self):
        """PROGRAM's address, or a CHANGE WRITE COLUMN's, is complete: data may be confirmed."""
        return (self._is(onfi.CMD_PROGRAM) & self.page_done) | (self._is(onfi.CMD_CHANGE_WRITE_COL) & self.col_done)

    def _cache_cases(self):
        cache = self.cache
        return {
            onfi.CMD_READ_CACHE_SEQ: [
                If(self.cache_ok if cache else 0, self.pending.eq(PEND_READ_NEXT)).Else(self._seq_error()),
            ],
            onfi.CMD_READ_CACHE_END: [
                If(self.cache_ok if cache else 0, self.pending.eq(PEND_READ_END)).Else(self._seq_error()),
            ],
            onfi.CMD_PROGRAM_CACHE: [
                self.cmd.eq(0), self.in_page.eq(0),
                If(self._loaded() & (self.q_n == 0) if cache else 0,
                    self.flush_req.eq(1), self.pending.eq(PEND_PROG_CACHE),
                    self.prog_row.eq(self.row), self.prog_reg.eq(self.reg_sel),
                ).Else(self._seq_error()),
            ],
        }

    def _read_cases(self):
        read_addressed = self._is(onfi.CMD_READ) & self.page_done
        return {
            onfi.CMD_READ_CONFIRM: [
                self.cmd.eq(0),
                If(read_addressed & ~self.array_busy,
                    *self._page_out(self.col), *self._finish(OP_READ),
                ).Else(self._seq_error()),
            ],
            onfi.CMD_READ_MULTIPLANE: [
                self.cmd.eq(0),
                If(read_addressed & (self.q_n < self.nregs) & ~self.array_busy,
                    *self._page_out(self.col), *self._push(), self.timer.eq(self.t_dbsy),
                ).Else(self._seq_error()),
            ],
            onfi.CMD_CHANGE_READ_COL_2: [
                self.cmd.eq(0),
                If(self._is(onfi.CMD_CHANGE_READ_COL) & self.col_done,
                    *self._page_out(self.col, select=False),
                ).Elif(self._is(onfi.CMD_CHANGE_READ_COL_ENH) & self.page_done,
                    *self._page_out(self.col),
                ).Else(self._seq_error()),
            ],
        }

    def _write_cases(self, lb):
        loaded = self._loaded()
        erase_addressed = self._is(onfi.CMD_ERASE) & self.rows_done
        return {
            onfi.CMD_PROGRAM_CONFIRM: [
                self.cmd.eq(0), self.in_page.eq(0),
                If(loaded & self.array_busy,
                    # After PROGRAM CACHE: wait for the array, then program.
                    self.flush_req.eq(1), self.pending.eq(PEND_PROG_FINAL), self.cmd.eq(onfi.CMD_PROGRAM),
                ).Elif(loaded,
                    self.flush_req.eq(1), *self._finish(OP_PROGRAM, self.inj_prog),
                ).Else(self._seq_error()),
            ],
            onfi.CMD_PROGRAM_MULTIPLANE: [
                self.cmd.eq(0), self.in_page.eq(0),
                If(loaded & (self.q_n < self.nregs) & ~self.array_busy,
                    self.flush_req.eq(1), *self._push(), self.timer.eq(self.t_dbsy),
                ).Else(self._seq_error()),
            ],
            onfi.CMD_ERASE_CONFIRM: [
                self.cmd.eq(0),
                If(erase_addressed & ~self.array_busy,
                    *self._finish(OP_ERASE, self.inj_erase),
                ).Else(self._seq_error()),
            ],
            onfi.CMD_ERASE_MULTIPLANE: [
                self.cmd.eq(0),
                If(erase_addressed & (self.q_n < self.nregs) & ~self.array_busy,
                    *self._push(), self.timer.eq(self.t_dbsy),
                ).Else(self._seq_error()),
            ],
            onfi.CMD_CHANGE_WRITE_COL: [
                If(loaded,
                    self.cmd.eq(lb), self.naddr.eq(0), self.flush_req.eq(1), self.in_page.eq(0),
                ).Else(self._seq_error()),
            ],
        }

    def _setup_cases(self, lb):
        """Commands an address (and maybe data) follows."""
        return {
            onfi.CMD_READ: [
                # Either a new READ (an address follows) or, after a status poll, back to
                # the page data where it was left.
                self.cmd.eq(lb), self.naddr.eq(0), self.in_page.eq(0), self.in_feat.eq(0),
                self.out_src.eq(Mux(self.page_ok, SRC_PAGE, SRC_NONE)),
            ],
            "default": [
                self.cmd.eq(lb), self.naddr.eq(0), self.out_src.eq(SRC_NONE), self.in_page.eq(0),
                self.in_feat.eq(0), self.page_ok.eq(0),
                If((lb != onfi.CMD_CHANGE_READ_COL) & (lb != onfi.CMD_CHANGE_READ_COL_ENH),
                    self.cache_ok.eq(0)),
            ],
        }

    def _address(self, config, die, lb):
        """An address cycle: column and row bytes, and what the commands with one address byte do."""
        col_cyc, row_cyc = config.part.column_cycles, config.part.row_cycles
        naddr = self.naddr
        restart = lambda: [self.restart.eq(1), self.restart_ptr.eq(0)]
        return [
            naddr.eq(naddr + 1),
            If(naddr == 0, self.addr0.eq(lb)),
            If(self._is(onfi.CMD_READ), self.out_src.eq(SRC_NONE), self.page_ok.eq(0)),
            If((self._is(onfi.CMD_READ) | self._is(onfi.CMD_PROGRAM) | self._is(onfi.CMD_CHANGE_READ_COL)
                    | self._is(onfi.CMD_CHANGE_READ_COL_ENH) | self._is(onfi.CMD_CHANGE_WRITE_COL)) & (naddr < col_cyc),
                Case(naddr, {i: self.col[8 * i:8 * i + 8].eq(lb) for i in range(col_cyc)}),
            ).Elif(self._is(onfi.CMD_READ) | self._is(onfi.CMD_PROGRAM) | self._is(onfi.CMD_CHANGE_READ_COL_ENH),
                Case(naddr - col_cyc, {i: self.row[8 * i:8 * i + 8].eq(lb) for i in range(row_cyc)}),
            ).Elif(self._is(onfi.CMD_ERASE) | self._is(onfi.CMD_READ_STATUS_ENH),
                Case(naddr, {i: self.row[8 * i:8 * i + 8].eq(lb) for i in range(row_cyc)}),
            ),
            Case(self.cmd, {
                onfi.CMD_READ_ID: If(naddr == 0, self.out_src.eq(SRC_ID), *restart()),
                onfi.CMD_READ_PARAM_PAGE: If(naddr == 0,
                    self.out_src.eq(SRC_PARAM), *restart(), self.timer.eq(self.t_r >> die.time_scale_shift)),
                onfi.CMD_GET_FEATURES: If(naddr == 0,
                    self.feat_addr.eq(lb), self.out_src.eq(SRC_FEATURE), *restart(), self.timer.eq(self.t_feat),
                    self.feat_p[0].eq(Mux(lb == onfi.FEATURE_TIMING_MODE, Cat(die.timing_mode, die.data_interface), 0)),
                    [self.feat_p[i].eq(0) for i in range(1, 4)]),
                onfi.CMD_SET_FEATURES: If(naddr == 0,
                    self.feat_addr.eq(lb), self.in_feat.eq(1), self.feat_n.eq(0)),
                onfi.CMD_READ_STATUS_ENH: If(naddr == row_cyc - 1, self.out_src.eq(SRC_STATUS)),
                onfi.CMD_PROGRAM: If(naddr == col_cyc + row_cyc - 1,
                    self.in_page.eq(1), self.clear_reg.eq(1)),
                onfi.CMD_CHANGE_WRITE_COL: If(naddr == col_cyc - 1, self.in_page.eq(1)),
            }),
        ]

    # Cache commands run once the array is free ---------------------------------------------------------
    def _add_cache_pending(self, config, die):
        next_row = Signal(8 * config.part.row_cycles)
        run_pending = Signal()
        self.comb += [
            next_row.eq(self.last_row + 1),
            run_pending.eq((self.pending != 0) & ~self.array_busy & (self.timer == 0)),
        ]
        r, p = self.cache_r, self.prog_reg
        set_bit = lambda vec, index, value: vec.eq((vec & ~(1 << index)) | (value << index))
        # The register of the page read last faces the bus; data out starts at column 0.
        to_bus = lambda: [self.out_reg.eq(r), *self._page_out(0, select=False), self.timer.eq(self.t_dbsy)]
        fail = lambda reason: [self.fail.eq(1), self._count(reason)]
        self.sync += [
            If(~self.array_busy, self.cache_running.eq(0)),
            If(run_pending,
                self.pending.eq(0),
                Case(self.pending, {
                    # 31h: the page read last goes to the bus, the next one is read into the other register.
                    PEND_READ_NEXT: [
                        set_bit(self.io_alt, r, bit(self.arr_alt, r)),
                        set_bit(self.arr_alt, r, ~bit(self.arr_alt, r)),
                        *to_bus(),
                        If(row_in_range(config, next_row),
                            self.q_row[0].eq(next_row), self.q_reg[0].eq(r), self.n_pages.eq(1),
                            self.start.eq(1), self.start_op.eq(OP_READ), self.cache_running.eq(1),
                            self.last_row.eq(next_row),
                        ).Else(
                            self.cache_ok.eq(0), *fail(REASON_RANGE),
                        ),
                    ],
                    PEND_READ_END: [set_bit(self.io_alt, r, bit(self.arr_alt, r)), *to_bus(), self.cache_ok.eq(0)],
                    # 15h: the page just loaded is programmed from its register, the other takes data in.
                    PEND_PROG_CACHE: [
                        self.failc.eq(self.fail), self.timer.eq(self.t_dbsy),
                        If(~row_in_range(config, self.prog_row), *fail(REASON_RANGE),
                        ).Elif(~die.bus.wp_n, *fail(REASON_WP),
                        ).Elif(row_bad(config, row_block(config, self.prog_row)), *fail(REASON_BAD_BLOCK),
                        ).Elif(self.inj_prog, self.inj_prog.eq(0), *fail(REASON_INJECTED),
                        ).Else(
                            self.fail.eq(0),
                            set_bit(self.arr_alt, p, bit(self.io_alt, p)),
                            set_bit(self.io_alt, p, ~bit(self.io_alt, p)),
                            self.q_row[0].eq(self.prog_row), self.q_reg[0].eq(p), self.n_pages.eq(1),
                            self.start.eq(1), self.start_op.eq(OP_PROGRAM), self.cache_running.eq(1),
                        ),
                    ],
                    PEND_PROG_FINAL: [self.cmd.eq(0), *self._finish(OP_PROGRAM, self.inj_prog)],
                }),
            ),
        ]
