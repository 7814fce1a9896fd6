"""A ring node's packet receiver and sender (gateware/power/ring.py's `RingNode`).

A packet is the key bit, then the token count MSB first (`nbits` bits in all), one bit per cycle; with
`protect` (fault-protected rings, gateware/power/ringfault.py) a sequence bit and a parity bit follow the
tokens. The sender keeps the packet in `tx_key_r` / `tx_tok_r` while `tx_cnt` counts the bits still to
send; the receiver shifts the token bits into `rx_sr` and completes the packet on its last bit.

`tx_ahead` (the SoC's rings, for board timing): `tx_data` is a register (`tx_bit_r`) loaded a cycle ahead
with the bit the next cycle sends (the key bit as a packet starts, then the bit `tx_cnt - 1` selects), not
a multiplexer of the send registers in front of the next node's receiver. `tx_data` is the same in every
cycle `tx_valid` is high (tests/test_ring_faults.py, tests/test_current.py); while `tx_valid` is low it is
not looked at.
"""

from functools import reduce
from operator import xor

from migen import *

from nandlab.gateware.power.common import TOKEN_BITS


class RingPacketIO:
    """Mixin of `RingNode`: `_receiver()` and `_sender()` build on the node's signals (rx_*, tx_*,
    nbits, clear, protect); `_tx_start(key)` and `_tx_step()` are the sender's register loads the
    comparator adds to its own when it starts a packet and while one goes out."""

    def _receiver(self):
        """Token receiver: the key is the packet's first bit, the token count follows MSB first; the
        packet is complete on its last bit. Returns (take, tokens, key): tokens taken this cycle if `take`."""
        self.rx_sr  = rx_sr  = Signal(TOKEN_BITS)   # Token bits received so far.
        self.rx_cnt = rx_cnt = Signal(4)            # Bits received so far.
        self.rx_key_r = rx_key_r = Signal()
        rx_done = Signal()
        rx_word = Signal(TOKEN_BITS)
        rx_key, rx_take, rx_tok = Signal(), Signal(), Signal(TOKEN_BITS)
        self.comb += [
            rx_word.eq(Cat(self.rx_data, rx_sr)),
            rx_done.eq(self.rx_valid & (rx_cnt == self.nbits - 1)),
            self.rx_done.eq(rx_done),
        ]
        if not self.with_faults:
            self.comb += [
                rx_key.eq(rx_done & rx_key_r),
                rx_take.eq(rx_done), rx_tok.eq(rx_word),
            ]
            self.sync += [
                If(self.clear,
                    rx_cnt.eq(0), rx_sr.eq(0), rx_key_r.eq(0),
                ).Elif(self.rx_valid,
                    If(rx_cnt == 0,
                        rx_key_r.eq(self.rx_data), rx_sr.eq(0),
                    ).Else(
                        rx_sr.eq(rx_word),
                    ),
                    rx_cnt.eq(Mux(rx_done, 0, rx_cnt + 1)),
                ),
            ]
            return rx_take, rx_tok, rx_key
        # Protected packets: {key, tokens, seq, parity}; the parity is accumulated bit by bit.
        self.rx_seq_r  = rx_seq_r  = Signal()    # The packet's sequence bit.
        self.rx_par_r  = rx_par_r  = Signal()    # XOR of the packet's bits so far.
        self.rx_last   = rx_last   = Signal()    # Sequence bit of the last packet taken.
        tail  = Signal()      # The sequence or parity bit arrives now.
        bad_par, bad_seq, ok = Signal(), Signal(), Signal()
        self.comb += [
            tail.eq(self.protect & (rx_cnt >= self.nbits - 2)),
            bad_par.eq(self.protect & (rx_par_r ^ self.rx_data)),
            bad_seq.eq(self.protect & ~bad_par & (rx_seq_r == rx_last)),
            self.rx_bad_parity.eq(rx_done & bad_par),
            self.rx_bad_seq.eq(rx_done & bad_seq),
            ok.eq(rx_done & ~bad_par & ~bad_seq),
            rx_key.eq(ok & rx_key_r),
            rx_take.eq(ok), rx_tok.eq(Mux(self.protect, rx_sr, rx_word)),
        ]
        self.sync += [
            If(self.clear,
                rx_cnt.eq(0), rx_sr.eq(0), rx_key_r.eq(0), rx_seq_r.eq(0), rx_par_r.eq(0), rx_last.eq(0),
            ).Elif(self.rx_valid,
                rx_par_r.eq(Mux(rx_cnt == 0, self.rx_data, rx_par_r ^ self.rx_data)),
                If(rx_cnt == 0,
                    rx_key_r.eq(self.rx_data), rx_sr.eq(0),
                ).Elif(~tail,
                    rx_sr.eq(rx_word),
                ).Elif(~rx_done,
                    rx_seq_r.eq(self.rx_data),
                ),
                If(ok & self.protect, rx_last.eq(rx_seq_r)),
                rx_cnt.eq(Mux(rx_done, 0, rx_cnt + 1)),
            ),
        ]
        return rx_take, rx_tok, rx_key

    def _tok_offset(self):
        """`tx_cnt` minus the index of the token bit sent: the bits after the tokens, plus one."""
        return Mux(self.protect, 3, 1) if self.with_faults else 1

    def _tx_bit(self, cnt, tok_idx):
        """The bit sent while `cnt` bits are left (`tok_idx`: `cnt - _tok_offset()`, a 4-bit signal: the
        same values in the Verilog and in Migen's simulator, which refuses a negative shift)."""
        tok_bit = (self.tx_tok_r >> tok_idx)[0]
        if not self.with_faults:
            return Mux(cnt == self.nbits, self.tx_key_r, tok_bit)
        # Protected: ... tokens, then the sequence bit (cnt = 2) and the parity bit (cnt = 1).
        return Mux(cnt == self.nbits, self.tx_key_r,
                   Mux(self.protect & (cnt == 2), self.tx_seq,
                       Mux(self.protect & (cnt == 1), self.tx_par, tok_bit)))

    def _sender(self, tx_ahead=False):
        """Token sender: key first, then the token count MSB first; the packet stays in
        tx_key_r / tx_tok_r while its bits go out."""
        self.tx_ahead = tx_ahead
        self.tx_tok_r = tx_tok_r = Signal(TOKEN_BITS)
        self.tx_key_r = tx_key_r = Signal()
        self.tx_cnt = tx_cnt = Signal(4)      # Bits still to send.
        if self.with_faults:
            self.tx_seq = Signal()       # Sequence bit of the packet being (or last) sent.
            self.tx_par = Signal()       # Its parity bit.
            # From the send registers (set as the packet starts), not from the token arithmetic (board timing).
            self.comb += self.tx_par.eq(reduce(xor, [tx_key_r, self.tx_seq, *tx_tok_r]))
        if tx_ahead:
            self.tx_bit_r = tx_data = Signal()        # The bit sent in this cycle, loaded in the last.
            self.tx_cnt_n, self.tx_idx_n = Signal(4), Signal(4)
            self.comb += [self.tx_cnt_n.eq(tx_cnt - 1), self.tx_idx_n.eq(self.tx_cnt_n - self._tok_offset())]
        else:
            tok_idx = Signal(4)
            self.comb += tok_idx.eq(tx_cnt - self._tok_offset())
            tx_data = self._tx_bit(tx_cnt, tok_idx)
        self.comb += [
            self.tx_busy.eq(tx_cnt != 0),
            self.tx_valid.eq(self.tx_busy),
            self.tx_data.eq(tx_data),
            self.tx_tokens.eq(Mux(self.tx_busy, tx_tok_r, 0)),
            self.tx_key.eq(self.tx_busy & tx_key_r),
        ]

    def _tx_start(self, key):
        """Loads of the sender's bit register as a packet starts with key bit `key`."""
        return [self.tx_bit_r.eq(key)] if self.tx_ahead else []

    def _tx_step(self):
        """...and while a packet goes out: the bit of the next cycle."""
        return [self.tx_bit_r.eq(self._tx_bit(self.tx_cnt_n, self.tx_idx_n))] if self.tx_ahead else []
