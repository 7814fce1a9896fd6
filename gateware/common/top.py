"""Base of the tops that testbenches and harnesses convert to Verilog: plainly named top-level ports."""

from migen import Signal

from litex.gen import LiteXModule


class NandLabPortedTop(LiteXModule):
    """`port()` makes a plainly named top-level port of a signal (inputs drive it, outputs follow it)
    and collects it in `ios` for the Verilog conversion (`nandlab.testing.to_verilog`)."""
    def __init__(self):
        self.ios = []

    def port(self, name, sig, out):
        p = Signal(len(sig), name=name)
        self.comb += (p.eq(sig) if out else sig.eq(p))
        self.ios.append(p)
        return p
