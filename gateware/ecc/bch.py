"""BCH ECC engine of the NAND channel: a 2-bytes-per-cycle encoder and a pipelined decoder over
shortened binary BCH codes, and the spare-area layout of their parity.

Code
====
A codeword is `data_bytes` of data followed by the parity, ceil(deg g / 8) bytes, where g is the
generator polynomial of the t-error-correcting BCH code over GF(2^m) (deg g = m * t for the
sizes used here: 13 bytes for 512 B at t = 8 with m = 13, 70 bytes for 1 KB at t = 40 with
m = 14). Field, bit order and parity layout are the Linux kernel's (lib/bch.c, swap_bits off), so
the parity equals `bchlib.BCH(t, m=m).encode(data)`; bchref.py states the conventions.

Streams
=======
Both cores move 16-bit beats, two bytes per cycle as on the NV-DDR bus: the first byte in time
in bits 7:0, the second in bits 15:8, and `be` says which of them are valid (0b01 on a last beat
with one byte). Codewords are framed by count, not by `last`: the encoder takes data_bytes / 2
beats per codeword, the decoder ceil((data_bytes + parity bytes) / 2).

* `NandLabBchEncoder`: data beats in, the same beats out followed by the parity beats (the last
  with `last` = 1). The LFSR advances 16 bits per cycle, so the output runs at one beat per cycle:
  while parity goes out the input waits, and the NAND bus stays busy.
* `NandLabBchDecoder`: codeword beats in; out comes an error-location list per codeword: zero or
  more correction beats (`word` = beat index in the codeword, `mask` = the bits to flip in that
  beat) and then one status beat (`last` = 1) with `count`, the number of corrected bits (parity
  bits included, as the kernel counts them), and `uncorrectable`. Corrections are sent only for a
  codeword that decoded: an uncorrectable one yields its status beat alone, with its count.

Why a location list rather than a corrected stream: the controller already stages every page in
its buffer (for DMA and CPU access), so it streams the raw codeword into the buffer at bus speed
and applies the at most t flips afterwards. The decoder then needs no codeword buffer (no block
RAM at all), adds no latency to the data, and an uncorrectable codeword is never half-corrected:
its flips are withheld until the search proved the locator consistent.

Decoder pipeline: stage 1 computes the t odd syndromes 16 bits per cycle while the beats arrive;
stage 2 takes them (even syndromes by squaring), runs an inversionless Berlekamp-Massey reduced to
t iterations for binary codes (one per cycle), then a Chien search of 16 positions per cycle in
stream order that stops once deg(locator) roots are found (at once with no errors). The two stages
overlap: codeword k+1 streams in while codeword k is searched. A codeword is uncorrectable when the
locator degree exceeds t or the roots found inside the shortened code differ from its degree.
A board short of LUTs builds a smaller decoder (the ECPIX-5): a search of 1, 2, 4 or 8 positions per
cycle (`chien`; most of the decoder's logic is the search's t constant multipliers per position) and
a serial Berlekamp-Massey (`serial_bm`: two multipliers, an iteration in 2 (t + 1) cycles). Clean
codewords keep the pace when the BM's t iterations fit in a codeword's beats (t = 8: 144 < 263).

Spare-area layout
=================
`layout()` places codeword i's data at column i * data_bytes of the main area, and its parity in
the spare: the first `reserved` bytes of the spare are left alone (byte 0 is the ONFI bad-block
marker; the second keeps the slots at even columns, as 16-bit beats need), then one slot per
codeword of parity bytes rounded up to even. For a 2048 + 64 page with 512 B codewords at t = 8
(m = 13):

    spare column   0-1      2-15    16-29   30-43   44-57   58-63
    contents       BBM, 0   ECC 0   ECC 1   ECC 2   ECC 3   free (6 bytes)

(13 parity bytes in each 14-byte slot, the 14th left FFh.) At t = 40 over 1 KB (m = 14, 70 bytes)
an 8192 + 640 page holds 8 slots at spare columns 2-561, leaving 78 bytes free; a 4096 + 224 page
cannot (280 bytes needed) and `layout()` says so. The channel controller (PROGRAM_ECC) writes the
reserved bytes and the slots right after the data area, in the same data input (they follow it);
READ_ECC reads the slots first, then the data, feeding the decoder each codeword's data and then its
slot (nandlab.gateware.onfi.controller, "ECC").
"""

from collections import namedtuple
from functools import reduce
from operator import add, xor

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.ecc.bchref import BchCode

BEAT_BITS = 16


def bch_stream_description():
    """Codeword beats: two bytes, first in 7:0, with their byte valids."""
    return [("data", BEAT_BITS), ("be", 2)]


def bch_correction_description(code):
    """Decoder output: correction beats (word, mask) and a status beat (last) per codeword."""
    return [("word", bits_for(code.beats - 1)), ("mask", BEAT_BITS), ("count", bits_for(code.t + BEAT_BITS)),
            ("uncorrectable", 1)]


# Spare-area layout ---------------------------------------------------------------------------------

EccLayout = namedtuple("EccLayout", "codewords parity_bytes slot_bytes data_columns parity_columns free_columns")


def layout(page_size, spare_size, data_bytes=512, t=8, m=13, reserved=2):
    """Where each codeword's data and parity go in a page of `page_size` + `spare_size` bytes
    (columns counted from the start of the page); raises ValueError when the parity does not fit."""
    code = BchCode(data_bytes, t, m)
    if page_size <= 0 or page_size % data_bytes:
        raise ValueError(f"page_size = {page_size}: must be a positive multiple of data_bytes = {data_bytes}")
    if reserved < 1:
        raise ValueError(f"reserved = {reserved}: spare byte 0 (the bad-block marker) must stay reserved")
    n = page_size // data_bytes
    slot = code.parity_bytes + code.parity_bytes % 2
    need = reserved + n * slot
    if need > spare_size:
        raise ValueError(f"{n} codewords of {data_bytes} B at t = {t} (m = {m}) need {need} spare bytes "
                         f"({reserved} reserved + {n} x {slot}-byte parity slots); the spare has {spare_size}")
    return EccLayout(
        codewords      = n,
        parity_bytes   = code.parity_bytes,
        slot_bytes     = slot,
        data_columns   = [i * data_bytes for i in range(n)],
        parity_columns = [page_size + reserved + i * slot for i in range(n)],
        free_columns   = (page_size + need, page_size + spare_size),
    )


# GF(2) linear logic -----------------------------------------------------------------------------------

def _xor_tree(terms):
    """Balanced XOR of 1-bit expressions (0 when there are none)."""
    if not terms:
        return C(0, 1)
    while len(terms) > 1:
        terms = [terms[i] ^ terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def _emit(masks, variables):
    """Bits (a list) of which bit k is the XOR of the variables set in masks[k]."""
    return [_xor_tree([variables[i] for i in range(len(variables)) if mask >> i & 1]) for mask in masks]


def _wire(module, bits, name):
    """A signal driven by `bits`, one assignment per bit: Verilator refuses lines of over 40000 tokens."""
    s = Signal(len(bits), name=name)
    module.comb += [s[i].eq(b) for i, b in enumerate(bits)]
    return s


def _sym_const_mul(columns, vec):
    """Symbolic bits (masks) of a constant multiplication, given by its columns, of symbolic bits."""
    out = [0] * len(vec)
    for i, col in enumerate(columns):
        for k in range(len(vec)):
            if col >> k & 1:
                out[k] ^= vec[i]
    return out


def _linear(module, columns, x, name):
    """A GF(2) linear map of x given by its columns (a constant multiplication, a squaring)."""
    m = len(columns)
    return _wire(module, _emit(_sym_const_mul(columns, [1 << i for i in range(m)]), [x[i] for i in range(m)]), name)


def _const_mul(module, gf, c, x, name):
    """x * c in GF(2^m) for a constant c."""
    return _linear(module, gf.mul_matrix(c), x, name)


def _gf_mul(module, gf, a, b, name):
    """a * b in GF(2^m), both signals."""
    m = gf.m
    pairs = [[] for _ in range(m)]
    for i in range(m):
        for j in range(m):
            p = gf.pow(i + j)
            for k in range(m):
                if p >> k & 1:
                    pairs[k].append(a[i] & b[j])
    return _wire(module, [_xor_tree(terms) for terms in pairs], name)


def _check_code(data_bytes, t, m):
    code = BchCode(data_bytes, t, m)
    if t > 64:
        raise ValueError(f"t = {t}: the gateware supports 1 to 64 correctable bits per codeword")
    return code


# Encoder ---------------------------------------------------------------------------------------------

class NandLabBchEncoder(LiteXModule):
    """Appends the BCH parity to each codeword of data beats, 16 data bits per cycle."""
    def __init__(self, data_bytes=512, t=8, m=13):
        self.code = code = _check_code(data_bytes, t, m)
        self.sink   = sink   = stream.Endpoint(bch_stream_description())
        self.source = source = stream.Endpoint(bch_stream_description())
        self.idle   = Signal()          # No register can change this cycle (nandlab.gateware.common.idlegate).

        # # #

        N = code.parity_bits
        data_beats, parity_beats = data_bytes // 2, (code.parity_bytes + 1) // 2
        beat = Signal(max=data_beats + parity_beats)
        lfsr = Signal(N)
        in_parity = Signal()

        # 16 steps of the serial divider (MSB first), worked out symbolically: state bits are
        # variables 0..N-1, the beat's bits N..N+15.
        g_low = code.g ^ (1 << N)
        state = [1 << i for i in range(N)]
        for j in range(BEAT_BITS):
            fb = (1 << (N + code.beat_bit(j))) ^ state[N - 1]
            state = [0] + state[:-1]
            state = [s ^ fb if g_low >> i & 1 else s for i, s in enumerate(state)]
        variables = [lfsr[i] for i in range(N)] + [sink.data[i] for i in range(BEAT_BITS)]
        # Bit by bit inside the clocked block rather than a wire: an expression of the input data on a
        # wire would be evaluated every cycle under idle gating, not only when a beat comes in.
        lfsr_next = _emit(state, variables)
        parity_word = Cat(*[lfsr[N - 1 - code.beat_bit(k)] if N - 1 - code.beat_bit(k) >= 0 else C(0, 1)
                            for k in range(BEAT_BITS)])

        self.comb += in_parity.eq(beat >= data_beats)
        self.comb += self.idle.eq(~in_parity & ~sink.valid)
        self.comb += If(~in_parity,
            sink.connect(source, omit={"last", "be"}),
            source.be.eq(0b11),
        ).Else(
            source.valid.eq(1),
            source.data.eq(parity_word),
            If(beat == data_beats + parity_beats - 1,
                source.last.eq(1),
                source.be.eq(0b01 if code.parity_bytes % 2 else 0b11),
            ).Else(
                source.be.eq(0b11),
            ),
        )
        self.sync += If(source.valid & source.ready,
            If(beat == data_beats + parity_beats - 1,
                beat.eq(0),
                lfsr.eq(0),
            ).Else(
                beat.eq(beat + 1),
                If(in_parity, lfsr.eq(lfsr << BEAT_BITS)).Else(*[lfsr[i].eq(b) for i, b in enumerate(lfsr_next)]),
            ),
        )


# Decoder ---------------------------------------------------------------------------------------------

class NandLabBchDecoder(LiteXModule):
    """Syndromes while the codeword streams in, then Berlekamp-Massey and a Chien search giving
    the error locations, the corrected bit count and the uncorrectable flag of each codeword.
    `chien`: positions the search tries per cycle (a divisor of 16; fewer take less logic and
    16 / `chien` cycles a beat: a board short of LUTs). `serial_bm`: Berlekamp-Massey with two
    multipliers instead of 3 t + 2, 2 (t + 1) cycles an iteration instead of one (the same)."""
    def __init__(self, data_bytes=512, t=8, m=13, chien=BEAT_BITS, serial_bm=False):
        if chien not in (1, 2, 4, 8, 16):
            raise ValueError(f"chien={chien}: positions per cycle must divide {BEAT_BITS}")
        self.code = code = _check_code(data_bytes, t, m)
        gf = code.gf
        self.sink   = sink   = stream.Endpoint(bch_stream_description())
        self.source = source = stream.Endpoint(bch_correction_description(code))
        self.busy = Signal()            # Stage 2 at work (for tests and the controller's idle check).
        self.idle = Signal()            # No register can change this cycle (nandlab.gateware.common.idlegate).
        self.empty = Signal()           # No beat of a codeword taken, none in stage 2 (a shared decoder's turn).
        # Drop whatever codeword is under way (beats taken, stage 2, locations not yet sent): the decoder
        # is empty in the next cycle. A shared decoder's owner whose read stopped mid-codeword.
        self.restart = Signal()

        # # #

        beats, n = code.beats, code.n
        full = Signal()               # Syndromes of a whole codeword wait for stage 2.
        take = Signal()               # Stage 2 takes them this cycle.
        odd, stage1_empty = self._syndromes(code, full, take)

        # Stage 2: syndrome queue (S_1 .. S_2t), the window S_2k .. S_2k-t, BM registers.
        queue = [Signal(m, name=f"queue{i}") for i in range(2 * t)]
        window = [Signal(m, name=f"window{i}") for i in range(t + 1)]
        lam = [Signal(m, name=f"lambda{i}") for i in range(t + 1)]
        b = [Signal(m, name=f"b{i}") for i in range(t + 1)]
        gamma = Signal(m, name="gamma")
        degree = Signal(max=2 * t + 1)
        k = Signal(max=max(t, 2))
        found = Signal(max=t + BEAT_BITS + 1)
        word = Signal(max=beats)
        uncorrectable = Signal()

        def syndrome_from_odd(e):
            """S_e from the odd syndromes: S_(2^a b) = S_b^(2^a), squaring being GF(2)-linear."""
            a, odd_e = 0, e
            while odd_e % 2 == 0:
                odd_e, a = odd_e // 2, a + 1
            columns = [1 << i for i in range(m)]
            for _ in range(a):
                columns = [reduce(xor, (gf.square_matrix()[j] for j in range(m) if c >> j & 1), 0) for c in columns]
            return _linear(self, columns, odd[odd_e // 2], f"syn{e}_from_odd")

        # Error locations wait here until the search proves the codeword correctable.
        self.fifo = fifo = ResetInserter()(stream.SyncFIFO([("word", len(source.word)), ("mask", BEAT_BITS)], max(t, 2)))
        self.comb += fifo.reset.eq(self.restart)

        self.fsm = fsm = FSM(reset_state="IDLE")
        self.comb += [
            self.busy.eq(~fsm.ongoing("IDLE")),
            self.idle.eq(~self.busy & ~full & ~sink.valid & ~self.restart),
            self.empty.eq(~self.busy & ~full & stage1_empty),
        ]
        fsm.act("IDLE",
            If(full,
                take.eq(1),
                NextState("BM"),
            ),
        )
        self.sync += If(take,
            [q.eq(syndrome_from_odd(e + 1)) for e, q in enumerate(queue)],
            [w.eq(0) for w in window],
            lam[0].eq(1), [x.eq(0) for x in lam[1:]],
            b[0].eq(1), [x.eq(0) for x in b[1:]],
            gamma.eq(1), degree.eq(0), k.eq(0), found.eq(0), word.eq(0),
        )
        bm = self._bm_serial if serial_bm else self._bm_parallel
        bm(gf, t, queue, window, lam, b, gamma, degree, k, fsm, take)
        fsm.act("INIT",
            NextValue(uncorrectable, degree > t),
            If((degree == 0) | (degree > t), NextState("DRAIN")).Else(NextState("CHIEN")),
        )
        self.sync += If(fsm.ongoing("INIT"),
            [lam[j].eq(_const_mul(self, gf, gf.pow(-j * (n - 1)), lam[j], f"chien_init{j}")) for j in range(1, t + 1)],
        )
        self._chien(code, chien, lam, word, found, degree, uncorrectable, fifo, fsm, take)
        fsm.act("DRAIN",
            If(uncorrectable,
                fifo.source.ready.eq(1),
            ).Else(
                source.valid.eq(fifo.source.valid),
                source.word.eq(fifo.source.word),
                source.mask.eq(fifo.source.mask),
                fifo.source.ready.eq(source.ready),
            ),
            If(~fifo.source.valid, NextState("STATUS")),
        )
        fsm.act("STATUS",
            source.valid.eq(1),
            source.last.eq(1),
            source.count.eq(found),
            source.uncorrectable.eq(uncorrectable),
            If(source.ready, NextState("IDLE")),
        )
        for state in list(fsm.actions):                 # Listed last: wins over the above.
            fsm.act(state, If(self.restart, NextState("IDLE")))

    def _shift_syndromes(self, t, queue, window):
        """A BM iteration's end: the next two syndromes into the window."""
        return [[queue[i].eq(queue[i + 2] if i + 2 < 2 * t else 0) for i in range(2 * t)],
                window[0].eq(queue[1]), window[1].eq(queue[0]), [window[i].eq(window[i - 2]) for i in range(2, t + 1)]]

    def _bm_parallel(self, gf, t, queue, window, lam, b, gamma, degree, k, fsm, take):
        """One BM iteration (k) of the binary inversionless algorithm a cycle (state BM): the
        discrepancy over S_2k..S_2k-t and every coefficient's update at once."""
        m = gf.m
        wk = [queue[0]] + window[:-1]
        delta = Signal(m, name="delta")
        self.comb += delta.eq(reduce(xor, [_gf_mul(self, gf, lam[i], wk[i], f"disc{i}") for i in range(t + 1)]))
        lengthen = Signal()
        self.comb += lengthen.eq((delta != 0) & (degree <= k))
        fsm.act("BM",
            NextValue(k, k + 1),
            If(k == t - 1, NextState("INIT")),
        )
        self.sync += If(fsm.ongoing("BM"),
            [lam[i].eq(_gf_mul(self, gf, gamma, lam[i], f"scaled{i}") ^ (_gf_mul(self, gf, delta, b[i - 1], f"step{i}") if i else 0))
             for i in range(t + 1)],
            If(lengthen,
                b[0].eq(0), [b[i].eq(lam[i - 1]) for i in range(1, t + 1)],
                degree.eq(2 * k + 1 - degree),
                gamma.eq(delta),
            ).Else(
                b[0].eq(0), b[1].eq(0), [b[i].eq(b[i - 2]) for i in range(2, t + 1)],
            ),
            *self._shift_syndromes(t, queue, window),
        )

    def _bm_serial(self, gf, t, queue, window, lam, b, gamma, degree, k, fsm, take):
        """The same iteration with two multipliers: BM sums the discrepancy lam_i S_2k-i over i = 0..t
        (a cycle each), BM_STEP updates lam_i = gamma lam_i + delta b_(i-1) and b_(i+1) from i = t down
        to 0 (so that every old b_(i-1) and lam_i is read before it is overwritten)."""
        m = gf.m
        wk = [queue[0]] + window[:-1]
        i = Signal(max=t + 1, name="bm_i")
        acc, delta = Signal(m, name="bm_acc"), Signal(m, name="delta")
        lengthen = Signal(name="bm_lengthen")
        lam_i, other, b_prev = Signal(m, name="bm_lam_i"), Signal(m, name="bm_other"), Signal(m, name="bm_b_prev")
        disc = fsm.ongoing("BM")
        self.comb += [
            lam_i.eq(Array(lam)[i]),
            other.eq(Mux(disc, Array(wk)[i], gamma)),
            b_prev.eq(Array([Constant(0, m)] + b[:-1])[i]),        # b_(i-1), 0 for i = 0
        ]
        mul_a = _gf_mul(self, gf, lam_i, other, "bm_mul_a")         # lam_i S_2k-i, or gamma lam_i
        mul_b = _gf_mul(self, gf, delta, b_prev, "bm_mul_b")        # delta b_(i-1)
        delta_now = Signal(m, name="bm_delta_now")
        self.comb += delta_now.eq(acc ^ mul_a)
        self.sync += If(take, i.eq(0), acc.eq(0))
        fsm.act("BM",
            If(i == t,
                NextValue(delta, delta_now), NextValue(acc, 0),
                NextValue(lengthen, (delta_now != 0) & (degree <= k)),
                NextState("BM_STEP"),
            ).Else(
                NextValue(acc, delta_now), NextValue(i, i + 1),
            ),
        )
        fsm.act("BM_STEP",
            NextValue(i, i - 1),
            If(i == 0,
                NextValue(i, 0), NextValue(k, k + 1),
                If(k == t - 1, NextState("INIT")).Else(NextState("BM")),
            ),
        )
        self.sync += If(fsm.ongoing("BM_STEP"),
            Case(i, {j: lam[j].eq(mul_a ^ mul_b) for j in range(t + 1)}),
            Case(i, {j: b[j + 1].eq(Mux(lengthen, lam_i, b_prev)) for j in range(t)}),
            If(i == 0,
                b[0].eq(0),
                If(lengthen, degree.eq(2 * k + 1 - degree), gamma.eq(delta)),
                *self._shift_syndromes(t, queue, window),
            ),
        )

    def _chien(self, code, chien, lam, word, found, degree, uncorrectable, fifo, fsm, take):
        """The CHIEN state: `chien` positions per cycle, a beat's in 16 / `chien` cycles (`sub`); lam_j
        holds Lambda_j alpha^(j s) for the cycle's first position s. A beat's roots go to `fifo` as
        one mask, once its last positions are tried or the search ends."""
        gf, t, m, beats, last_bits = code.gf, code.t, code.gf.m, code.beats, code.last_beat_bits()
        steps = BEAT_BITS // chien
        sub = Signal(max=max(steps, 2)) if steps > 1 else 0     # Positions sub * chien .. of the beat.
        last_sub = (sub == steps - 1) if steps > 1 else 1
        hits = []
        roots = Signal(BEAT_BITS)                               # This cycle's roots at their beat bits.
        for q in range(chien):
            value = Signal(m, name=f"chien{q}")
            self.comb += value.eq(reduce(xor, [lam[0]] + [_const_mul(self, gf, gf.pow(j * q), lam[j], f"chien{q}_{j}")
                                                         for j in range(1, t + 1)]))
            # Inside the code: position sub * chien + q of the last beat is one of its last_bits.
            inside = [s * chien + q < last_bits for s in range(steps)]
            if all(inside):
                valid_q = 1
            elif steps == 1:
                valid_q = word != beats - 1
            else:
                valid_q = (word != beats - 1) | (sub < sum(inside))
            hit = Signal(name=f"chien_hit{q}")
            self.comb += hit.eq((value == 0) & valid_q)
            hits.append(hit)
            for s in range(steps):
                self.comb += roots[code.beat_bit(s * chien + q)].eq(hit & (sub == s) if steps > 1 else hit)
        found_next = Signal.like(found)
        self.comb += found_next.eq(found + reduce(add, hits))
        end = Signal()
        self.comb += end.eq((found_next >= degree) | (word == beats - 1) & last_sub)
        if steps > 1:
            acc = Signal(BEAT_BITS)                             # Roots of the beat's earlier cycles.
            mask = acc | roots
            self.sync += If(take, acc.eq(0), sub.eq(0))
            push = (last_sub | end) & (mask != 0)
            more = [NextValue(acc, Mux(last_sub, 0, mask)), NextValue(sub, Mux(last_sub, 0, sub + 1)),
                    If(end, NextValue(acc, 0), NextValue(sub, 0))]
        else:
            mask, push, more = roots, roots != 0, []
        fsm.act("CHIEN",
            fifo.sink.valid.eq(push),
            fifo.sink.word.eq(word),
            fifo.sink.mask.eq(mask),
            NextValue(found, found_next),
            If(last_sub, NextValue(word, word + 1)),
            *more,
            If(end,
                NextValue(uncorrectable, found_next != degree),
                NextState("DRAIN"),
            ),
        )
        self.sync += If(fsm.ongoing("CHIEN"),
            [lam[j].eq(_const_mul(self, gf, gf.pow(chien * j), lam[j], f"chien_next{j}")) for j in range(1, t + 1)],
        )

    def _syndromes(self, code, full, take):
        """Stage 1: the odd syndromes S_1, S_3, .. S_2t-1, Horner over 16 stream bits per beat, while the
        codeword streams in on `sink`; `full` once a whole codeword's wait for stage 2 (`take`). Returns
        them and whether no beat of a codeword has been taken."""
        sink, gf, m = self.sink, code.gf, code.gf.m
        beat = Signal(max=code.beats)
        odd = [Signal(m, name=f"syn{2 * i + 1}") for i in range(code.t)]

        def horner(i, nbits, s):
            sym = [1 << k for k in range(m)]
            for j in range(nbits):
                sym = _sym_const_mul(gf.mul_matrix(gf.pow(i)), sym)
                sym[0] ^= 1 << (m + code.beat_bit(j))
            variables = [s[k] for k in range(m)] + [sink.data[k] for k in range(BEAT_BITS)]
            # Assigned bit by bit in the clocked block (see the encoder's lfsr_next).
            return [s[k].eq(b) for k, b in enumerate(_emit(sym, variables))]

        last_beat = beat == code.beats - 1
        self.comb += sink.ready.eq(~full)
        for i, s in enumerate(odd):
            e = 2 * i + 1
            self.sync += If(take | self.restart,
                s.eq(0),
            ).Elif(sink.valid & sink.ready,
                If(last_beat, *horner(e, code.last_beat_bits(), s)).Else(*horner(e, BEAT_BITS, s)),
            )
        self.sync += [
            If(take, full.eq(0)),
            If(sink.valid & sink.ready,
                If(last_beat, beat.eq(0), full.eq(1)).Else(beat.eq(beat + 1)),
            ),
            If(self.restart, beat.eq(0), full.eq(0)),
        ]
        return odd, beat == 0
