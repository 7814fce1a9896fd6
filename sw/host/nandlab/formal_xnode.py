"""The compositional proof of the token exchange (gateware/power/exchange.py): one exchange node against an
abstract rest of the system (tests/formal/xnode_props.sv), and the ring node's proof (node_props.sv) in a ring
with an exchange node (`EXCHANGE`: INJECT puts the ring's home share into node 0, not TT).
docs/power_proofs.md, "The token exchange for N rings", turns them into the global safety for N rings.

Tasks (run by nandlab.formal.run like the ring's):

  xnode               k-induction (depth 2): the exchange node against its abstract ring, the previous exchange
                      node's pool word and the rest of the system: global conservation, one key in the ring,
                      the ring holds its home share + borrowed - lent, the node's guarantee (what it sends is
                      what it held and took in), its incoming link consistent.
  xnode_wide_bw       the same at alpha 8, TG 5 (TT = 248, 9-bit packets) with Bitwuzla (nandlab.smt_bitwuzla): closes.
  xnode_weak_env_wide, xnode_mutant_wide, xnode_mutant_wide_step
                      its negative controls at TT 248 with Bitwuzla: BMC from reset, and the mutant's induction
                      step alone; all must fail.
  xnode_wide          xnode_wide_bw with yices: no answer in 20 CPU-minutes (docs/power_proofs.md); kept as a record
                      with xnode_wide_hints, xnode_wide_lemma (xnode_lemma.vh's arithmetic facts assumed: sound, they
                      hold for any values, which xnode_lemma checks on free values) and xnode_wide_pdr (abc pdr).
  xnode_cover         cover: the node lends, borrows a non-empty pool word, its ring holds more than its share.
  xnode_weak_env      negative control: a previous exchange node that may add one token to its pool word.
  xnode_mutant        negative control: an exchange node that creates a token when it borrows.
  xring_first         node_props.sv with EXCHANGE: node 0 of a ring with an exchange node, INJECT puts any share
                      <= TT into it and the rest of TT into the rest of the system (node_other covers the others).
  xring_first_wide    the same at alpha 8, TG 5.
"""

from nandlab import env
from nandlab.formal import BW, TABLE_TG4, FormalNode, sby_text as _sby
from nandlab.testing import PortedTop

XNODE_PROPS = env.REPO / "tests" / "formal" / "xnode_props.sv"
XNODE_LEMMA = env.REPO / "tests" / "formal" / "xnode_lemma.vh"
XNODE_LEMMA_SV = env.REPO / "tests" / "formal" / "xnode_lemma.sv"


class FormalXNode(PortedTop):
    """One exchange node with its ring's controller (ports of `nandlab_xnode`). The controller is PowerRing's,
    built with one node that gets no die and no link (it never holds or sends anything): the same FSM, mode,
    nbits, run and clear that drive every exchange node. `mutate`: the node creates a token when it borrows."""
    def __init__(self, mutate=False, table=TABLE_TG4):
        from nandlab.gateware.power.ring import PowerRing
        from nandlab.gateware.power.exchange import PowerExchangeNode
        PortedTop.__init__(self)
        self.ring = ring = PowerRing(1, table=table, with_exchange=True, inject_at=None)
        self.xnode = xn = PowerExchangeNode(with_mutation=mutate)
        self.comb += [xn.mode.eq(ring.mode), xn.nbits.eq(ring.nbits), xn.run.eq(ring.running),
                      xn.clear.eq(ring.fsm.ongoing("CLEAR"))]
        if mutate:
            self.comb += xn.mutate.eq(1)
        for name in ("rx_valid", "rx_data", "hungry", "up_rx", "others_reclaim", "others_hungry"):
            self.port(name, getattr(xn, name), False)
        for name in ("tx_valid", "tx_data", "up_tx", "reclaim", "x", "key", "tx_tokens", "tx_key", "bal", "give",
                     "take", "tx_cnt", "tx_tok_r", "tx_key_r", "tx_busy", "rx_cnt", "rx_sr", "rx_key_r"):
            self.port(name, getattr(xn, name), True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "pause", "busy_ext"):
            self.port(name, getattr(ring, name), False)
        for name in ("running", "injecting", "mode", "tt", "nbits"):
            self.port(name, getattr(ring, name), True)
        self.port("clearing", ring.fsm.ongoing("CLEAR"), True)


def _x(depth, mode="prove", defines=(), vdir="xn", alpha=1, tg=4, engine="smtbmc yices"):
    return _sby("xnode_props", "nandlab_xnode", vdir, depth, mode, defines, {"ALPHA": alpha, "TG": tg},
                ("xnode_lemma.vh",), engine)


def _r(depth, mode="prove", defines=("EXCHANGE",), alpha=1, tg=4):
    return _sby("node_props", "nandlab_node", "n1x", depth, mode, defines, {"FIRST": 1, "ALPHA": alpha, "TG": tg},
                ("ring_ops.vh", "ring_die.vh", "node_inv.vh"))


# name: (Verilog directory, description, sby text)
TASKS = {
    "xnode": ("xn", "k-induction (depth 2), one exchange node against an abstract ring, pool and rest of the "
                    "system: global conservation, one key per ring, ring = share + bal, the node's guarantee",
              lambda: _x(2)),
    "xnode_bw": ("xn", "xnode with Bitwuzla", lambda: _x(2, engine=BW)),
    "xnode_wide": ("xn", "xnode at alpha 8, TG 5 (TT = 248)", lambda: _x(2, alpha=8, tg=5)),
    "xnode_wide_bw": ("xn", "xnode_wide with Bitwuzla", lambda: _x(2, alpha=8, tg=5, engine=BW)),
    "xnode_wide_hints": ("xn", "xnode_wide with bounds implied by conservation stated as assertions (no sum wraps)",
                         lambda: _x(2, alpha=8, tg=5, defines=("HINTS",))),
    "xnode_wide_lemma": ("xn", "xnode_wide with arithmetic lemmas (xnode_lemma.vh, checked by xnode_lemma) assumed",
                         lambda: _x(2, alpha=8, tg=5, defines=("LEMMA",))),
    "xnode_wide_pdr": ("xn", "xnode_wide with abc pdr (no induction depth)",
                       lambda: _x(1, alpha=8, tg=5, engine="abc pdr")),
    "xnode_lemma": ("xn", "xnode_lemma.vh's arithmetic facts on free values (what LEMMA assumes holds for any values)",
                    lambda: _sby("xnode_lemma", "nandlab_xnode", "xn", 1, "bmc", (), {"ALPHA": 8, "TG": 5},
                                 ("xnode_lemma.vh",))),
    "xnode_cover": ("xn", "cover: the exchange node lends, borrows, its ring holds more than its home share, it "
                          "reclaims", lambda: _x(30, mode="cover", defines=("COVER",))),
    "xnode_weak_env": ("xn", "bounded check from reset with a previous exchange node that may add one token to "
                             "its pool word: must fail (conservation)",
                       lambda: _x(20, mode="bmc", defines=("WEAK_ENV",))),
    "xnode_mutant": ("xnm", "bounded check from reset of an exchange node that creates a token when it borrows: "
                            "must fail", lambda: _x(20, mode="bmc", vdir="xnm")),
    "xnode_weak_env_wide": ("xn", "xnode_weak_env at alpha 8, TG 5 with Bitwuzla (xnode_wide_bw's control): must fail",
                            lambda: _x(24, mode="bmc", defines=("WEAK_ENV",), alpha=8, tg=5, engine=BW)),
    "xnode_mutant_wide": ("xnm", "xnode_mutant at alpha 8, TG 5 with Bitwuzla (xnode_wide_bw's control): must fail",
                          lambda: _x(24, mode="bmc", vdir="xnm", alpha=8, tg=5, engine=BW)),
    "xnode_mutant_wide_step": ("xnm", "xnode_wide_bw's induction step alone (smtbmc --induction) on the mutant: must "
                                      "fail (a counterexample to induction comes back through the bitwuzla program)",
                               lambda: _x(2, vdir="xnm", alpha=8, tg=5, engine="smtbmc --induction bitwuzla")),
    "xring_first": ("n1x", "k-induction (depth 2), node 0 of a ring with an exchange node (INJECT: any home "
                           "share <= TT into it, the rest of TT into the rest of the system)", lambda: _r(2)),
    "xring_first_wide": ("n1x", "xring_first at alpha 8, TG 5", lambda: _r(2, alpha=8, tg=5)),
}


def generate(vdir, workdir):
    """Write the Verilog of directory `vdir` (a TASKS entry's) under `workdir`."""
    from nandlab.testing import to_verilog
    ndir = workdir / vdir
    if vdir == "n1x":
        top, name = FormalNode(first=True, open_inject=True), "nandlab_node"
    else:
        top, name = FormalXNode(mutate=vdir == "xnm"), "nandlab_xnode"
    to_verilog(top, top.ios, name, ndir)
