"""Tables and helpers the channel controller's submodules share: micro-ops, programs, results, beats, layouts.

The micro-ops and the programs are described in the package docstring (`nandlab.gateware.onfi.controller`).
"""

from migen import *
from migen.genlib.record import DIR_M_TO_S, DIR_S_TO_M

from nandlab.gateware.onfi import common as onfi

# Micro-ops ------------------------------------------------------------------------------------------

UOPS = ["END", "CMD", "ADDR", "ADDR_COL", "ADDR_ROW", "ADDR_ARG", "WAIT", "WAIT_RB", "DIN", "DIN_PARAM",
        "DOUT", "STATUS", "CORRECT", "ARDY"]
U = {name: i for i, name in enumerate(UOPS)}
# WAIT arguments.
DELAYS = ["t_whr", "t_adl", "t_ccs"]
W = {name: i for i, name in enumerate(DELAYS)}
# Arguments of ADDR_COL, DIN and DOUT.
COL_DESC, COL_SPARE, COL_FREE = 0, 1, 2        # The descriptor's column; the first parity slot; the spare's free bytes.
DIN_MEM, DIN_ECC = 0, 1                        # From memory; from memory through the encoder + parity.
# To memory; to the parity buffer; to memory and the decoder; to memory after the data (the free bytes).
DOUT_MEM, DOUT_PARITY, DOUT_ECC, DOUT_FREE = 0, 1, 2, 3


def _u(op, arg=0):
    return (U[op] << 8) | arg


C = onfi
TEMPLATES = {
    # name:            (program, checks)   checks: "row" (row in range), "data" (column + length in the page)
    "RESET":           ([_u("CMD", C.CMD_RESET), _u("WAIT_RB")], ()),
    "READ_ID":         ([_u("CMD", C.CMD_READ_ID), _u("ADDR_ARG"), _u("WAIT", W["t_whr"]), _u("DOUT")], ("len",)),
    "READ_PARAM_PAGE": ([_u("CMD", C.CMD_READ_PARAM_PAGE), _u("ADDR_ARG"), _u("WAIT_RB"), _u("DOUT")], ("len",)),
    "GET_FEATURES":    ([_u("CMD", C.CMD_GET_FEATURES), _u("ADDR_ARG"), _u("WAIT_RB"), _u("DOUT")], ("len",)),
    "SET_FEATURES":    ([_u("CMD", C.CMD_SET_FEATURES), _u("ADDR_ARG"), _u("WAIT", W["t_adl"]), _u("DIN_PARAM"),
                         _u("WAIT_RB")], ()),
    "READ_STATUS":     ([_u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS")], ()),
    "READ_STATUS_ENH": ([_u("CMD", C.CMD_READ_STATUS_ENH), _u("ADDR_ROW"), _u("WAIT", W["t_whr"]), _u("STATUS")],
                        ("row",)),
    "READ":            ([_u("CMD", C.CMD_READ), _u("ADDR_COL"), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_CONFIRM),
                         _u("WAIT_RB"), _u("DOUT")], ("row", "data")),
    # Multi-plane read: queue a plane (32h), then READ on the last plane; each other plane's data
    # is taken with READ_COLUMN_ENH (06h-E0h).
    "READ_MULTIPLANE": ([_u("CMD", C.CMD_READ), _u("ADDR_COL"), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_MULTIPLANE),
                         _u("WAIT_RB")], ("row",)),
    "READ_COLUMN":     ([_u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL"), _u("CMD", C.CMD_CHANGE_READ_COL_2),
                         _u("WAIT", W["t_ccs"]), _u("DOUT")], ("data",)),
    "READ_COLUMN_ENH": ([_u("CMD", C.CMD_CHANGE_READ_COL_ENH), _u("ADDR_COL"), _u("ADDR_ROW"),
                         _u("CMD", C.CMD_CHANGE_READ_COL_2), _u("WAIT", W["t_ccs"]), _u("DOUT")], ("row", "data")),
    # Cache reads: after a READ, 31h moves the next page to the cache register and outputs the
    # previous one; 3Fh outputs the last.
    "READ_CACHE_SEQ":  ([_u("CMD", C.CMD_READ_CACHE_SEQ), _u("WAIT_RB"), _u("DOUT")], ("data",)),
    "READ_CACHE_END":  ([_u("CMD", C.CMD_READ_CACHE_END), _u("WAIT_RB"), _u("DOUT")], ("data",)),
    "PROGRAM":         ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]), _u("DIN"),
                         _u("CMD", C.CMD_PROGRAM_CONFIRM), _u("WAIT_RB"), _u("CMD", C.CMD_READ_STATUS),
                         _u("WAIT", W["t_whr"]), _u("STATUS")], ("row", "data", "din")),
    "PROGRAM_MULTIPLANE": ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]),
                            _u("DIN"), _u("CMD", C.CMD_PROGRAM_MULTIPLANE), _u("WAIT_RB")], ("row", "data", "din")),
    "PROGRAM_CACHE":   ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]), _u("DIN"),
                         _u("CMD", C.CMD_PROGRAM_CACHE), _u("WAIT_RB"), _u("CMD", C.CMD_READ_STATUS),
                         _u("WAIT", W["t_whr"]), _u("STATUS")], ("row", "data", "din")),
    "ERASE":           ([_u("CMD", C.CMD_ERASE), _u("ADDR_ROW"), _u("CMD", C.CMD_ERASE_CONFIRM), _u("WAIT_RB"),
                         _u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS")], ("row",)),
    "ERASE_MULTIPLANE": ([_u("CMD", C.CMD_ERASE), _u("ADDR_ROW"), _u("CMD", C.CMD_ERASE_MULTIPLANE),
                          _u("WAIT_RB")], ("row",)),
    # With ECC (controllers built with `ecc`): the page's data area from column 0, whole codewords.
    # Read: the parity slots of the spare first, then the data through the decoder (each codeword's
    # parity injected after it), then the corrections applied to memory.
    "READ_ECC":        ([_u("CMD", C.CMD_READ), _u("ADDR_COL", COL_SPARE), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_CONFIRM),
                         _u("WAIT_RB"), _u("DOUT", DOUT_PARITY), _u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL"),
                         _u("CMD", C.CMD_CHANGE_READ_COL_2), _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_ECC),
                         _u("CORRECT")], ("row", "data", "ecc")),
    # Program: the whole data area through the encoder, then (same data input) the spare's
    # reserved bytes as FFh, the parity slots and the descriptor's free bytes (its length beyond the
    # data area: up to the spare's free bytes, from memory at the address in the parameter word).
    "PROGRAM_ECC":     ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]),
                         _u("DIN", DIN_ECC), _u("CMD", C.CMD_PROGRAM_CONFIRM), _u("WAIT_RB"),
                         _u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS")],
                        ("row", "data", "din", "ecc", "ecc_page", "ecc_free")),
    # READ_ECC, then the spare's free bytes as stored (no ECC) to memory at the address in the
    # parameter word: the length beyond whole codewords, 2 up to the free bytes (an FTL's page tag).
    "READ_ECC_FREE":   ([_u("CMD", C.CMD_READ), _u("ADDR_COL", COL_SPARE), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_CONFIRM),
                         _u("WAIT_RB"), _u("DOUT", DOUT_PARITY), _u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL"),
                         _u("CMD", C.CMD_CHANGE_READ_COL_2), _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_ECC),
                         _u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL", COL_FREE), _u("CMD", C.CMD_CHANGE_READ_COL_2),
                         _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_FREE), _u("CORRECT")],
                        ("row", "data", "ecc", "ecc_free", "free_needed")),
    # Multi-plane with ECC (ONFI's 32h/11h queue a plane; the final READ_ECC_FREE or PROGRAM_ECC on
    # the last plane starts them all). A queued program: PROGRAM_ECC with 11h and tDBSY, no status
    # (the final program's status covers every plane). A queued read: the READ_ECC's address with 32h.
    # Each other plane's page then comes out with READ_ECC_ENH_FREE: READ_ECC_FREE whose first column
    # change is CHANGE READ COLUMN ENHANCED (06h-E0h), selecting the plane's register by its row.
    "PROGRAM_ECC_MULTIPLANE": ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]),
                                _u("DIN", DIN_ECC), _u("CMD", C.CMD_PROGRAM_MULTIPLANE), _u("WAIT_RB")],
                               ("row", "data", "din", "ecc", "ecc_page", "ecc_free")),
    "READ_ECC_MULTIPLANE": ([_u("CMD", C.CMD_READ), _u("ADDR_COL", COL_SPARE), _u("ADDR_ROW"),
                             _u("CMD", C.CMD_READ_MULTIPLANE), _u("WAIT_RB")], ("row", "ecc")),
    "READ_ECC_ENH_FREE": ([_u("CMD", C.CMD_CHANGE_READ_COL_ENH), _u("ADDR_COL", COL_SPARE), _u("ADDR_ROW"),
                           _u("CMD", C.CMD_CHANGE_READ_COL_2), _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_PARITY),
                           _u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL"), _u("CMD", C.CMD_CHANGE_READ_COL_2),
                           _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_ECC),
                           _u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL", COL_FREE), _u("CMD", C.CMD_CHANGE_READ_COL_2),
                           _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_FREE), _u("CORRECT")],
                          ("row", "data", "ecc", "ecc_free", "free_needed")),
}
OPS = {name: i for i, name in enumerate(TEMPLATES)}

# After a PROGRAM_CACHE (15h) or a READ_CACHE_SEQ (31h) the die is ready (RDY) while its array still
# programs or reads (ARDY low), and ONFI then allows only the operations that continue the cache
# sequence, status and reset (10h and 3Fh end it: the die waits for the array itself). Any other operation
# on that way first polls the status until ARDY (`POLL_ARDY`, then the operation's own program).
ARDY_FREE = {
    "PROGRAM_CACHE":  ("RESET", "READ_STATUS", "READ_STATUS_ENH", "PROGRAM", "PROGRAM_CACHE", "PROGRAM_ECC"),
    "READ_CACHE_SEQ": ("RESET", "READ_STATUS", "READ_STATUS_ENH", "READ_CACHE_SEQ", "READ_CACHE_END", "READ_COLUMN"),
}
# The operations after which the array is idle again (they end the cache sequence they continue).
ARDY_ENDS = {"PROGRAM_CACHE": ("PROGRAM", "PROGRAM_ECC"), "READ_CACHE_SEQ": ("READ_CACHE_END",)}
# (The WAIT after the status byte stands in for tRHW before the next command.)
POLL_ARDY = [_u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS"), _u("WAIT", W["t_whr"]), _u("ARDY")]

RESULTS = ["OK", "NAND_FAIL", "TIMEOUT", "BAD_WAY", "BAD_ROW", "BAD_COLUMN", "BAD_LENGTH", "BAD_OP",
           "ECC_UNCORRECTABLE", "OVERFLOW", "BAD_ADDRESS"]
R = {name: i for i, name in enumerate(RESULTS)}

INTERFACES = (onfi.IF_ASYNC_SDR, onfi.IF_NVDDR, onfi.IF_SYNC_SDR)

# A completion's ECC result (see "ECC" in the package): each codeword's corrected bits while they fit
# ECC_COUNTS_BITS, else the summary, fields from bit 0 up: bits corrected in all the codewords that
# decoded, the most in one of them, the codewords that could not be corrected. (16-bit lengths hold at
# most 128 codewords of 512 B, each correcting at most t < 256 bits: every field holds its largest value.)
ECC_COUNTS_BITS = 64
ECC_SUMMARY = (("corrected", 16, "Bits corrected in the codewords that decoded."),
               ("max", 8, "Most bits corrected in one codeword."),
               ("uncorrectable", 8, "Codewords that could not be corrected."))
# Descriptor word 0's `rsvd` byte: bit 0 is SMALL (an ECC operation on an MPNFM die's small page,
# controllers built `with_small_pages`); every other bit is refused (BAD_OP).
RSVD_SMALL = 0


def microcode(with_ecc):
    """(ROM words, entry point of each operation, entry point of `POLL_ARDY`): every program followed by
    END, the ARDY poll last. A controller without ECC holds no ECC program (it refuses those operations
    before they start; their entry points are 0)."""
    code, entry = [], []
    for name, (prog, checks) in TEMPLATES.items():
        if "ecc" in checks and not with_ecc:
            entry.append(0)
            continue
        entry.append(len(code))
        code += prog + [_u("END")]
    poll = len(code)
    code += POLL_ARDY
    return code, entry, poll


# Beats ---------------------------------------------------------------------------------------------

def beat(period_ns, sys_clk_freq):
    """(B, lo): a strobe period as B system cycles with the strobe low for the first `lo` phases,
    never shorter than `period_ns` nor with a half shorter than half of it."""
    cycle_ns = 1e9 / sys_clk_freq
    phase_ns = cycle_ns / onfi.NPHASES
    eps = 1e-6
    lo = max(1, int(-(-(period_ns / 2 - eps) // phase_ns)))
    b = max(1, int(-(-(period_ns - eps) // cycle_ns)), -(-(lo + 1) // 2), -(-(2 * lo) // 2))
    return b, lo


def mode_beats(interface, mode, sys_clk_freq):
    """{"w": (B, lo), "r": (B, lo)} of the write (command, address, data-in) and read beats."""
    if interface == onfi.IF_ASYNC_SDR:
        return {"w": beat(onfi.SDR_TWC_NS[mode], sys_clk_freq), "r": beat(onfi.SDR_TRC_NS[mode], sys_clk_freq)}
    b = beat(onfi.NVDDR_TCK_NS[mode], sys_clk_freq)
    return {"w": b, "r": b}


def din_dqs_phases(mode, sys_clk_freq, late=0):
    """NV-DDR data input in `mode`: the phases of the write beat, (k0, k1), in which the controller toggles DQS
    for its first and second byte. A byte lasts n whole phases (n0 = lo, n1 = 2 B - lo); its DQS edge is in
    phase (n - 1) // 2 of the byte, `late` (0 or 1) phases later if that is still inside the byte. With the
    pin PHY's DQS a quarter cycle late (half a phase: `NandLabPinPHY.dqs_out_shift_ps`), the edge is then
    centred on odd-length bytes and half a phase off the centre, early (late = 0) or late (1), on even ones:
    the write training picks the side the board's skew leaves room on. (On the emulated channel the die
    takes the byte of the phase DQS toggles in: any phase of the byte is right.)"""
    b, lo = mode_beats(onfi.IF_NVDDR, mode, sys_clk_freq)["w"]
    n0, n1 = lo, onfi.NPHASES * b - lo
    return (min((n0 - 1) // 2 + late, n0 - 1), lo + min((n1 - 1) // 2 + late, n1 - 1))


def sdr_sample_phase(mode, sys_clk_freq, board_ns=onfi.SDR_BOARD_NS):
    """Async SDR data output in `mode`: the phase of the read beat (0 = the first phase of RE# low) at whose
    end the controller samples the byte, the first that ends at least tREA max + `board_ns` after RE#
    fell. Raises ValueError when that is not inside the beat or not before the byte may go: tRHOH after
    RE# rose, or tRLOH after the next beat's RE# fell (EDO)."""
    b, lo = mode_beats(onfi.IF_ASYNC_SDR, mode, sys_clk_freq)["r"]
    phase_ns = 1e9 / sys_clk_freq / onfi.NPHASES
    s = max(1, int(-(-(onfi.SDR_TREA_NS[mode] + board_ns - 1e-6) // phase_ns)))
    valid_until = max(lo * phase_ns + onfi.SDR_TRHOH_NS[mode], onfi.NPHASES * b * phase_ns + onfi.SDR_TRLOH_NS[mode])
    if s > onfi.NPHASES * b or s * phase_ns > valid_until + 1e-6:
        raise ValueError(f"async SDR mode {mode} at {sys_clk_freq / 1e6:g} MHz: the byte is valid from "
                         f"{onfi.SDR_TREA_NS[mode] + board_ns} ns to {valid_until:g} ns after RE# falls; no phase "
                         f"edge of the {b}-cycle read beat falls in it")
    return s - 1


def dqs_late_phases(sys_clk_freq, late_ns=onfi.NVDDR_TDQSCK_MAX_NS + onfi.NVDDR_BOARD_NS):
    """NV-DDR data output: how many phases after the phase that asks for a byte (beyond the read
    latency) its DQS toggle may show: `late_ns` (the chip's tDQSCK max and the board) in whole phases."""
    phase_ns = 1e9 / sys_clk_freq / onfi.NPHASES
    return max(0, int(-(-(late_ns - 1e-6) // phase_ns)))


def dout_latency(read_latency, late_phases):
    """The most cycles from the cycle that asks for a byte to the cycle it arrives (a DQS toggle
    `late_phases` after the asking phase, which may be the cycle's second, `read_latency` cycles on)."""
    return read_latency + (late_phases + 1) // 2


def transfer_bytes_per_s(interface, mode, sys_clk_freq):
    """Data rate of the bus in a mode (bytes per second) once the beats are rounded to the clock."""
    b, _ = mode_beats(interface, mode, sys_clk_freq)["r"]
    per_beat = 2 if interface == onfi.IF_NVDDR else 1
    return per_beat * sys_clk_freq / b


def cycles(ns, sys_clk_freq):
    """Whole system cycles covering `ns` (a minimum is never cut short), at least one."""
    return max(1, int(-(-ns * sys_clk_freq // 1e9)))


def fits(fifo, latency):
    """A DOUT may ask the die for a byte pair bound for `fifo` (a stream.SyncFIFO); `latency`: the most
    cycles from the ask to the byte (`dout_latency`)."""
    if latency == 0:
        # The byte comes in the cycle it is asked for: the FIFO must take it now.
        return fifo.sink.ready
    # A byte asked for now is pushed at most `latency` cycles later; until then at most one pair a cycle
    # comes in from the bytes already in flight: leave room for latency + 1 pairs.
    return fifo.level + (latency + 1) <= fifo.depth


# Layouts -------------------------------------------------------------------------------------------

def descriptor_description():
    """A descriptor as firmware submits it (the submission queue's entries, the ways' contexts). Fields are
    as wide as the words firmware writes them in, so that no bit it sets is dropped unseen: an operation,
    way or row beyond the controller's is refused by name, and `rsvd` (reserved, zero) makes it BAD_OP."""
    return [("op", 8), ("way", 8), ("tag", 8), ("rsvd", 8), ("row", 32), ("col", 16), ("len", 16), ("addr", 32),
            ("param_word", 32)]


def completion_description(ecc_bits=0):
    """A completion: tag, way, result, NAND status, and with ECC the per-codeword corrected bit counts."""
    return [("tag", 8), ("way", 4), ("result", 4), ("status", 8)] + ([("ecc", ecc_bits)] if ecc_bits else [])


def micro_op_description():
    """The sequencer's micro-op to its engines: `valid` for the one cycle it is dispatched, when the
    engine that runs it raises `take`; that engine raises `done` in its last cycle. `op` and `arg` hold
    while the micro-op runs."""
    return [("valid", 1, DIR_M_TO_S), ("op", 4, DIR_M_TO_S), ("arg", 8, DIR_M_TO_S),
            ("take", 1, DIR_S_TO_M), ("done", 1, DIR_S_TO_M)]


def operand_description():
    """What the beat engine moves in the micro-op that runs: the column of an ADDR_COL, the bytes of a
    DIN and of a DOUT, and whether a DOUT's pairs go to memory (a FLUSH ends it). The descriptor's,
    unless the ECC path moves the column to the spare or adds the parity."""
    return [("column", 16), ("din_len", 16), ("dout_len", 16), ("to_memory", 1)]


def pair_description():
    """Data between the bus and memory: two bytes, the first in time in bits 7:0."""
    return [("data", 16)]
