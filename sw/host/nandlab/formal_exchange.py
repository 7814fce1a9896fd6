"""Formal checks of the token exchange (gateware/power/exchange.py) with SymbiYosys: two rings with their
exchange nodes, each node's die free (tests/formal/exchange_props.sv states the properties).

Tasks (run by nandlab.formal.run like the ring's):

  exchange_bmc        bounded check from reset: the global sum of tokens held, in flight (ring packets,
                      exchange nodes' packets, the exchange ring's words) and in use is the global TT
                      in every cycle the rings run, one key per ring, and the RTs of every running
                      phase together stay within TT; any policy, changed at any time.
  exchange_cover      cover: a die of ring 1 runs a pre-charge whose RT (15) is more than ring 1's
                      home share (7 of TT = 15): tokens lent by ring 0 are in use in ring 1.
  exchange_mutant     the same bounded check with exchange nodes that create a token when they
                      borrow: must fail (the check is not vacuous).
  exchange_refine     bounded check from reset: the compositional proof's abstract environments
                      (nandlab.formal_xnode) are what the real rings and exchange nodes do.
  exchange_induction  k-induction of the same properties (smtbmc).
  exchange_pdr        the same properties with abc pdr (unbounded, no induction depth).
"""

from migen import Signal, Cat

from nandlab import env
from nandlab.formal import TABLE_TG4
from nandlab.testing import PortedTop

PROPS = env.REPO / "tests" / "formal" / "exchange_props.sv"
RINGS, PER_RING, ALPHA = 2, 1, 1        # TT = 15: ring 0's home share 8, ring 1's 7.


class FormalExchange(PortedTop):
    """`rings` rings of `per_ring` nodes with exchange nodes; per-node signals concatenated into buses,
    ring 0's nodes first (ports of `nandlab_exchange`)."""
    def __init__(self, rings=RINGS, per_ring=PER_RING, table=TABLE_TG4, mutate=False):
        from nandlab.gateware.power.ring import PowerRing
        from nandlab.gateware.power.exchange import PowerExchange
        PortedTop.__init__(self)
        self.rings = rs = [PowerRing(per_ring, table=table, with_exchange=True) for _ in range(rings)]
        for k, r in enumerate(rs):
            self.add_module(name=f"ring{k}", module=r)
        self.submodules.exchange = x = PowerExchange(rs, with_mutation=mutate)
        if mutate:
            self.comb += x.mutate.eq(1)
        nodes = [nd for r in rs for nd in r.nodes]

        def bus(name, sigs, out):
            w = len(sigs[0])
            p = Signal(w * len(sigs), name=name)
            if out:
                self.comb += p.eq(Cat(*sigs))
            else:
                self.comb += [s.eq(p[i * w:(i + 1) * w]) for i, s in enumerate(sigs)]
            self.ios.append(p)
        for name in ("request", "oi", "oi_first", "phase_end", "atomic_end"):
            bus(name, [getattr(nd, name) for nd in nodes], False)
        for name in ("oe", "ht", "ut", "key", "key_used", "tx_tokens", "tx_key", "in_atomic",
                     "req_q", "tx_cnt", "rx_cnt", "tx_tok_r", "tx_key_r", "tx_busy", "rx_sr", "rx_key_r",
                     "rt_q", "ppz_q", "oe_q"):
            bus(name, [getattr(nd, name) for nd in nodes], True)
        for name in ("x", "tx_tokens", "up_tx", "key", "tx_key",
                     "tx_cnt", "rx_cnt", "tx_tok_r", "tx_key_r", "tx_busy", "rx_sr", "rx_key_r"):
            bus("x_" + name, [getattr(xn, name) for xn in x.xnodes], True)
        bus("x_bal", [xn.bal for xn in x.xnodes], True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "pause"):
            sig = Signal(len(getattr(rs[0], name)), name=name)
            self.comb += [getattr(r, name).eq(sig) for r in rs]
            self.ios.append(sig)
        for name in ("running", "mode", "tt", "nbits"):
            self.port(name, getattr(rs[0], name), True)
        # Each ring's controller state (one-hot over its FSM's states): the rings move together.
        bus("ring_state", [Cat(*[r.fsm.ongoing(st) for st in ("STOPPED", "RUN", "DRAIN", "CLEAR", "INJECT")])
                           for r in rs], True)
        for name in ("mode", "tt", "nbits"):
            bus("ring_" + name, [getattr(r, name) for r in rs], True)
        all_run = Signal()
        self.comb += all_run.eq(Cat(*[r.running for r in rs]) == (1 << rings) - 1)
        self.port("running_all", all_run, True)


def sby(depth, mode="bmc", engine="smtbmc yices", defines=(), vdir="x2", append=0):
    defs = " ".join(f"-D{d}" for d in defines)
    opts = f"append {append}\n" if append else ""
    return f"""[options]
mode {mode}
depth {depth}
{opts}
[engines]
{engine}

[script]
read_verilog -formal nandlab_exchange.v
read_verilog -formal -sv {defs} exchange_props.sv
chparam -set RINGS {RINGS} -set PER_RING {PER_RING} -set ALPHA {ALPHA} exchange_props
prep -flatten -top exchange_props
opt -fast

[files]
{vdir}/nandlab_exchange.v
exchange_props.sv
ring_ops.vh
"""


# name: (nodes per ring, description, sby text, mutated exchange)
TASKS = {
    "exchange_bmc": (PER_RING, "bounded check from reset, 2 rings of 1 node with exchange nodes, 20 cycles: "
                     "global conservation, one key per ring, summed RTs <= TT", lambda: sby(20), False),
    "exchange_cover": (PER_RING, "cover: a die of ring 1 runs a phase needing more than ring 1's home share",
                       lambda: sby(40, mode="cover", defines=("LOAN_COVER",)), False),
    "exchange_refine": (PER_RING, "bounded check from reset, 2 rings of 1 node, 12 cycles: each exchange node's ring, "
                        "pool word and rest of the system, and each node 0's rest, move only as the compositional "
                        "proof's environments may (xnode_props.sv, node_props.sv)",
                        lambda: sby(12, defines=("REFINE",)), False),
    "exchange_mutant": (PER_RING, "the bounded check on exchange nodes that create a token when they borrow: "
                        "must fail", lambda: sby(30, vdir="x2m"), True),
}
SLOW_TASKS = {
    "exchange_bmc_deep": (PER_RING, "bounded check from reset, 24 cycles", lambda: sby(24), False),
    "exchange_induction": (PER_RING, "k-induction (smtbmc yices), depth 12, with the links' invariants",
                           lambda: sby(12, mode="prove", defines=("STRENGTHEN",)), False),
    "exchange_pdr": (PER_RING, "abc pdr (unbounded)", lambda: sby(1, mode="prove", engine="abc pdr"), False),
}
