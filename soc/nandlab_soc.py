"""The nandlab SoC: VexRiscv, ROM/SRAM/main RAM, UART console, timer, identifier and the NAND subsystem.

Targets (`nandlab.soc.targets`) give the platform, clocking, main RAM and host bridge; this class
gives what every target shares. `add_nand_subsystem()` is the one place where the NAND cores
(die emulators, ONFI channel controllers, power ring, current monitor, telemetry) attach.
"""

from litex.soc.integration.soc_core import SoCCore

from nandlab.env import git_revision
from nandlab.gateware.common.timebase import NandLabTimebase


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
            ident         = ident,
            ident_version = False, # No build date: an unchanged design must not force a rebuild.
            **kwargs)
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
