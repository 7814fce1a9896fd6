"""Power experiment harness without the CPU: N die sequencers + the token ring + the current monitor,
fed by per-die operation traces. Built for Verilator (nandlab.experiment drives it).

Each die plays its operations' current waveforms phase by phase (nand_model/current.py) with the
OI/OE handshake to its ring node, one operation after another from its own trace memory, as a
channel controller with a queue per die would issue them. Built with a `channel` (the default of
nandlab.experiment), the dies of a channel share one bus: a program's data input and a read's
data output (R_A3) move a page over it at the interface's rate, one die at a time, each under the
ring like any atomic operation (gateware/power/channel.py); the bus staggers the dies, which no
longer start in lock-step. Without it (`--no-channel`) the dies play array operations only and all
start at t = 0. The harness counts, per die, operations done, cycles spent running them (from the
die taking the operation to the end of its last transfer) and cycles its first phases waited for
tokens, and the total cycles until every die has finished; the monitor counts budget violations
per 40 ns window.

A controller-side scheduler (DCC, nandlab.dcc) decides when operations start: each die shows the
operation it would start next (`pending`, `next_op`) and starts it only while `hold` is low (tie
`hold` low and the dies start as soon as they are free).

Built `with_skip` (simulation only), the harness can jump: a cycle with `skip` = N > 0 stands for
N cycles when `skip_ok` says that nothing but counters, current ramps and circulating packets
would change in them (gateware/power/skip.py says when, and why that is exact). The driver
(harness_skip.h) picks N (at most every running die's `room`, short of a packet's arrival where it
stops), the ring's rotation (`skip_hops`, `skip_rem`), the window counter after the stretch and the
monitor's load (window statistics computed from the dies' current ramps).
"""

from functools import reduce
from operator import add, and_, or_

from migen import *

from litex.gen import LiteXModule

from nandlab.nand_model.current import NandLabDieSequencer, PhaseTables, I_FRAC_BITS
from nandlab.gateware.power.common import STOPPED_ALPHA, TOPOLOGIES
from nandlab.gateware.power.hook import NandLabPowerHook
from nandlab.gateware.power.ring import PowerRing
from nandlab.gateware.power.monitor import CurrentMonitor
from nandlab.gateware.power.skip import PowerRingSkip
from nandlab.gateware.power.exchange import PowerExchange
from nandlab.gateware.power.channel import PowerChannelBus, PowerChannelDie
from nandlab.gateware.power.deviation import keep_wiring

OP_CODES = {"read": 0, "program_lsb": 1, "program_msb": 2, "erase": 3}



class PowerHarness(LiteXModule):
    """`channels` channels of n / channels dies each; `topology` "single": one ring through every die
    (the MTPM paper's scenario 1), "per_channel": a ring per channel, each with its own share of
    the budget (scenario 2: the configuration's alpha is per ring; PB is their sum), "exchange": a ring
    per channel, the configuration's alpha the global budget, shared through exchange nodes
    (gateware/power/exchange.py; the skip is off: `skip_ok` stays low). Every cycle the rings run,
    the global sum of tokens held, in flight and in use is compared with the global TT:
    `cons_errors` counts the cycles it differs (0 in a correct ring). `die_tables(tables, i)`, when
    given: die i's own PhaseTables (a deviated die, gateware/power/deviation.py); `table_keep` (one
    bit per die) keeps a die's node out of a table write (per-die tables)."""
    def __init__(self, part, n=8, sys_clk_freq=100e6, time_scale=1, depth=1024, window_ns=40, channels=1,
                 topology="single", with_skip=False, channel=None, die_tables=None):
        """`channel`: None, the dies play array operations only (no bus, every die starts at once);
        or {"t_in", "t_out", "i_bus", "din_tokens"} (gateware/power/channel.py): a bus per channel,
        data input before a program and data output after a read."""
        assert topology in TOPOLOGIES and n % channels == 0
        self.window_cycles = window_cycles = max(1, int(round(window_ns * 1e-9 * sys_clk_freq)))
        self.tables = tables = PhaseTables(part, sys_clk_freq, time_scale)
        xchg = topology == "exchange"
        rings = [PowerRing(n)] if topology == "single" else [PowerRing(n // channels, with_exchange=xchg) for _ in range(channels)]
        for k, r in enumerate(rings):
            self.add_module(name=f"ring{k}", module=r)
        self.nodes = [node for r in rings for node in r.nodes]
        self.n = n
        # Ring configuration, to every ring (the table too); state of all of them.
        self.req_mode  = Signal(3)
        self.req_tg    = Signal(3)
        self.req_alpha = Signal(4)
        self.apply     = Signal()
        self.table_we  = Signal()
        self.table_adr = Signal.like(rings[0].table_adr)
        self.table_dat = Signal.like(rings[0].table_dat)
        self.table_clear = Signal()
        self.running   = Signal()
        self.error     = Signal.like(rings[0].error)
        self.tt        = Signal(12)
        for r in rings:
            self.comb += [getattr(r, a).eq(getattr(self, a)) for a in
                          ("req_mode", "req_tg", "req_alpha", "apply", "table_we", "table_adr", "table_dat",
                           "table_clear")]
        self.comb += keep_wiring(self, rings) + [     # table_keep: per-die table writes (deviation.py)
            self.running.eq(reduce(and_, [r.running for r in rings])),
            self.error.eq(reduce(or_, [r.error for r in rings])),
            self.tt.eq(rings[0].tt if xchg else reduce(add, [r.tt for r in rings])),
        ]
        self._add_conservation(rings, xchg)
        # Trace loading (one entry per cycle): die, index, op code; then `go`.
        self.load_we    = Signal()
        self.load_die   = Signal(max=max(n, 2))
        self.load_adr   = Signal(max=depth)
        self.load_op    = Signal(2)
        self.count      = [Signal(max=depth + 1, name=f"count{i}") for i in range(n)]
        self.go         = Signal()
        # Start gate per die (DCC): the die shows its next operation and waits while `hold` is high.
        self.hold       = [Signal(name=f"hold{i}") for i in range(n)]
        self.pending    = [Signal(name=f"pending{i}") for i in range(n)]
        self.next_op    = [Signal(2, name=f"next_op{i}") for i in range(n)]
        # Results.
        self.done       = Signal()
        self.cycles     = Signal(40)
        self.ops_done   = [Signal(32, name=f"ops_done{i}") for i in range(n)]
        # Per die and kind (0 read, 1 program, 2 erase): operations and their cycles from start to end.
        self.kind_ops    = [[Signal(32, name=f"kind_ops{i}_{k}") for k in range(3)] for i in range(n)]
        self.kind_cycles = [[Signal(48, name=f"kind_cycles{i}_{k}") for k in range(3)] for i in range(n)]
        if with_skip:
            self.skip        = Signal(32)    # Cycles this cycle stands for (0: one).
            self.skip_wcount = Signal(8)     # The window counter after them.
            self.skip_ok     = Signal()      # A skip is exact now (as far as harness_skip.h's room).

        # # #

        running = Signal()
        strobe  = Signal()
        self.wcount = wcount = Signal(8)
        step = Mux(self.skip != 0, self.skip, 1) if with_skip else 1
        tick = If(wcount == window_cycles - 1, wcount.eq(0)).Else(wcount.eq(wcount + 1))
        if with_skip:
            tick = If(self.skip != 0, wcount.eq(self.skip_wcount)).Else(tick)
        self.sync += [
            tick,
            If(self.go, running.eq(1)),
            If(running & ~self.done, self.cycles.eq(self.cycles + step)),
        ]
        self.comb += strobe.eq(wcount == window_cycles - 1)

        currents = []
        finished = []
        self.seqs, quiet = [], []
        self.dies = []                 # What plays each die's operations: its sequencer, or its channel die.
        if channel is not None:
            per = n // channels
            self.buses = [PowerChannelBus(per) for _ in range(channels)]
            for c, bus in enumerate(self.buses):
                self.add_module(name=f"bus{c}", module=bus)
        for i in range(n):
            seq = NandLabDieSequencer(tables if die_tables is None else die_tables(tables, i), with_skip=with_skip)
            self.seqs.append(seq)
            self.add_module(name=f"seq{i}", module=seq)
            die = seq
            if channel is not None:
                die = PowerChannelDie(seq, channel["t_in"], channel["t_out"], channel["i_bus"],
                                      din_tokens=channel.get("din_tokens", True), with_skip=with_skip)
                self.add_module(name=f"chdie{i}", module=die)
                bus = self.buses[i // per]
                self.comb += [bus.req[i % per].eq(die.bus_req), bus.release[i % per].eq(die.bus_release),
                              die.bus_grant.eq(bus.grant[i % per])]
            self.dies.append(die)
            hook = NandLabPowerHook(len(seq.current), name=f"power_hook{i}")
            self.comb += hook.connect(die, self.nodes[i])
            currents.append(hook.current)
            mem = Memory(2, depth, name=f"trace{i}")
            rd = mem.get_port(async_read=True)
            wr = mem.get_port(write_capable=True)
            self.specials += mem, rd, wr
            self.comb += [
                wr.adr.eq(self.load_adr), wr.dat_w.eq(self.load_op),
                wr.we.eq(self.load_we & (self.load_die == i)),
            ]
            ptr = Signal(max=depth + 1, name=f"ptr{i}")
            active = Signal(name=f"active{i}")
            cur_op = Signal(2, name=f"cur_op{i}")
            t_op = Signal(32, name=f"t_op{i}")
            fin = Signal(name=f"finished{i}")
            if channel is not None:
                finished.append(fin)
                self._channel_die(i, die, rd, ptr, t_op, fin, running, step, with_skip, quiet)
                continue
            self.comb += [
                rd.adr.eq(ptr),
                fin.eq((ptr == self.count[i]) & ~active & ~seq.busy),
                seq.op.eq(rd.dat_r),
                self.next_op[i].eq(rd.dat_r),
                self.pending[i].eq(running & ~active & ~seq.busy & (ptr != self.count[i])),
                seq.start.eq(self.pending[i] & ~self.hold[i]),
            ]
            finished.append(fin)
            if with_skip:
                # Between two operations (active, not busy) the harness counts the one that ended.
                quiet.append(seq.quiet & (seq.busy | ~active))
                self.comb += seq.skip.eq(self.skip)
            self.sync += [
                If(seq.start,
                    active.eq(1), ptr.eq(ptr + 1), cur_op.eq(rd.dat_r), t_op.eq(0),
                ).Elif(active,
                    t_op.eq(t_op + step),
                    If(~seq.busy & (t_op != 0),
                        active.eq(0),
                        *self._count_end(i, cur_op, t_op),
                    ),
                ),
            ]
        self.submodules.monitor = CurrentMonitor(currents, strobe, with_skip=with_skip)
        alpha = rings[0].alpha if xchg else reduce(add, [r.alpha for r in rings])
        self.comb += self.monitor.pb.eq(Mux(self.running, alpha, STOPPED_ALPHA) << I_FRAC_BITS)
        self.comb += self.monitor.source.ready.eq(1)
        self.comb += self.done.eq(running & reduce(and_, finished))
        if with_skip:
            if channel is not None:
                quiet += [bus.quiet for bus in self.buses]
            self._add_skip(rings, quiet if not xchg else [C(0)], running)

    def _add_conservation(self, rings, xchg):
        """The exchange nodes (topology "exchange"), and `cons_errors`: cycles the rings run and the global
        sum of tokens held, in flight and in use is not TT."""
        self.cons_errors = Signal(32)
        tokens = Signal(12)
        if xchg:
            self.submodules.exchange = PowerExchange(rings, with_mutation=True)
            self.mutate = self.exchange.mutate       # The tests' negative control: exchange nodes create tokens.
            self.comb += tokens.eq(self.exchange.tokens)
        else:
            self.comb += tokens.eq(reduce(add, [s for nd in self.nodes for s in (nd.ht, nd.ut, nd.tx_tokens)]))
        self.sync += If(self.running & (tokens != self.tt), self.cons_errors.eq(self.cons_errors + 1))

    def _count_end(self, i, op, t):
        """Statements counting die `i`'s operation `op` (a code) that took `t` cycles."""
        k = {0: 0, 1: 1, 2: 1, 3: 2}
        return [self.ops_done[i].eq(self.ops_done[i] + 1),
                Case(op, {c: [self.kind_ops[i][k[c]].eq(self.kind_ops[i][k[c]] + 1),
                              self.kind_cycles[i][k[c]].eq(self.kind_cycles[i][k[c]] + t)] for c in range(4)})]

    def _channel_die(self, i, die, rd, ptr, t_op, fin, running, step, with_skip, quiet):
        """Die `i` with its transfers (gateware/power/channel.py): an operation's cycles run from the
        moment the die takes it to the end of its last transfer, less the cycles its array phases
        were held by DCC (the driver counts those as DCC's wait, as without the channel)."""
        self.comb += [
            rd.adr.eq(ptr),
            die.avail.eq(running & (ptr != self.count[i])),
            die.op_in.eq(rd.dat_r),
            fin.eq((ptr == self.count[i]) & ~die.active),
            self.next_op[i].eq(die.cur_op),
            self.pending[i].eq(die.pending),
            die.hold.eq(self.hold[i]),
        ]
        if with_skip:
            quiet.append(die.quiet)
            self.comb += die.skip.eq(self.skip)
        self.sync += [
            If(die.take,
                ptr.eq(ptr + 1), t_op.eq(0),
            ).Elif(die.op_end,
                *self._count_end(i, die.cur_op, t_op + 1),
            ).Elif(die.active & ~die.pending,
                t_op.eq(t_op + step),
            ),
        ]

    def _add_skip(self, rings, quiet, running):
        """The ring's skip and `skip_ok`: every die and ring quiet, the run under way."""
        self.submodules.ring_skip = ring_skip = PowerRingSkip(rings, self.skip)
        self.skip_hops, self.skip_rem = ring_skip.hops, ring_skip.rem
        self.nbits = rings[0].nbits
        self.ring_nodes = len(rings[0].nodes)
        self.comb += [
            self.monitor.skip.eq(self.skip != 0),
            # Nothing here depends on an input (`done` does): the driver stops at `done` anyway.
            self.skip_ok.eq(running & ring_skip.quiet & reduce(and_, quiet)),
        ]
