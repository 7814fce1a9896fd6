"""Timing checker of the die: counts host violations of the interface timings of the mode it is in, rule by rule."""

from functools import reduce
from operator import and_, or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.die.common import SRC_STATUS

# Checks, in the order of the die's violation counters (and their CSRs).
TIMING_CHECKS = ["t_whr", "t_adl", "t_ccs", "t_rr", "t_wb", "t_cs", "t_rhw", "busy"]
# "busy" is not a time: a command other than 70h / 78h / FFh, or page data out, while the die is busy
# (R/B# low, or within tWB of the edge that made it busy): a host that did not wait for R/B#. (The die
# ignores such a command and counts it as a "command sequence" failure reason as well.)

# A violation is a `to` event less than `limit` after the latest `from` event; `limit` is the field of
# that name of the timings of the mode the die is in (onfi.mode_timings: ONFI's table for the data
# interface and timing mode SET FEATURES chose, the part's own where it is longer; ns), in cycles of
# the die's clock, selected at run time. A `first_*` event is the
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
    ("t_wb",  "confirm",       "any_cmd",      "t_wb"),    # 30h/10h/D0h/FFh -> any command (70h...)
    ("t_cs",  "ce_fall",       "latch",        "t_cs"),    # CE# low -> command or address latched
    ("t_rhw", "dout_end",      "cmd_addr_start", "t_rhw"),  # RE# high (NV-DDR: data out) -> WE# low
]


def mode_values(module, die, values, name):
    """Signals holding, for the data interface and timing mode `die` is in, `values[(interface,
    mode)]` (a dict: name -> cycles), registered; an interface or mode outside `values` (as after a
    SET FEATURES to a reserved mode) gives the largest of each."""
    names = list(next(iter(values.values())))
    top = {n: max(v[n] for v in values.values()) for n in names}
    out = {n: Signal(bits_for(top[n]), reset=top[n], name=f"{name}_{n}") for n in names}
    cases = {(interface << len(die.timing_mode)) | mode: [out[n].eq(v[n]) for n in names]
             for (interface, mode), v in values.items()}
    cases["default"] = [out[n].eq(top[n]) for n in names]
    module.sync += Case(Cat(die.timing_mode, die.data_interface), cases)
    return out, top


def die_mode_timings(config):
    """{(interface, mode): InterfaceTimings in ns} of a die built from `config` (DieConfig)."""
    return {(interface, mode): onfi.mode_timings(config.part, interface, mode)
            for interface in (onfi.IF_ASYNC_SDR, onfi.IF_NVDDR, onfi.IF_SYNC_SDR)
            for mode in range(onfi.TIMING_MODES)}


class NandLabDieTimingChecker(LiteXModule):
    """Host violations of `rules` (TIMING_RULES) as events `die.stat_events["viol_<check>"]` (the die
    counts them: 16-bit counters), from the die's bus edges and decoder, with the limits of the mode the die is in.
    `limits`: {(interface, mode): {check: cycles}}; `longest`: {check: the largest of them}."""
    def __init__(self, config, die, edges, decoder, rules=TIMING_RULES):
        # Limits in cycles of the die's clock, per mode and check (the rows of a check name the same
        # limit).
        limit_of = {check: limit for check, _, _, limit in rules}
        self.limits = {key: {c: config.cycles(t_ns=getattr(t, limit_of[c]), scaled=False) for c in limit_of}
                       for key, t in die_mode_timings(config).items()}

        # # #

        limit, self.longest = mode_values(self, die, self.limits, "limit")
        events = self._events(edges, decoder, die.bus.rb_n[0])
        # Cycles since each `from` event, saturating above the largest limit read from it (none at
        # reset): a violation only needs `since < limit`, so the counters stay small.
        since = {}
        for frm in dict.fromkeys(r[1] for r in rules):
            top = (1 << max(self.longest[c] for c, f, _, _ in rules if f == frm).bit_length()) - 1
            since[frm] = s = Signal(max=top + 1, reset=top, name=f"since_{frm}")
            self.sync += If(events[frm], s.eq(0)).Elif(s != top, s.eq(s + 1))

        hits = {check: [] for check in TIMING_CHECKS}
        armed_before = {}       # first_* event -> the rows before this one that wait for it.
        for k, (check, frm, to, _) in enumerate(rules):
            hit = Signal(name=f"hit{k}_{check}")
            early = since[frm] < limit[check]
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
        ignored = ~reduce(or_, [edges.latch_byte == c for c in (onfi.CMD_READ_STATUS, onfi.CMD_READ_STATUS_ENH,
                                                                  onfi.CMD_RESET)])
        hits["busy"].append(die.busy & ((edges.cmd_ev & ignored) | events["dout_data"]))
        for check in TIMING_CHECKS:
            die.stat_events[f"viol_{check}"] = reduce(or_, hits[check], 0)

    def _events(self, edges, decoder, rb):
        """The events TIMING_RULES name (pulses); `rb` is the R/B# the die drives."""
        lb, cmd_ev = edges.latch_byte, edges.cmd_ev
        was_busy, was_selected = Signal(), Signal()
        self.sync += was_busy.eq(~rb), was_selected.eq(edges.selected)
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
            "ready":        was_busy & rb,
            "any_cmd":      cmd_ev,
            "ce_fall":      edges.selected & ~was_selected,
            "latch":        cmd_ev | edges.addr_ev,
            "first_din":    din_any,
            "first_dout":   dout_any,
            "dout_data":    dout_any & (decoder.out_src != SRC_STATUS),
            "dout_end":     edges.dout_end,
            "cmd_addr_start": edges.cmd_addr_start,
        }
