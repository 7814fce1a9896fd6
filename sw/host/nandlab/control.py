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
from nandlab.gateware.power.common import DEFAULT_TG, DEFAULT_ALPHA, POLICIES, RING_ERRORS
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
        """The compiled token table the ring needs for (tg, alpha); checks both (NandLabError)."""
        from nandlab import tokens
        from nandlab.nand_model.parts import get_part
        if self.part is None:
            raise NandLabError("this SoC names no die part (nandlab_die_part): no token tables for it")
        for name, value in (("TG", tg), ("alpha", alpha)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise NandLabError(f"{name} = {value!r} is not an integer")
        return tokens.compile_tables(get_part(self.part), tg=tg, alpha=alpha)

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
                raise NandLabError(f"the ring refused {policy} TG {tg} alpha {alpha}: {state.error}")
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
