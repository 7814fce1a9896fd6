"""The memories `sync_read_ram="block"` sends to block RAM (soc/ram_style.py), checked against what the
converted Verilog says about each memory: its size and whether each port reads synchronously (Migen's
comment above every memory: `// Port N | Read: Sync | Write: Sync`), not against the rule's own code."""

import re

import pytest
from migen import ClockDomain, ClockDomainsRenamer, Memory, Module
from litex.gen.fhdl.verilog import convert
from litex.soc.interconnect.stream import SyncFIFO
from migen.genlib.fifo import AsyncFIFO, SyncFIFOBuffered

from nandlab.soc import ram_style


def verilog_memories(verilog):
    """{name: (words, bits wide, written, every port reads synchronously)} from Migen's memory comments."""
    memories = {}
    for block in re.split(r"// Memory ", verilog)[1:]:
        name, words, width = re.match(r"(\S+): (\d+)-words x (\d+)-bit", block).groups()
        ports = re.findall(r"// Port \d+ \| Read: (\w+)\s*\| Write: (\S+)", block)
        written = any(write != "----" for _, write in ports)
        memories[name] = (int(words), int(width), written, all(read == "Sync" for read, _ in ports))
    return memories


def expected(memories):
    """The rule in the module's docstring, applied to the Verilog's own description of each memory."""
    return {name for name, (words, width, written, sync) in memories.items()
            if written and sync and words >= ram_style.MIN_DEPTH and words * width < ram_style.MAX_BITS}


class Design(Module):
    def __init__(self):
        self.submodules.buffered16 = SyncFIFOBuffered(42, 16)      # sync read, 16 words: block RAM
        self.submodules.buffered64 = SyncFIFOBuffered(18, 64)      # sync read, 64 words: block RAM
        self.submodules.buffered4  = SyncFIFOBuffered(34, 4)       # too few words
        self.submodules.fwft       = SyncFIFO([("data", 32)], 32)  # first word falls through: async read
        self.clock_domains.cd_sys  = ClockDomain()
        self.clock_domains.cd_write = ClockDomain()
        self.clock_domains.cd_read = ClockDomain()
        self.submodules.crossing   = ClockDomainsRenamer({"write": "write", "read": "read"})(AsyncFIFO(42, 32))
        self.submodules.big        = SyncFIFOBuffered(10, 1024)    # yosys takes block RAM anyway
        rom = Memory(32, 64, init=list(range(64)))                # a ROM: left to yosys
        self.specials += rom
        self.rom_port = rom.get_port()
        self.specials += self.rom_port


@pytest.mark.unit
def test_block_ram_memories_follow_the_verilog():
    design = Design()
    fragment = design.get_fragment()
    output = convert(fragment, ios={design.buffered16.dout, design.rom_port.dat_r}, name="top")
    memories = verilog_memories(str(output))
    chosen = {output.ns.get_name(m) for m in ram_style.block_ram_memories(fragment.specials)}
    assert chosen == expected(memories)
    # The cases above, by size: the two sync-read FIFOs of 16 and 64 words and the clock crossing.
    assert sorted(memories[n][:2] for n in chosen) == [(16, 42), (32, 42), (64, 18)]
    lines = ram_style.yosys_commands(chosen, unchecked=["x"])
    assert lines[0] == "hierarchy -top {build_name}"
    assert sorted(lines[1:]) == sorted([f'setattr -set ram_style "block" m:{n}' for n in chosen] +
                                       ["setattr -set no_rw_check 1 m:x"])
    # SyncFIFO storage (one clock; the first-word-fall-through one too) is found; the clock crossing's is not.
    fifos = ram_style.sync_fifo_memories(Design())
    assert sorted((m.depth, m.width) for m in fifos) == [(4, 34), (16, 42), (32, 34), (64, 18), (1024, 10)]
    assert ram_style.yosys_commands([]) == []


@pytest.mark.unit
@pytest.mark.parametrize("buffered", [False, True])
def test_sync_fifo_never_reads_the_word_it_writes(buffered):
    """What `no_rw_check` relies on: under random pushes and pops (full and empty included), a Migen
    SyncFIFO's read port is never enabled on the address its write port writes in the same cycle."""
    import random
    from migen import run_simulation
    from migen.genlib.fifo import SyncFIFO as MigenSyncFIFO

    fifo = SyncFIFOBuffered(8, 16) if buffered else MigenSyncFIFO(8, 16, fwft=False)
    (storage,) = ram_style.sync_fifo_memories(fifo)
    assert ram_style.block_ram_memories([storage]) == [storage]
    wr, rd = storage.ports
    rng = random.Random(3)
    seen = {"writes": 0, "reads": 0, "full": 0, "empty_write": 0}

    def bench():
        for cycle in range(4000):
            phase = (cycle // 200) % 3               # Fill, drain, then mixed: both ends are reached.
            yield fifo.we.eq(rng.random() < (0.9, 0.1, 0.5)[phase])
            yield fifo.re.eq(rng.random() < (0.1, 0.9, 0.5)[phase])
            yield fifo.din.eq(rng.getrandbits(8))
            yield
            we, re = (yield wr.we), (yield rd.re)
            assert not (we and re and (yield wr.adr) == (yield rd.adr)), cycle
            seen["writes"] += we
            seen["reads"] += re
            seen["full"] += not (yield fifo.writable)
            seen["empty_write"] += we and (yield fifo.level) == 0

    run_simulation(fifo, bench())
    assert min(seen.values()) > 0, seen
