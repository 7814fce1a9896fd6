"""Power-management constants shared by the ring, the harness, the firmware (generated header) and the host.

One definition each (DESIGN.md decision 10): everything else imports these names.
"""

# The ring's policies, in the order of its mode register's values.
POLICIES = ["npm", "ppm", "mtpm", "kmtpm_atomic", "kmtpm_sub", "mtpm_nokey"]
MODE_NPM, MODE_PPM, MODE_MTPM, MODE_KMTPM_ATOMIC, MODE_KMTPM_SUB, MODE_MTPM_NOKEY = range(len(POLICIES))
# DCC is a firmware/host scheduler, not a ring mode: the experiment compares it with the ring's.
DCC = "dcc"
EXPERIMENT_POLICIES = ["npm", "ppm", DCC, "mtpm", "kmtpm_atomic", "kmtpm_sub"]
