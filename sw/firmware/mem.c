/* memset, memcpy and memmove a word at a time. The libc LiteX builds (picolibc at -Os) moves one byte
 * per instruction; on the VexRiscv's write-through data cache every byte is then a bus write, and
 * filling a 4 KiB buffer costs four times the stores it needs (`nandlab profile` showed memset at
 * 60 % of a workload's CPU time). These replace the library's (the linker takes the image's own
 * definitions first). They run between two scheduler decisions (a write's copy into the FTL's buffer), so
 * .text.hot_mem sits in linker.ld's fourth driver stretch, off the decision's instruction-cache sets (it sat
 * just after the I/O path, over sched_push_n's loop); the I/O path's whole-page paths call none of them. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* GCC must not turn these loops back into calls of themselves. */
#define MEM_FN __attribute__((section(".text.hot_mem"), optimize("no-tree-loop-distribute-patterns")))

MEM_FN void *memset(void *dst, int c, size_t n)
{
	uint8_t *d = dst;
	uint32_t w = (uint8_t)c * 0x01010101u;
	while (n && ((uintptr_t)d & 3)) {
		*d++ = (uint8_t)c;
		n--;
	}
	for (; n >= 16; n -= 16, d += 16) {
		((uint32_t *)d)[0] = w;
		((uint32_t *)d)[1] = w;
		((uint32_t *)d)[2] = w;
		((uint32_t *)d)[3] = w;
	}
	for (; n >= 4; n -= 4, d += 4)
		*(uint32_t *)d = w;
	while (n--)
		*d++ = (uint8_t)c;
	return dst;
}

MEM_FN void *memcpy(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if ((((uintptr_t)d ^ (uintptr_t)s) & 3) == 0) {
		while (n && ((uintptr_t)d & 3)) {
			*d++ = *s++;
			n--;
		}
		for (; n >= 16; n -= 16, d += 16, s += 16) {
			uint32_t a = ((const uint32_t *)s)[0], b = ((const uint32_t *)s)[1];
			uint32_t e = ((const uint32_t *)s)[2], f = ((const uint32_t *)s)[3];
			((uint32_t *)d)[0] = a;
			((uint32_t *)d)[1] = b;
			((uint32_t *)d)[2] = e;
			((uint32_t *)d)[3] = f;
		}
		for (; n >= 4; n -= 4, d += 4, s += 4)
			*(uint32_t *)d = *(const uint32_t *)s;
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

MEM_FN void *memmove(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);      /* forward copy is safe */
	d += n;
	s += n;
	if ((((uintptr_t)d ^ (uintptr_t)s) & 3) == 0) {
		while (n && ((uintptr_t)d & 3)) {
			*--d = *--s;
			n--;
		}
		for (; n >= 4; n -= 4) {
			d -= 4;
			s -= 4;
			*(uint32_t *)d = *(const uint32_t *)s;
		}
	}
	while (n--)
		*--d = *--s;
	return dst;
}
