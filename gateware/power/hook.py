"""The power hook between a die (emulator or sequencer) and the power manager: one record, one `connect()`.

A die presents the OI of its next phase and waits for OE from its ring node (nand_model/current.py);
it reports the end of each phase and of its atomic operation; its current goes to the current
monitor. The SoC (soc/nandlab_soc.py) and the CPU-less harness (gateware/power/harness.py) wire
every die the same way through this record, so the two cannot drift apart.
"""

from migen.genlib.record import Record, DIR_M_TO_S, DIR_S_TO_M

from nandlab.gateware.power.common import OI_BITS
from nandlab.nand_model.current import I_FRAC_BITS

# Die -> ring node, under the die's own signal names: the phase presented and its ends.
HANDSHAKE = [("oi", OI_BITS), ("oi_next", OI_BITS), ("oi_first", 1), ("request", 1), ("phase_end", 1),
             ("atomic_end", 1)]


def power_hook_layout(current_bits=I_FRAC_BITS + 2):
    return ([(name, bits, DIR_M_TO_S) for name, bits in HANDSHAKE] +
            [("oe", 1, DIR_S_TO_M),                     # Ring node -> die: the grant.
             ("current", current_bits, DIR_M_TO_S)])    # Die -> current monitor (I_max = 1 << I_FRAC_BITS).


class NandLabPowerHook(Record):
    """One die's power hook. `connect(die, node)` wires the die's OI handshake to `node` (a
    `RingNode`) through the record, OE back to the die, and the die's current into `current`
    for the monitor; the record's fields show what passes between them."""
    def __init__(self, current_bits=I_FRAC_BITS + 2, name=None):
        Record.__init__(self, power_hook_layout(current_bits), name=name)

    def connect(self, die, node):
        """Combinational statements joining `die` (signals named as the hook's fields) and `node`."""
        return ([getattr(self, name).eq(getattr(die, name)) for name, _ in HANDSHAKE] +
                [getattr(node, name).eq(getattr(self, name)) for name, _ in HANDSHAKE] +
                [self.oe.eq(node.oe), die.oe.eq(self.oe), self.current.eq(die.current)])

