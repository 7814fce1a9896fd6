"""Base of the tops that testbenches and harnesses convert to Verilog: plainly named top-level ports."""

from migen import Signal

from litex.gen import LiteXModule


class NandLabPortedTop(LiteXModule):
    """`port()` makes a plainly named top-level port of a signal (inputs drive it, outputs follow it)
    and collects it in `ios` for the Verilog conversion (`nandlab.testing.to_verilog`), and as
    (name, port, out) in `ports` (a top made of several: tests/test_controller_return.py)."""
    def __init__(self):
        self.ios = []
        self.ports = []

    def port(self, name, sig, out):
        p = Signal(len(sig), name=name)
        self.comb += (p.eq(sig) if out else sig.eq(p))
        self.ios.append(p)
        self.ports.append((name, p, out))
        return p
