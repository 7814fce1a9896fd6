/* Host check of the firmware's memset/memcpy/memmove (sw/firmware/mem.c, built with its names
 * prefixed nl_) against a byte-at-a-time reference, over every small size and alignment. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void *nl_memset(void *, int, size_t);
void *nl_memcpy(void *, const void *, size_t);
void *nl_memmove(void *, const void *, size_t);

#define N 160

static void fill(uint8_t *b, unsigned seed)
{
	for (int i = 0; i < N; i++)
		b[i] = (uint8_t)(seed * 31u + (unsigned)i * 7u + 3u);
}

static int same(const uint8_t *a, const uint8_t *b, const char *what, int x, int y, int n)
{
	for (int i = 0; i < N; i++)
		if (a[i] != b[i]) {
			printf("%s dst %d src %d n %d: byte %d is %u, want %u\n", what, x, y, n, i, a[i], b[i]);
			return 0;
		}
	return 1;
}

int main(void)
{
	uint8_t got[N], want[N];
	long checks = 0;
	for (int x = 0; x < 8; x++)
		for (int n = 0; x + n <= 100; n++) {
			fill(got, 1); fill(want, 1);
			if (nl_memset(got + x, 0xA5 + n, n) != got + x) return 1;
			for (int i = 0; i < n; i++) want[x + i] = (uint8_t)(0xA5 + n);
			if (!same(got, want, "memset", x, 0, n)) return 1;
			for (int y = 0; y < 8; y++) {
				uint8_t src[N];
				fill(src, 2); fill(got, 3); fill(want, 3);
				if (nl_memcpy(got + x, src + y, n) != got + x) return 1;
				for (int i = 0; i < n; i++) want[x + i] = src[y + i];
				if (!same(got, want, "memcpy", x, y, n)) return 1;
				/* memmove within one buffer, both directions and overlapping. */
				for (int d = -9; d <= 9; d++) {
					int s = 20 + y, t = 20 + x + d;
					fill(got, 4); fill(want, 4);
					uint8_t tmp[N];
					for (int i = 0; i < n; i++) tmp[i] = want[s + i];
					for (int i = 0; i < n; i++) want[t + i] = tmp[i];
					if (nl_memmove(got + t, got + s, n) != got + t) return 1;
					if (!same(got, want, "memmove", t, s, n)) return 1;
					checks++;
				}
			}
		}
	printf("ok %ld\n", checks);
	return 0;
}
