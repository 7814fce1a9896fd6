"""Resource estimates of the BCH ECC engine (encoder + decoder) for `nandlab report`."""

from nandlab.resources import _synthesize_core

# (data_bytes, t, m) of the reported configurations: 512 B at 8 bits, 1 KB at 40 bits.
ECC_CONFIGS = ((512, 8, 13), (1024, 40, 14))


def ecc_resources(configs=ECC_CONFIGS, families=("xc7", "ecp5"), log=print):
    """{((data_bytes, t, m), family): {"lut", "ff", "bram", ...}} of one encoder and one decoder,
    synthesised together with yosys (every stream signal a port, so nothing is trimmed)."""
    from litex.gen import LiteXModule
    from nandlab.gateware.ecc.bch import NandLabBchEncoder, NandLabBchDecoder

    results = {}
    for data_bytes, t, m in configs:
        dut = LiteXModule()
        dut.enc = NandLabBchEncoder(data_bytes, t, m)
        dut.dec = NandLabBchDecoder(data_bytes, t, m)
        ios = [dut.dec.busy]
        for ep in (dut.enc.sink, dut.enc.source, dut.dec.sink, dut.dec.source):
            ios += [ep.valid, ep.ready, ep.last] + [getattr(ep, name) for name, *_ in ep.description.payload_layout]
        top = f"nandlab_bch_{data_bytes}_t{t}_m{m}"
        for family, r in _synthesize_core(dut, ios, top, f"the BCH engine ({data_bytes} B, t = {t}, m = {m})",
                                          families, log).items():
            results[((data_bytes, t, m), family)] = r
    return results


def format_ecc_resources(results):
    """Lines of a table of `ecc_resources()`."""
    lines = [f"{'codeword':<20} {'family':<6} {'LUT':>7} {'FF':>6} {'BRAM':>6}"]
    for ((data_bytes, t, m), family), r in results.items():
        lines.append(f"{f'{data_bytes} B t={t} m={m}':<20} {family:<6} {r['lut']:>7} {r['ff']:>6} {r['bram']:>6g}")
    return lines
