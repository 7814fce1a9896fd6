"""Typed control of a running SoC's power ring and current monitor through the host bridge.

`PowerControl(bus).configure(policy="kmtpm_sub", tg=4, alpha=2)` does over litex_server /
RemoteClient what the firmware's `power set` does: it checks the arguments, loads the token table
of TG (compiled for the SoC's die part by nandlab.tokens, as the firmware's tables are), requests
the configuration, applies it and waits until the ring runs it, or raises NandLabError saying why
not. Registers are found by their csr.csv names; policies, refusal reasons and register layouts
come from their Python definitions (nandlab.gateware.power), checked against the lists the SoC
exported (nandlab.soc.constants; csr.csv has them in lower case): a SoC built from other
definitions is refused.
"""

import time
from dataclasses import dataclass

from nandlab.errors import NandLabError
from nandlab.gateware.power.common import DEFAULT_TG, DEFAULT_ALPHA, POLICIES, RING_ERRORS, ERR_RT
from nandlab.gateware.power.ring import config_fields, status_fields, table_fields


def _layout(fields):
    """{name: (offset, size)} of a register's CSRFields (LiteX places those without an offset)."""
    from litex.soc.interconnect.csr import CSRAccess, CSRFieldAggregate
    return {f.name: (f.offset, f.size) for f in CSRFieldAggregate(fields, CSRAccess.ReadWrite).fields}


CONFIG, STATUS, TABLE = _layout(config_fields()), _layout(status_fields()), _layout(table_fields())


def pack(layout, **values):
    """A register value from field values (the others 0)."""
    word = 0
    for name, value in values.items():
        offset, size = layout[name]
        if not 0 <= value < 1 << size:
            raise NandLabError(f"{name} = {value} does not fit its {size}-bit field")
        word |= value << offset
    return word


def unpack(layout, word):
    return {name: (word >> offset) & ((1 << size) - 1) for name, (offset, size) in layout.items()}


@dataclass(frozen=True)
class RingState:
    running   : bool
    policy    : str       # applied
    tt        : int
    nbits     : int
    table_max : int
    error     : str       # why the last apply was refused ("none")

    def describe(self):
        if not self.running:
            return f"ring stopped (dies run free); last apply error: {self.error}"
        return f"ring running {self.policy}, TT = {self.tt} tokens, packets of {self.nbits} bits"


@dataclass(frozen=True)
class MonitorState:
    windows    : int
    violations : int
    max        : int      # largest summed current of a window, I_max / 2^I_FRAC_BITS (nand_model.current)
    pb         : int      # budget in force, same unit


class PowerControl:
    """The power ring and the current monitor of the SoC behind `bus` (a RemoteClient opened with
    the SoC's csr.csv, or anything with its `regs` and `constants`)."""

    def __init__(self, bus, timeout=60.0):
        self.bus = bus
        self.timeout = timeout
        constants = getattr(getattr(bus, "constants", None), "d", None) or {}
        if "nandlab_power_policies" not in constants:
            raise NandLabError("this SoC exports no power policies (no nandlab_power_policies in its csr.csv): "
                               "it was built before they were exported; rebuild it")
        sep = str(constants["nandlab_list_separator"])
        for name, ours in (("power_policies", POLICIES), ("power_ring_errors", RING_ERRORS)):
            theirs = str(constants[f"nandlab_{name}"]).split(sep)
            if theirs != [x.lower() for x in ours]:
                raise NandLabError(f"the SoC's {name.replace('_', ' ')} ({', '.join(theirs)}) are not this host's "
                                   f"({', '.join(ours)}): rebuild the SoC from this checkout")
        self.policies, self.errors = POLICIES, RING_ERRORS
        self.part = constants.get("nandlab_die_part")

    def _reg(self, name):
        try:
            return getattr(self.bus.regs, name)
        except AttributeError:
            raise NandLabError(f"no CSR named '{name}' in this SoC's csr.csv (no emulated dies, no power ring)") from None

    def status(self):
        s = unpack(STATUS, self._reg("power_ring_status").read())
        return RingState(running=bool(s["running"]), policy=self._name(self.policies, s["mode"]), tt=s["tt"],
                         nbits=s["nbits"], table_max=s["table_max"], error=self._name(self.errors, s["error"]))

    @staticmethod
    def _name(names, i):
        return names[i] if i < len(names) else f"? ({i})"

    def token_table(self, tg, alpha):
        """The compiled token table the ring needs for (tg, alpha), the SoC's data transfers included;
        checks both (NandLabError)."""
        from nandlab import tokens
        from nandlab.nand_model.parts import get_part
        if self.part is None:
            raise NandLabError("this SoC names no die part (nandlab_die_part): no token tables for it")
        for name, value in (("TG", tg), ("alpha", alpha)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise NandLabError(f"{name} = {value!r} is not an integer")
        return tokens.with_transfers(tokens.compile_tables(get_part(self.part), tg=tg, alpha=alpha))

    def configure(self, policy, tg=DEFAULT_TG, alpha=DEFAULT_ALPHA):
        """Run `policy` at granularity `tg` and budget alpha x I_max; returns the ring's state once it
        runs the configuration. Raises NandLabError for an unknown policy, TG or alpha out of range,
        a refusal by the ring, or a ring that does not start within `timeout` seconds."""
        if policy not in self.policies:
            raise NandLabError(f"unknown policy '{policy}' (valid: {', '.join(self.policies)})")
        table = self.token_table(tg, alpha)
        config = self._reg("power_ring_config")
        config.write(pack(CONFIG, table_clear=1))
        self._wait_cycles(2 << TABLE["oi"][1])         # The ring zeroes an entry per cycle.
        entries = self._reg("power_ring_table")
        for oi, rt, _ in table.words():
            entries.write(pack(TABLE, oi=oi, rt=rt))
        mode = self.policies.index(policy)
        config.write(pack(CONFIG, mode=mode, tg=tg, alpha=alpha, apply=1))
        deadline = time.monotonic() + self.timeout
        while True:
            state = self.status()
            if state.error != self.errors[0]:
                exchange = str(self.bus.constants.d.get("nandlab_power_topology", "")) == "exchange"
                hint = " or above a ring's home share (TT / rings)" if exchange and state.error == self.errors[ERR_RT] else ""
                raise NandLabError(f"the ring refused {policy} TG {tg} alpha {alpha}: {state.error}{hint}")
            if state.running and state.policy == policy and state.tt == table.tt:
                return state
            if time.monotonic() > deadline:
                raise NandLabError(f"the ring did not start {policy} TG {tg} alpha {alpha} within {self.timeout:g} s "
                                   f"({state.describe()}; dies still busy?)")
            time.sleep(0.01)

    def monitor(self):
        read = lambda name: self._reg(f"power_monitor_{name}").read()
        return MonitorState(windows=read("windows"), violations=read("violations"), max=read("max"), pb=read("pb"))

    def clear_monitor(self):
        self._reg("power_monitor_clear").write(1)

    def rings(self):
        """Every ring's state: [{running, ut, ut_peak, share, lent, borrowed}] (gateware/power/rings.py)."""
        sel, out = self._reg("power_ring_ring_sel"), []
        for k in range(int(self.bus.constants.d.get("nandlab_power_rings", 1))):
            sel.write(k)
            v = self._reg("power_ring_ring_status").read()
            out.append({"running": bool(v & 1), "ut": (v >> 8) & 0xFF, "ut_peak": (v >> 16) & 0xFF,
                        "share": (v >> 24) & 0xFF, "lent": self._reg("power_ring_ring_lent").read(),
                        "borrowed": self._reg("power_ring_ring_borrowed").read()})
        return out

    def tokens(self):
        """(global token sum now, cycles it differed from the global TT since the last apply)."""
        return self._reg("power_ring_tokens").read(), self._reg("power_ring_cons_errors").read()

    def die_peaks(self, clear=False):
        """[(peak current in I_max / 4096, its OI)] of every die since the last clear (diepeak.py)."""
        return self._per_die("power_monitor_die_peak", clear)

    def die_over(self, clear=False):
        """[(current in I_max / 4096, its OI)] of every die where it drew most above what its ring node's
        RT pays for since the last clear ((0, 0): never; diepeak.py); a SoC without that register gives
        die_peaks()."""
        try:
            getattr(self.bus.regs, "power_monitor_die_over_peak")
        except AttributeError:
            return self.die_peaks(clear)
        return self._per_die("power_monitor_die_over_peak", clear)

    def _per_die(self, name, clear):
        """Register `name` (current, OI << 16) of every die through die_sel; then clear them all if asked."""
        sel, reg, out = self._reg("power_monitor_die_sel"), self._reg(name), []
        for i in range(self._dies()):
            sel.write(i)
            v = reg.read()
            out.append((v & 0xFFFF, (v >> 16) & 0xFF))
        if clear:
            self._reg("power_monitor_die_clear").write(1)
        return out

    def _dies(self):
        d = self.bus.constants.d
        return int(d.get("nandlab_dies", 0)) * int(d.get("nandlab_channels", 1))

    def adapt(self, tg, alpha, rts=None):
        """One adaptation step (issue 18 b, as the power harness's driver does: gateware/power/
        harness_deviation.h, and the firmware's `power adapt`): each die's current where it drew most
        above its RT (die_over; one phase per die and step) against what its phase's RT covers;
        a die above it gets that RT re-compiled from its peak, ceil(peak x (2^TG - 1) / I_max) capped at
        TT, with the phases before it in its atomic operation raised to as much, written into its own
        ring node only (`power_ring_table_keep`). `rts`: {die: {OI: RT}} the dies' nodes hold (default:
        the compiled table in every node, as configure() loads it); returns it updated, and the writes
        made [(die, OI, RT)]. The peaks are cleared after reading."""
        from nandlab import deviation, tokens
        from nandlab.nand_model.current import PhaseTables
        from nandlab.nand_model.parts import get_part
        d = self.bus.constants.d
        part = get_part(self.part)
        table = tokens.compile_tables(part, tg=tg, alpha=alpha)
        nominal = PhaseTables(part, float(d.get("config_clock_frequency", 100e6)),
                              int(d.get("nandlab_die_time_scale", 1)))
        spec = deviation.spec_part(nominal, table, adaptive=True)
        limit, prefix = dict(map(tuple, spec["limit"])), {p[0]: p[1:] for p in spec["prefix"]}
        den, n = spec["den"], self._dies()
        rts = rts or {i: dict(table.rt) for i in range(n)}
        writes = []
        for die, (peak, oi) in enumerate(self.die_over(clear=True)):
            covered = max(limit.get(oi, 0), rts[die].get(oi, 0) * 4096 // den)
            if oi not in limit or peak <= covered:
                continue
            need = min(table.tt, -(-peak * den // 4096))
            for p in prefix[oi]:
                if rts[die].get(p, 0) < need:
                    rts[die][p] = need
                    writes.append((die, p, need))
        if writes:
            keep, entries = self._reg("power_ring_table_keep"), self._reg("power_ring_table")
            for die, oi, rt in writes:
                keep.write(((1 << n) - 1) & ~(1 << die))       # this die's node only
                entries.write(pack(TABLE, oi=oi, rt=rt))
            keep.write(0)
        return rts, writes

    def _wait_cycles(self, cycles):
        """Until `cycles` cycles of the SoC's time base have passed (bridge writes are posted)."""
        latch, stamp = self._reg("timebase_latch"), self._reg("timebase_timestamp")
        latch.write(1)
        t0 = stamp.read()
        deadline = time.monotonic() + self.timeout
        while True:
            latch.write(1)
            if stamp.read() - t0 >= cycles:
                return
            if time.monotonic() > deadline:
                raise NandLabError("the SoC's time base does not advance")
