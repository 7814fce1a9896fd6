"""The compositional proof of the packet-protected ring (gateware/power/ringfault.py, `with_faults` with `protect`
applied; the SoC's per_channel rings): one protected node with the ring controller against an abstract rest of
the ring whose incoming link may drop, duplicate and corrupt packets (tests/formal/pnode_props.sv).
docs/power_proofs.md, "The packet-protected ring", states the fault model and turns the node's proof into the
ring's budget safety for any number of nodes.

Tasks (run by nandlab.formal.run like the ring's):

  pnode_first         k-induction: node 0 (INJECT puts TT and the key into it) against the abstract ring and
                      the faulty link: conservation with the lost tokens counted (held + in use + in flight +
                      lost = TT: faults only ever lose tokens), at most one key, the node's invariants (its
                      running phase covered by its tokens in use), the receiver in step with the link, and the
                      guarantee its own packets give its successor (tokens it had, correct parity).
  pnode_other         the same for any other node (INJECT puts TT and the key into the rest).
  pnode_first_wide_bw, pnode_other_wide_bw
                      pnode_first / pnode_other at alpha 8, TG 5 (TT = 248, 11-bit packets) with Bitwuzla
                      (nandlab.smt_bitwuzla); pnode_first_wide, pnode_other_wide: the same with yices, no answer in
                      18 CPU-minutes (a record).
  pnode_weak_env_wide, pnode_mutant_wide, pnode_mutant_wide_step
                      the wide proofs' negative controls (BMC from reset with yices; the mutant's induction step
                      alone with Bitwuzla): must fail.
  pnode_cover         cover: the node rejects a duplicate and a corrupted packet, takes a packet after a lost one
                      was detected, and its die runs a phase after a recovery.
  pnode_weak_env      negative control (BMC): a link that may flip two bits of a packet (outside the fault model:
                      the parity cannot see it): must fail.
  pnode_mutant        negative control (BMC): a node whose receiver does not check the sequence bit (the
                      generated Verilog mutated): must fail.
  hop_refine          bounded check of the real ring (2 nodes, injectors armed freely): every packet a receiver
                      completes is one the abstract link of pnode_props.sv may deliver.
"""

from nandlab import env
from nandlab.formal import BW, TABLE_TG4, mutate_once, sby_text
from nandlab.testing import PortedTop

PNODE_PROPS = env.REPO / "tests" / "formal" / "pnode_props.sv"
HOP_PROPS = env.REPO / "tests" / "formal" / "hop_props.sv"
INCLUDES = ("ring_ops.vh", "ring_die.vh", "node_inv.vh")
# hop_refine's bound: six packets of 7 bits (TT 15) with the delay after a copy; five of 11 bits (TT 248).
HOP_DEPTH, HOP_DEPTH_WIDE = 48, 60


class FormalPNode(PortedTop):
    """One protected node with the ring controller (ports of `nandlab_pnode`): `PowerRing(1, with_faults=True,
    with_exchange=True)`, whose node receives the abstract link's bits (`x_valid`, `x_data`: the link injects
    the faults; the ring's own hop is left unused) and whose audit is an input (`audit_ext`: the whole ring's
    audit and the other nodes' rejections, free in the proof). `first`: node 0, which INJECT fills."""
    def __init__(self, first=True, table=TABLE_TG4):
        from nandlab.gateware.power.ring import PowerRing
        PortedTop.__init__(self)
        self.ring = ring = PowerRing(1, table=table, with_faults=True, with_exchange=True,
                                     inject_at=0 if first else None)
        node = ring.nodes[0]
        self.comb += ring.inject_tt.eq(ring.tt)
        for name in ("request", "oi", "oi_first", "phase_end", "atomic_end"):
            self.port(name, getattr(node, name), False)
        for name in ("oe", "ht", "ut", "key", "key_used", "tx_tokens", "tx_key", "tx_busy", "in_atomic",
                     "req_q", "rt_q", "tx_cnt", "rx_cnt", "tx_tok_r", "tx_key_r", "rx_sr", "rx_key_r",
                     "ppz_q", "oe_q", "rx_seq_r", "rx_par_r", "rx_last", "tx_seq", "tx_par", "rx_bad_parity",
                     "rx_bad_seq", "tx_valid", "tx_data"):
            self.port(name, getattr(node, name), True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "pause", "x_valid", "x_data", "busy_ext",
                     "req_protect", "audit_ext"):
            self.port(name, getattr(ring, name), False)
        for name in ("running", "injecting", "mode", "tt", "nbits", "protect", "recovering"):
            self.port(name, getattr(ring, name), True)
        self.port("clearing", ring.fsm.ongoing("CLEAR"), True)


class FormalHop(PortedTop):
    """The fault injector of one hop, `RingHopFault` (ports of `nandlab_hop`; tests/formal/hop_props.sv)."""
    def __init__(self):
        from nandlab.gateware.power.ringfault import RingHopFault
        PortedTop.__init__(self)
        self.hop = hop = RingHopFault()
        for name in ("up_valid", "up_data", "nbits", "arm", "kind", "pos", "clear"):
            self.port(name, getattr(hop, name), False)
        for name in ("dn_valid", "dn_data", "pending", "delaying"):
            self.port(name, getattr(hop, name), True)


def mutate_seq_check(path):
    """The receiver's sequence check (`bad_seq = protect & ~bad_par & (rx_seq_r == rx_last)`, ring.py
    `_receiver`) made never to fire in the generated Verilog: a duplicated packet is taken twice."""
    mutate_once(path, r"(assign \w+ = )\(\((\w+protect) & \(~\w+\)\) & \((\w+rx_seq_r) == (\w+rx_last)\)\);",
                r"\g<1>1'd0;", "mutate_seq_check", "sequence checks")


def _sby(first, depth, mode="prove", defines=(), vdir=None, alpha=1, tg=4, engine="smtbmc yices"):
    return sby_text("pnode_props", "nandlab_pnode", vdir or ("p1f" if first else "p1o"), depth, mode, defines,
                    {"FIRST": int(first), "ALPHA": alpha, "TG": tg}, INCLUDES, engine)


def _hop_sby(depth, mode="bmc", defines=(), alpha=1, tg=4):
    return sby_text("hop_props", "nandlab_hop", "hop", depth, mode, defines, {"ALPHA": alpha, "TG": tg})


# name: (Verilog directory, description, sby text)
TASKS = {
    "pnode_first": ("p1f", "k-induction, protected node 0 against an abstract ring and a link that drops, "
                           "duplicates and corrupts packets: conservation with lost tokens, at most one key, the "
                           "node's invariants and guarantee", lambda: _sby(True, 2)),
    "pnode_other": ("p1o", "the same for any other node", lambda: _sby(False, 2)),
    "pnode_first_wide": ("p1f", "pnode_first at alpha 8, TG 5 (TT = 248)", lambda: _sby(True, 2, alpha=8, tg=5)),
    "pnode_other_wide": ("p1o", "pnode_other at alpha 8, TG 5", lambda: _sby(False, 2, alpha=8, tg=5)),
    "pnode_first_wide_bw": ("p1f", "pnode_first_wide with Bitwuzla", lambda: _sby(True, 2, alpha=8, tg=5, engine=BW)),
    "pnode_other_wide_bw": ("p1o", "pnode_other_wide with Bitwuzla", lambda: _sby(False, 2, alpha=8, tg=5, engine=BW)),
    "pnode_cover": ("p1o", "cover: the node rejects a duplicate and a corrupted packet, a recovery, a phase after it",
                    lambda: _sby(False, 40, mode="cover", defines=("COVER",))),
    "pnode_weak_env": ("p1o", "bounded check from reset with a link that may flip two bits of a packet: must fail",
                       lambda: _sby(False, 24, mode="bmc", defines=("WEAK_ENV", "CONTROL"))),
    "pnode_mutant": ("p1m", "bounded check from reset of a node (not node 0) that does not check the sequence bit: "
                            "must fail", lambda: _sby(False, 24, mode="bmc", defines=("CONTROL",), vdir="p1m")),
    # (The wide controls from reset use yices, whose incremental BMC is much faster here: pnode_weak_env_wide 24 s
    # against 236 s with Bitwuzla, which took 6 minutes for pnode_mutant_wide's step 19 alone. pnode_mutant_wide_step
    # controls Bitwuzla's induction answers.)
    "pnode_weak_env_wide": ("p1o", "pnode_weak_env at alpha 8, TG 5 (the wide proofs' control): must fail",
                            lambda: _sby(False, 32, mode="bmc", defines=("WEAK_ENV", "CONTROL"), alpha=8, tg=5)),
    "pnode_mutant_wide": ("p1m", "pnode_mutant at alpha 8, TG 5 (the wide proofs' control): must fail",
                          lambda: _sby(False, 40, mode="bmc", defines=("CONTROL",), vdir="p1m", alpha=8, tg=5)),
    "pnode_mutant_wide_step": ("p1m", "pnode_other_wide_bw's induction step alone (smtbmc --induction) on the mutant: "
                                      "must fail", lambda: _sby(False, 2, vdir="p1m", alpha=8, tg=5,
                                                                engine="smtbmc --induction bitwuzla")),
    "hop_refine": ("hop", "bounded check from reset, the real fault injector on a protected sender's packets, "
                          "armed freely: every packet out of the hop is one pnode_props.sv's link may deliver",
                   lambda: _hop_sby(HOP_DEPTH)),
    "hop_refine_wide": ("hop", "hop_refine at alpha 8, TG 5 (11-bit packets)",
                        lambda: _hop_sby(HOP_DEPTH_WIDE, alpha=8, tg=5)),
    "hop_no_copy": ("hop", "hop_refine against a link model without copies: must fail (the injector duplicates)",
                    lambda: _hop_sby(HOP_DEPTH, defines=("NO_COPY",))),
    "hop_cover": ("hop", "cover: the injector's copy, inverted bit, lost packet and delay are seen",
                  lambda: _hop_sby(HOP_DEPTH, mode="cover", defines=("COVER",))),
}


def generate(vdir, workdir):
    """Write the Verilog of directory `vdir` (a TASKS entry's) under `workdir`."""
    from nandlab.testing import to_verilog
    if vdir == "hop":
        top = FormalHop()
        to_verilog(top, top.ios, "nandlab_hop", workdir / vdir)
        return
    top = FormalPNode(first=vdir == "p1f")
    path = to_verilog(top, top.ios, "nandlab_pnode", workdir / vdir)
    if vdir == "p1m":
        mutate_seq_check(path)
