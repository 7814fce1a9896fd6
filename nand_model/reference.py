"""Python reference model of one emulated ONFI die (LUN): the scoreboard for the gateware.

It works at the level of bus events the die decodes (command byte, address byte, data-in byte,
data-out byte request) plus the passing of time in system clock cycles, with the semantics the
gateware implements and `docs` in nand_model describe:

* erased pages read FFh; programming ANDs the data into the page (bits only go 1 -> 0), however
  often a page is programmed (the NOP limit of real parts is not enforced);
* an out-of-range row, a write or erase with WP# low, or an illegal multi-plane combination for the
  current plane architecture fail in the status (FAIL) and touch nothing;
* factory bad blocks carry 00h in spare byte 0 of their first page and fail erase and program;
* multi-plane operations (32h/11h/D1h, then 30h/10h/D0h) queue one page per register (a register
  per plane; per subplane in SDW-NFM) and run together; every queued page is checked in order:
  range, WP#, bad block, register used twice, then CNFM: same page address, DW/SDW-NFM: same
  page type. The first failure fails the whole operation and is counted by reason. CHANGE READ
  COLUMN ENHANCED (06h-E0h) picks the register data comes out of;
* faults can be injected: fail the next program or erase, flip N bits when a given page is read,
  or flip bits at random at a rate (an LFSR that steps once per word read from the array).

Time: each array operation keeps the LUN busy for a number of cycles taken from the part's
timings, divided by the simulation time scale.
"""

from dataclasses import dataclass

from nandlab.gateware.onfi import common as onfi
# The constants and the configuration the gateware shares; tests import them from here too.
from nandlab.nand_model.common import DieConfig, T_FAIL_NS, id_bytes, flip_position, ARCH_CNFM, ARCH_DW, ARCH_SDW, \
    ARCH_NAMES, SUBPLANES, REASON_RANGE, REASON_WP, REASON_BAD_BLOCK, REASON_INJECTED, REASON_PLANE_ADDR, \
    REASON_PAGE_TYPE, REASON_PLANE_REPEAT, REASON_SEQUENCE, REASON_NAMES, JEDEC_MANUFACTURER, LFSR_SEED, \
    LFSR_TAPS


@dataclass
class _Op:
    kind   : str            # "read", "program", "erase"
    row    : int
    reg    : int = 0            # Page register (plane, or plane x 4 + subplane in SDW-NFM).


class ReferenceDie:
    def __init__(self, config):
        self.cfg = config
        self.pages = {}                      # row -> bytearray(page_bytes); absent = erased.
        self.arch = ARCH_CNFM
        self.mpnfm = False                   # MPNFM parts: plane 1 has the small pages.
        self.wp_n = 1
        self.reasons = [0] * len(REASON_NAMES)
        # Multi-plane operations started, {kind: {pages: count}} for 2 .. page registers (the die's mp_*).
        self.mp_ops = {k: dict.fromkeys(range(2, config.registers + 1), 0) for k in ("read", "program", "erase")}
        self.inject_program_fail = False
        self.inject_erase_fail = False
        self.flip_row = None
        self.flip_count = 0
        self.flip_rate = 0                   # Random flips per array word read, in 1/65536.
        self.lfsr = LFSR_SEED
        regs = config.registers
        # Each page register is a pair: `io` faces the bus, `arr` the array; cache commands swap.
        self.phys    = [[bytearray(b"\xff" * config.page_bytes) for _ in range(2)] for _ in range(regs)]
        self.io_alt  = [0] * regs
        self.arr_alt = [0] * regs
        for block in config.bad_blocks:
            page = bytearray(b"\xff" * config.page_bytes)
            page[config.part.page_size] = 0x00
            self.pages[block << config.page_bits] = page
        self.power_on()

    # State -----------------------------------------------------------------------------------------
    def power_on(self):
        self.interface = onfi.IF_ASYNC_SDR
        self.timing_mode = 0
        self.features = {onfi.FEATURE_TIMING_MODE: [0, 0, 0, 0]}
        self._reset_state()
        self.busy = 0                        # Cycles left of array activity.
        self.fail = 0
        self.failc = 0

    def _reset_state(self):
        self.cmd = None                      # Command whose address/data phase is open.
        self.addr = []
        self.column = 0
        self.reg = 0                         # Page register for data out / data in.
        self.cache_ok = False                # A single-plane READ completed: 31h/3Fh may follow.
        self.last_row = 0
        self.row = 0
        self.queue_reason = None
        self.out = None                      # Iterator-like: (kind, ...) of the data output.
        self.out_pos = 0
        self.queue = []                      # Multi-plane operations queued (32h/11h/D1h).
        self.feat_addr = 0
        self.feat_in = []
        self.page_ok = False

    @property
    def rdy(self):
        return self.busy == 0

    def status(self):
        # The model finishes array work at once, so RDY and ARDY move together here.
        s = onfi.STATUS_WP_N if self.wp_n else 0
        if self.rdy:
            s |= onfi.STATUS_RDY | onfi.STATUS_ARDY | self.fail | (self.failc << 1)
        return s

    def advance(self, cycles):
        self.busy = max(0, self.busy - cycles)

    def _fail(self, reason):
        self.reasons[reason] += 1
        return 1

    # Bus events ------------------------------------------------------------------------------------
    def page_limit(self, r):
        """Bytes of a page in register r: the small page on plane 1 of an MPNFM die in MPNFM mode."""
        plane = r // SUBPLANES if (self.arch == ARCH_SDW and self.cfg.with_sdw) else r
        p = self.cfg.part
        if self.mpnfm and p.is_mpnfm and plane == 1:
            return p.small_page_size + p.small_spare_size
        return self.cfg.page_bytes

    def io(self, r):
        return self.phys[r][self.io_alt[r]]

    def arr(self, r):
        return self.phys[r][self.arr_alt[r]]

    def set_arch(self, arch):
        """The die's plane architecture (SDW-NFM only where its subplane registers are built)."""
        self.arch = ARCH_DW if arch == ARCH_SDW and not self.cfg.with_sdw else arch

    def command(self, cmd):
        c = onfi
        if cmd == c.CMD_RESET:
            self._reset_state()
            self.busy = self.cfg.cycles(t_ns=self.cfg.t_rst_ns, scaled=False)
            self.fail = self.failc = 0
            return
        if cmd == c.CMD_READ_STATUS:
            self.out = ("status",)
            return
        if not self.rdy and cmd != c.CMD_READ_STATUS_ENH:
            self.reasons[REASON_SEQUENCE] += 1
            return                           # Busy: only status commands are accepted.
        if cmd in (c.CMD_READ, c.CMD_PROGRAM, c.CMD_ERASE, c.CMD_READ_ID, c.CMD_READ_PARAM_PAGE,
                   c.CMD_GET_FEATURES, c.CMD_SET_FEATURES, c.CMD_READ_STATUS_ENH,
                   c.CMD_CHANGE_READ_COL, c.CMD_CHANGE_READ_COL_ENH, c.CMD_CHANGE_WRITE_COL):
            if cmd == c.CMD_READ:
                # A new READ if an address follows; after a status poll, back to the page data.
                self.out = ("page",) if self.page_ok else None
            elif cmd != c.CMD_CHANGE_WRITE_COL:
                self.out = None
                self.page_ok = False
            self.cmd, self.addr = cmd, []
            if cmd == c.CMD_SET_FEATURES:
                self.feat_in = []
            return
        if cmd in (c.CMD_READ_CONFIRM, c.CMD_READ_MULTIPLANE):
            return self._confirm("read", cmd == c.CMD_READ_CONFIRM)
        if cmd in (c.CMD_PROGRAM_CONFIRM, c.CMD_PROGRAM_MULTIPLANE):
            return self._confirm("program", cmd == c.CMD_PROGRAM_CONFIRM)
        if cmd in (c.CMD_ERASE_CONFIRM, c.CMD_ERASE_MULTIPLANE):
            return self._confirm("erase", cmd == c.CMD_ERASE_CONFIRM)
        if cmd in (c.CMD_READ_CACHE_SEQ, c.CMD_READ_CACHE_END) and self.cfg.with_cache and self.cache_ok:
            return self._read_cache(end=cmd == c.CMD_READ_CACHE_END)
        if cmd == c.CMD_PROGRAM_CACHE and self.cfg.with_cache and \
                self.cmd in (c.CMD_PROGRAM, c.CMD_CHANGE_WRITE_COL) and not self.queue:
            return self._program_cache()
        if cmd == c.CMD_CHANGE_READ_COL_2:
            cols = self.cfg.part.column_cycles
            ok = (self.cmd == c.CMD_CHANGE_READ_COL and len(self.addr) == cols) or \
                 (self.cmd == c.CMD_CHANGE_READ_COL_ENH and len(self.addr) == cols + self.cfg.part.row_cycles)
            if not ok:
                self.reasons[REASON_SEQUENCE] += 1
            else:
                if self.cmd == c.CMD_CHANGE_READ_COL_ENH:
                    self.reg = self.cfg.register_of(self._row(self.addr[cols:]), self.arch)
                self.out = ("page",)
                self.page_ok = True
            self.cmd = None
            return
        self.reasons[REASON_SEQUENCE] += 1   # Unknown command: ignored.

    def address(self, byte):
        c = onfi
        if not self.rdy and self.cmd != c.CMD_READ_STATUS_ENH:
            return
        self.addr.append(byte)
        n = len(self.addr)
        if self.cmd == c.CMD_READ:
            self.out, self.page_ok = None, False
        cols, rows = self.cfg.part.column_cycles, self.cfg.part.row_cycles
        if self.cmd == c.CMD_READ_ID and n == 1:
            self.out = ("id", byte)
            self.out_pos = 0
        elif self.cmd == c.CMD_READ_PARAM_PAGE and n == 1:
            self.busy = self.cfg.cycles(t_us=self.cfg.part.t_r)
            self.out = ("param",)
            self.out_pos = 0
        elif self.cmd in (c.CMD_GET_FEATURES, c.CMD_SET_FEATURES) and n == 1:
            self.feat_addr = byte
            if self.cmd == c.CMD_GET_FEATURES:
                self.busy = self.cfg.cycles(t_ns=self.cfg.t_feat_ns, scaled=False)
                self.out = ("feature", list(self.features.get(byte, [0, 0, 0, 0])))
                self.out_pos = 0
        elif self.cmd == c.CMD_READ_STATUS_ENH and n == rows:
            self.out = ("status",)
        elif self.cmd in (c.CMD_CHANGE_READ_COL, c.CMD_CHANGE_WRITE_COL, c.CMD_CHANGE_READ_COL_ENH) and n == cols:
            self.column = self._col(self.addr)
        elif self.cmd in (c.CMD_READ, c.CMD_PROGRAM) and n == cols + rows:
            self.column = self._col(self.addr[:cols])
            self.row = self._row(self.addr[cols:])
            self.reg = self.cfg.register_of(self.row, self.arch)
            if self.cmd == c.CMD_PROGRAM:
                self.io(self.reg)[:] = b"\xff" * self.cfg.page_bytes
        elif self.cmd == c.CMD_ERASE and n == rows:
            self.row = self._row(self.addr)
            self.reg = self.cfg.register_of(self.row, self.arch)

    @staticmethod
    def _col(b):
        return sum(v << (8 * i) for i, v in enumerate(b))

    _row = _col

    def data_in(self, byte):
        c = onfi
        if self.cmd == c.CMD_SET_FEATURES:
            self.feat_in.append(byte)
            if len(self.feat_in) == 4:
                self._set_features(self.feat_addr, self.feat_in)
                self.cmd = None
            return
        if self.cmd in (c.CMD_PROGRAM, c.CMD_CHANGE_WRITE_COL) and self.rdy:
            if self.column < self.page_limit(self.reg):
                self.io(self.reg)[self.column] = byte
            self.column += 1

    def data_out(self):
        """The byte the die gives for one data-out cycle."""
        if self.out is None:
            return 0x00
        kind = self.out[0]
        if kind == "status":
            return self.status()
        if not self.rdy:
            return 0x00
        if kind == "id":
            data = self._id_bytes(self.out[1])
        elif kind == "param":
            data = self.cfg.part.param_page(copies=3)
        elif kind == "feature":
            data = self.out[1]
        elif kind == "page":
            b = self.io(self.reg)[self.column] if self.column < self.page_limit(self.reg) else 0x00
            self.column += 1
            return b
        else:
            return 0x00
        b = data[self.out_pos % len(data)]
        self.out_pos += 1
        return b

    def _id_bytes(self, addr):
        return id_bytes(self.cfg, addr)

    def _set_features(self, addr, params):
        self.features[addr] = list(params)
        if addr == onfi.FEATURE_TIMING_MODE:
            self.timing_mode = params[0] & 0x0F
            self.interface = (params[0] >> 4) & 0x3
        self.busy = self.cfg.cycles(t_ns=self.cfg.t_feat_ns, scaled=False)

    # Array operations --------------------------------------------------------------------------------
    def _entry_reason(self, kind, row, reg):
        """Why the entry (row, register) cannot join the queued ones, or None. Checked in this
        order: address range, WP#, bad block (program/erase), register used twice, CNFM page
        address, DW/SDW page type (read/program)."""
        if not self.cfg.row_valid(row):
            return REASON_RANGE
        block, page = self.cfg.split_row(row)
        if kind != "read":
            if not self.wp_n:
                return REASON_WP
            if block in self.cfg.bad_blocks:
                return REASON_BAD_BLOCK
        if self.queue:
            if reg in {op.reg for op in self.queue}:
                return REASON_PLANE_REPEAT
            if kind != "erase":
                first = self.cfg.split_row(self.queue[0].row)[1]
                if self.arch == ARCH_CNFM and page != first:
                    return REASON_PLANE_ADDR
                if self.arch != ARCH_CNFM and self.cfg.page_type(page) != self.cfg.page_type(first):
                    return REASON_PAGE_TYPE
        return None

    def _confirm(self, kind, final):
        expect = {"read": onfi.CMD_READ, "program": (onfi.CMD_PROGRAM, onfi.CMD_CHANGE_WRITE_COL),
                  "erase": onfi.CMD_ERASE}[kind]
        if self.cmd not in (expect if isinstance(expect, tuple) else (expect,)):
            self.reasons[REASON_SEQUENCE] += 1
            return
        self.cmd = None
        reason = self._entry_reason(kind, self.row, self.reg)
        if reason is not None and self.queue_reason is None:
            self.queue_reason = reason
        self.queue.append(_Op(kind, self.row, self.reg))
        if kind == "read":
            self.out, self.page_ok = ("page",), True
        if not final:
            self.busy = self.cfg.cycles(t_ns=self.cfg.t_dbsy_ns, scaled=False)
            return
        ops, self.queue = self.queue, []
        reason, self.queue_reason = self.queue_reason, None
        self.arr_alt = list(self.io_alt)
        self.cache_ok = False
        if reason is None and kind == "program" and self.inject_program_fail:
            self.inject_program_fail, reason = False, REASON_INJECTED
        if reason is None and kind == "erase" and self.inject_erase_fail:
            self.inject_erase_fail, reason = False, REASON_INJECTED
        self.failc, self.fail = self.fail, 0
        if reason is not None:
            self.fail = self._fail(reason)
            self.busy = self.cfg.cycles(t_ns=T_FAIL_NS, scaled=False)
            return
        if kind == "read" and len(ops) == 1:
            self.cache_ok, self.last_row = True, ops[0].row
        if len(ops) > 1:
            self.mp_ops[kind][len(ops)] += 1
        for op in ops:
            if kind == "read":
                self._array_to_register(op.row, op.reg, flips=len(ops) == 1)
            elif kind == "program":
                page = self.pages.setdefault(op.row, bytearray(b"\xff" * self.cfg.page_bytes))
                reg = self.arr(op.reg)
                for i in range(self.cfg.page_bytes):
                    page[i] &= reg[i]
            else:
                block, _ = self.cfg.split_row(op.row)
                for page in range(self.cfg.part.pages_per_block):
                    self.pages.pop((block << self.cfg.page_bits) | page, None)
        self.busy = self._duration(kind, ops)

    def _duration(self, kind, ops):
        p = self.cfg.part
        if kind == "read":
            t, pct = p.t_r, self.cfg.sdw_t_r_percent
        elif kind == "program":
            pages = [self.cfg.split_row(op.row)[1] for op in ops]
            msb = p.t_prog_msb is not None and any(self.cfg.page_type(pg) for pg in pages)
            t = p.t_prog_msb if msb else (p.t_prog_lsb if p.t_prog_lsb is not None else p.t_prog)
            pct = self.cfg.sdw_t_prog_percent
        else:
            t, pct = p.t_bers, 100
        cycles = self.cfg.cycles(t_us=t)
        if self.arch == ARCH_SDW:
            cycles = max(1, cycles * pct // 100)
        small = self.mpnfm and p.is_mpnfm and len(ops) == 1 and \
            self.cfg.plane_of(self.cfg.split_row(ops[0].row)[0]) == 1
        if small and kind != "read":
            cycles = max(1, cycles * p.small_time_percent // 100)
        return cycles

    def _read_cache(self, end):
        """31h: the page read last goes to the bus-facing register and the next page is read into
        the other; 3Fh: the last page goes to the bus-facing register, the sequence ends."""
        r = self.reg
        self.io_alt[r] = self.arr_alt[r]
        self.out, self.page_ok, self.column = ("page",), True, 0
        self.busy = self.cfg.cycles(t_ns=self.cfg.t_dbsy_ns, scaled=False)
        if end:
            self.cache_ok = False
            return
        self.arr_alt[r] ^= 1
        nxt = self.last_row + 1
        if not self.cfg.row_valid(nxt):
            self.cache_ok = False
            self.fail = self._fail(REASON_RANGE)
            return
        self._array_to_register(nxt, r)
        self.last_row = nxt

    def _program_cache(self):
        """15h: the page just loaded is programmed from its register; the other register takes
        the next page while the array works."""
        self.cmd = None
        r = self.reg
        reason = self._entry_reason("program", self.row, r)
        if reason is None and self.inject_program_fail:
            self.inject_program_fail, reason = False, REASON_INJECTED
        self.failc, self.fail = self.fail, 0
        self.busy = self.cfg.cycles(t_ns=self.cfg.t_dbsy_ns, scaled=False)
        if reason is not None:
            self.fail = self._fail(reason)
            return
        self.arr_alt[r] = self.io_alt[r]
        self.io_alt[r] ^= 1
        page = self.pages.setdefault(self.row, bytearray(b"\xff" * self.cfg.page_bytes))
        reg = self.arr(r)
        for i in range(self.cfg.page_bytes):
            page[i] &= reg[i]

    def _array_to_register(self, row, reg_index, flips=True):
        page = self.pages.get(row)
        reg = self.arr(reg_index)
        reg[:] = page if page is not None else b"\xff" * self.cfg.page_bytes
        # Random flips: the LFSR steps once per 32-bit word copied, as in the gateware.
        for w in range((self.cfg.page_bytes + 3) // 4):
            if (self.lfsr & 0xFFFF) < self.flip_rate:
                bit = (self.lfsr >> 16) & 31
                if 4 * w + bit // 8 < len(reg):
                    reg[4 * w + bit // 8] ^= 1 << (bit % 8)
            self.lfsr = (self.lfsr >> 1) ^ (LFSR_TAPS if self.lfsr & 1 else 0)
        if flips and self.flip_row == row and self.flip_count:
            for i in range(self.flip_count):
                pos, bit = flip_position(i, self.cfg.page_bytes)
                reg[pos] ^= 1 << bit

