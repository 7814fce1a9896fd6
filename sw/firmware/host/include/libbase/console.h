/* Host build of the firmware: LiteX's console reads, served by the fuzz harness (hal_host.c). */
#ifndef NANDLAB_HOST_CONSOLE_H
#define NANDLAB_HOST_CONSOLE_H

int readchar(void);
static inline int readchar_nonblock(void) { return 1; }   /* the harness always has input */

#endif
