"""Token compiler: the MTPM/KMTPM token tables of a die, from its current waveforms.

Token modelling of the MTPM paper (Section III-A, eqs. 1 and 2):

    TT = alpha x (2^TG - 1)          total tokens in the ring
    PB = alpha x I_max               power budget (peak current of the device)
    I_token = PB / TT = I_max / (2^TG - 1)
    RT_i = ceil(I_i,max / I_token)   tokens an operation i needs

Atomic RTs use the peak of each atomic operation; sub-atomic RTs the peak of each sub-atomic
operation cut by the 500 ns monotone-merge rule (Section III-D2, `waveforms.subatomic_split`).
The phases, and their OI codes, are exactly those the die emulator plays
(`nand_model.current.PhaseTables`): one waveform description feeds the emulator, this compiler and
the DCC model.

The compiled table is what the ring nodes load through their CSRs: one RT per OI code (the
sub-atomic RT; a node in an atomic mode asks for the RT of an atomic operation's first phase,
which is the atomic RT because sub-atomic peaks fall monotonically).
"""

from dataclasses import dataclass, field

from nandlab.errors import NandLabError
from nandlab.gateware.power.common import TG_RANGE, ALPHA_RANGE, OI_BITS
from nandlab.nand_model import waveforms as wf
from nandlab.nand_model.current import ATOMIC_IDS, OPS, PhaseTables



def total_tokens(tg, alpha):
    return alpha * (2**tg - 1)


def packet_bits(tt):
    """Bits of a ring packet: the key and the token count (1 + ceil(log2(TT + 1)))."""
    return 1 + max(tt, 1).bit_length()


def check_parameters(tg, alpha):
    """Refuse TG or alpha outside what the ring supports, naming the value."""
    if not isinstance(tg, int) or not TG_RANGE[0] <= tg <= TG_RANGE[1]:
        raise NandLabError(f"TG = {tg} is out of range: the ring supports TG {TG_RANGE[0]}..{TG_RANGE[1]}")
    if not isinstance(alpha, int) or not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
        raise NandLabError(f"alpha = {alpha} is out of range: the ring supports alpha "
                           f"{ALPHA_RANGE[0]}..{ALPHA_RANGE[1]}")


@dataclass
class TokenTable:
    tg       : int
    alpha    : int
    rt       : dict = field(default_factory=dict)    # OI -> RT of the sub-atomic phase
    first    : dict = field(default_factory=dict)    # OI -> the phase starts an atomic operation
    atomic   : dict = field(default_factory=dict)    # atomic name -> atomic RT
    phases   : dict = field(default_factory=dict)    # op -> [(OI, RT, duration ns)] of one loop

    @property
    def tt(self):
        return total_tokens(self.tg, self.alpha)

    @property
    def pb(self):
        """Power budget in units of I_max."""
        return self.alpha

    @property
    def packet_bits(self):
        return packet_bits(self.tt)

    def check(self):
        """Refuse a table the ring cannot run safely, naming the entry."""
        check_parameters(self.tg, self.alpha)
        for oi, rt in sorted(self.rt.items()):
            if not 0 <= oi < 2**OI_BITS:
                raise NandLabError(f"token table: OI 0x{oi:x} does not fit {OI_BITS} bits")
            if rt > self.tt:
                raise NandLabError(f"token table: OI 0x{oi:02x} needs RT = {rt} tokens, above TT = {self.tt} "
                                   f"(TG = {self.tg}, alpha = {self.alpha}): no die could ever run it")
            if rt < 0:
                raise NandLabError(f"token table: OI 0x{oi:02x} has a negative RT ({rt})")
        # Sub-atomic RTs fall inside an atomic operation: surplus is released, never asked for again.
        for op, phases in self.phases.items():
            prev = None
            for oi, _, _ in phases:
                rt = self.rt[oi]
                if self.first[oi]:
                    prev = rt
                elif rt > prev:
                    raise NandLabError(f"token table: {op} phase OI 0x{oi:02x} needs {rt} tokens, more than the "
                                       f"{prev} of the phase before it in the same atomic operation")
                else:
                    prev = rt
        return self

    def words(self):
        """(OI, RT, first) rows to load into the ring nodes."""
        return [(oi, self.rt[oi], int(self.first[oi])) for oi in sorted(self.rt)]


def compile_tables(part, tg, alpha, sys_clk_freq=100e6, time_scale=1):
    """Token tables of `part` at granularity `tg` and budget factor `alpha`."""
    check_parameters(tg, alpha)
    table = TokenTable(tg, alpha)
    tables = PhaseTables(part, sys_clk_freq, time_scale)
    for op in OPS:
        kind = op if op != "program_msb" or part.t_prog_msb is not None else "program_lsb"
        atomics = wf.operation(part, kind)
        if op == "read":
            atomics = atomics[:2]
        loops = part.ispp_loops if op.startswith("program") else 1
        rows = []
        for atomic in atomics[:len(atomics) // loops]:
            table.atomic[atomic.name] = wf.tokens(atomic.peak, tg)
            for k, (t0, t1, peak) in enumerate(wf.subatomic_split(atomic)):
                oi = (ATOMIC_IDS[atomic.name] << 4) | (k + 1)
                rt = wf.tokens(peak, tg)
                table.rt[oi], table.first[oi] = rt, k == 0
                rows.append((oi, rt, t1 - t0))
        # The die's phases and these must be the same list, OI for OI.
        assert [oi for oi, _, _ in rows] == [ph.oi for ph in tables.ops[op][0]], op
        table.phases[op] = rows
    return table.check()


def with_transfers(table):
    """`table` with the SoC's data transfers (gateware/power/xfer.py): data input (OI 0x81) and data
    output (OI 0x51), each an atomic operation of one phase whose RT covers the die's bus current."""
    from nandlab.gateware.power.xfer import soc_transfer_rts
    for oi, rt in soc_transfer_rts(table.tg).items():
        table.rt[oi], table.first[oi] = rt, True
    return table.check()


def format_table(table):
    lines = [f"Token table: TG = {table.tg}, alpha = {table.alpha}, TT = {table.tt}, PB = {table.pb} x I_max, "
             f"packet {table.packet_bits} bits",
             f"{'op':<12} {'atomic':<7} {'sub':>3} {'OI':>5} {'RT':>4} {'atomic RT':>10} {'ns':>9}"]
    names = {v: k for k, v in ATOMIC_IDS.items()}
    for op, rows in table.phases.items():
        for oi, rt, ns in rows:
            name = names[oi >> 4]
            lines.append(f"{op:<12} {name:<7} {oi & 15:>3} 0x{oi:02x} {rt:>4} {table.atomic[name]:>10} {ns:>9}")
    return "\n".join(lines)
