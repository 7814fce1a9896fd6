"""Which of the design's small synchronous-read memories go to block RAM (yosys ram_style), by size.

yosys maps a memory of a few hundred bits whose reads are all registered (the FIFOs of LiteX, LiteEth's MAC
and Etherbone, the channel controllers' completion and dout FIFOs) to LUT RAM plus the read register:
DPR16X4 cells of 16 words x 4 bits. On a board short of LUTs (ECPIX-5) and with block RAM to spare, such a
memory is better a block RAM, whose read port holds the same register, so the cycle behaviour is the same
and the RTL is untouched: only the yosys script gains a `setattr -set ram_style "block"` per memory.

A block RAM's two ports do not promise what a read returns while the other port writes the same word, so
yosys keeps Migen's read-first order with bypass logic around it: for a 20 x 40 SyncFIFOBuffered 77 LUT4
and 103 FF (LUT RAM: 67 LUT4, 20 DPR16X4, 56 FF). A Migen SyncFIFO never reads the word it writes (it
reads only while not empty and writes only while not full, and its pointers meet only when it is empty or
full: tests/test_ram_style.py checks it each cycle), so its storage also gets yosys' `no_rw_check`: 29
LUT4, 16 FF and the two DP16KD.

The rule (`block_ram_memories`): a memory that is written (not a ROM), whose every port reads
synchronously (an asynchronous read has no block RAM port), of at least MIN_DEPTH words (a DP16KD for two
or four words would cost more than the few cells it frees) and under MAX_BITS bits (yosys puts larger ones
in block RAM already). The memories' Verilog names are only known once the design is converted (LiteX
numbers them: storage, storage_1, ...), so `attach` adds the commands as the toolchain finalizes, between
the Verilog's generation and the script's.
"""

from migen.fhdl.specials import Memory
from migen.genlib.fifo import SyncFIFO

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


def sync_fifo_memories(module, found=None):
    """The storage of every Migen SyncFIFO in a module tree not yet finalized (Migen forgets the tree
    as it merges the fragments)."""
    found = set() if found is None else found
    if isinstance(module, SyncFIFO):
        found.update(s for s in module._fragment.specials if isinstance(s, Memory))
    for _, submodule in module._submodules:
        sync_fifo_memories(submodule, found)
    return found


def yosys_commands(names, unchecked=()):
    """The script lines that put the memories named (their Verilog names) in block RAM, those of
    `unchecked` without read-during-write logic (yosys no_rw_check)."""
    if not names:
        return []
    lines = [f'setattr -set ram_style "block" m:{name}' for name in sorted(names)]
    lines += [f"setattr -set no_rw_check 1 m:{name}" for name in sorted(unchecked)]
    return ["hierarchy -top {build_name}"] + lines


def attach(toolchain, sync_fifos):
    """Wrap a yosys toolchain's `finalize` (run once the Verilog exists) so that its script puts
    `block_ram_memories` of the converted design in block RAM; those in the set `sync_fifos` (SyncFIFO
    storage, `sync_fifo_memories`, filled before the design is finalized) without read-during-write logic."""
    finalize = toolchain.finalize

    def finalize_with_ram_style():
        memories = block_ram_memories(toolchain.fragment.specials)
        name = toolchain._vns.get_name
        toolchain._yosys_cmds += yosys_commands([name(m) for m in memories],
                                                [name(m) for m in memories if m in sync_fifos])
        finalize()

    toolchain.finalize = finalize_with_ram_style
