"""MTPM / KMTPM token ring (You et al., "multi-token based power management", Figs. 3-9).

One `RingNode` per die. Nodes pass {key, tokens} packets serially to the next node, one bit per
cycle: a packet is 1 + ceil(log2(TT + 1)) bits, key first, then the token count MSB first, so a hop
takes T_trans = packet bits cycles. A node holds HT (tokens held), UT (tokens its die uses) and the
key; its die presents OI before each sub-atomic phase and waits for OE (nand_model/current.py).

Decision timing (Fig. 8): the die presents OI in cycle t0; the operation-token converter (OTC)
looks the RT up and raises the request in t1; the comparator decides in t1 and OE is high in t2
(T_comp = 2 cycles), the cycle in which the surplus tokens (and the key) start leaving on the next
hop. Later sub-atomic phases of an atomic operation are granted in the cycle they are presented
(their tokens are already in use).

Modes (run time):

  NPM          OE always high (no power management; the ring idles).
  PPM          only the pre-charge phase (OI = `ppz_oi`, P_A1's first sub-atomic phase) needs the
               key, held until the phase ends: one die in the peak-power zone at a time.
  MTPM         a die starts an atomic operation with the key and HT >= RT (atomic RT); the rest
               and the key go on at once; UT returns when the atomic operation ends.
  KMTPM_ATOMIC as MTPM without needing the key: HT >= RT is enough. A waiting node keeps what
               it receives only while it holds the key; without it, tokens go on.
  KMTPM_SUB    as KMTPM_ATOMIC per sub-atomic phase: at each later sub-atomic phase the surplus
               UT - RT_k goes on at once, without suspending the operation.
  MTPM_NOKEY   the multi-token ring without a key (Fig. 4a): every waiting node keeps what it
               receives. It can deadlock; it exists to show that it does (tests, proofs).

Invariants (proved in tests/formal): sum(HT) + tokens in flight + sum(UT) = TT; at most one key
(held, in flight or in use); a grant only with HT >= RT; sum of RTs of running phases <= TT.

Packet faults (`with_faults`, the SoC's build): a sequence and a parity bit per packet, the ring's
audit and recovery; gateware/power/ringfault.py says how.
"""

from functools import reduce
from operator import or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.ringpacket import RingPacketIO
from nandlab.gateware.power.ringfault import RingHopFault, PowerRingFaults  # noqa: F401
from nandlab.gateware.power.common import (POLICIES as MODES, MODE_NPM, MODE_PPM, MODE_MTPM,  # noqa: F401
    MODE_KMTPM_ATOMIC, MODE_KMTPM_SUB, MODE_MTPM_NOKEY, TG_RANGE, ALPHA_RANGE, RING_ERRORS, ERR_NONE, ERR_TG,
    ERR_ALPHA, ERR_RT, DEFAULT_TG, DEFAULT_ALPHA, TOKEN_BITS, OI_BITS)
PPZ_OI     = 0x11       # P_A1, first sub-atomic phase: the program pre-charge.


class RingNode(RingPacketIO, LiteXModule):
    """Token-ring node of one die: OTC (token table, ORD), comparator, token receiver and sender.

    The token table is loaded at run time (`table_*`), or fixed at build time when `table` is a
    {OI: RT} dict (the formal proofs use a fixed table).

    `oi_ahead`: the run-time table is read a cycle early, at `oi_next` (the OI the die presents in
    the next cycle; a table write in that cycle is passed through), into a register: RT is the
    same in every cycle as the table read at `oi` gives, and the path from the die's phase
    registers through the table into the token arithmetic is cut (the ECP5 builds' longest).
    Without it `oi_next` is not looked at.

    The packet receiver and sender are gateware/power/ringpacket.py's (`tx_ahead`: the bit sent comes
    from a register loaded a cycle ahead).
    """
    def __init__(self, table=None, oi_ahead=False, with_faults=False, tx_ahead=False):
        self.with_faults = with_faults
        # Die side (current.NandLabDieSequencer).
        self.oi         = Signal(OI_BITS)
        self.oi_next    = Signal(OI_BITS)    # `oi` of the next cycle (used with `oi_ahead`).
        self.oi_first   = Signal()
        self.request    = Signal()       # The die presents OI (and starts the phase when OE is high).
        self.phase_end  = Signal()
        self.atomic_end = Signal()
        self.oe         = Signal()
        # Ring side.
        self.rx_valid, self.rx_data = Signal(), Signal()
        self.tx_valid, self.tx_data = Signal(), Signal()
        # From the ring controller.
        self.mode     = Signal(3)
        self.nbits    = Signal(4)        # Packet bits.
        self.ppz_oi   = Signal(OI_BITS, reset=PPZ_OI)
        self.run      = Signal()         # Ring running: grants allowed, packets move.
        self.hold_off = Signal()         # No new atomic operation (draining for a mode change).
        self.clear    = Signal()         # Pulse: drop tokens, key, packets.
        self.inject   = Signal()         # Pulse: receive `inject_tokens` and the key.
        self.inject_tokens = Signal(TOKEN_BITS)
        self.table_we  = Signal()
        self.table_adr = Signal(OI_BITS)
        self.table_dat = Signal(TOKEN_BITS)
        # Observation.
        self.ht       = Signal(TOKEN_BITS)
        self.ut       = Signal(TOKEN_BITS)
        self.key      = Signal()
        self.key_used = Signal()         # PPM: the key is held through a peak-power phase.
        self.tx_tokens = Signal(TOKEN_BITS)   # Tokens of the packet being sent (in flight).
        self.tx_key   = Signal()
        self.tx_busy  = Signal()
        self.grant    = Signal()         # Pulse: an atomic operation (or PPM phase) was granted.
        self.rx_done  = Signal()         # A packet's last bit arrives this cycle.
        self.rt_q     = Signal(TOKEN_BITS)
        self.req_q    = Signal()
        self.waited   = Signal(32)       # Cycles a first phase waited for OE.
        self.grants   = Signal(32)
        self.in_atomic = Signal()        # The die is inside an atomic operation (any mode).
        self.active    = Signal()        # ...or about to start one (granted), or holds the PPM key.
        if with_faults:
            self.protect   = Signal()    # From the ring controller: sequence and parity bits on.
            self.rx_bad_parity = Signal()    # Pulse: a packet was rejected (parity).
            self.rx_bad_seq    = Signal()    # Pulse: a packet was rejected (sequence bit).

        # # #

        self.rt_now = rt_now = self._token_table(table, oi_ahead)
        rx_take, rx_tok, rx_key = self._receiver()
        self._sender(tx_ahead)
        self._comparator(rt_now, rx_take, rx_tok, rx_key)

    def _token_table(self, table, oi_ahead=False):
        """The token table (SP): the RT of the OI presented now."""
        rt_now = Signal(TOKEN_BITS)
        if table is None:
            mem = Memory(TOKEN_BITS, 2**OI_BITS, name="token_table")
            rd = mem.get_port(async_read=True)
            wr = mem.get_port(write_capable=True)
            self.specials += mem, rd, wr
            self.comb += [wr.adr.eq(self.table_adr), wr.dat_w.eq(self.table_dat), wr.we.eq(self.table_we)]
            if oi_ahead:
                written = self.table_we & (self.table_adr == self.oi_next)
                self.comb += rd.adr.eq(self.oi_next)
                self.sync += rt_now.eq(Mux(written, self.table_dat, rd.dat_r))
            else:
                self.comb += [rd.adr.eq(self.oi), rt_now.eq(rd.dat_r)]
        else:
            # Gates, not a case table (which synthesis and the proofs would turn into a ROM).
            self.comb += rt_now.eq(reduce(or_, [Mux(self.oi == oi, rt, 0) for oi, rt in table.items()], 0))
        return rt_now

    def _comparator(self, rt_now, rx_take, rx_tok, rx_key):
        """OTC / ORD and the comparator: a first phase asks for tokens through the two-cycle path;
        later phases of the same atomic operation are granted at once. Tokens and the key go on
        when the node does not keep them."""
        mode = self.mode
        tx_tok_r, tx_key_r, tx_cnt = self.tx_tok_r, self.tx_key_r, self.tx_cnt
        token_mode = Signal()
        self.comb += token_mode.eq((mode == MODE_MTPM) | (mode == MODE_KMTPM_ATOMIC) |
                                   (mode == MODE_KMTPM_SUB) | (mode == MODE_MTPM_NOKEY))
        # Registers and decisions a skip of the power harness checks (gateware/power/skip.py).
        self.oe_q   = oe_q   = Signal()
        self.ppz_q  = ppz_q  = Signal()
        kmtpm  = Signal()
        self.linger = linger = Signal()
        self.comb += kmtpm.eq((mode == MODE_KMTPM_ATOMIC) | (mode == MODE_KMTPM_SUB))
        self.sync += linger.eq(kmtpm & self.atomic_end)
        self.comb += self.active.eq(self.in_atomic | self.key_used | oe_q | (self.request & self.oi_first & self.oe))
        later  = Signal()             # A later sub-atomic phase presented now.
        self.comb += later.eq(self.request & ~self.oi_first)
        self.sync += [
            self.req_q.eq(self.request & self.oi_first & ~oe_q & ~self.oe & ~self.clear),
            self.rt_q.eq(rt_now),
            ppz_q.eq(self.oi == self.ppz_oi),
        ]

        # Comparator.
        ret     = Signal(TOKEN_BITS)      # Tokens coming back this cycle (end, surplus).
        surplus = Signal(TOKEN_BITS + 1)  # UT - RT of the phase presented; MSB set when RT > UT.
        base    = Signal(TOKEN_BITS + 1)  # HT + received: does not wait for the die's phase.
        ut_next, need = Signal(TOKEN_BITS), Signal(TOKEN_BITS)
        ht_avail, ht_after = Signal(TOKEN_BITS + 1), Signal(TOKEN_BITS + 1)
        key_ret, key_avail, key_after, can = Signal(), Signal(), Signal(), Signal()
        self.hold = hold = Signal()
        send_g, send_w, wants_w = Signal(), Signal(), Signal()   # `send` if granted now / if not.
        wants   = Signal()            # A first phase is waiting (registered or presented now).
        self.send = send = Signal()
        self.comb += [
            # Returns: the whole UT at the end of an atomic operation; the surplus at a later
            # sub-atomic phase in KMTPM_SUB (the token compiler keeps RTs inside an atomic
            # operation). One subtraction gives the surplus and its sign (board timing).
            surplus.eq(self.ut - rt_now),
            base.eq(Mux(rx_take, self.ht + rx_tok, self.ht)),   # The verdict (last bit) after the adder.
            ret.eq(0), ut_next.eq(self.ut),
            If(token_mode & self.atomic_end,
                ret.eq(self.ut), ut_next.eq(0),
            ).Elif((mode == MODE_KMTPM_SUB) & later & ~surplus[TOKEN_BITS],
                ret.eq(surplus[:TOKEN_BITS]), ut_next.eq(rt_now),
            ),
            key_ret.eq((mode == MODE_PPM) & self.key_used & self.phase_end),
            ht_avail.eq(base + ret),
            key_avail.eq(self.key | rx_key | key_ret),
            # Decide on the request of a first phase.
            need.eq(Mux(token_mode, self.rt_q, 0)),
            Case(mode, {
                MODE_PPM:    can.eq(~ppz_q | key_avail),
                MODE_MTPM:   can.eq(key_avail & (ht_avail >= self.rt_q)),
                "default":   can.eq(ht_avail >= self.rt_q),
            }),
            self.grant.eq(self.run & ~self.hold_off & self.req_q & ~oe_q & can & (mode != MODE_NPM)),
            ht_after.eq(ht_avail - Mux(self.grant, need, 0)),
            key_after.eq(key_avail & ~(self.grant & (mode == MODE_PPM) & ppz_q)),
            # A waiting node keeps what it has while it holds the key (all nodes without a key ring).
            # KMTPM: tokens coming back at the end of an atomic operation stay until the die's next
            # phase has been looked at (Fig. 9, case 2: back to the start).
            wants_w.eq(~oe_q & (self.req_q | (self.request & self.oi_first & ~self.oe))),
            wants.eq(~self.grant & wants_w),
            hold.eq(token_mode & (
                (wants & (key_after | (mode == MODE_MTPM_NOKEY))) |
                (kmtpm & (self.atomic_end | linger)))),
            # send = run & ~tx_busy & ~hold & (ht_after != 0 | key_after), split on the late grant.
            send.eq(self.run & ~self.tx_busy & Mux(self.grant, send_g, send_w)),
            # OE: two cycles after OI for a first phase; at once for later phases; always in NPM.
            self.oe.eq(Mux(mode == MODE_NPM, ~self.hold_off | later, oe_q | later)),
            # Granted: HT after = available - need; the key goes unless PPM's pre-charge takes it.
            send_g.eq(~(token_mode & kmtpm & (self.atomic_end | linger)) &
                      ((ht_avail != need) | (key_avail & ~((mode == MODE_PPM) & ppz_q)))),
            send_w.eq(~(token_mode & (
                          (wants_w & (key_avail | (mode == MODE_MTPM_NOKEY))) |
                          (kmtpm & (self.atomic_end | linger)))) &
                      ((ht_avail != 0) | key_avail)),
        ]
        self.sync += [
            oe_q.eq(self.grant),
            If(self.clear,
                self.ht.eq(0), self.key.eq(0), self.ut.eq(0), self.key_used.eq(0),
                tx_cnt.eq(0),
                *([self.tx_seq.eq(0)] if self.with_faults else []),
            ).Else(
                self.ut.eq(ut_next + Mux(self.grant, need, 0)),
                If(self.grant & (mode == MODE_PPM) & ppz_q, self.key_used.eq(1)
                ).Elif(key_ret, self.key_used.eq(0)),
                If(send,
                    self.ht.eq(0), self.key.eq(0),
                    tx_tok_r.eq(ht_after[:TOKEN_BITS]), tx_key_r.eq(key_after),
                    tx_cnt.eq(self.nbits), *self._tx_start(key_after),
                    *([self.tx_seq.eq(~self.tx_seq)] if self.with_faults else []),
                ).Else(
                    self.ht.eq(ht_after), self.key.eq(key_after),
                    If(self.tx_busy, tx_cnt.eq(tx_cnt - 1), *self._tx_step()),
                ),
                If(self.inject,
                    self.ht.eq(self.inject_tokens), self.key.eq(1),
                ),
            ),
            If(self.req_q & ~self.grant & ~oe_q, self.waited.eq(self.waited + 1)),
            If(self.grant, self.grants.eq(self.grants + 1)),
            If(self.atomic_end, self.in_atomic.eq(0)
            ).Elif(self.request & self.oi_first & self.oe, self.in_atomic.eq(1)),
        ]


class PowerRing(PowerRingFaults, LiteXModule):
    """A ring of `RingNode`s (one per die, in ring order) with its configuration and start-up.

    Configuration (mode, TG, alpha, token table) is applied by `apply`: the controller checks it,
    lets running atomic operations finish while it grants no new ones (DRAIN), drops every token,
    key and packet (CLEAR), latches the new configuration and injects TT tokens and the key into
    node 0 (INJECT), then runs. A configuration the proofs do not cover (TG outside 2..5, alpha
    outside 1..8, a table entry above TT) is refused: `error` says which, the ring keeps its
    previous configuration.

    `with_faults`: packet protection and fault recovery (see the module's docstring), a
    `RingHopFault` on every hop (hop i ends at node i), the audit, and counters. `req_protect` is
    applied with the configuration. With `protect` applied, a rejected packet or a failed audit
    while running starts a recovery: DRAIN (running operations keep their tokens and end; no new
    one starts), CLEAR, INJECT TT tokens and the key at node 0, RUN, with the same configuration.
    `with_exchange`: hooks of an exchange node (gateware/power/exchange.py): node 0 receives from
    `x_valid`/`x_data` (the last node's packets go to the exchange node), INJECT puts `inject_tt` tokens
    there instead of TT, DRAIN also waits for `busy_ext`. `inject_at`: node of the INJECT (None: none).
    Both (only tests/formal/pnode_props.sv): node 0 receives from `x_valid`/`x_data`, the audit is `audit_ext`.
    `oi_ahead`, `tx_ahead`: every node's (RingNode), the SoC's rings for board timing.
    """
    def __init__(self, n, table=None, oi_ahead=False, with_faults=False, with_exchange=False, inject_at=0,
                 tx_ahead=False):
        self.x_valid, self.x_data, self.inject_tt, self.busy_ext = Signal(), Signal(), Signal(TOKEN_BITS), Signal()
        if n < 1:
            raise ValueError("a power ring needs at least one node (die)")
        self.with_faults = with_faults
        self.nodes = nodes = [RingNode(table, oi_ahead=oi_ahead, with_faults=with_faults, tx_ahead=tx_ahead)
                                for _ in range(n)]
        for i, node in enumerate(nodes):
            setattr(self, f"node{i}", node)
        # Configuration requested (CSRs or a testbench).
        self.req_mode  = Signal(3)
        self.req_tg    = Signal(3, reset=DEFAULT_TG)
        self.req_alpha = Signal(4, reset=DEFAULT_ALPHA)
        self.apply     = Signal()          # Pulse.
        self.table_we  = Signal()
        self.table_adr = Signal(OI_BITS)
        self.table_dat = Signal(TOKEN_BITS)
        self.table_clear = Signal()        # Pulse: every entry back to 0 (256 cycles).
        self.pause     = Signal()          # Start no new atomic operation (tokens keep moving).
        # State.
        self.mode    = Signal(3)
        self.tg      = Signal(3)
        self.alpha   = Signal(4)
        self.tt      = Signal(TOKEN_BITS)
        self.nbits   = Signal(4)
        self.running = Signal()
        self.error   = Signal(2)
        self.table_max = Signal(TOKEN_BITS)
        self.applies = Signal(16)

        # # #

        # Ring wiring.
        if with_faults:
            self._fault_signals(n)
        for i, node in enumerate(nodes):
            prev = nodes[i - 1]
            if with_faults:
                hop = self.hops[i]
                dn = (self.x_valid, self.x_data) if with_exchange and i == 0 else (hop.dn_valid, hop.dn_data)
                self.comb += [hop.up_valid.eq(prev.tx_valid), hop.up_data.eq(prev.tx_data),
                              node.rx_valid.eq(dn[0]), node.rx_data.eq(dn[1])]
            else:
                v, d = (self.x_valid, self.x_data) if with_exchange and i == 0 else (prev.tx_valid, prev.tx_data)
                self.comb += [node.rx_valid.eq(v), node.rx_data.eq(d)]

        self._table_writes(nodes)          # Table writes (broadcast) and clearing; `table_keep`.

        # Requested TT and packet size.
        req_tt = Signal(TOKEN_BITS + 4)
        req_nbits = Signal(4)
        self.comb += req_tt.eq(self.req_alpha * ((1 << self.req_tg) - 1))
        # 1 + bit length of TT, as a priority chain (a case table would become a ROM).
        nb = C(1, 4)
        for b in range(TOKEN_BITS):
            nb = Mux(req_tt[b:] != 0, b + 2, nb)
        self.comb += req_nbits.eq(Mux(req_tt[TOKEN_BITS:] != 0, TOKEN_BITS + 1, nb))
        req_err = Signal(2)
        self.comb += [
            If((self.req_tg < TG_RANGE[0]) | (self.req_tg > TG_RANGE[1]), req_err.eq(ERR_TG)
            ).Elif((self.req_alpha < ALPHA_RANGE[0]) | (self.req_alpha > ALPHA_RANGE[1]), req_err.eq(ERR_ALPHA)
            ).Elif(self.table_max > req_tt, req_err.eq(ERR_RT)
            ).Else(req_err.eq(ERR_NONE)),
        ]

        busy_ops = Signal()
        self.comb += busy_ops.eq(reduce(or_, [nd.active for nd in nodes] + ([self.busy_ext] if with_exchange else [])))
        fsm = FSM(reset_state="STOPPED")
        self.submodules.fsm = fsm
        fsm.act("STOPPED",
            If(self.apply,
                NextValue(self.error, req_err),
                If(req_err == ERR_NONE, NextState("DRAIN")),
            ),
        )
        if with_faults:
            fault = self._fault_detection(nodes, audit_ext=with_exchange)
            fsm.act("RUN",
                self.running.eq(1),
                If(self.apply,
                    NextValue(self.error, req_err),
                    If(req_err == ERR_NONE, NextState("DRAIN")),
                ),
                If(fault & ~(self.apply & (req_err == ERR_NONE)),
                    NextValue(self.recovering, 1), NextState("DRAIN"),
                ),
            )
        else:
            fsm.act("RUN",
                self.running.eq(1),
                If(self.apply,
                    NextValue(self.error, req_err),
                    If(req_err == ERR_NONE, NextState("DRAIN")),
                ),
            )
        fsm.act("DRAIN",
            If(~busy_ops, NextState("CLEAR")),
        )
        configure = [
            NextValue(self.mode, self.req_mode),
            NextValue(self.tg, self.req_tg),
            NextValue(self.alpha, self.req_alpha),
            NextValue(self.tt, req_tt),
            NextValue(self.nbits, req_nbits),
            NextValue(self.applies, self.applies + 1),
        ]
        if with_faults:
            # A recovery keeps the configuration; an apply also latches `protect` (2 more bits).
            configure = [If(self.recovering,
                    NextValue(self.recoveries, self.recoveries + 1),
                ).Else(
                    *configure,
                    NextValue(self.protect, self.req_protect),
                    NextValue(self.nbits, req_nbits + Mux(self.req_protect, 2, 0)),
                )]
        fsm.act("CLEAR",
            *configure,
            NextState("INJECT"),
        )
        fsm.act("INJECT",
            *([NextValue(self.recovering, 0)] if with_faults else []),
            NextState("RUN"),
        )
        draining = Signal()
        self.injecting = Signal()
        self.comb += draining.eq(fsm.ongoing("DRAIN") | fsm.ongoing("CLEAR") | fsm.ongoing("INJECT"))
        self.comb += self.injecting.eq(fsm.ongoing("INJECT"))
        for i, node in enumerate(nodes):
            self.comb += [
                node.mode.eq(self.mode),
                node.nbits.eq(self.nbits),
                node.run.eq(self.running),
                node.hold_off.eq(draining | self.pause),
                node.clear.eq(fsm.ongoing("CLEAR")),
                node.inject.eq(fsm.ongoing("INJECT") & (i == inject_at)),
                node.inject_tokens.eq(self.inject_tt if with_exchange else self.tt),
            ]
            if with_faults:
                self.comb += [node.protect.eq(self.protect), self.hops[i].clear.eq(fsm.ongoing("CLEAR")),
                              self.hops[i].nbits.eq(self.nbits)]

    def _table_writes(self, nodes):
        self.table_keep = Signal(len(nodes))   # Node i ignores table writes while bit i is set (per-node tables).
        clr_busy, clr_adr = Signal(), Signal(OI_BITS)
        self.sync += [
            If(self.table_clear, clr_busy.eq(1), clr_adr.eq(0), self.table_max.eq(0)
            ).Elif(clr_busy, clr_adr.eq(clr_adr + 1), If(clr_adr == 2**OI_BITS - 1, clr_busy.eq(0))),
            If(self.table_we & ~clr_busy & (self.table_dat > self.table_max), self.table_max.eq(self.table_dat)),
        ]
        for i, node in enumerate(nodes):
            self.comb += [
                node.table_we.eq(clr_busy | (self.table_we & ~self.table_keep[i])),
                node.table_adr.eq(Mux(clr_busy, clr_adr, self.table_adr)),
                node.table_dat.eq(Mux(clr_busy, 0, self.table_dat)),
            ]

    def add_csr(self):
        add_ring_csrs(self, "Power ring configuration; written values take effect on apply.",
                      "Token table entry (every node gets it): written on each write of this CSR.",
                      "Power ring state.", "Node shown in node_state / node_waited / node_grants.")
        if self.with_faults:
            self._add_fault_csr()

def add_ring_csrs(m, config, table, status, node_sel, table_keep=None):
    """The ring's CSRs on module m (a PowerRing, or PowerRings over several): configuration, token
    table, status, and one node's state and counters picked by node_sel, wired to m's req_* / table_*
    / status signals and its nodes. With table_keep (its description), m.table_keep gets a CSR too.
    The arguments are the CSRs' descriptions."""
    from litex.soc.interconnect.csr import CSRStorage, CSRStatus
    m._config = CSRStorage(fields=config_fields(), description=config)
    m._table = CSRStorage(fields=table_fields(), description=table)
    if table_keep is not None:
        m._table_keep = CSRStorage(len(m.nodes), description=table_keep)
        m.comb += m.table_keep.eq(m._table_keep.storage)
    m._status = CSRStatus(fields=status_fields(), description=status)
    cfg, st = m._config.fields, m._status.fields
    m.comb += [
        m.req_mode.eq(cfg.mode), m.req_tg.eq(cfg.tg), m.req_alpha.eq(cfg.alpha), m.apply.eq(cfg.apply),
        m.table_clear.eq(cfg.table_clear), m.pause.eq(cfg.pause),
        m.table_we.eq(m._table.re), m.table_adr.eq(m._table.fields.oi), m.table_dat.eq(m._table.fields.rt),
        st.running.eq(m.running), st.error.eq(m.error), st.mode.eq(m.mode), st.tt.eq(m.tt),
        st.nbits.eq(m.nbits), st.table_max.eq(m.table_max),
    ]
    m._node_sel = CSRStorage(8, description=node_sel)
    m._node_state = CSRStatus(fields=node_state_fields(), description="State of the node node_sel picks.")
    m._node_waited = CSRStatus(32, description="Cycles the node's first phases waited for OE.")
    m._node_grants = CSRStatus(32, description="Atomic operations granted.")
    pick = lambda attr: Array(getattr(nd, attr) for nd in m.nodes)[m._node_sel.storage]
    ns = m._node_state.fields
    m.comb += [
        ns.ht.eq(pick("ht")), ns.ut.eq(pick("ut")), ns.key.eq(pick("key")), ns.key_used.eq(pick("key_used")),
        ns.tx_tokens.eq(pick("tx_tokens")),
        m._node_waited.status.eq(pick("waited")), m._node_grants.status.eq(pick("grants")),
    ]


# CSR layouts: the gateware's registers, the firmware's csr.h field macros and the host's
# PowerControl (nandlab.control) all come from these.

def config_fields():
    from litex.soc.interconnect.csr import CSRField
    return [
        CSRField("mode",  size=3, description="Policy.", values=[(str(i), m) for i, m in enumerate(MODES)]),
        CSRField("tg",    size=3, offset=4, reset=DEFAULT_TG,
                 description=f"Token granularity TG ({TG_RANGE[0]}..{TG_RANGE[1]})."),
        CSRField("alpha", size=4, offset=8, reset=DEFAULT_ALPHA,
                 description=f"Budget factor alpha ({ALPHA_RANGE[0]}..{ALPHA_RANGE[1]}): PB = alpha x I_max."),
        CSRField("apply", size=1, offset=16, pulse=True, description="Check and apply (drain, clear, inject)."),
        CSRField("table_clear", size=1, offset=17, pulse=True, description="Zero the token table."),
        CSRField("pause", size=1, offset=18, description="Start no new atomic operation (quiesce)."),
    ]


def table_fields():
    from litex.soc.interconnect.csr import CSRField
    return [
        CSRField("rt",  size=TOKEN_BITS, description="RT of the OI below."),
        CSRField("oi",  size=OI_BITS, offset=8, description="OI (phase id) of the entry."),
    ]


def status_fields():
    from litex.soc.interconnect.csr import CSRField
    return [
        CSRField("running", size=1, description="The ring runs the applied configuration."),
        CSRField("error",   size=2, offset=1, description="Last apply refused.",
                 values=[(str(i), e) for i, e in enumerate(RING_ERRORS)]),
        CSRField("mode",    size=3, offset=4, description="Applied policy."),
        CSRField("tt",      size=TOKEN_BITS, offset=8, description="Applied TT."),
        CSRField("nbits",   size=4, offset=16, description="Packet bits (T_trans per hop)."),
        CSRField("table_max", size=TOKEN_BITS, offset=24, description="Largest RT in the table."),
    ]


def node_state_fields():
    from litex.soc.interconnect.csr import CSRField
    return [
        CSRField("ht",  size=TOKEN_BITS, description="Tokens held."),
        CSRField("ut",  size=TOKEN_BITS, offset=8, description="Tokens in use."),
        CSRField("key", size=1, offset=16, description="Holds the key."),
        CSRField("key_used", size=1, offset=17, description="PPM: key in use."),
        CSRField("tx_tokens", size=TOKEN_BITS, offset=24, description="Tokens being sent."),
    ]
