"""nandlab channel controller: descriptors in, ONFI bus cycles on the phased NAND bus, data by DMA.

Firmware (or the host, through the bridge) submits **descriptors**: an operation, a way (CE#), a
row, a column, a length, a memory address and a parameter word. The controller checks them
against the channel's geometry (bad ones complete at once with an error result and never reach
the bus), runs them, and completes each one with a **completion**: its tag, way, result code and
the NAND status byte; an interrupt is raised while completions wait.

Microcode
=========
Each operation is a short program of micro-ops in a ROM (`TEMPLATES`); the sequencer executes the
program of the descriptor it runs:

============  ======================================================================================
micro-op      bus activity
============  ======================================================================================
CMD b         command cycle (CLE) with byte b
ADDR b        address cycle (ALE) with byte b
ADDR_COL [s]  the descriptor's column, `col_cycles` address cycles, low byte first (s = 1: the
              column of the first ECC parity slot in the spare)
ADDR_ROW      the descriptor's row, `row_cycles` address cycles
ADDR_ARG      the low byte of the descriptor's column (the READ ID and GET/SET FEATURES address)
WAIT t        no bus activity for t (tWHR, tADL, tCCS)
WAIT_RB       the way's array is busy: the bus is **given to other ways**; the program resumes when
              R/B# has been high for tRR, and no earlier than tWB after it stopped
DIN [e]       `length` data bytes to the die, read from memory at `address` (DMA); e = 1: through
              the BCH encoder, followed by the spare's reserved bytes (FFh) and the parity slots
DIN_PARAM     the four bytes of the parameter word (SET FEATURES P1-P4)
DOUT [d]      `length` data bytes from the die, written to memory at `address` (DMA); d = 1: the
              parity slots of the descriptor's codewords into the parity buffer; d = 2: the data
              both to memory and to the BCH decoder (each codeword's parity injected after it)
STATUS        one byte from the die into the completion (after 70h/78h)
CORRECT       wait for every codeword's decoding, then fix each reported bit in memory (a
              read-modify-write of the DMA word holding it)
ARDY          (the ARDY poll, see below) the status byte has ARDY: go to the descriptor's program;
              else poll again
END           the descriptor completes
============  ======================================================================================

**Way interleaving** comes from WAIT_RB: while one die reads, programs or erases its array, the
sequencer runs the programs of other ways - their commands and their data transfers - and goes back
to a waiting way as soon as its R/B# rises. At most one descriptor per way is in flight; the
submission queue is served in order, a descriptor for a way still busy waits at the head of the
queue (firmware that spreads its requests over the ways, as an FTL does, never sees that).

**Cache sequences and ARDY**: after PROGRAM_CACHE (15h) or READ_CACHE_SEQ (31h) the die is ready
(R/B# high) while its array still programs or reads (ARDY low), and ONFI then allows only the
commands that continue the sequence, status and reset (`ARDY_FREE`: after 15h a PROGRAM, PROGRAM_ECC
or PROGRAM_CACHE; after 31h READ_CACHE_SEQ, READ_CACHE_END or READ_COLUMN). Any other operation on
that way - until one ends the sequence (10h, 3Fh) - first polls the status (70h, `POLL_ARDY`) until
ARDY is high, holding the bus meanwhile, and completes TIMEOUT after `timeout` cycles of polling.
(A die refuses an ERASE or READ while its array works: the erase completed OK having erased nothing,
and an NV-DDR read waited for ever; tests/tb/controller_fuzz_tb.py found both.)

Interfaces and timing
=====================
The same programs run in async SDR, sync SDR and NV-DDR (`interface` and `timing_mode` are
CSRs; firmware switches them after SET FEATURES has switched the dies). Every bus cycle is a
*beat* of B system cycles in which the strobe (WE#, RE# or CLK) is low for the first `lo` phases
and high for the rest: a latch happens at the rising edge. B and `lo` come from the mode's period
(tWC / tRC in async SDR, tCK in sync SDR and NV-DDR), rounded up to whole phases and whole system
cycles, so the bus is never faster than the mode (at 100 MHz: async mode 5 is exact at 20 ns, NV-DDR
mode 5 exact at 10 ns, NV-DDR mode 4 runs at 20 ns). Data moves one byte per beat in async and sync
SDR, and two per beat in NV-DDR (one per DQS edge: NV-DDR mode 5 moves 2 bytes every cycle at
100 MHz, 200 MB/s). Reads in NV-DDR take a byte only when the die toggles DQS, so a die that
cannot keep up is simply waited for - at most `timeout` cycles without a byte: a die that gives none
(not in data output, absent) then makes the data output end with FFh for the bytes left and the
descriptor complete TIMEOUT, instead of holding the channel for ever.

tWHR, tADL, tCCS, tRR, tCS and tWB are waited in whole cycles, those of the interface and timing mode
in use: the controller is built with every mode's values in cycles (`timings(interface, mode)`,
by default ONFI's table, `onfi.mode_timings`; SDR mode 0, where every chip starts, waits tWB 200 ns,
tWHR 120 ns, tRR 40 ns, tCS 70 ns) and the sequencer selects a row from the same `interface` and
`timing_mode` CSR fields as the beats (an unknown mode waits the longest of each). tWB is the time a
die may take to pull R/B# low after the confirm; the controller samples R/B# no earlier than tWB plus
`rb_latency` cycles (the pin PHY's output register and R/B# synchroniser: 3 cycles; the SoC's
registered bus mux: 1), so that a die still about to go busy is never taken for ready.

Read latency
------------
`read_latency` (L, system cycles) is how much later than the bus cycle that asks for a byte the
byte shows on bus.dq_i / bus.dqs_i: 0 on the emulated channel (the die answers in the same cycle),
the pin PHY's `read_latency` on real chips (3 for `NandLabPinPHY`). The strobes are issued as with
L = 0. In async and sync SDR each phase in which a byte is due (the last phase of an async RE# beat,
the CLK rising edge in sync SDR) is remembered in an L-deep shift register and the byte is taken
from dq_i when it comes out, L cycles later. The beat engine runs ahead of the bytes: it counts the
bytes still to ask for apart from those still to receive, asks only while the data FIFOs have room
for the bytes in flight as well, and a DOUT or STATUS ends - or its FLUSH starts - only when every
byte asked for has arrived. Steady-state rates do not change (NV-DDR mode 5 keeps 2 bytes a cycle);
a data output only ends that much later.

NV-DDR data output is paced by the die's DQS, which a chip drives tDQSCK (3 .. 25 ns, ONFI) after
the clock: at 100 MHz up to five 5 ns phases after the phase that asked, on top of L. So the beat
engine asks for a byte in the beat's W/R# low phases (0 and lo: every 2nd phase in modes 2-4, every
5th in mode 0) but takes one in *every* phase in which DQS toggles, the DQ byte of that phase,
while the DOUT lasts (it lasts until every byte wanted has come). It keeps count of the asks that
may still be answered: those of the last `dout_latency` cycles (L + the phases of `dqs_late_ns`,
default tDQSCK max + `onfi.NVDDR_BOARD_NS`), less the toggles seen since; an ask older than that
had no answer (the die had no byte ready) and its byte is asked for again. It asks only while those
do not cover the bytes still wanted, so no toggle ever comes after the last byte - also when it
pauses for FIFO room, which is kept for every pair that may still arrive (`dout_latency` + 1 pairs).
A toggle counts only from L after the data output's first ask, and that first ask comes more than
`dqs_late` phases after CE# changed: the dies' DQS levels differ, and the level change a select
makes shows as late as the answers do. A die that never toggles still times out (`timeout`).

ECC
===
A controller built with `ecc` (a BCH code, e.g. ``dict(data_bytes=512, t=8, m=13)``; see
`nandlab.gateware.ecc.bch`) has two more operations. The page's data area is a sequence of
codewords' data; the spare holds, after `reserved` bytes left FFh (the bad-block marker), one parity
slot per codeword (`nandlab.gateware.ecc.bch.layout`, documented there).

* PROGRAM_ECC moves the whole data area through the encoder and, in the same data input, goes on
  with the reserved bytes and the parity slots (they follow the data area directly, so no column
  change is needed). The parity of each codeword waits in the parity buffer while the next
  codeword's data goes out.
* READ_ECC reads the parity slots first (READ at the first slot's column), then moves the column
  to 0 (05h-E0h) and streams the data to memory and to the decoder, which gets each codeword's
  parity from the buffer after its data. The decoder's location list is applied after the data is
  in memory (CORRECT), so memory never holds a half-corrected codeword, and the bus only waits for
  the last codeword's search (none when it has no errors). A SoC of several channels gives the
  controllers one decoder (`ecc_decoder`, `nandlab.gateware.ecc.shared`), taken between codewords: a
  controller whose turn has not come holds its data output as it does for memory.
* The completion carries the corrected bit counts (parity bits included, as Linux counts them) in
  `cpl_ecc`, in one of two formats fixed by the part (`ecc.ecc_geometry`; the SoC exports which as
  NANDLAB_CTRL_ECC_SUMMARY):

  - per codeword, while a page's codewords fit 64 bits (`ECC_COUNTS_BITS`; at t = 8, 4 bits each:
    16 codewords, 8 KiB pages of 512 B codewords): `bits_for(t + 1)` bits per codeword, codeword 0
    in the LSBs, all ones for an uncorrectable codeword;
  - the summary, for pages of more codewords (16 and 32 KiB pages: 32 and 64 codewords), 32 bits
    (`ECC_SUMMARY`): bits 15:0 the bits corrected in the codewords that decoded, 23:16 the most in
    one of them, 31:24 the codewords that could not be corrected. (16-bit lengths hold at most 128
    codewords of at most t < 256 flips: no field overflows.)

  Any uncorrectable codeword makes the result ECC_UNCORRECTABLE (its data is left as read; the
  others are corrected). Never silent.
* The spare's free bytes (after the parity slots, outside the ECC: an FTL's page tag) travel with
  the data: a PROGRAM_ECC's length beyond the data area (up to the free bytes, even) is sent after
  the parity, from memory at the address in the descriptor's parameter word (the rest of their
  last DMA word is dropped); READ_ECC_FREE is READ_ECC followed by a column change to the free
  bytes and their data output, as stored, to the parameter word's address (padded with FFh to the
  DMA word). The length's bits below the codeword size count the free bytes; where the spare has
  a codeword's size of them or more (1150 on 32 KiB + 2 KiB pages) the codewords stop at the data
  area's and the rest of the length is free bytes (so more than a codeword's size of them only
  follow the whole data area).
* Small pages (controllers built `with_small_pages`: an MPNFM part whose small pages' spare holds
  the parity, as the SoC builds them): bit 0 of the descriptor's reserved byte, SMALL, says an ECC
  operation addresses a small page (plane 1 of a die in MPNFM mode; firmware knows which): its data
  area, parity columns and free bytes follow the small page's layout (`layout(small_page_size,
  small_spare_size)`), its columns are checked against the small page. SMALL on an operation
  without ECC, or on a controller without small pages, is BAD_OP, as every other reserved bit is.
* Multi-plane with ECC: PROGRAM_ECC_MULTIPLANE is PROGRAM_ECC ending in 11h (tDBSY, no status) and
  queues a plane's page, the final PROGRAM_ECC programs them all; READ_ECC_MULTIPLANE sends a READ_ECC's
  address with 32h, the final READ_ECC_FREE (30h) reads them all and returns the last plane's page,
  READ_ECC_ENH_FREE returns each other plane's (READ_ECC_FREE whose first column change is CHANGE
  READ COLUMN ENHANCED, 06h-E0h, which selects the plane's register by its row). A READ reads no
  status: firmware checks a refused combination with READ STATUS (`nandctl_read_ecc_planes`).
* ECC descriptors cover whole codewords from column 0 (a program: the whole data area); others are
  refused (BAD_COLUMN / BAD_LENGTH), and a controller without `ecc` refuses them as BAD_OP.

Results
=======
`RESULT_*`: OK, the NAND status shows FAIL, R/B# timeout, the refusals (way absent or left out,
row or column out of range, length or alignment, unknown operation) and ECC_UNCORRECTABLE. A
refused descriptor is not sent to the NAND. Two more refusals:

* OVERFLOW: the descriptor was submitted while the queue was full (`queue.ready` low). The queue
  holds one such descriptor (its tag and way) and completes it with this result as soon as the
  completion queue has room; any more submitted while that one is held are not completed and are
  counted in `overflow_lost`. Firmware that waits for `ready`, as the HAL does, never sees either.
* BAD_ADDRESS: a byte of the descriptor's data (at `addr`, and for the ECC operations' free bytes at
  the parameter word; the last DMA word whole) lies outside the DMA window `dma_base`..`dma_limit`
  (both included; by default all of the address space), or the range wraps past 2^32.

Every field of the descriptor is as wide as the CSR word that carries it (operation, way, tag and
8 reserved bits in word 0, the first of them SMALL where built; a 32-bit row): a bit firmware sets is
never dropped unseen. An operation beyond the table or a reserved bit set is BAD_OP, a way beyond the
channel's BAD_WAY, a row beyond the blocks BAD_ROW. (tests/tb/controller_fuzz_tb.py found the silent
cases: a descriptor written into a full queue vanished and its completion never came; an address
range past 2^32 wrapped to 0; the high bits of the operation, way and row were dropped, so the
descriptor ran as another.) Columns and lengths are 16 bits: a part whose page and spare pass 65535
bytes (SPNFM-64K) is refused when the controller is built.

Power
=====
A die draws the bus current for every byte it moves (nand_model/die/power.py). In the SoC each die's
token-ring node governs its transfers as well as its array phases (gateware/power/xfer.py, issue 18):
before the first micro-op of a way's bus turn that moves bytes (DIN, DIN_PARAM, DOUT, STATUS), the
sequencer asks the way's die for the transfer's tokens (`power_request`, `power_out`: data output, OI
0x51, else data input, OI 0x81) and moves nothing until `power_grant` (state POWER, holding the bus).
The tokens are held to the end of the turn's data - the END, WAIT_RB, CORRECT or ARDY that follows it
(a READ_ECC's three data outputs and the column changes between them are one transfer; a PROGRAM's
confirm command is inside it) - and given back `rb_latency` + 2 cycles later (`power_end`), when the
last byte has reached the die (a data micro-op on the way in those cycles waits for that and asks
again, so that an ARDY poll gives the die's array its node back between two polls). Where the ring
does not govern (`power_free`: NPM; a controller not wired to a ring, such as a board's on real
NAND) nothing is asked and no cycle is added. Why a transfer waiting for its tokens while holding the
bus cannot deadlock: gateware/power/xfer.py.

Structure
=========
Submodules joined by streams and records, litedram-style (`common.py` holds the tables, the microcode
encoding, the beat helpers and the layouts):

    submit -> descriptor queue -> sequencer --uop--> beat engine <-> NAND bus
                                     |                  |   ^
              completions <- completion queue     pairs |   | pairs
                                                        v   |
                                                 [ECC path, with `ecc`]
                                                        |   ^
                                                        v   |
                                                 datapath (DMA) <-> memory

* `queue.py`: the descriptor queue (submission FIFO; its head checked against the geometry) and the
  completion queue.
* `sequencer.py`: the microcode ROM, the ways' contexts and R/B# timers; it starts descriptors,
  dispatches each micro-op on the `uop` record (`micro_op_description`: the engine that runs it
  takes it and says when it is done), parks ways at WAIT_RB and completes descriptors.
* `beat_engine.py`: the bus cycles of CMD, ADDR*, DIN*, DOUT and STATUS in the mode's beats.
* `datapath.py`: byte pairs to and from memory by DMA, and the FLUSH of a data output.
* `ecc.py`: the ECC path, plugged between the beat engine and the datapath (and running CORRECT)
  only in a controller built with `ecc`: one without it has no ECC logic and no ECC program.
* `core.py`: `NandLabChannelController`, the composition, and its CSRs.
"""

from nandlab.gateware.onfi.controller.common import (UOPS, U, DELAYS, W, COL_DESC, COL_SPARE, DIN_MEM, DIN_ECC,
                                                     DOUT_MEM, DOUT_PARITY, DOUT_ECC, TEMPLATES, OPS, RESULTS, R,
                                                     INTERFACES, beat, mode_beats, transfer_bytes_per_s)
from nandlab.gateware.onfi.controller.core import NandLabChannelController

__all__ = ["NandLabChannelController", "UOPS", "U", "DELAYS", "W", "COL_DESC", "COL_SPARE", "DIN_MEM", "DIN_ECC",
           "DOUT_MEM", "DOUT_PARITY", "DOUT_ECC", "TEMPLATES", "OPS", "RESULTS", "R", "INTERFACES", "beat",
           "mode_beats", "transfer_bytes_per_s"]
