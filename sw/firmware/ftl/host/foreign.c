/* ftl-foreign: mounts of a device the FTL must not use as it is, each refused by its reason and none
 * changing a byte of the array; after each, the right firmware and configuration mount it and every
 * sector written before reads back. One JSON object on stdout.
 *   - unformatted: a blank device (FTL_E_UNFORMATTED);
 *   - version: the anchor records rewritten as a firmware of another on-flash format would have
 *     written them, version field and CRC (FTL_E_VERSION);
 *   - sector size, over-provisioning: a configuration other than the one formatted (FTL_E_GEOMETRY).
 * usage: ftl-foreign [--foreign-version V] [--sectors N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl_int.h"
#include "nand_model.h"
#include "shadow.h"

static const struct ftl_geo GEO = { .dies = 2, .planes = 1, .blocks = 64, .pages = 32, .page_bytes = 2048, .tag_bytes = 6 };

static void put32(uint8_t *p, uint32_t v) { p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24; }
static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* FNV-1a over every page's state and stored bytes: any change to the array changes it. */
static uint64_t array_digest(const struct nand_model *m)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint64_t ppn = 0; ppn < nand_model_pages(m); ppn++) {
		int state;
		const uint8_t *d = nand_model_peek(m, (uint32_t)ppn, &state);
		h = (h ^ (uint64_t)state) * 0x100000001b3ull;
		for (uint32_t i = 0; d && i < GEO.page_bytes; i++)
			h = (h ^ d[i]) * 0x100000001b3ull;
	}
	return h;
}

/* Every complete anchor record header in the array gets `version` (and its CRC follows): the number
 * rewritten. */
static int set_anchor_version(struct nand_model *m, uint32_t version)
{
	int n = 0;
	for (uint64_t ppn = 0; ppn < nand_model_pages(m); ppn++) {
		int state;
		const uint8_t *d = nand_model_peek(m, (uint32_t)ppn, &state);
		if (!d || state != 1 || get32(d) != ANCHOR_MAGIC || get32(d + 60) != ftl_crc32(d, 60, 0))
			continue;
		uint8_t h[ANCHOR_HDR];
		memcpy(h, d, sizeof(h));
		put32(h + 4, version);
		put32(h + 60, ftl_crc32(h, 60, 0));
		if (nand_model_poke(m, (uint32_t)ppn, 0, h, sizeof(h)) == 0)
			n++;
	}
	return n;
}

struct case_result { int result; char error[200]; int array_unchanged; };

/* A fresh FTL with cfg mounts m: its result, message, and whether the array kept every byte. */
static void try_mount(struct nand_model *m, void *ram, size_t ram_bytes, const struct ftl_config *cfg,
                      struct case_result *c)
{
	uint64_t before = array_digest(m);
	int res;
	struct ftl *f = ftl_init(ram, ram_bytes, nand_model_nand(m), cfg, &res);
	c->result = res ? res : ftl_mount(f);
	snprintf(c->error, sizeof(c->error), "%s", c->result ? ftl_error(f) : "");
	c->array_unchanged = array_digest(m) == before;
}

/* The right firmware mounts m: sectors [0, n) must read back their version-1 pattern. The number that
 * do not (all n when the mount fails). */
static uint32_t mount_and_verify(struct nand_model *m, void *ram, size_t ram_bytes, const struct ftl_config *cfg,
                                 uint32_t n)
{
	int res;
	struct ftl *f = ftl_init(ram, ram_bytes, nand_model_nand(m), cfg, &res);
	if (res || ftl_mount(f))
		return n;
	uint8_t *got = malloc(cfg->sector_bytes), *want = malloc(cfg->sector_bytes);
	uint32_t bad = 0;
	for (uint32_t s = 0; s < n; s++) {
		pattern(want, cfg->sector_bytes, s, 1);
		bad += ftl_read(f, s, 1, got) != FTL_OK || memcmp(got, want, cfg->sector_bytes) != 0;
	}
	free(got);
	free(want);
	return bad;
}

static void print_case(const char *name, const struct case_result *c, uint32_t lost, int last)
{
	printf("\"%s\": {\"result\": \"%s\", \"error\": \"%s\", \"array_unchanged\": %s, \"sectors_lost\": %u}%s",
	       name, ftl_result_name(c->result), c->error, c->array_unchanged ? "true" : "false", lost, last ? "" : ", ");
}

int main(int argc, char **argv)
{
	uint32_t foreign = FTL_VERSION + 1, n = 200;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--foreign-version"))
			foreign = (uint32_t)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--sectors"))
			n = (uint32_t)strtoul(argv[i + 1], NULL, 0);
		else {
			printf("{\"error\": \"unknown option %s\"}\n", argv[i]);
			return 2;
		}
	}
	struct ftl_config cfg;
	ftl_default_config(&cfg);
	struct nand_model_faults fx = { 0 };
	struct nand_model *m = nand_model_new(&GEO, &fx, 1);
	struct ftl_config small = cfg;
	small.sector_bytes = 512;
	size_t ram_bytes = ftl_ram_bytes(&GEO, &small) > ftl_ram_bytes(&GEO, &cfg) ? ftl_ram_bytes(&GEO, &small)
	                                                                         : ftl_ram_bytes(&GEO, &cfg);
	void *ram = malloc(ram_bytes);
	struct case_result blank, version, sector, op;

	try_mount(m, ram, ram_bytes, &cfg, &blank);
	int res;
	struct ftl *f = ftl_init(ram, ram_bytes, nand_model_nand(m), &cfg, &res);
	if (res || ftl_format(f) || n > ftl_sectors(f)) {
		printf("{\"error\": \"format: %s\"}\n", ftl_error(f));
		return 2;
	}
	uint8_t *buf = malloc(cfg.sector_bytes);
	for (uint32_t s = 0; s < n; s++) {
		pattern(buf, cfg.sector_bytes, s, 1);
		if (ftl_write(f, s, 1, buf) != FTL_OK) {
			printf("{\"error\": \"write %u: %s\"}\n", s, ftl_error(f));
			return 2;
		}
	}
	ftl_flush(f);

	int rewritten = set_anchor_version(m, foreign);
	try_mount(m, ram, ram_bytes, &cfg, &version);
	set_anchor_version(m, FTL_VERSION);           /* the right firmware back */
	uint32_t version_lost = mount_and_verify(m, ram, ram_bytes, &cfg, n);

	try_mount(m, ram, ram_bytes, &small, &sector);
	uint32_t sector_lost = mount_and_verify(m, ram, ram_bytes, &cfg, n);
	struct ftl_config other = cfg;
	other.op_permille = cfg.op_permille + 100;
	try_mount(m, ram, ram_bytes, &other, &op);
	uint32_t op_lost = mount_and_verify(m, ram, ram_bytes, &cfg, n);

	printf("{\"ftl_version\": %u, \"foreign_version\": %u, \"records_rewritten\": %d, \"sectors\": %u, ",
	       FTL_VERSION, foreign, rewritten, n);
	print_case("unformatted", &blank, 0, 0);
	print_case("version", &version, version_lost, 0);
	print_case("sector_size", &sector, sector_lost, 0);
	print_case("over_provisioning", &op, op_lost, 1);
	printf("}\n");
	free(buf);
	free(ram);
	nand_model_free(m);
	return 0;
}
