"""The FTL's per-page path fits the CPU's instruction cache phase by phase (issue 15; linker.ld, ftl_int.h)."""

import subprocess

import pytest

from nandlab import env
from nandlab.testing import build_target

SIM_DIR = env.BUILD_DIR / "sim"
# The standard VexRiscv's instruction cache (LiteX's "standard" variant): 4 KiB, direct-mapped, so a
# stretch of code no longer than that never evicts itself.
ICACHE_BYTES = 4096
# Each phase of ftl_poll as the run of consecutive hot sections its code comes from (linker.ld puts
# them in this order, each starting at its _hot_* symbol): from its first section's start to the start
# of the section after its last.
PHASES = {
    "write issue": ("_hot_io_w", "_hot_issue_r"),   # hot_io_w, hot_port_w, hot_issue, hot_io
    "read issue": ("_hot_issue", "_hot_reap"),      # hot_issue, hot_io, hot_issue_r
    "completion": ("_hot_io", "_hot_mem"),          # hot_io, hot_reap, hot_reap_r
}


@pytest.fixture(scope="module")
def symbols():
    out = build_target("sim")
    assert out.returncode == 0, out.stderr
    elf = SIM_DIR / "software" / "firmware" / "firmware.elf"
    nm = env.which("riscv64-unknown-elf-nm")
    assert nm is not None, "riscv64-unknown-elf-nm not found (make env installs gcc-riscv64-unknown-elf)"
    text = subprocess.run([nm, str(elf)], capture_output=True, text=True, check=True).stdout
    return {f[2]: int(f[0], 16) for f in (line.split() for line in text.splitlines()) if len(f) == 3}


@pytest.mark.sim
@pytest.mark.parametrize("phase", PHASES)
def test_hot_phase_fits_the_icache(symbols, phase):
    start, end = PHASES[phase]
    assert start in symbols and end in symbols, f"linker.ld no longer defines {start} / {end}"
    size = symbols[end] - symbols[start]
    assert 0 < size <= ICACHE_BYTES, f"{phase}: {size} bytes of code, over the {ICACHE_BYTES}-byte I-cache"


@pytest.mark.sim
def test_hot_sections_are_in_phase_order(symbols):
    """linker.ld's order is what makes each phase one stretch: the markers must rise in it."""
    order = ["_hot_io_w", "_hot_port_w", "_hot_issue", "_hot_io", "_hot_issue_r", "_hot_reap", "_hot_reap_r",
             "_hot_mem", "_hot_raw", "_hot_end"]
    addrs = [symbols[s] for s in order]
    assert addrs == sorted(addrs), dict(zip(order, map(hex, addrs)))
    assert symbols["_hot_issue"] < symbols["_hot_io"] < symbols["_hot_reap"], "a hot section is empty"


@pytest.mark.sim
def test_scheduler_stretch_fits_the_icache(symbols):
    """The multi-plane scheduler's per-page code (sched_nand.c's submit and poll, sched.c's sched_push_n and
    sched_pick: `.text.sched_hot`) is one stretch under the I-cache, after the FTL's phases, at the offset into
    a 4 KiB page that linker.ld gives it (0xd40: the one that keeps the most of a decision's lines cached)."""
    start, end = symbols["_sched_hot"], symbols["_sched_hot_end"]
    assert symbols["_hot_end"] <= start and 0 < end - start <= ICACHE_BYTES, (hex(start), hex(end))
    assert start % ICACHE_BYTES == 0xd40, hex(start)
    for f in ("sched_push_n", "sched_pick"):
        assert start <= symbols[f] < end, f


def _makefile_offset(name):
    """A `NAME := 0x...` offset of the firmware's Makefile (the standard CPU's, the first value)."""
    for line in (env.REPO / "sw" / "firmware" / "Makefile").read_text().splitlines():
        if line.startswith(name) and ":=" in line:
            return int(line.split(":=")[1].split()[0], 16)
    raise AssertionError(f"{name} not in sw/firmware/Makefile")


@pytest.mark.sim
def test_scheduler_data_on_its_sets(symbols):
    """The scheduler's data (sched_nand.c's struct sched, then pend[]) starts at the Makefile's offsets into a 4 KiB
    page, the data-cache sets the FTL's path leaves alone (docs/design_plane_papers.md Step 5), and the DMA buffers
    and the heap on 4 KiB boundaries, so that the sets do not move with the code's size. (linker.ld once computed
    the offsets from the section's own start, which is not on a boundary: this caught it.)"""
    data, pend = symbols["_sched_data"], symbols["_sched_pend"]
    assert data % 4096 == _makefile_offset("SCHED_DATA_OFFSET"), hex(data)
    assert pend % 4096 == _makefile_offset("SCHED_PEND_OFFSET"), hex(pend)
    assert symbols["pend"] == pend and data < pend < symbols["_fheap"]
    assert symbols["_fdma"] % 4096 == 0 and symbols["_fheap"] % 4096 == 0, (hex(symbols["_fdma"]), hex(symbols["_fheap"]))


def _sets(start, end):
    """The instruction cache's sets (32-byte lines of a 4 KiB page) that the code in [start, end) falls on."""
    return {(a // 32) % (ICACHE_BYTES // 32) for a in range(start - start % 32, end, 32)}


@pytest.mark.sim
def test_driver_code_off_the_schedulers_sets(symbols):
    """The code that runs between two scheduler decisions outside the FTL's phases (hal.h's DRV_HOT*: the replay
    loop and its test pattern, the FTL's request entry, the port's multi-plane groups, the interrupt handler, the
    64-bit division, memset/memcpy/memmove and the UART) sits in linker.ld's .text.drv_hot* stretches, on sets that
    the scheduler's stretch does not use: between two decisions only the FTL's own path evicts the decision's lines."""
    sched = _sets(symbols["_sched_hot"], symbols["_sched_hot_end"])
    stretches = []
    for k in ("", "2", "3", "4", "5"):
        start, end = symbols[f"_drv_hot{k}"], symbols[f"_drv_hot{k}_end"]
        assert start < end and not _sets(start, end) & sched, (k, hex(start), hex(end))
        stretches.append((start, end))
    for f in ("replay", "ftl_pattern_fill", "ftl_pattern_same", "ftl_submit", "ftl_port_submit_group", "group_done",
              "isr", "__udivdi3", "ftl_poll", "memcpy", "memmove", "memset", "uart_isr"):
        assert any(s <= symbols[f] < e for s, e in stretches), f
