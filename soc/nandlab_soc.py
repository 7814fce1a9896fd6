"""The nandlab SoC: VexRiscv, ROM/SRAM/main RAM, UART console, timer, identifier and the NAND subsystem.

Targets (`nandlab.soc.targets`) give the platform, clocking, main RAM and host bridge; this class
gives what every target shares. `add_nand_subsystem()` is the one place where the NAND cores
(die emulators, ONFI channel controllers, power ring, current monitor, telemetry) attach.
"""

from migen import Memory

from litex.gen import LiteXModule
from litex.soc.integration.soc_core import SoCCore

from nandlab.env import git_revision
from nandlab.gateware.common.timebase import NandLabTimebase


IDENT_SIZE = 64


class NandLabIdentifier(LiteXModule):
    """SoC identifier string in a fixed-size ROM (LiteX's Identifier sizes it to the string).

    A fixed size keeps the netlist unchanged when only the git revision changes, so the simulator
    is not recompiled for a new commit: the string itself sits in the memory's .init file.
    """
    def __init__(self, ident, size=IDENT_SIZE):
        data = list(ident.encode())
        if len(data) >= size:
            raise ValueError(f"identifier '{ident}' is {len(data)} bytes, the limit is {size - 1}")
        self.mem = Memory(8, size, init=data + [0] * (size - len(data)))

    def get_memories(self):
        return [(True, self.mem)]


class NandLabSoC(SoCCore):
    # Memory map shared by all targets (LiteX defaults are kept for the rest).
    mem_map = {**SoCCore.mem_map, **{
        "main_ram" : 0x40000000,
    }}

    def __init__(self, platform, sys_clk_freq, target,
        cpu_type      = "vexriscv",
        cpu_variant   = "standard",
        window_ns     = 40,
        **kwargs):
        self.target = target
        ident = f"nandlab {git_revision()} on {target}"
        SoCCore.__init__(self, platform, sys_clk_freq,
            cpu_type      = cpu_type,
            cpu_variant   = cpu_variant,
            ident         = "",  # Added below, with a fixed size.
            **kwargs)
        # Same CSR name as LiteX's identifier, so csr.h and LiteX host tools find it as usual.
        self.add_module(name="identifier", module=NandLabIdentifier(ident))
        self.add_config("BIOS_NO_BUILD_TIME")
        self.add_config("identifier", ident)
        self.add_constant("NANDLAB_TARGET", target)
        self.add_nand_subsystem(window_ns=window_ns)

    def add_nand_subsystem(self, window_ns=40):
        """Attach the NAND cores.

        Every NAND core hangs off here with its CSRs, so the firmware HAL (csr.h) and the host
        (csr.csv) see the same names on every target. Today: the shared time base. The die
        emulators, channel controllers, token ring, monitor and telemetry are added here as they land.
        """
        self.timebase = NandLabTimebase(self.sys_clk_freq, window_ns=window_ns)
        self.timebase.add_csr()
