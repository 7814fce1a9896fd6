/* nandlab firmware entry: bring up the console, print the banner, run the shell. */
#include <stdio.h>

#include "hal.h"
#include "nandctl.h"
#include "remote.h"
#include "shell.h"
#include "train.h"

int main(void)
{
	char ident[256];

	hal_init();
	remote_init();
	if (train_present())
		nandctl_nvddr_hook = train_channel;     /* NV-DDR behind the pin PHY needs read training */
	hal_ident(ident, sizeof(ident));
	printf("\n");
	printf("nandlab firmware\n");
	printf("SoC: %s\n", ident);
	printf("Type 'help' for the commands.\n");
	shell_loop();
	return 0;
}
