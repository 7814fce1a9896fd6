/* Trace replay through the FTL (ftl_replay.c; the shell's `ftl replay`, host `nandlab replay`).
 *
 * The host writes request records into a ring in main RAM (through the bridge), runs `ftl replay run`
 * and reads one result per record back. Both layouts are fixed, little-endian (the CPU's order), 16
 * bytes a record; docs/replay.md and sw/host/nandlab/replay.py describe the same. */
#ifndef NANDLAB_FTL_REPLAY_H
#define NANDLAB_FTL_REPLAY_H

#include <stddef.h>
#include <stdint.h>

struct ftl;

#define FTL_REPLAY_MAX_QD      32          /* requests in flight (open loop: always this many slots) */
#define FTL_REPLAY_SLOT_BYTES  (64u << 10) /* a slot's buffer: the largest request the replay takes */
#define FTL_REPLAY_MAX_RECORDS 65536u      /* ring capacity when RAM allows */
#define FTL_REPLAY_FLAG_WRITE  1u

/* The host's request (sw/host/nandlab/trace.py RECORD_FORMAT "<IIHBBI"). */
struct ftl_replay_record {
	uint32_t time_us;        /* arrival, us from the start (open loop; scaled by scale_permille) */
	uint32_t sector;         /* first FTL sector */
	uint16_t count;          /* FTL sectors, >= 1 */
	uint8_t  flags;          /* bit 0: write; others zero */
	uint8_t  reserved;
	uint32_t id;             /* the host's request id */
};

/* One per record, same index ("<IIIbBHI"). */
#define FTL_REPLAY_RES_WRITE    1u   /* flags: the request was a write */
#define FTL_REPLAY_RES_WAITED   2u   /* it waited for an overlapping request in flight */
#define FTL_REPLAY_RES_MISMATCH 4u   /* a read returned other contents than the last write's */
struct ftl_replay_result {
	uint32_t id;             /* the record's id */
	uint32_t submit_us;      /* SoC us from the start to its submission to the FTL */
	uint32_t latency_cycles; /* completion - arrival (open loop) or - submission (closed), SoC cycles, saturating */
	int8_t   result;         /* FTL_OK or an ftl_result */
	uint8_t  flags;          /* FTL_REPLAY_RES_* */
	uint16_t mismatches;     /* sectors of a read that differ (saturating) */
	uint32_t wait_cycles;    /* while it was in flight, SoC cycles the CPU waited for the NAND (polls that found
	                          * nothing: ftl_replay_set_wait_clock); at qd 1 the NAND's share of its latency,
	                          * the rest the CPU's; 0 without a wait clock (saturating) */
};

/* Streaming (`ftl replay stream`): the ring is a window of `window` records that the host refills while
 * the run goes on. Record i is at ring[i % window], its result at results[i % window]. The host writes
 * records, then `produced` (records written so far); the firmware publishes `completed` (records 0 ..
 * completed-1 are all finished: their results are final). The host may overwrite record j + window
 * once it has read result j (j < completed). In main RAM, before the ring (`ftl replay ring` gives
 * its address); docs/replay.md has the layout. */
struct ftl_replay_stream {
	volatile uint32_t produced;   /* host */
	volatile uint32_t completed;  /* firmware */
	volatile uint32_t underruns;  /* firmware: times the next record was wanted and not yet there */
	volatile uint32_t reserved;
};

struct ftl_replay_summary {
	uint32_t n, reads, writes, errors, mismatches, overlap_waits, max_in_flight;
	uint32_t window, underruns;     /* streaming: the ring's window (0 = preloaded) and its underruns */
	uint64_t stall_cycles;          /* streaming: time spent waiting for the host's records */
	uint64_t t0;             /* the timebase at the start, cycles: results and telemetry share it */
	uint64_t cycles;         /* first arrival (start) to the last completion */
	uint64_t read_sectors, write_sectors;
};

/* Replay records[0..n) with qd in flight (1..FTL_REPLAY_MAX_QD, closed loop) or by arrival time
 * (qd 0, open loop: time_us * scale_permille / 1000). `mem` (bytes) holds a version byte per sector
 * and the slot buffers. Every record is checked first: -1 with the record named when one is refused
 * (nothing replayed), else 0 (request errors and mismatches are counted in `sum`, not returned).
 * `keep`: the version bytes in `mem` are those the previous run left (a run that continues a
 * preconditioning: reads check what it wrote); else every sector starts unwritten (version 0). */
int ftl_replay_run(const struct ftl_dev *d, const struct ftl_replay_record *records, uint32_t n, int qd,
                   uint32_t scale_permille, uint8_t *mem, size_t bytes, struct ftl_replay_result *results,
                   struct ftl_replay_summary *sum, int keep);
/* The same with the records streamed through a window of `window` ring entries (struct
 * ftl_replay_stream): each record is checked when it is taken; a bad one stops the run there (-1 after
 * the requests in flight complete, the record named). */
int ftl_replay_stream(const struct ftl_dev *d, const struct ftl_replay_record *ring, uint32_t window, uint32_t n, int qd,
                      uint32_t scale_permille, uint8_t *mem, size_t bytes, struct ftl_replay_result *results,
                      struct ftl_replay_stream *ctl, struct ftl_replay_summary *sum, int keep);
/* The clock of the CPU's waiting for the NAND (cycles, monotonic): the firmware's NAND port's idle-poll
 * cycles; NULL (the default, the host build) leaves wait_cycles 0. */
void ftl_replay_set_wait_clock(uint64_t (*clock)(void));
/* Any FTL operation outside the replay (a format, a mount, a write) makes the versions stale: the
 * next `ftl replay run ... keep` is refused until a run without keep has started afresh. */
void ftl_replay_forget(void);
/* The RAM the replay needs besides ring and results: versions and FTL_REPLAY_MAX_QD slots. */
size_t ftl_replay_work_bytes(const struct ftl_dev *d);
/* The shell's `ftl replay ring|run` (cmds_replay.c) on the mounted device `d` with `mem` (bytes) free. */
int ftl_replay_cmd(const struct ftl_dev *d, uint8_t *mem, size_t bytes, int argc, char **argv);

#endif
