"""BCH arithmetic in Python: the field, the generator polynomial, a bit-exact model of the gateware
encoder and decoder, and the GF(2) linear maps the gateware is built from.

Conventions (the Linux kernel's lib/bch.c, which `bchlib` wraps, with swap_bits off):

* a codeword is the data bytes followed by the parity bytes; bits go in transmission order, byte
  by byte and MSB first, and the first bit sent is the highest-degree coefficient. With n code
  bits, stream bit s (byte s // 8, bit 7 - s % 8) is the coefficient of x^(n-1-s);
* the parity is the remainder of data(x) * x^deg(g) divided by g(x), sent MSB first (coefficient
  of x^(deg g - 1) first); when deg g is not a multiple of 8 the last parity byte ends with zero
  pad bits, which are not part of the code;
* the field is GF(2^m) built on the kernel's default primitive polynomial for m (PRIM_POLYS).

The decoder model mirrors the gateware step by step (odd syndromes, even ones by squaring, the
inversionless Berlekamp-Massey reduced to t iterations for binary codes, a Chien search in stream
order) so a mismatch with bchlib points at the algorithm, and one with the gateware at the logic.
"""

from functools import reduce

# The kernel's default primitive polynomials (lib/bch.c), indexed by m.
PRIM_POLYS = {5: 0x25, 6: 0x43, 7: 0x83, 8: 0x11D, 9: 0x211, 10: 0x409, 11: 0x805, 12: 0x1053, 13: 0x201B,
              14: 0x402B, 15: 0x8003}


class GF:
    """GF(2^m) with log/antilog tables; elements are ints, alpha is 2."""
    def __init__(self, m, poly=None):
        if m not in PRIM_POLYS:
            raise ValueError(f"m = {m}: the field order must be between {min(PRIM_POLYS)} and {max(PRIM_POLYS)}")
        self.m, self.poly = m, poly or PRIM_POLYS[m]
        self.n = (1 << m) - 1
        self.exp, self.log = [0] * (2 * self.n), [0] * (self.n + 1)
        x = 1
        for i in range(self.n):
            self.exp[i] = self.exp[i + self.n] = x
            self.log[x] = i
            x <<= 1
            if x >> m:
                x ^= self.poly

    def mul(self, a, b):
        return 0 if a == 0 or b == 0 else self.exp[self.log[a] + self.log[b]]

    def pow(self, e):
        """alpha^e for any integer e."""
        return self.exp[e % self.n]

    def mul_matrix(self, c):
        """Columns of multiplication by the constant c: column i is c * alpha^i (a linear map of bits)."""
        return [self.mul(c, 1 << i) for i in range(self.m)]

    def square_matrix(self):
        return [self.mul(1 << i, 1 << i) for i in range(self.m)]


def apply_matrix(columns, x):
    """The linear map given by its columns applied to the bit vector x."""
    return reduce(lambda acc, i: acc ^ columns[i] if x >> i & 1 else acc, range(len(columns)), 0)


def _poly_mul2(a, b):
    """Product of two GF(2) polynomials held as ints."""
    r = 0
    while b:
        if b & 1:
            r ^= a
        a, b = a << 1, b >> 1
    return r


def minimal_polynomial(gf, e):
    """Minimal polynomial over GF(2) of alpha^e, as an int (bit i = coefficient of x^i)."""
    coset, c = [], e % gf.n
    while c not in coset:
        coset.append(c)
        c = 2 * c % gf.n
    p = [1]                                   # Coefficients in GF(2^m), low degree first.
    for c in coset:
        root = gf.pow(c)
        p = [(p[i - 1] if i else 0) ^ (gf.mul(root, p[i]) if i < len(p) else 0) for i in range(len(p) + 1)]
    assert all(v in (0, 1) for v in p)
    return sum(v << i for i, v in enumerate(p))


def generator_polynomial(gf, t):
    """LCM of the minimal polynomials of alpha^1, alpha^3, ..., alpha^(2t-1)."""
    seen, g = set(), 1
    for i in range(1, 2 * t, 2):
        mp = minimal_polynomial(gf, i)
        if mp not in seen:
            seen.add(mp)
            g = _poly_mul2(g, mp)
    return g


class BchCode:
    """One shortened binary BCH code: `data_bytes` of data, `t` correctable bits, GF(2^m)."""
    def __init__(self, data_bytes, t, m, poly=None):
        if not isinstance(data_bytes, int) or data_bytes < 2 or data_bytes % 2:
            raise ValueError(f"data_bytes = {data_bytes}: must be a positive even number (16-bit data path)")
        if not isinstance(t, int) or t < 1:
            raise ValueError(f"t = {t}: at least 1 correctable bit")
        self.gf = gf = GF(m, poly)
        self.data_bytes, self.t, self.m = data_bytes, t, m
        self.g = generator_polynomial(gf, t)
        self.parity_bits = self.g.bit_length() - 1
        self.parity_bytes = (self.parity_bits + 7) // 8
        self.n = 8 * data_bytes + self.parity_bits                     # Code bits (pad excluded).
        if self.n > gf.n:
            raise ValueError(f"data_bytes = {data_bytes}, t = {t}: {self.n} code bits exceed the {gf.n} of "
                             f"GF(2^{m}); at most {(gf.n - self.parity_bits) // 8} data bytes")
        self.codeword_bytes = data_bytes + self.parity_bytes
        self.beats = (self.codeword_bytes + 1) // 2

    # Encoder ---------------------------------------------------------------------------------------

    def encode(self, data):
        """Parity bytes of `data` (bchlib's ecc bytes)."""
        assert len(data) == self.data_bytes
        N, gl = self.parity_bits, self.g ^ (1 << self.parity_bits)
        r = 0
        for byte in data:
            for b in range(7, -1, -1):
                fb = (byte >> b & 1) ^ (r >> (N - 1) & 1)
                r = (r << 1) & ((1 << N) - 1)
                if fb:
                    r ^= gl
        bits = r << (8 * self.parity_bytes - N)
        return bytes(bits >> (8 * (self.parity_bytes - 1 - i)) & 0xFF for i in range(self.parity_bytes))

    # Decoder model ---------------------------------------------------------------------------------

    def stream_bits(self, codeword):
        """The n code bits in transmission order."""
        return [codeword[s // 8] >> (7 - s % 8) & 1 for s in range(self.n)]

    def syndromes(self, codeword):
        """S_1 .. S_2t (index 0 is S_1)."""
        gf, bits = self.gf, self.stream_bits(codeword)
        odd = {}
        for i in range(1, 2 * self.t, 2):
            s = 0
            for b in bits:
                s = gf.mul(s, gf.pow(i)) ^ b
            odd[i] = s
        out = []
        for i in range(1, 2 * self.t + 1):
            j, sq = i, 0
            while j % 2 == 0:
                j, sq = j // 2, sq + 1
            v = odd[j]
            for _ in range(sq):
                v = gf.mul(v, v)
            out.append(v)
        return out

    def berlekamp_massey(self, S):
        """Inversionless BM for binary codes in t iterations: (locator coefficients 0..t, L)."""
        gf, t = self.gf, self.t
        lam, B, L, gamma = [1] + [0] * t, [1] + [0] * t, 0, 1
        window = [0] * (t + 1)                # window[i] = S_(2k-i) (0-indexed syndromes).
        queue = list(S)
        for k in range(t):
            window = queue[:1] + window[:-1]  # Shift in S_2k ...
            delta = reduce(lambda a, b: a ^ b, (gf.mul(lam[i], window[i]) for i in range(t + 1)))
            new = [gf.mul(gamma, lam[i]) ^ (gf.mul(delta, B[i - 1]) if i else 0) for i in range(t + 1)]
            if delta and 2 * L <= 2 * k:
                B, L, gamma = [0] + lam[:-1], 2 * k + 1 - L, delta
            else:
                B = [0, 0] + B[:-2]
            lam = new
            window = queue[1:2] + window[:-1]  # ... and S_2k+1 (always zero discrepancy there).
            queue = queue[2:]
        return lam, L

    def chien(self, lam):
        """Error stream positions: roots of the locator in stream order (s for coefficient x^(n-1-s))."""
        gf = self.gf
        return [s for s in range(self.n)
                if reduce(lambda a, b: a ^ b, (gf.mul(c, gf.pow(-j * (self.n - 1 - s))) for j, c in enumerate(lam))) == 0]

    def decode(self, codeword):
        """(corrected codeword, corrected bit count, uncorrectable) as the gateware reports them."""
        lam, L = self.berlekamp_massey(self.syndromes(codeword))
        if L > self.t:
            return bytes(codeword), 0, True
        roots = self.chien(lam)
        if len(roots) != L:
            return bytes(codeword), len(roots), True
        out = bytearray(codeword)
        for s in roots:
            out[s // 8] ^= 0x80 >> (s % 8)
        return bytes(out), L, False

    # Gateware helpers ------------------------------------------------------------------------------

    def beat_bit(self, j):
        """Bit of a 16-bit beat holding stream bit j of the beat (byte 0 in bits 7:0, MSB first)."""
        return 7 - j if j < 8 else 23 - j

    def last_beat_bits(self):
        """Code bits carried by the last beat (1..16; pad bits and a missing byte excluded)."""
        return self.n - 16 * (self.beats - 1)
