"""BCH ECC engine: encoder and decoder on Verilator (cocotb) against bchlib, layout and parameter checks."""

import json

import pytest
from migen import Signal

from nandlab.gateware.ecc.bch import NandLabBchEncoder, NandLabBchDecoder, layout
from nandlab.gateware.ecc.shared import NandLabSharedBchDecoder
from nandlab.gateware.ecc.bchref import BchCode
from nandlab.testing import run_cocotb, PortedTop


class BchTop(PortedTop):
    """Encoder and decoder side by side, their streams as plainly named ports. Without the decoder
    the decoder's inputs are plain ports (so the testbench's reset still finds them)."""
    def __init__(self, data_bytes, t, m, with_decoder=True, chien=16, serial_bm=False):
        PortedTop.__init__(self)
        self.enc = enc = NandLabBchEncoder(data_bytes, t, m)
        port = self.port
        for name in ("valid", "data"):
            port(f"enc_sink_{name}", getattr(enc.sink, name), False)
        port("enc_sink_ready", enc.sink.ready, True)
        for name in ("valid", "data", "be", "last"):
            port(f"enc_source_{name}", getattr(enc.source, name), True)
        port("enc_source_ready", enc.source.ready, False)
        if not with_decoder:
            for name, width in (("dec_sink_valid", 1), ("dec_sink_data", 16), ("dec_source_ready", 1)):
                port(name, Signal(width), False)
            return
        self.dec = dec = NandLabBchDecoder(data_bytes, t, m, chien=chien, serial_bm=serial_bm)
        for name in ("valid", "data"):
            port(f"dec_sink_{name}", getattr(dec.sink, name), False)
        port("dec_sink_ready", dec.sink.ready, True)
        for name in ("valid", "word", "mask", "count", "uncorrectable", "last"):
            port(f"dec_source_{name}", getattr(dec.source, name), True)
        port("dec_source_ready", dec.source.ready, False)
        port("dec_busy", dec.busy, True)


CONFIGS = {
    "512B_t8_m13":  ((512, 8, 13), 4),
    "1KB_t40_m14":  ((1024, 40, 14), 3),
}
BUILD_ARGS = ("-Wno-COMBDLY", "-Wno-INITIALDLY")


def run_bch(tmp_path, config, codewords=None, with_decoder=True, chien=16, serial_bm=False):
    (data_bytes, t, m), n = CONFIGS[config]
    top = BchTop(data_bytes, t, m, with_decoder, chien, serial_bm)
    tests = run_cocotb(top, top.ios, "nandlab_bch", "bch_tb", tmp_path,
                       extra_env={"NANDLAB_BCH": f"{data_bytes},{t},{m}", "NANDLAB_BCH_CODEWORDS": str(codewords or n)},
                       testcase=None if with_decoder else "encoder_parity_matches_bchlib", build_args=BUILD_ARGS)
    assert tests == (3 if with_decoder else 1)
    perf = json.loads((tmp_path / "bch_perf.json").read_text())
    print(config, perf)
    code = BchCode(data_bytes, t, m)
    # One beat per cycle, parity included (the last beat of an odd-length codeword has one byte).
    assert perf["encoder_bytes_per_cycle"] == pytest.approx(code.codeword_bytes / code.beats)
    if with_decoder:
        # Without errors the search is skipped and the input stage sets the pace (a beat per cycle
        # and one cycle to hand the syndromes over).
        assert perf["decoder_clean_bytes_per_cycle"] >= code.codeword_bytes / (code.beats + 1)
        # With t errors the search scans (nearly) the whole codeword after t BM cycles (serial: 2 (t + 1)
        # each), a beat in 16 / chien cycles.
        search = code.beats * (16 // chien)
        bm = 2 * (code.t + 1) * code.t if serial_bm else 0
        assert perf["decoder_t_errors_bytes_per_cycle"] >= code.codeword_bytes / (search + bm + 3 * code.t + 8)
    return perf


@pytest.mark.cocotb
def test_bch_512B_t8(tmp_path):
    """Encoder parity, decoding of 0, t and t+1 errors with back-pressure, and throughput at t = 8."""
    run_bch(tmp_path, "512B_t8_m13")


@pytest.mark.cocotb
@pytest.mark.parametrize("chien, serial_bm", [(4, True), (1, False)])
def test_bch_512B_t8_small_decoder(tmp_path, chien, serial_bm):
    """The same with a Chien search of `chien` positions per cycle and a serial Berlekamp-Massey (the
    smaller decoder of a board short of LUTs: ECPIX-5)."""
    run_bch(tmp_path, "512B_t8_m13", chien=chien, serial_bm=serial_bm)


@pytest.mark.unit
def test_chien_must_divide_a_beat():
    with pytest.raises(ValueError, match="must divide 16"):
        NandLabBchDecoder(512, 8, 13, chien=3)


@pytest.mark.cocotb
def test_bch_1KB_t40_encoder(tmp_path):
    """The t = 40 encoder against bchlib (its decoder takes minutes to build: the slow test below)."""
    run_bch(tmp_path, "1KB_t40_m14", with_decoder=False)


@pytest.mark.cocotb
@pytest.mark.slow
def test_bch_1KB_t40(tmp_path):
    """The whole suite at t = 40 over 1 KB (m = 14): about 3 minutes of Verilator build."""
    run_bch(tmp_path, "1KB_t40_m14", codewords=6)


@pytest.mark.unit
@pytest.mark.parametrize("data_bytes, t, m, parity", [(512, 8, 13, 13), (1024, 40, 14, 70), (512, 9, 13, 15)])
def test_parity_sizes_match_bchlib(data_bytes, t, m, parity):
    bchlib = pytest.importorskip("bchlib")
    code = BchCode(data_bytes, t, m)
    assert code.parity_bytes == parity == bchlib.BCH(t, m=m).ecc_bytes
    assert code.parity_bits == m * t


@pytest.mark.unit
@pytest.mark.parametrize("args, limit", [
    ((512, 0, 13), "at least 1"),
    ((512, 8, 16), "between 5 and 15"),
    ((511, 8, 13), "even"),
    ((1024, 8, 13), "at most 1010 data bytes"),
    ((512, 65, 14), "1 to 64"),
])
def test_impossible_parameters_raise(args, limit):
    for core in (NandLabBchEncoder, NandLabBchDecoder):
        with pytest.raises(ValueError, match=limit):
            core(*args)


@pytest.mark.unit
def test_layout():
    lay = layout(2048, 64, 512, 8, 13)
    assert lay.codewords == 4 and lay.parity_bytes == 13 and lay.slot_bytes == 14
    assert lay.parity_columns == [2050, 2064, 2078, 2092]
    assert lay.free_columns == (2106, 2112)
    assert all(c % 2 == 0 for c in lay.parity_columns)
    lay = layout(8192, 640, 1024, 40, 14)
    assert lay.codewords == 8 and lay.parity_columns[-1] + lay.parity_bytes == 8192 + 562
    with pytest.raises(ValueError, match="need 282 spare bytes.*the spare has 224"):
        layout(4096, 224, 1024, 40, 14)
    with pytest.raises(ValueError, match="multiple of data_bytes"):
        layout(2000, 64)


class SharedBchTop(PortedTop):
    """One decoder shared by two clients (NandLabSharedBchDecoder), each port's streams as `c<k>_*` ports."""
    def __init__(self, data_bytes, t, m, **decoder):
        PortedTop.__init__(self)
        self.shared = shared = NandLabSharedBchDecoder(dict(data_bytes=data_bytes, t=t, m=m), **decoder)
        for k in range(2):
            p = shared.port()
            for name in ("valid", "data"):
                self.port(f"c{k}_sink_{name}", getattr(p.sink, name), False)
            self.port(f"c{k}_sink_ready", p.sink.ready, True)
            for name in ("valid", "word", "mask", "count", "uncorrectable", "last"):
                self.port(f"c{k}_source_{name}", getattr(p.source, name), True)
            self.port(f"c{k}_source_ready", p.source.ready, False)
            self.port(f"c{k}_restart", p.restart, False)


@pytest.mark.cocotb
@pytest.mark.parametrize("decoder", [{}, {"chien": 4, "serial_bm": True}], ids=["full", "small"])
def test_bch_shared_decoder(tmp_path, decoder):
    """Two clients of one decoder at once each get their own codewords' results; a lone client keeps a
    private decoder's pace; a client whose read stopped mid-codeword frees the decoder by its restart."""
    top = SharedBchTop(512, 8, 13, **decoder)
    code = BchCode(512, 8, 13)
    # Pauses between a client's codewords longer than the decoder's stage 2 with t errors (its search
    # 16 / chien cycles a beat, a serial BM 2 (t + 1) cycles an iteration), so that the clients alternate.
    stage2 = code.beats * (16 // decoder.get("chien", 16)) + (2 * (code.t + 1) * code.t if decoder.get("serial_bm") else 0)
    env = {"NANDLAB_BCH": "512,8,13", "NANDLAB_BCH_GAP": str(max(2 * code.beats, stage2 + code.beats))}
    tests = run_cocotb(top, top.ios, "nandlab_bch_shared", "bch_shared_tb", tmp_path, extra_env=env, build_args=BUILD_ARGS)
    assert tests == 3
