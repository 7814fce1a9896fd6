/* Read training of the pin PHY's input delays (the procedure of gateware/onfi/pinphy.py's documentation). */
#ifndef NANDLAB_TRAIN_H
#define NANDLAB_TRAIN_H

#include <stdint.h>

#include <generated/soc.h>

#include "nandctl.h"

#define TRAIN_LANES    9               /* DQ0-7, DQS */
#define TRAIN_DQS_LANE 8
#define TRAIN_MODES    6               /* NV-DDR timing modes 0-5 */
#define TRAIN_TAPS_MAX 128             /* taps of the longest delay line (ECP5's DELAYF) */

/* One lane's passing taps (a run of consecutive taps; lo = -1: none) and the tap it was set to. */
struct train_lane {
	int lo, hi, tap;
};

/* The result of one die in one NV-DDR timing mode. */
struct train_result {
	int done;                          /* trained (ok or not) */
	int ok;                            /* every lane has a window and the verification reads were right */
	struct train_lane lane[TRAIN_LANES];
	uint32_t verify_errors;            /* bit errors over the verification reads */
	/* The eye: bit errors of one pattern read per lane and tap (DQ lanes: the sweep with DQS at its centre;
	 * DQS: the sweep of DQS alone, 0 where the DQ lanes of its window's run read right); `taps` taps swept. */
	int taps;
	uint16_t errors[TRAIN_LANES][TRAIN_TAPS_MAX];
};

/* The pin PHY with delay lines (SoCs built with it: the simulator's pin-level model on channel 0, or the
 * external socket on its own channel) and the channel it serves. */
int train_present(void);
int train_delay_taps(void);
int train_channel_index(void);
/* Train die `die` of the PHY's channel in NV-DDR `mode`: the pattern is the parameter page read in async SDR
 * mode 0 (its CRC checked), then each lane's window is swept in NV-DDR and centred, and the result
 * verified. The die is left in NV-DDR `mode` and the controller with it. Returns 0 when every lane
 * passed; prints each lane's window (verbose) and every failing lane with its window. */
int train_die(struct nandctl *nc, int die, int mode, int verbose);
/* Read the pattern once in NV-DDR `mode` at the taps the lanes hold (no sweep): prints each DQ lane's bit
 * errors; 0 when all are right. */
int train_check(struct nandctl *nc, int die, int mode);
/* 'train eye': the kept sweep of (die, mode) in lines a host parses (docs/bringup.md); -1 when none. */
int train_print_eye(int die, int mode);
/* The kept result of (die, mode) (NULL outside the table). */
const struct train_result *train_result(int die, int mode);
/* Put every lane at the centre of the intersection of the windows of the dies trained in `mode`
 * (`dies` a mask); returns 0, or -1 (printed) when a lane has no common window. */
int train_apply(int mode, uint32_t dies);

/* The write side (train_write.c): in the NV-DDR mode the channel is in, program two pages of `block` (erased
 * first) with DQS early and late in the byte, read them back, keep the first placement that wrote right
 * (hal_ctrl_dqs_late). Prints each placement's bit errors per DQ lane; -1 when neither wrote right. */
int train_write(struct nandctl *nc, int die, uint32_t block);

/* nandctl_nvddr_hook: on a mode change to NV-DDR `mode` on the PHY's channel, every online die trained in it
 * (the kept results are redone: a new mode moves the eyes), the lanes set for all of them, the controller
 * left in `mode` with the channel's dies online. Other channels: nothing. */
int train_channel(struct nandctl *nc, int mode);

#endif
