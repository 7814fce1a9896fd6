"""cocotb tests of the BCH encoder and decoder (NandLabBchEncoder/Decoder) scored against bchlib."""

import json
import os
import random

import bchlib
import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer

from nandlab.gateware.ecc.bchref import BchCode

DATA_BYTES, T, M = (int(v) for v in os.environ.get("NANDLAB_BCH", "512,8,13").split(","))
CODE = BchCode(DATA_BYTES, T, M)
BCH = bchlib.BCH(T, m=M)
CODEWORDS = int(os.environ.get("NANDLAB_BCH_CODEWORDS", "4"))


def beats_of(data):
    """16-bit beats of a byte string, first byte in bits 7:0 (a missing second byte reads 0)."""
    return [data[i] | (data[i + 1] << 8 if i + 1 < len(data) else 0) for i in range(0, len(data), 2)]


def flip(codeword, positions):
    out = bytearray(codeword)
    for s in positions:
        out[s // 8] ^= 0x80 >> (s % 8)
    return bytes(out)


def bchlib_decode(codeword):
    """bchlib's verdict on a received codeword: error count, negative when it cannot decode."""
    data, ecc = bytearray(codeword[:DATA_BYTES]), bytearray(codeword[DATA_BYTES:])
    return BCH.decode(data, ecc)


class BchTB:
    """Owns the clock and reset; drives and samples both cores once per cycle, inputs set after the
    falling edge and handshakes sampled just before the rising edge that takes them."""
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns").start())

    async def reset(self):
        d = self.dut
        for name in ("enc_sink_valid", "enc_sink_data", "enc_source_ready", "dec_sink_valid", "dec_sink_data",
                     "dec_source_ready"):
            getattr(d, name).value = 0
        d.sys_rst.value = 1
        for _ in range(3):
            await RisingEdge(d.sys_clk)
        d.sys_rst.value = 0

    async def encode(self, words, valid_prob=1.0, ready_prob=1.0):
        """Output beats (data, be, last) of the encoder for `words`, and the cycles it took."""
        d, rng, i, out, cycles = self.dut, self.rng, 0, [], 0
        expected = len(words) // (DATA_BYTES // 2) * CODE.beats
        while len(out) < expected:
            await FallingEdge(d.sys_clk)
            d.enc_sink_valid.value = int(i < len(words) and rng.random() < valid_prob)
            d.enc_sink_data.value = words[i] if i < len(words) else 0
            d.enc_source_ready.value = int(rng.random() < ready_prob)
            await Timer(1, "ns")
            cycles += 1
            if int(d.enc_sink_valid.value) and int(d.enc_sink_ready.value):
                i += 1
            if int(d.enc_source_valid.value) and int(d.enc_source_ready.value):
                out.append((int(d.enc_source_data.value), int(d.enc_source_be.value), int(d.enc_source_last.value)))
        return out, cycles

    async def decode(self, words, count, valid_prob=1.0, ready_prob=1.0):
        """Per codeword: (corrections {word: mask}, count, uncorrectable), the cycles at which the
        statuses came out, and the cycles from each codeword's last beat to its status."""
        d, rng, i, results, fixes, cycles = self.dut, self.rng, 0, [], {}, 0
        last_in, latencies, status_cycles = [], [], []
        while len(results) < count:
            await FallingEdge(d.sys_clk)
            d.dec_sink_valid.value = int(i < len(words) and rng.random() < valid_prob)
            d.dec_sink_data.value = words[i] if i < len(words) else 0
            d.dec_source_ready.value = int(rng.random() < ready_prob)
            await Timer(1, "ns")
            if i or int(d.dec_sink_valid.value):
                cycles += 1
            if int(d.dec_sink_valid.value) and int(d.dec_sink_ready.value):
                i += 1
                if i % CODE.beats == 0:
                    last_in.append(cycles)
            if int(d.dec_source_valid.value) and int(d.dec_source_ready.value):
                if int(d.dec_source_last.value):
                    results.append((fixes, int(d.dec_source_count.value), int(d.dec_source_uncorrectable.value)))
                    latencies.append(cycles - last_in[len(results) - 1])
                    status_cycles.append(cycles)
                    fixes = {}
                else:
                    w = int(d.dec_source_word.value)
                    assert w not in fixes, f"word {w} corrected twice"
                    fixes[w] = int(d.dec_source_mask.value)
        return results, status_cycles, latencies


def random_data(rng):
    return bytes(rng.randrange(256) for _ in range(DATA_BYTES))


def apply(codeword, fixes):
    out = bytearray(codeword)
    for w, mask in fixes.items():
        out[2 * w] ^= mask & 0xFF
        if mask >> 8:
            out[2 * w + 1] ^= mask >> 8
    return bytes(out)


def save_perf(**kw):
    """Measurements for the pytest side (the run directory is the build directory)."""
    perf = json.loads(open("bch_perf.json").read()) if os.path.exists("bch_perf.json") else {}
    perf.update(kw)
    with open("bch_perf.json", "w") as f:
        json.dump(perf, f)


@cocotb.test()
async def encoder_parity_matches_bchlib(dut):
    tb = BchTB(dut, 1)
    await tb.reset()
    datas = [random_data(tb.rng) for _ in range(CODEWORDS)]
    words = sum((beats_of(x) for x in datas), [])
    for valid_prob, ready_prob in ((1.0, 1.0), (0.7, 0.6)):
        out, cycles = await tb.encode(words, valid_prob, ready_prob)
        for n, data in enumerate(datas):
            beats = out[n * CODE.beats:(n + 1) * CODE.beats]
            got = bytearray()
            for w, be, _ in beats:
                got += bytes([w & 0xFF] + ([w >> 8] if be & 2 else []))
            assert [last for *_, last in beats] == [0] * (CODE.beats - 1) + [1]
            assert all(be == 0b11 for _, be, _ in beats[:-1])
            assert bytes(got[:DATA_BYTES]) == data, f"codeword {n}: data changed"
            assert bytes(got[DATA_BYTES:]) == BCH.encode(data), f"codeword {n}: parity differs from bchlib"
        if valid_prob == 1.0:
            # One beat out per cycle: the bus sees 2 bytes every cycle, parity included.
            assert cycles == len(out), (cycles, len(out))
            save_perf(encoder_bytes_per_cycle=CODEWORDS * CODE.codeword_bytes / cycles)


def error_cases(rng):
    """(name, codeword, positions): 0, t in data, t in parity, t anywhere, and t+1 that bchlib
    also fails to decode."""
    cases = []
    for kind in ("none", "t_data", "t_parity", "t_any", "t_plus_1", "t_plus_1"):
        data = random_data(rng)
        cw = data + BCH.encode(data)
        while True:
            if kind == "none":
                pos = []
            elif kind == "t_data":
                pos = rng.sample(range(8 * DATA_BYTES), T)
            elif kind == "t_parity":
                pos = rng.sample(range(8 * DATA_BYTES, CODE.n), T)
            elif kind == "t_any":
                pos = rng.sample(range(CODE.n), T)
            else:
                pos = rng.sample(range(CODE.n), T + 1)
            if kind != "t_plus_1" or bchlib_decode(flip(cw, pos)) < 0:
                break
        cases.append((kind, cw, pos))
    return cases


@cocotb.test()
async def decoder_corrects_up_to_t_and_flags_t_plus_1(dut):
    tb = BchTB(dut, 2)
    await tb.reset()
    cases = error_cases(tb.rng)
    words = sum((beats_of(flip(cw, pos)) for _, cw, pos in cases), [])
    results, _, _ = await tb.decode(words, len(cases), valid_prob=0.8, ready_prob=0.4)
    for (kind, cw, pos), (fixes, count, unc) in zip(cases, results):
        received = flip(cw, pos)
        if len(pos) <= T:
            assert not unc, f"{kind}: flagged uncorrectable"
            assert count == len(pos) == bchlib_decode(received), f"{kind}: count {count}, {len(pos)} errors"
            assert apply(received, fixes) == cw, f"{kind}: data not restored"
        else:
            assert unc, f"{kind}: {T + 1} errors not flagged (count {count})"
            assert not fixes, f"{kind}: corrections sent for an uncorrectable codeword"


@cocotb.test()
async def decoder_sustained_throughput(dut):
    """Back-to-back codewords at full rate, without errors and with t each: codeword bytes per cycle
    in the steady state, and the latency from a codeword's last beat to its status."""
    tb = BchTB(dut, 3)
    await tb.reset()
    for name, nerr in (("clean", 0), ("t_errors", T)):
        cases = []
        for _ in range(CODEWORDS):
            data = random_data(tb.rng)
            cw = data + BCH.encode(data)
            cases.append((cw, tb.rng.sample(range(CODE.n), nerr)))
        words = sum((beats_of(flip(cw, pos)) for cw, pos in cases), [])
        results, status_cycles, latencies = await tb.decode(words, CODEWORDS)
        for (cw, pos), (fixes, count, unc) in zip(cases, results):
            assert not unc and count == nerr and apply(flip(cw, pos), fixes) == cw
        # Steady state: codewords per cycle between the first and the last status.
        rate = (CODEWORDS - 1) * CODE.codeword_bytes / (status_cycles[-1] - status_cycles[0])
        dut._log.info(f"{name}: {rate:.3f} codeword bytes/cycle, latency {max(latencies)} cycles")
        save_perf(**{f"decoder_{name}_bytes_per_cycle": rate, f"decoder_{name}_latency": max(latencies)})
        for _ in range(5):
            await RisingEdge(dut.sys_clk)
