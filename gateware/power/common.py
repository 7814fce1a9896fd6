"""Power-management constants shared by the ring, the harness, the firmware (generated header) and the host.

One definition each (DESIGN.md decision 10): everything else imports these names, and the SoC
exports them to the firmware's soc.h and the host's csr.csv / csr.json (nandlab.soc.constants).
"""

# The ring's policies, in the order of its mode register's values.
POLICIES = ["npm", "ppm", "mtpm", "kmtpm_atomic", "kmtpm_sub", "mtpm_nokey"]
MODE_NPM, MODE_PPM, MODE_MTPM, MODE_KMTPM_ATOMIC, MODE_KMTPM_SUB, MODE_MTPM_NOKEY = range(len(POLICIES))
# DCC is a firmware/host scheduler, not a ring mode: the experiment compares it with the ring's.
DCC = "dcc"
EXPERIMENT_POLICIES = ["npm", "ppm", DCC, "mtpm", "kmtpm_atomic", "kmtpm_sub"]
# DCC charged its firmware's scheduling time per decision, serialised on one CPU (nandlab.dcc_fw): run
# when asked for; ALL_EXPERIMENT_POLICIES is the order results are shown in.
DCC_FW = "dcc_fw"
# DCC with the flat model (one piece per atomic operation at its peak, nandlab.dcc "atomic") whatever
# model dcc and dcc_fw use, without and with its firmware's time: run when asked for.
DCC_FLAT, DCC_FW_FLAT = "dcc_flat", "dcc_fw_flat"
DCC_POLICIES = (DCC, DCC_FW, DCC_FLAT, DCC_FW_FLAT)
ALL_EXPERIMENT_POLICIES = ["npm", "ppm", DCC_FLAT, DCC, DCC_FW_FLAT, DCC_FW, "mtpm", "kmtpm_atomic", "kmtpm_sub"]

# Configurations the proofs cover: the ring refuses the others (TT = alpha x (2^TG - 1) <= 248).
TG_RANGE    = (2, 5)
ALPHA_RANGE = (1, 8)
TOKEN_BITS = 8      # Token counts (TT up to 255).
OI_BITS    = 8      # Operation identifiers (a die's phases), the token table's address.
# Why the ring refused an apply, in the order of its status register's `error` values.
RING_ERRORS = ["none", "TG out of range", "alpha out of range", "a table RT above TT"]
ERR_NONE, ERR_TG, ERR_ALPHA, ERR_RT = range(len(RING_ERRORS))
# Packet faults a hop's injector makes (ring.RingHopFault), in the order of its `kind` values.
FAULT_KINDS = ["none", "drop", "dup", "flip"]
FAULT_NONE, FAULT_DROP, FAULT_DUP, FAULT_FLIP = range(len(FAULT_KINDS))
# What found a fault (the first check that failed), in the order of the ring's cause counters.
FAULT_CAUSES = ["parity", "seq", "audit"]

# The ring's reset configuration (TG, alpha), which the firmware's `power set` and the host's
# PowerControl also take when not told otherwise.
DEFAULT_TG, DEFAULT_ALPHA = 4, 4
# The budget (x I_max) the current monitor counts against while the ring is stopped (the dies run
# free): the reset configuration's.
STOPPED_ALPHA = DEFAULT_ALPHA

# How the rings of several channels are laid out (the power harness's --topology, the SoC's power_topology):
# one ring through every die, a ring per channel, or a ring per channel with exchange nodes sharing one
# budget (gateware/power/exchange.py). The SoC's default is DEFAULT_TOPOLOGY (gateware/power/rings.py says why).
TOPOLOGIES = ["single", "per_channel", "exchange"]
DEFAULT_TOPOLOGY = "per_channel"

# The power harness's channel (gateware/power/channel.py): interface modes a page can move at.
CHANNEL_INTERFACES = [f"nvddr{m}" for m in range(6)] + [f"sdr{m}" for m in range(6)]
DEFAULT_CHANNEL_INTERFACE = "nvddr5"
