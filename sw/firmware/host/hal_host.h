/* Host build of the firmware: what the fuzz harness tells the HAL model (hal_host.c). */
#ifndef NANDLAB_HAL_HOST_H
#define NANDLAB_HAL_HOST_H

#include <stddef.h>
#include <stdint.h>

/* The console's input (readchar) for the next run; its end reads as the end of a line. */
void   hal_host_input(const uint8_t *data, size_t len);
size_t hal_host_input_left(void);
/* The model and the drivers' state back to power-on. */
void   hal_host_reset(void);

#endif
