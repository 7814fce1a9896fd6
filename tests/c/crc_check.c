/* Prints random vectors and the FTL's CRC-16 of each (tests/test_ftl_crc.py checks them against
 * Python's binascii.crc_hqx): "<initial value> <data in hex> <crc>" per line. */
#include <stdio.h>
#include <stdint.h>

#include "ftl_int.h"

int main(void)
{
	uint32_t x = 12345;
	for (int v = 0; v < 3000; v++) {
		uint8_t buf[64];
		x = x * 1103515245u + 12345u;
		uint32_t n = (x >> 16) % 65;
		x = x * 1103515245u + 12345u;
		uint16_t init = (uint16_t)(x >> 8);
		printf("%04x ", init);
		for (uint32_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
			printf("%02x", buf[i]);
		}
		printf(" %04x\n", ftl_crc16(buf, n, init));
	}
	return 0;
}
