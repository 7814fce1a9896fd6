"""nandlab die emulator: one ONFI LUN on the phased NAND bus, its array in block RAM or in main RAM.

What it does (reference.py models the same semantics and is the tests' scoreboard):

* commands: RESET, READ ID (00h: JEDEC bytes, 20h: "ONFI"), READ PARAMETER PAGE (three copies),
  READ STATUS, READ STATUS ENHANCED, READ (00h-30h), CHANGE READ COLUMN (05h-E0h, and 06h-E0h),
  PROGRAM (80h-10h) with CHANGE WRITE COLUMN (85h), ERASE (60h-D0h), their multi-plane forms,
  READ CACHE (31h/3Fh), PROGRAM CACHE (15h), GET/SET FEATURES (feature 01h switches the data
  interface between async SDR and NV-DDR and sets the timing mode);
* data moves one byte per WE#/RE# edge in async SDR, one per CLK rising edge in sync SDR and one
  per phase (two per cycle) in NV-DDR (see gateware/onfi/common.py for the bus);
* erased pages read FFh, programming ANDs data into the page; out-of-range rows, WP# low and
  factory bad blocks fail in the status, each failure counted by reason; faults are injected
  through `inject_*`/`flip_*` (N flips on reads of one row, or random flips at a rate);
* array operations play the part's current waveform phase by phase (nand_model/current.py):
  before each phase the die presents OI and waits for OE (tie OE high to run free); R/B# stays
  low for the waveform's time (tR, tPROG with its ISPP loops, LSB or MSB, tBERS) divided by the
  simulation time scale, never shorter than the data movement inside the emulator; `current`
  gives the die's current every cycle, bus transfers included;
* R/B# falls as late as ONFI allows after the edge that makes the die busy (tWB max of the mode the
  die is in: 200 ns in SDR mode 0; `DieConfig.rb_fall_ns` sets another time);
* a timing checker counts host violations of tWHR, tADL, tCCS, tRR, tWB, tCS and tRHW, with the limits of
  the data interface and timing mode the die is in (ONFI's table, onfi.mode_timings), and commands
  or data out while the die is busy.

The parts, one module each (core.py puts them together):

  edges.py      bus front end: WE#/RE#/DQS edges as command, address and data events
  decoder.py    command decoder: commands and addresses, status, multi-plane queue, cache commands
  registers.py  page registers (generation-tagged block RAM), their ports and scrubbers, data in
  engine.py     array engine: pages between the array and the registers, bit flips
  storage.py    storage port of the array: block RAM, or a Wishbone master (DRAM region)
  output.py     output path: status, ID, parameter page, features, page data onto DQ/DQS
  power.py      current-sequencer hook: the waveform an operation plays, the die's current
  timing.py     timing checker: TIMING_RULES, limits per mode from ONFI's table and the part
  stats.py      statistics (violations, failure reasons, operations) in one memory (stats="memory")
  common.py     encodings and row helpers the parts share

Constants the die shares with its reference model (failure reasons, ID bytes, DieConfig) are in
nand_model/common.py.
"""

from nandlab.nand_model.die.common import die_storage_bytes, STORAGES, GEN_BITS
from nandlab.nand_model.die.core import NandLabDie
from nandlab.nand_model.die.timing import TIMING_CHECKS, TIMING_RULES

__all__ = ["NandLabDie", "TIMING_CHECKS", "TIMING_RULES", "die_storage_bytes", "STORAGES", "GEN_BITS"]
