/* nandlab FTL: logical sectors in, NAND page operations out (page-level map, GC, wear levelling,
 * bad blocks, power-loss recovery). Builds for the SoC's firmware and for the host (tests). */
#ifndef NANDLAB_FTL_H
#define NANDLAB_FTL_H

#include <stddef.h>
#include <stdint.h>

#include "ftl_nand.h"

#define FTL_VERSION 3                 /* on-flash format; a device formatted by another is refused (3: spare
                                       * anchor blocks, FTL_ANCHOR_BLOCKS reserved) */

enum ftl_gc_policy { FTL_GC_GREEDY, FTL_GC_COST_BENEFIT };

struct ftl_config {
	uint32_t sector_bytes;        /* logical sector: 4096 (default) or 512 */
	uint32_t op_permille;         /* over-provisioning (physical - logical) / logical, per mille */
	uint8_t  gc_policy;           /* enum ftl_gc_policy */
	uint8_t  static_wl;           /* move cold data when the erase-count spread exceeds wl_threshold */
	uint32_t wl_threshold;        /* erase-count spread (max - min) allowed with static_wl */
	uint32_t ckpt_pages;          /* map checkpoint every this many pages written (0: none, mount scans all;
	                               * FTL_CKPT_AUTO: 32 x the checkpoint's own pages, about 3 % more programs,
	                               * and none on a geometry whose checkpoint would not fit its formats) */
	uint8_t  ckpt_flush;          /* a flush writes a checkpoint too */
};
#define FTL_CKPT_AUTO 0xFFFFFFFFu

/* Results (negative) of requests and calls. */
enum ftl_result {
	FTL_OK            =  0,
	FTL_E_RANGE       = -1,       /* sectors outside the device */
	FTL_E_TOO_BIG     = -2,       /* more sectors than one request takes (FTL_MAX_SECTORS_BYTES) */
	FTL_E_UNFORMATTED = -3,       /* no valid anchor record: format first */
	FTL_E_GEOMETRY    = -4,       /* formatted with another geometry or sector size */
	FTL_E_VERSION     = -5,       /* formatted by an incompatible firmware (FTL_VERSION) */
	FTL_E_UNCORRECTABLE = -6,     /* a page of the request could not be read (never silent) */
	FTL_E_IO          = -7,       /* the NAND failed in a way the FTL could not work around */
	FTL_E_POWER       = -8,       /* the device lost power */
	FTL_E_FULL        = -9,       /* no space: too many bad blocks for the logical capacity */
	FTL_E_NOT_MOUNTED = -10,
	FTL_E_BUSY        = -11,      /* no free request slot: poll first */
	FTL_E_CONFIG      = -12,      /* configuration impossible for the geometry (see ftl_error) */
	FTL_E_MEMORY      = -13,      /* the RAM given is smaller than ftl_ram_bytes() */
	FTL_E_ALIGN       = -14,      /* a request's buffer is not aligned to FTL_BUF_ALIGN (the DMA's word) */
};
#define FTL_BUF_ALIGN 4u
const char *ftl_result_name(int result);

#define FTL_MAX_SECTORS_BYTES (1u << 20)   /* one request moves at most 1 MiB */
#define FTL_MAX_REQUESTS      64           /* requests in flight */

enum ftl_req_op { FTL_REQ_WRITE, FTL_REQ_READ, FTL_REQ_TRIM, FTL_REQ_FLUSH };

/* A host request: sectors [sector, sector + count) to or from buf. The FTL owns it from submit
 * until ftl_poll() returns it; result is then FTL_OK or an ftl_result. */
struct ftl_req {
	uint8_t  op;
	int8_t   result;
	uint32_t sector, count;
	uint8_t *buf;
	uint32_t id;                  /* the requester's */
	/* FTL bookkeeping */
	uint32_t next_lpn, pending, issued_all, order;
	uint64_t t_submit_us;
};

struct ftl_stats {
	uint64_t host_reads, host_writes, host_trims, host_read_sectors, host_write_sectors;
	uint64_t host_page_writes;    /* logical pages the host wrote (whole or in part) */
	uint64_t nand_reads, nand_programs, nand_erases, meta_programs;
	uint64_t gc_runs, gc_moves, wl_moves, rmw_reads;
	uint64_t ecc_corrected, uncorrectable, lost_pages;
	uint32_t bad_factory, bad_grown;
	uint32_t anchor_moves;        /* anchor blocks retired (erase or program FAIL): the log moved to a spare */
	uint32_t erase_min, erase_max;
	uint64_t erase_sum;           /* mean = erase_sum / superblocks in use */
	uint32_t superblocks, free_superblocks;
	uint64_t recovery_us, recovery_pages_read;   /* the last mount's NAND time and pages read */
	uint32_t recovery_kind;       /* 0 none yet, 1 formatted, 2 full scan, 3 checkpoint + newer superblocks */
	uint32_t recovery_sb_replayed;   /* superblocks the last mount replayed */
	uint32_t recovery_ckpt_failed;   /* the last mount found a checkpoint pointer but no valid checkpoint */
	uint64_t ckpt_writes, ckpt_programs, ckpt_skipped;   /* checkpoints written, their pages, not written (no room) */
	uint64_t max_in_flight;
};

struct ftl;

/* Bytes of RAM the FTL needs for a geometry (its whole state: map, block tables, buffers); for a
 * configuration ftl_init refuses, the size of its own state alone (room for it to say why). */
size_t ftl_ram_bytes(const struct ftl_geo *g, const struct ftl_config *cfg);
/* Default configuration (4 KiB sectors, 7 % over-provisioning, greedy, static WL at 32, checkpoints
 * FTL_CKPT_AUTO). */
void ftl_default_config(struct ftl_config *cfg);
/* Set up in `ram` (ftl_ram_bytes() of it); the FTL is then neither formatted nor mounted. The
 * configuration is checked first: FTL_E_CONFIG with the field named in ftl_error() (NULL returned when
 * `bytes` cannot even hold that); every other call on an FTL that ftl_init refused fails (FTL_E_CONFIG,
 * FTL_E_NOT_MOUNTED) or returns nothing. */
struct ftl *ftl_init(void *ram, size_t bytes, struct ftl_nand *nand, const struct ftl_config *cfg, int *result);
/* Why the last call failed, in words (geometry limits, record fields). */
const char *ftl_error(const struct ftl *f);

int ftl_format(struct ftl *f);       /* factory bad-block scan, empty map, anchor written */
int ftl_mount(struct ftl *f);        /* recovery: anchor, checkpoint, then the superblocks written after it */
uint32_t ftl_sectors(const struct ftl *f);   /* logical capacity */

int ftl_submit(struct ftl *f, struct ftl_req *r);
struct ftl_req *ftl_poll(struct ftl *f);     /* a completed request, or NULL */
uint32_t ftl_in_flight(const struct ftl *f);

/* Blocking forms: submit, then poll until done. */
int ftl_write(struct ftl *f, uint32_t sector, uint32_t count, const void *buf);
int ftl_read(struct ftl *f, uint32_t sector, uint32_t count, void *buf);
int ftl_trim(struct ftl *f, uint32_t sector, uint32_t count);
int ftl_flush(struct ftl *f);
/* Forget whole logical pages [sector, sector + count) in RAM only, at once: no trim record is written,
 * so the data may come back at the next mount (a layer above that keeps its own volatile record of
 * where data lives, as MPNFM's region table, and must not pay a program per forgotten page). None of
 * the caller's requests on these pages may be in flight. FTL_OK, FTL_E_RANGE (outside, or not whole
 * pages) or FTL_E_NOT_MOUNTED. */
int ftl_discard(struct ftl *f, uint32_t sector, uint32_t count);

void ftl_get_stats(const struct ftl *f, struct ftl_stats *s);
/* The superblock accounting checked (free counter, free pool, valid counts): NULL when it holds, else
 * what does not. O(pages): for tests and the shell, not the I/O path. */
const char *ftl_audit(struct ftl *f);

/* A device that takes the FTL's requests: the FTL itself (ftl_as_dev), or a layer over FTLs (MPNFM's,
 * mpnfm_as_dev). `ftls` are the FTLs behind it (their counters), NULL past the last. */
struct ftl_dev {
	void *ctx;
	int (*submit)(void *ctx, struct ftl_req *r);
	struct ftl_req *(*poll)(void *ctx);
	uint32_t (*in_flight)(void *ctx);
	uint32_t sectors, sector_bytes;
	struct ftl *ftls[2];
	/* The MPNFM paper's FC (mp:70): sectors of programmed pages that hold nothing the host can read
	 * there (never written - `written` has a byte per sector, 0 for those the host never wrote - or
	 * superseded by a copy elsewhere), counted over the pages the map names now. */
	uint64_t (*unusable)(void *ctx, const uint8_t *written);
};
void ftl_as_dev(struct ftl *f, struct ftl_dev *d);
/* Whether logical page lpn names a programmed page (mapped, not trimmed or lost). */
int ftl_lpn_mapped(const struct ftl *f, uint32_t lpn);
const struct ftl_geo *ftl_geometry(const struct ftl *f);
const struct ftl_config *ftl_get_config(const struct ftl *f);

#endif
