"""The die's statistics counters in one memory: a small pending count per counter, flushed into its
memory word by one shared adder, and a read port for the CPU (the die's `stats="memory"` option)."""

from migen import *

from litex.gen import LiteXModule

from nandlab.nand_model.common import REASON_NAMES
from nandlab.nand_model.die.timing import TIMING_CHECKS

# Where the die keeps its statistics: a register each, or one memory (NandLabDieStats).
STATS = ("counters", "memory")
STAT_OPS = ("read", "program", "erase")


def stat_widths(config):
    """{name: bits} of the statistics of a die built from `config`, in the order of their CSRs (and of
    the memory's words): viol_<check>, fail_reason<i>, ops_<op>, mp_<op><pages>."""
    out = {f"viol_{c}": 16 for c in TIMING_CHECKS}
    out.update({f"fail_reason{i}": 16 for i in range(len(REASON_NAMES))})
    out.update({f"ops_{op}": 32 for op in STAT_OPS})
    out.update({f"mp_{op}{n}": 32 for op in STAT_OPS for n in range(2, config.registers + 1)})
    return out


class NandLabDieStats(LiteXModule):
    """Counters of `events` (pulses, at most one per counter and cycle), each `widths[i]` bits wide
    (<= 32, wrapping as a plain counter of that width does), kept in a `len(events)` x 32 memory.

    Each counter has a pending count of bits_for(n) bits that counts its events; a pointer visits
    the counters in turn, one a cycle: it reads the word (cycle t), then writes word + pending and
    restarts the pending count with that cycle's event (cycle t + 1) while it reads the next word.
    A counter is visited every n cycles, so its pending count never exceeds n: no event is lost.

    Reading counter `index`: pulse `request`; on the counter's next visit (at most n + 1 cycles)
    `value` takes the sum it writes (its count up to that cycle, cut to its width) and `ready` rises;
    `ready` falls with the next request."""
    def __init__(self, events, widths):
        assert len(events) == len(widths) >= 2 and all(0 < w <= 32 for w in widths)
        n = len(events)
        self.index   = Signal(max=n)
        self.request = Signal()
        self.value   = Signal(32)
        self.ready   = Signal()

        # # #

        # Not an attribute: LiteX would map an attribute Memory into the CSR space with a port of its own.
        mem = Memory(32, n, init=[0] * n, name="die_statsmem")
        rd = mem.get_port()
        wr = mem.get_port(write_capable=True)
        self.specials += mem, rd, wr
        pending = [Signal(bits_for(n), name=f"pending{i}") for i in range(n)]
        ptr    = Signal(max=n)          # Word read this cycle.
        ptr_q  = Signal(max=n)          # Word written this cycle (read the cycle before).
        valid  = Signal()               # ptr_q names a word read (not the first cycle after reset).
        pend_q = Signal(bits_for(n))
        total  = Signal(32)
        want   = Signal()
        self.comb += [
            rd.adr.eq(ptr),
            pend_q.eq(Array(pending)[ptr_q]),
            total.eq(rd.dat_r + pend_q),
            wr.adr.eq(ptr_q),
            wr.dat_w.eq(total),
            wr.we.eq(valid),
        ]
        self.sync += [
            ptr.eq(Mux(ptr == n - 1, 0, ptr + 1)),
            ptr_q.eq(ptr),
            valid.eq(1),
        ]
        for i, (ev, p) in enumerate(zip(events, pending)):
            self.sync += If(valid & (ptr_q == i), p.eq(ev)).Else(p.eq(p + ev))
        mask = Signal(32)
        self.comb += Case(ptr_q, {i: mask.eq((1 << w) - 1) for i, w in enumerate(widths)})
        self.sync += [
            If(self.request,
                want.eq(1), self.ready.eq(0),
            ).Elif(want & valid & (ptr_q == self.index),
                want.eq(0), self.ready.eq(1), self.value.eq(total & mask),
            ),
        ]
