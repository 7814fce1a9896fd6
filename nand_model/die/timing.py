"""Timing checker of the die: counts host violations of the part's interface timings, rule by rule."""

from functools import reduce
from operator import and_, or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.die.common import SRC_STATUS

# Checks, in the order of the die's violation counters (and their CSRs).
TIMING_CHECKS = ["t_whr", "t_adl", "t_ccs", "t_rr", "t_wb"]

# A violation is a `to` event less than `limit` after the latest `from` event; `limit` is the part's
# attribute of that name (ns, NandPart), in cycles of the die's clock. A `first_*` event is the
# first data byte after the `from` event, checked once; rows waiting for the same first byte are
# tried in table order and only the first armed one checks it (a column change's tCCS supersedes
# the tWHR of its E0h, and the tADL of the 80h before an 85h). Other events are checked every time.
TIMING_RULES = [
    # check    from event       to event        limit
    ("t_ccs", "write_column",  "first_din",    "t_ccs"),   # 85h address -> data in
    ("t_ccs", "read_column",   "first_dout",   "t_ccs"),   # E0h -> data out
    ("t_adl", "program_addr",  "first_din",    "t_adl"),   # 80h's last address -> data in
    ("t_whr", "cmd_addr",      "first_dout",   "t_whr"),   # any command or address -> data out
    ("t_rr",  "ready",         "dout_data",    "t_rr"),    # R/B# high -> data out (not status)
    ("t_wb",  "confirm",       "status_cmd",   "t_wb"),    # 30h/10h/D0h/FFh -> 70h
]


class NandLabDieTimingChecker(LiteXModule):
    """Counts host violations of `rules` (TIMING_RULES) into `die.violations`, one 16-bit counter
    per check, from the die's bus edges and decoder."""
    def __init__(self, config, die, edges, decoder, rules=TIMING_RULES):
        self.violations = die.violations
        # Limits in cycles of the die's clock, per check (the rows of a check name the same limit).
        limit_of = {check: limit for check, _, _, limit in rules}
        self.limits = {c: config.cycles(t_ns=getattr(config.part, limit_of[c]), scaled=False) for c in TIMING_CHECKS}

        # # #

        events = self._events(edges, decoder, die.busy)
        # Cycles since each `from` event, saturating above the largest limit read from it (none at
        # reset): a violation only needs `since < limit`, so the counters stay small.
        since = {}
        for frm in dict.fromkeys(r[1] for r in rules):
            top = (1 << max(self.limits[c] for c, f, _, _ in rules if f == frm).bit_length()) - 1
            since[frm] = s = Signal(max=top + 1, reset=top, name=f"since_{frm}")
            self.sync += If(events[frm], s.eq(0)).Elif(s != top, s.eq(s + 1))

        hits = {check: [] for check in self.violations}
        armed_before = {}       # first_* event -> the rows before this one that wait for it.
        for k, (check, frm, to, _) in enumerate(rules):
            hit = Signal(name=f"hit{k}_{check}")
            early = since[frm] < self.limits[check]
            if to.startswith("first_"):
                armed = Signal(name=f"armed{k}_{check}")
                earlier = armed_before.setdefault(to, [])
                self.sync += If(events[to], armed.eq(0)).Elif(events[frm], armed.eq(1))
                # An earlier armed row checks this byte instead.
                self.comb += hit.eq(reduce(and_, [events[to], armed, *[~e for e in earlier], early]))
                earlier.append(armed)
            else:
                self.comb += hit.eq(events[to] & early)
            hits[check].append(hit)
        for check, count in self.violations.items():
            self.sync += If(reduce(or_, hits[check], 0), count.eq(count + 1))

    def _events(self, edges, decoder, busy):
        """The events TIMING_RULES name (pulses)."""
        lb, cmd_ev = edges.latch_byte, edges.cmd_ev
        was_busy = Signal()
        self.sync += was_busy.eq(busy)
        din_any  = edges.din_valid[0] | edges.din_valid[1]
        dout_any = edges.dout_req[0] | edges.dout_req[1]
        confirm  = reduce(or_, [lb == b for b in (onfi.CMD_READ_CONFIRM, onfi.CMD_PROGRAM_CONFIRM,
                                                  onfi.CMD_ERASE_CONFIRM, onfi.CMD_RESET)])
        return {
            "cmd_addr":     cmd_ev | edges.addr_ev,
            "program_addr": decoder.prog_addr_end,
            "write_column": decoder.wcol_addr_end,
            "read_column":  cmd_ev & (lb == onfi.CMD_CHANGE_READ_COL_2),
            "confirm":      cmd_ev & confirm,
            "ready":        was_busy & ~busy,
            "status_cmd":   cmd_ev & (lb == onfi.CMD_READ_STATUS),
            "first_din":    din_any,
            "first_dout":   dout_any,
            "dout_data":    dout_any & (decoder.out_src != SRC_STATUS),
        }
