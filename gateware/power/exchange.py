"""Token exchange between power rings: several channels' rings share one global budget (issue 18, a).

Each ring (gateware/power/ring.py built `with_exchange`) has an exchange node on the link into its
node 0: the last node's packets arrive there, and the exchange node sends the ring's packets on to
node 0 in the same format (key first, then the token count MSB first). The exchange nodes are
joined by a second, parallel link, the exchange ring: every cycle each one hands the next a word of
tokens (`up_tx`, received as `up_rx` a cycle later), the pool of tokens lent and not yet borrowed.

Per cycle, an exchange node has what it holds (`x`), what a ring packet completing now brings and,
when it borrows, the pool word arriving; it gives part of that to the pool word it sends on and
forwards the rest (and the key, which never leaves its ring) into its ring when its sender is free:

  lend      its ring is not hungry (no node waits for tokens) and another ring is: everything goes
            to the pool;
  borrow    its ring is hungry: it takes the arriving pool word, unless another ring reclaims and
            it does not reclaim itself;
  reclaim   its ring is hungry and has lent more than it has borrowed (`bal` < 0): the rings that
            have borrowed (`bal` > 0) give back, from the tokens that pass them, up to `bal`,
            and only reclaiming rings take from the pool: a ring gets its home share back.

Outside the token policies (NPM, PPM), and while its ring does not run, an exchange node lends and
borrows nothing and forwards what it receives, as a ring node with no die would.

Tokens only move between registers (a ring node's HT, UT or sender, an exchange node's `x` or
sender, an exchange link word), so the global sum of tokens held, in flight and in use stays the
global TT that the rings were given at INJECT (docs/power_exchange.md; tests/formal/exchange_props.sv).
"""

from functools import reduce
from operator import or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.common import (MODE_MTPM, MODE_KMTPM_ATOMIC, MODE_KMTPM_SUB, MODE_MTPM_NOKEY,
    TOKEN_BITS)


class PowerExchangeNode(LiteXModule):
    """The exchange node of one ring. `with_mutation`: a test input, `mutate`, that makes the node
    create a token whenever it borrows (the tests' negative control; never in a real build)."""
    def __init__(self, with_mutation=False):
        # Ring side: packets from the ring's last node, packets to its node 0.
        self.rx_valid, self.rx_data = Signal(), Signal()
        self.tx_valid, self.tx_data = Signal(), Signal()
        # From the ring.
        self.mode    = Signal(3)
        self.nbits   = Signal(4)
        self.run     = Signal()
        self.clear   = Signal()
        self.hungry  = Signal()          # A node of the ring waits for tokens.
        # Exchange ring.
        self.up_rx   = Signal(TOKEN_BITS)     # Pool tokens arriving from the previous exchange node.
        self.up_tx   = Signal(TOKEN_BITS)     # Pool tokens on their way to the next one (a register).
        self.reclaim = Signal()               # Out: this ring wants its lent tokens back.
        self.others_reclaim = Signal()        # In: another ring does.
        self.others_hungry  = Signal()        # In: another ring is hungry.
        # Observation.
        self.x         = Signal(TOKEN_BITS)   # Tokens held.
        self.key       = Signal()
        self.tx_tokens = Signal(TOKEN_BITS)   # Tokens of the packet being sent.
        self.tx_key    = Signal()
        self.bal       = Signal((TOKEN_BITS + 2, True))  # Borrowed - lent.
        self.lent      = Signal(32)           # Tokens given to the pool (a counter).
        self.borrowed  = Signal(32)           # Tokens taken from the pool.
        self.give      = Signal(TOKEN_BITS)   # Tokens given to the pool this cycle.
        self.take      = Signal()             # The arriving pool word is taken this cycle.
        if with_mutation:
            self.mutate = Signal()

        # # #

        rx_tok, rx_key = self._receiver()
        self._sender()
        token_mode = Signal()
        self.comb += token_mode.eq(self.run & ((self.mode == MODE_MTPM) | (self.mode == MODE_KMTPM_ATOMIC) |
                                               (self.mode == MODE_KMTPM_SUB) | (self.mode == MODE_MTPM_NOKEY)))
        avail, rest = Signal(TOKEN_BITS + 1), Signal(TOKEN_BITS + 1)
        key_avail, send, owed = Signal(), Signal(), Signal(TOKEN_BITS + 1)
        taken = Mux(self.take, self.up_rx, 0)
        if with_mutation:
            taken = taken + (self.take & (self.up_rx != 0) & self.mutate)
        self.comb += [
            self.reclaim.eq(token_mode & self.hungry & self.bal[-1]),
            self.take.eq(token_mode & self.hungry & (self.reclaim | ~self.others_reclaim)),
            avail.eq(self.x + rx_tok + taken),
            key_avail.eq(self.key | rx_key),
            owed.eq(Mux(self.bal[-1], 0, self.bal)),
            If(token_mode,
                If(~self.hungry & self.others_hungry,
                    self.give.eq(avail),
                ).Elif(self.others_reclaim,
                    self.give.eq(Mux(avail < owed, avail, owed)),
                ),
            ),
            rest.eq(avail - self.give),
            send.eq(self.run & ~self.tx_busy & ((rest != 0) | key_avail)),
        ]
        self.sync += [
            If(self.clear,
                self.x.eq(0), self.key.eq(0), self.tx_cnt.eq(0), self.up_tx.eq(0), self.bal.eq(0),
            ).Else(
                self.up_tx.eq(Mux(self.take, 0, self.up_rx) + self.give),
                self.bal.eq(self.bal + taken - self.give),
                If(send,
                    self.x.eq(0), self.key.eq(0),
                    self.tx_tok_r.eq(rest), self.tx_key_r.eq(key_avail), self.tx_cnt.eq(self.nbits),
                ).Else(
                    self.x.eq(rest), self.key.eq(key_avail),
                    If(self.tx_busy, self.tx_cnt.eq(self.tx_cnt - 1)),
                ),
                self.lent.eq(self.lent + self.give),
                self.borrowed.eq(self.borrowed + taken),
            ),
        ]

    def _receiver(self):
        """A ring packet, bit by bit; returns (tokens, key) of the packet completing this cycle."""
        self.rx_cnt = rx_cnt = Signal(4)
        self.rx_sr  = rx_sr  = Signal(TOKEN_BITS)
        self.rx_key_r = key_r = Signal()
        done, word = Signal(), Signal(TOKEN_BITS)
        rx_tok, rx_key = Signal(TOKEN_BITS), Signal()
        self.comb += [
            word.eq(Cat(self.rx_data, rx_sr)),
            done.eq(self.rx_valid & (rx_cnt == self.nbits - 1)),
            rx_tok.eq(Mux(done, word, 0)),
            rx_key.eq(done & key_r),
        ]
        self.sync += [
            If(self.clear,
                rx_cnt.eq(0), rx_sr.eq(0), key_r.eq(0),
            ).Elif(self.rx_valid,
                If(rx_cnt == 0, key_r.eq(self.rx_data), rx_sr.eq(0)).Else(rx_sr.eq(word)),
                rx_cnt.eq(Mux(done, 0, rx_cnt + 1)),
            ),
        ]
        return rx_tok, rx_key

    def _sender(self):
        """The packet being sent stays in tx_tok_r / tx_key_r while its bits go out."""
        self.tx_cnt   = Signal(4)            # Bits still to send.
        self.tx_tok_r = Signal(TOKEN_BITS)
        self.tx_key_r = Signal()
        self.tx_busy  = Signal()
        self.comb += [
            self.tx_busy.eq(self.tx_cnt != 0),
            self.tx_valid.eq(self.tx_busy),
            self.tx_data.eq(Mux(self.tx_cnt == self.nbits, self.tx_key_r, (self.tx_tok_r >> (self.tx_cnt - 1))[0])),
            self.tx_tokens.eq(Mux(self.tx_busy, self.tx_tok_r, 0)),
            self.tx_key.eq(self.tx_busy & self.tx_key_r),
        ]


def share_factor(n):
    """ceil(2^16 / n): floor(tt / n) = tt x ceil(2^16 / n) >> 16 for tt < 2^TOKEN_BITS, without a divider."""
    return (1 << 16) // n + (1 if (1 << 16) % n else 0)


def _share(tt, n):
    """floor(tt / n) for tt < 2^TOKEN_BITS, as the gateware computes it."""
    return (tt * share_factor(n)) >> 16


class PowerExchange(LiteXModule):
    """Exchange nodes for `rings` (PowerRings built `with_exchange`, the same configuration applied to
    all: alpha is the global budget, TT the global token total). At INJECT ring k gets its home
    share, TT // rings (ring 0 also the remainder); every ring drains until no ring has an operation
    running, so that they all clear and inject in the same cycle. `tokens`: the global sum of tokens
    held, in flight and in use (the harness checks it against TT every cycle)."""
    def __init__(self, rings, with_mutation=False):
        n = len(rings)
        self.xnodes = xnodes = [PowerExchangeNode(with_mutation) for _ in rings]
        for k, xn in enumerate(xnodes):
            self.add_module(name=f"xnode{k}", module=xn)
        if with_mutation:
            self.mutate = Signal()
        self.tokens = Signal(TOKEN_BITS + 4)
        self.lent   = Signal(32)
        self.borrowed = Signal(32)

        # # #

        busy_all = Signal()
        self.comb += busy_all.eq(reduce(or_, [nd.active for r in rings for nd in r.nodes]))
        tt = rings[0].tt
        share, product = Signal(TOKEN_BITS), Signal(TOKEN_BITS + 17)
        # The product in a signal as wide as itself: Verilog sizes `share = tt * k >> 16` by its widest
        # operand and its destination (16 bits), which dropped the product's top bits (every share 0).
        self.comb += [product.eq(tt * share_factor(n)), share.eq(product >> 16)]
        parts = []
        for k, (r, xn) in enumerate(zip(rings, xnodes)):
            last = r.nodes[-1]
            self.comb += [
                xn.rx_valid.eq(last.tx_valid), xn.rx_data.eq(last.tx_data),
                r.x_valid.eq(xn.tx_valid), r.x_data.eq(xn.tx_data),
                xn.mode.eq(r.mode), xn.nbits.eq(r.nbits), xn.run.eq(r.running), xn.clear.eq(r.nodes[0].clear),
                xn.hungry.eq(reduce(or_, [nd.req_q for nd in r.nodes])),
                xn.up_rx.eq(xnodes[k - 1].up_tx),
                xn.others_reclaim.eq(reduce(or_, [o.reclaim for j, o in enumerate(xnodes) if j != k], C(0))),
                xn.others_hungry.eq(reduce(or_, [o.hungry for j, o in enumerate(xnodes) if j != k], C(0))),
                r.busy_ext.eq(busy_all),
                r.inject_tt.eq(tt - (n - 1) * share if k == 0 else share),
            ]
            if with_mutation:
                self.comb += xn.mutate.eq(self.mutate)
            parts += [xn.x, xn.tx_tokens, xn.up_tx] + [s for nd in r.nodes for s in (nd.ht, nd.ut, nd.tx_tokens)]
        self.comb += [
            self.tokens.eq(reduce(lambda a, b: a + b, parts)),
            self.lent.eq(reduce(lambda a, b: a + b, [xn.lent for xn in xnodes])),
            self.borrowed.eq(reduce(lambda a, b: a + b, [xn.borrowed for xn in xnodes])),
        ]
