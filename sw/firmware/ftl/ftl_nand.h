/* The FTL's view of the NAND: geometry and asynchronous page operations (the SoC's channel
 * controllers or the host's model implement it). */
#ifndef NANDLAB_FTL_NAND_H
#define NANDLAB_FTL_NAND_H

#include <stdint.h>

/* Geometry, filled at bring-up (the parameter page) or by the host model. A die's blocks are split
 * over `planes` by their low address bits, as ONFI multi-plane addressing does. */
struct ftl_geo {
	uint32_t dies;          /* every die of every channel, numbered channel-major */
	uint32_t planes;
	uint32_t blocks;        /* per die */
	uint32_t pages;         /* per block */
	uint32_t page_bytes;    /* data area (the ECC-protected part) */
	uint32_t tag_bytes;     /* spare bytes free for the FTL's page tag (outside the ECC) */
	/* Block groups per plane that one superblock spans (0 or 1: one block per plane and die). SDW-NFM
	 * dies split each plane into 4 subplanes by the blocks' high address bits: with span 4 a superblock
	 * takes a block of every subplane, so that consecutive pages of the write stream land in every page
	 * register of the die and can go into one multi-plane operation. */
	uint32_t span;
	/* Pages by which each plane's write point trails the previous plane's (0: none, the planes of a
	 * superblock row share a page address). The write stream fills a superblock row by row; member m
	 * of plane p writes row r to page r + stagger x p and leaves pages 0 .. stagger x p - 1 erased (row
	 * r of member m past the block's end holds nothing). A model of allocation whose planes' page
	 * addresses are not synchronised (the DW/SDW-NFM paper leaves its allocation unstated): an even
	 * stagger keeps the planes' page types (LSB/MSB) equal and their page addresses apart. */
	uint32_t stagger;
};

/* The span, 0 read as 1. */
static inline uint32_t ftl_geo_span(const struct ftl_geo *g)
{
	return g->span ? g->span : 1;
}

/* Blocks of one die in a superblock: planes x span. */
static inline uint32_t ftl_geo_groups(const struct ftl_geo *g)
{
	return g->planes * ftl_geo_span(g);
}

/* Pages a superblock's members offer (before bad blocks): every member's pages less its plane's stagger. */
static inline uint64_t ftl_geo_sb_pages(const struct ftl_geo *g)
{
	uint64_t per_die_lost = (uint64_t)ftl_geo_span(g) * g->stagger * g->planes * (g->planes ? g->planes - 1 : 0) / 2;
	return (uint64_t)g->dies * (ftl_geo_groups(g) * (uint64_t)g->pages - per_die_lost);
}

/* Bytes of the FTL's page tag in the spare: {LPN or argument, kind, CRC-16}. */
#define FTL_TAG_BYTES 6

enum ftl_nand_opcode {
	FTL_NAND_READ,          /* data area through the ECC, and the tag */
	FTL_NAND_READ_TAG,      /* the tag only (spare bytes, no ECC) */
	FTL_NAND_READ_BBM,      /* the factory bad-block marker: tag[0] = spare byte 0 of the page */
	FTL_NAND_PROGRAM,       /* data area through the ECC, and the tag */
	FTL_NAND_ERASE,
};

enum ftl_nand_status {
	FTL_NAND_OK,
	FTL_NAND_FAIL,          /* program or erase failed (status FAIL): the block has gone bad */
	FTL_NAND_UNCORRECTABLE, /* read: more bit errors than the ECC corrects; data is as read */
	FTL_NAND_ERASED,        /* read: the page is erased (data and tag all FFh) */
	FTL_NAND_POWER,         /* the device lost power: nothing more completes */
};

/* One operation. The FTL owns it (and the data buffer) until its completion is polled. */
struct ftl_nand_op {
	uint8_t  opcode, status;
	uint16_t corrected;     /* read: bits the ECC corrected */
	uint32_t die, block, page;
	uint8_t *data;          /* page_bytes (READ, PROGRAM) */
	uint8_t  tag[FTL_TAG_BYTES];
	uint16_t owner;         /* the FTL's bookkeeping */
	uint32_t arg;
};

struct ftl_nand {
	struct ftl_geo geo;
	void *dev;
	/* Queue op; 0, or -1 when the device takes no more now (poll, then try again). */
	int (*submit)(void *dev, struct ftl_nand_op *op);
	/* A completed operation, or NULL when none has completed yet. */
	struct ftl_nand_op *(*poll)(void *dev);
	/* Microseconds since an arbitrary start (recovery time, latencies). */
	uint64_t (*now_us)(void *dev);
	/* Before the CPU reads bytes of memory at p that a READ wrote (a DMA behind the CPU's data cache: the
	 * SoC's port evicts those lines); NULL when the CPU sees the device's writes at once (the host model).
	 * A READ's tag comes with its completion; the FTL calls this before it reads an op's data itself and
	 * before it hands a read request's buffer back. */
	void (*cpu_view)(const void *p, uint32_t bytes);
};

#endif
