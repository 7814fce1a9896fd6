"""Idle clock gating for simulation: a block whose registers cannot change is not evaluated.

Verilator evaluates every always block of a clock domain at each of its edges, busy or not, and
the combinational logic fed only by that domain's registers with it. A block that says when it is
idle can therefore be moved into a clock domain of its own whose clock ticks only in the cycles
where the block is not idle: between those ticks Verilator skips the block entirely.

The gate is a clock enable, cycle for cycle:

* `idle` is combinational from the block's state and inputs in cycle k; it is latched at the
  falling edge of `sys` (mid-cycle, once the cycle's logic has settled), and the gated clock is
  `sys_clk & ~idle_latched`: the block's registers take their cycle-k values at the rising edge
  ending cycle k exactly when the block was not idle in cycle k.
* The contract of `idle`: in a cycle where it is 1, none of the block's registers would change
  whatever its inputs. Then gating removes nothing but work. `QuiescenceGate` derives such an
  `idle` from the block itself; `tests/test_idlegate.py` runs the die suite on a gated and a plain
  die and compares their bus traces cycle for cycle.
* A system reset always ticks the block (synchronous resets still apply).

On FPGA targets the gate is not built (`enabled=False`): the block stays in `sys` and no clock is
derived from logic. The simulation target builds it (`NandLabSoC(idle_gating=True)`).
"""

from functools import reduce
from operator import and_, or_

from migen import *
from migen.fhdl.structure import _Assign, _Operator, _Slice
from migen.fhdl.tools import list_special_ios, list_targets
from migen.fhdl.visit import NodeVisitor
from migen.fhdl.bitcontainer import value_bits_sign

from migen.fhdl.decorators import ModuleTransformer
from migen.fhdl.specials import _MemoryPort

from litex.gen import LiteXModule, log2_int
from litex.soc.interconnect import csr, csr_bus


class IdleGate(LiteXModule):
    """Clock `block` (in place: its synchronous statements move to the gated domain) only in cycles
    where `idle` is 0.

    `name` names the gated domain (`<name>` and the latch domain `<name>_n`). With
    `enabled=False` nothing is built and `block` stays in `sys`.
    """
    def __init__(self, block, idle, name, enabled=True, domain="sys"):
        self.enabled = enabled
        if not enabled:
            return
        self.domain = domain
        self.latched = latched = Signal(reset=0, name=f"{name}_idle")
        self.cd_gate = cd_gate = ClockDomain(name)
        self.cd_latch = cd_latch = ClockDomain(f"{name}_n", reset_less=True)
        self.clock_domains += [cd_gate, cd_latch]
        self.comb += [
            cd_latch.clk.eq(~ClockSignal(domain)),
            cd_gate.clk.eq(ClockSignal(domain) & ~latched),
            cd_gate.rst.eq(ResetSignal(domain)),
        ]
        if idle is not None:      # (None: the owner adds `latch(idle)` to domain `<name>_n` itself)
            sync_n = getattr(self.sync, f"{name}_n")
            sync_n += self.latch(idle)
        _SyncDomainRenamer(domain, name)(block)

    def latch(self, idle):
        """The latch's statement: `idle` (not in a reset cycle) taken at the falling edge. The expression
        is in the statement itself, not on a wire of its own: Verilator evaluates it when the latch is
        clocked, once a cycle. (On a wire, logic reading the simulator's inputs, as the dies' gates read
        the nandstore module's data, was evaluated at every evaluation, twice a cycle: 11 % of the time.)"""
        return self.latched.eq(idle & ~ResetSignal(self.domain))


class _SyncDomainRenamer(ModuleTransformer):
    """Moves a block's synchronous statements and memory ports from one clock domain to another,
    leaving clock and reset *expressions* alone (unlike ClockDomainsRenamer). Gates nested in the
    block then keep deriving their clocks from `sys`: an outer gate may stop the block, but the
    inner gate's latch still samples its `idle` every cycle, as the inner gate's exactness needs."""
    def __init__(self, old, new):
        self.old, self.new = old, new

    def transform_fragment(self, i, f):
        if self.old in f.sync:
            f.sync.setdefault(self.new, []).extend(f.sync.pop(self.old))
        for special in f.specials:
            if isinstance(special, _MemoryPort) and special.clock.cd == self.old:
                special.clock = ClockSignal(self.new)


class QuiescenceGate(LiteXModule):
    """Idle gating of a whole block without knowing its logic: the block is a deterministic
    function of its state and inputs, so if neither changed over the last cycle it will not change
    in the next one. Idle in cycle k when

    * its registers (every target of its synchronous statements, plus the address registers of its
      synchronous memory read ports) hold the values they had before the last clock edge the block
      saw, and no memory of the block was written at that edge;
    * its inputs (every signal the block reads and does not drive) are those of the last cycle in which
      it was clocked.

    (Exact: when the block was clocked at the end of cycle j and its state did not change, state and
    inputs of cycle j are a fixed point of the block; while neither moves from there, nothing can change.)
    The price: a copy of the block's state and of its inputs, both taken when the block is clocked, the
    state compared then and the inputs every cycle. It pays for blocks that sit unchanged for long
    stretches (a die between commands). With `count_ticks`, `ticks` counts the cycles in which the block
    was clocked (for tests; not built otherwise, being work on every cycle).

    With `late_inputs` the inputs' part of `idle` is left to the owner, who calls `resolve_gate_inputs`
    on the whole design once it is finalized: an input that depends only on registers of other gated
    blocks is then known unchanged when those blocks were not clocked (no copy, no comparison)."""
    def __init__(self, block, name, domain="sys", count_ticks=False, late_inputs=False):
        # In a tuple: a Module attribute would make the block a submodule of the gate as well.
        self._gated = (block,)
        self.gate_name, self.gate_domain = name, domain
        self.idle = None                 # The expression, once finalized (latched by the gate).
        self.late_inputs = late_inputs
        self.resolved = False            # resolve_gate_inputs has added the inputs' part of `idle`.
        self.state_same = None
        self.gate = IdleGate(block, None, name, domain=domain)
        if count_ticks:
            self.ticks = Signal(32, name=f"{name}_ticks")
            self.sync += If(~self.gate.latched, self.ticks.eq(self.ticks + 1))

    def do_finalize(self):
        from migen.fhdl.tools import list_signals, list_targets
        from migen.fhdl.specials import Memory, SPECIAL_INPUT, SPECIAL_OUTPUT
        (block,), name = self._gated, self.gate_name
        block.finalize()
        f = block._fragment
        # Nested gates' domains (declared inside the block) hold state too; any other domain would
        # tick on its own.
        domains = set(f.sync) - {self.gate_domain, name} - {cd.name for cd in f.clock_domains}
        if domains:
            raise ValueError(f"{name}: the block has clock domains {sorted(domains)} besides {self.gate_domain}")
        # Nested gates' latches (domains `<gate>_n`) are not state: a latch takes its gate's `idle`, a
        # function of the block's other registers and inputs in the same cycle, so it cannot change while
        # those do not. Left out of the comparison, which then is evaluated when the block is clocked
        # instead of at every falling edge as well (it was 5 % of the time with the controller's BCH).
        names = {cd.name for cd in f.clock_domains}
        latches = {d for d in f.sync if d.endswith("_n") and d[:-2] in names}
        sync = [s for d, stmts in f.sync.items() for s in stmts]
        state = set(list_targets([s for d, stmts in f.sync.items() if d not in latches for s in stmts]))
        driven = set(list_targets(f.comb)) | set(list_targets(sync))
        read = set(list_signals(f.comb)) | set(list_signals(sync))
        written, read_ports, roots = [], [], set()
        for special in f.specials:
            if isinstance(special, _MemoryPort):
                continue                        # Seen through its Memory.
            if not isinstance(special, Memory):
                raise ValueError(f"{name}: cannot gate a block holding {type(special).__name__}")
            for port in special.ports:
                if port.we is not None:
                    written.append(port.we)
                if not port.async_read:
                    read_ports.append(port)
                for obj, attr, ctx in port.iter_expressions():
                    value = getattr(obj, attr)
                    if value is None or not isinstance(value, (Signal, _Operator, _Slice, Cat)):
                        continue
                    (driven if ctx == SPECIAL_OUTPUT else roots).update(list_signals(value))
        read |= roots
        # The read ports' address registers are state the statements do not show. (Specials are a
        # set: sorted, so that the generated Verilog is the same from run to run.)
        key = lambda port: min(s.duid for s in list_signals(port.adr))
        read_ports.sort(key=key)
        written.sort(key=lambda we: min(s.duid for s in list_signals(we)))
        gated = getattr(self.sync, name)
        for i, port in enumerate(read_ports):
            adr_q = Signal(len(port.adr), name=f"{name}_adr_q{i}")
            gated += adr_q.eq(port.adr)
            state.add(adr_q)
        by_id = lambda s: s.duid
        # The inputs are the signals the block's next state is a function of: those its synchronous
        # statements and memory ports read, through its combinational logic. A signal the block only
        # passes on to its outputs (a die's current, the sum of its sequencer's and its bus transfers')
        # cannot change its registers: not compared (it would wake the block whenever it moves).
        inputs = _next_state_inputs(f.comb, list_signals(sync) | roots, read) - driven
        state, inputs = sorted(state, key=by_id), sorted(inputs, key=by_id)
        state_prev = _copies(state, name, "sp")
        self.wrote = wrote = Signal(name=f"{name}_wrote")
        gated += [p.eq(s) for p, s in zip(state_prev, state)]
        gated += wrote.eq(reduce(or_, [we != 0 for we in written], 0))
        # The state comparison on a wire of its own: it reads only gated registers, so the simulator
        # evaluates it when the block is clocked, not every cycle like the inputs' comparison.
        self.state_same = state_same = Signal(name=f"{name}_state_same")
        self.comb += state_same.eq(_same(state, state_prev))
        # The domains whose registers are this block's state (its own, nested gates' but not their latches).
        self.state_domains = [self.gate.cd_gate] + [cd for cd in f.clock_domains if cd.name not in latches]
        self.state_signals, self.input_signals = state, inputs
        self.state_bits, self.input_bits = len(Cat(*state)), len(Cat(*inputs))
        if not self.late_inputs:
            copies, latch = self.input_statements(inputs, [])
            gated += copies
            sync_n = getattr(self.sync, f"{name}_n")
            sync_n += latch

    def input_statements(self, compared, ticked, watch=None):
        """The copies of the `compared` inputs (for the gated domain: the values of the last cycle in which
        the block was clocked) and the latch's statement: idle when the state did not change, no memory was
        written, every compared input equals its copy and every signal of `ticked` (terms saying that other
        inputs held their values since then) is 1; with `watch` (unmoved, held), also `held` unless `unmoved`.
        (As `Mux(unmoved, idle, idle & held)`: Verilator then branches and compares only when needed. It
        turns `Mux(unmoved, 1, held)` into an OR and evaluated every comparison at every falling edge.)"""
        inputs_prev = _copies(compared, self.gate_name, "ip")
        copies = [p.eq(s) for p, s in zip(inputs_prev, compared)]
        # The inputs' comparison in the latch's statement (IdleGate.latch): evaluated once a cycle.
        self.idle = self.state_same & ~self.wrote & _same(compared, inputs_prev)
        if ticked:
            self.idle = self.idle & _same(ticked, [])
        if watch is not None:
            unmoved, held = watch
            self.idle = Mux(unmoved, self.idle, self.idle & held)
        self.compared_signals = compared
        return copies, self.gate.latch(self.idle)


def _copies(signals, name, kind):
    """A register beside each signal (reset to 0), compared with it on its own: packed into one wide vector
    (as before), the packing was redone at every comparison and every copy. (Grouping the comparisons on
    wires of their own, 8 signals a wire, made the simulator half as fast: Verilator then evaluated the
    dies' groups at every evaluation.)"""
    return [Signal(value_bits_sign(s), name=f"{name}_{kind}{i}") for i, s in enumerate(signals)]


def _same(signals, prev):
    """Every signal equal to its copy in `prev` (a signal alone where `prev` is shorter: true when 1); a
    balanced tree (a chain of hundreds overflows Migen's recursion)."""
    terms = [a == b for a, b in zip(signals, prev)] + list(signals[len(prev):]) or [C(1, 1)]
    while len(terms) > 1:
        terms = [terms[i] & terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def resolve_gate_inputs(top, fragment, outside):
    """The inputs' part of `idle` of every QuiescenceGate under `top` built with `late_inputs`, added to
    `fragment`, the whole design's (finalized); `outside` the signals the design's surroundings drive (its
    pads). Each input is traced through the combinational logic to the registers it is a function of:

    * an input that is a function of constants only cannot change: left out;
    * one that is a function of registers of the block's own state domains only is unchanged when the
      state is (`state_same`, already in `idle`);
    * one that is a function of registers of one other gated domain only (another block's, the CSR
      storage's) can only change when that domain is clocked: it is copied in that domain, and its
      comparison with the copy is a wire of that domain's registers (`*_inputs_same`, evaluated only when
      the domain is clocked). It held its value over the last edge when that domain was not clocked at
      it (its latched `idle`, read at the falling edge before it takes the new one) or the wire says so.
      (The domain's `idle` alone would wake every die whenever the bus mux or any CSR changed; the domain's
      `state_same` alone as well, and its latched `idle` alone never let a die and the bus mux stop.)
    * those that are functions of registers of the same set of several other gated domains (a die's power
      hook through the arbiters, the bus mux's data from every die) held their values when none of those
      domains changed its registers (their `state_same`, a plain IdleGate's latched `idle`); when one did,
      they are compared with their copies (in a branch of the latch's statement taken only in the cycles
      where one of the domains watched this way moved). The domains' `state_same` alone woke the ring
      whenever any die or the controller moved, and every die whenever the ring did.
    * any other (reading a `sys` register, a pad, a special's output, a clock or reset) is compared with
      its copy.

    Copies are taken in the block's gated domain: the inputs of the last cycle in which it was clocked.
    Exact: each term says that its inputs equal those of that cycle (a term that they held their values
    over the last edge says so too: they did in every cycle since, the block was idle in each). In the
    cycle after a reset the block is clocked: a reset takes registers and their copies to their reset
    values, so a comparison could then see a change as none.

    A gate is resolved once: a second call (LiteX finalizes an SoC again when it writes it) leaves it alone
    (it added a second set of copies and a second latch statement to every gate, the first evaluated for
    nothing at every falling edge)."""
    gates, latched, _ = _gates(top)
    # A domain's registers did not change over the last edge: the state_same of the QuiescenceGate whose
    # state they are (true whether or not it was clocked), else the domain's latched idle.
    states = {cd.name: g.state_same for g in gates for cd in g.state_domains}
    states.update({d: s for d, s in latched.items() if d not in states})
    drivers = {}
    _comb_reads(fragment.comb, frozenset(), drivers)
    domain = {s: d for d, stmts in fragment.sync.items() for s in list_targets(stmts)}
    unknown = set(outside) | list_special_ios(fragment, ins=False, outs=True, inouts=True)
    memo, after_reset = {}, {}
    def leaves(s, busy):
        if s in memo:
            return memo[s]
        if s in domain:
            r = frozenset([domain[s]])
        elif s in unknown or s in busy:
            r = frozenset([_UNKNOWN])
        elif s in drivers:
            busy.add(s)
            r = frozenset().union(*[leaves(d, busy) if d is not _UNKNOWN else {_UNKNOWN} for d in drivers[s]])
            busy.discard(s)
        else:
            r = frozenset()                  # Undriven: holds its reset value.
        memo[s] = r
        return r
    for gate in gates:
        if not gate.late_inputs or gate.resolved:
            continue
        gate.resolved = True
        own = {cd.name for cd in gate.state_domains}
        compared, by_domain, watched = [], {}, {}
        for s in gate.input_signals:
            doms = leaves(s, set()) - own
            if len(doms) == 1 and min(doms) in latched:
                by_domain.setdefault(min(doms), []).append(s)
            elif doms and all(d in states for d in doms):
                watched.setdefault(frozenset(doms), []).append(s)
            elif doms:
                compared.append(s)
        gate.resolution = dict(compared=compared, by_domain=by_domain, watched=watched)    # (to inspect)
        gated = fragment.sync.setdefault(gate.gate.cd_gate.name, [])
        held, groups = [], []
        for k, (doms, signals) in enumerate(sorted(watched.items(), key=lambda kv: sorted(kv[0]))):
            copies = _copies(signals, gate.gate_name, f"w{k}_q")
            gated.extend(p.eq(s) for p, s in zip(copies, signals))
            unmoved = _same([states[d] for d in sorted(doms)], [])
            groups.append(Mux(unmoved, 1, _same(signals, copies)))
        watch = None
        if groups:
            # When none of the watched domains moved (most cycles), one test of their states decides.
            watch = (_same([states[d] for d in sorted(set().union(*watched))], []), _same(groups, []))
        for d, signals in sorted(by_domain.items()):
            copies = _copies(signals, gate.gate_name, f"{d}_q")
            same = Signal(name=f"{gate.gate_name}_{d}_inputs_same")
            fragment.sync.setdefault(d, []).extend(p.eq(s) for p, s in zip(copies, signals))
            fragment.comb.append(same.eq(_same(signals, copies)))
            held.append(latched[d] | same)
        if gate.gate_domain not in after_reset:
            rst_q = after_reset[gate.gate_domain] = Signal(reset_less=True, name=f"{gate.gate_domain}_gates_rst_q")
            fragment.sync.setdefault(gate.gate_domain, []).append(rst_q.eq(ResetSignal(gate.gate_domain)))
        copies, latch = gate.input_statements(compared, held + [~after_reset[gate.gate_domain]], watch)
        gated.extend(copies)
        fragment.sync.setdefault(gate.gate.cd_latch.name, []).append(latch)


def share_gate_latches(top, fragment):
    """The latches of every enabled IdleGate under `top` (their `<name>_n` domains, each clocked by the
    inverted clock of the gate's domain) moved to one domain a clock, `<domain>_gates_n`, in `fragment`, the
    whole design's (finalized, after resolve_gate_inputs); returns that domain's name per clock domain.

    The same statements at the same edge: each latch still takes its `idle` at the falling edge. (Verilator
    already ran the 18 latch domains of the 8-die SoC off one `negedge sys_clk` trigger: 20 triggers before
    and after. Measured anyway, same-run A/B at 8 dies under load ~10, 5 rounds: idle 1.24x, ctl test 1.02x
    in M cycles per CPU second, outputs identical; where the idle gain comes from is not established.) A
    second call (LiteX finalizes an SoC twice) moves only statements added since."""
    gates = _gates(top)[2]
    shared = {}
    for domain in sorted({g.domain for g in gates}):
        name = f"{domain}_gates_n"
        shared[domain] = name
        if name not in {cd.name for cd in fragment.clock_domains}:
            cd = ClockDomain(name, reset_less=True)
            fragment.clock_domains.append(cd)
            fragment.comb.append(cd.clk.eq(~ClockSignal(domain)))
    moved = {g.cd_latch.name: g for g in gates}
    for g in sorted(gates, key=lambda g: g.cd_latch.name):
        fragment.sync.setdefault(shared[g.domain], []).extend(fragment.sync.pop(g.cd_latch.name, []))
    clocks = {g.cd_latch.clk for g in gates}
    fragment.clock_domains = type(fragment.clock_domains)(cd for cd in fragment.clock_domains if cd.name not in moved)
    fragment.comb = [s for s in fragment.comb if not (isinstance(s, _Assign) and isinstance(s.l, Signal) and s.l in clocks)]
    return shared


_UNKNOWN = "?"                           # A leaf that is not a register of a known domain.


def _gates(top):
    """The QuiescenceGates under module `top`, the latched `idle` of every enabled IdleGate (theirs
    included) by the name of its gated domain, and those IdleGates."""
    gates, latched, idle_gates, seen, todo = [], {}, [], set(), [top]
    while todo:
        m = todo.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        if isinstance(m, QuiescenceGate):
            gates.append(m)
        if isinstance(m, IdleGate) and m.enabled:
            latched[m.cd_gate.name] = m.latched
            idle_gates.append(m)
        todo.extend(sm for _, sm in getattr(m, "_submodules", []))
    return gates, latched, idle_gates


def _next_state_inputs(comb, roots, read):
    """The signals `roots` (what a block's synchronous statements and memory ports read) are functions
    of through the block's combinational statements `comb` (the roots, and everything their drivers read,
    transitively). `read`, every signal the block reads, where `comb` holds a statement whose reads are
    not known (not an assignment, If or Case). Clocks and resets are not signals here (a reset ticks a
    gated block anyway)."""
    drivers = {}
    _comb_reads(comb, frozenset(), drivers, clocks=False)
    if any(_UNKNOWN in d for d in drivers.values()):
        return set(read)
    cone, todo = set(), list(roots)
    while todo:
        s = todo.pop()
        if s in cone:
            continue
        cone.add(s)
        todo.extend(drivers.get(s, ()))
    return cone


class _Reads(NodeVisitor):
    """The signals an expression reads; `_UNKNOWN` among them where it reads a clock or a reset (with
    `clocks`; without, those are left out)."""
    def __init__(self, node, clocks=True):
        self.signals = set()
        self.clocks = clocks
        self.visit(node)

    def visit_Signal(self, node):
        self.signals.add(node)

    def visit_ClockSignal(self, node):
        if self.clocks:
            self.signals.add(_UNKNOWN)

    def visit_ResetSignal(self, node):
        if self.clocks:
            self.signals.add(_UNKNOWN)


def _comb_reads(stmts, conds, drivers, clocks=True):
    """`drivers[target]`: every signal read by the combinational statements assigning `target` (their
    right-hand sides, indices and the conditions they sit under; `clocks`: see _Reads)."""
    reads_of = lambda node: _Reads(node, clocks).signals
    for s in stmts:
        if isinstance(s, (list, tuple)):
            _comb_reads(s, conds, drivers, clocks)
        elif isinstance(s, _Assign):
            targets = set(list_targets(s))
            reads = conds | reads_of(s.r) | (reads_of(s.l) - targets)
            for target in targets:
                drivers.setdefault(target, set()).update(reads)
        elif isinstance(s, If):
            c = conds | reads_of(s.cond)
            _comb_reads(s.t, c, drivers, clocks)
            _comb_reads(s.f, c, drivers, clocks)
        elif isinstance(s, Case):
            c = conds | reads_of(s.test)
            for body in s.cases.values():
                _comb_reads(body if isinstance(body, (list, tuple)) else [body], c, drivers, clocks)
        else:
            for target in list_targets(s):
                drivers.setdefault(target, set()).add(_UNKNOWN)


class CSRBankCaseDecode:
    """Within `with CSRBankCaseDecode():`, LiteX builds its CSR banks (csr_bus.CSRBank) with the same
    decoding written as one case statement per bank instead of one comparison per register.

    LiteX decodes each register's strobes on its own (`re = sel & (adr == i) & we`, an always block
    per strobe), and Verilator evaluates every one of them whenever the CPU's bus moves, that is in
    every cycle: at 8 dies, about 570 strobes were the largest share of the simulator's time. Here a
    bank's strobes are one block, `if (sel) case (adr) i: re_i = we, we_i = re`, so a bank the CPU
    does not address costs one comparison. The strobes, the `r` values and the read data are the same
    functions of the bus as LiteX's, in every cycle (tests/test_idlegate.py compares the two).

    With `storage_gate` (the simulated SoC; it needs a simulator that derives clocks from logic, not
    Migen's), the registers of the banks' CSRStorage and CSRStatus (storage, their `re` pulses, a
    writable status's `r`) move to one gated clock domain, `csr_storage_clk`, clocked only in the cycles
    where the CSR bus writes and in the cycle after: those registers change only through a write strobe
    (`If(re, ...)`, a strobe that is the bus's `we` decoded) and the `re` pulses one cycle after it. So
    every block reading a CSRStorage (the dies' control fields, the ring's configuration) is no longer
    evaluated in every cycle because a sys register it reads might have changed. All banks share the
    CSR bus's `we` (one master: checked by the SoC); a CSRStorage written by its device
    (`write_from_dev`) stays in `sys`."""
    active = None

    def __init__(self, storage_gate=False, name="csr_storage_clk"):
        self.storage_gate, self.name = storage_gate, name
        self.gate = None                  # The gate (in the first bank built), once a bank moved its registers.

    def __enter__(self):
        self._saved, csr_bus.CSRBank = csr_bus.CSRBank, _CaseDecodedCSRBank
        CSRBankCaseDecode.active = self
        return self

    def __exit__(self, *exc):
        csr_bus.CSRBank = self._saved
        CSRBankCaseDecode.active = None

    def _gate_storage(self, bank, description):
        """Move `bank`'s CSRStorage/CSRStatus registers to the shared gated domain (built in the first bank)."""
        if not self.storage_gate:
            return
        if self.gate is None:
            we_q = Signal(name=f"{self.name}_we_q")
            bank.sync += we_q.eq(bank.bus.we)
            bank.submodules.storage_gate = self.gate = IdleGate(Module(), ~(bank.bus.we | we_q), self.name)
            self.bus_we = [bank.bus.we]
        else:
            self.bus_we.append(bank.bus.we)
        for c in description:
            if type(c) in (csr.CSRStorage, csr.CSRStatus) and not hasattr(c, "dat_w"):
                _SyncDomainRenamer("sys", self.name)(c)


class _CaseDecodedCSRBank(csr_bus.CSRBank):
    """LiteX's CSRBank (litex/soc/interconnect/csr_bus.py), its strobes decoded by one case statement."""
    def __init__(self, description, address=0, bus=None, paging=0x800, ordering="big"):
        if bus is None:
            bus = csr_bus.Interface()
        self.bus = bus
        aligned_paging = paging//4

        # # #

        csr.GenericBank.__init__(self, description=description, busword=len(self.bus.dat_w), ordering=ordering)
        sel = Signal()
        adr = self.bus.adr[:log2_int(aligned_paging)]
        self.comb += sel.eq(self.bus.adr[log2_int(aligned_paging):] == address)
        self.comb += [c.r.eq(self.bus.dat_w[:c.size]) for c in self.simple_csrs]
        strobes = {i: [c.re.eq(self.bus.we), c.we.eq(self.bus.re)] for i, c in enumerate(self.simple_csrs)}
        if strobes:
            self.comb += If(sel, Case(adr, strobes))
        brcases = dict((i, self.bus.dat_r.eq(c.w)) for i, c in enumerate(self.simple_csrs))
        self.sync += [
            self.bus.dat_r.eq(0),
            If(sel, Case(adr, brcases))
        ]
        if CSRBankCaseDecode.active is not None:
            CSRBankCaseDecode.active._gate_storage(self, description)


_CaseDecodedCSRBank.__name__ = "CSRBank"     # Generated signals keep LiteX's names (csr_bankarray_csrbank<n>_*).
