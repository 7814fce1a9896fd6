"""Which of the design's small synchronous-read memories go to block RAM (yosys ram_style), by size.

yosys maps a memory of a few hundred bits whose reads are all registered (the FIFOs of LiteX, LiteEth's MAC
and Etherbone, the channel controllers' completion and dout FIFOs) to LUT RAM plus the read register:
DPR16X4 cells of 16 words x 4 bits. On a board short of LUTs (ECPIX-5) and with block RAM to spare, such a
memory is better a block RAM, whose read port holds the same register, so the cycle behaviour is the same
and the RTL is untouched: only the yosys script gains a `setattr -set ram_style "block"` per memory.

The rule (`block_ram_memories`): a memory that is written (not a ROM), whose every port reads
synchronously (an asynchronous read has no block RAM port), of at least MIN_DEPTH words (a DP16KD for two
or four words would cost more than the few cells it frees) and under MAX_BITS bits (yosys puts larger ones
in block RAM already). The memories' Verilog names are only known once the design is converted (LiteX
numbers them: storage, storage_1, ...), so `attach` adds the commands as the toolchain finalizes, between
the Verilog's generation and the script's.
"""

from migen.fhdl.specials import Memory

MIN_DEPTH = 16
MAX_BITS  = 4096

SYNC_READ_RAM = ("auto", "block")


def block_ram_memories(specials):
    """The written, synchronous-read memories of MIN_DEPTH words or more and under MAX_BITS bits."""
    chosen = []
    for special in specials:
        if not isinstance(special, Memory) or not special.ports:
            continue
        written = any(port.we is not None for port in special.ports)
        synchronous = not any(port.async_read for port in special.ports)
        size_fits = special.depth >= MIN_DEPTH and special.depth * special.width < MAX_BITS
        if written and synchronous and size_fits:
            chosen.append(special)
    return chosen


def yosys_commands(names):
    """The script lines that put the memories named (their Verilog names) in block RAM."""
    if not names:
        return []
    return ["hierarchy -top {build_name}"] + [f'setattr -set ram_style "block" m:{name}' for name in sorted(names)]


def attach(toolchain):
    """Wrap a yosys toolchain's `finalize` (run once the Verilog exists) so that its script puts
    `block_ram_memories` of the converted design in block RAM."""
    finalize = toolchain.finalize

    def finalize_with_ram_style():
        memories = block_ram_memories(toolchain.fragment.specials)
        toolchain._yosys_cmds += yosys_commands([toolchain._vns.get_name(m) for m in memories])
        finalize()

    toolchain.finalize = finalize_with_ram_style
