/* nandlab firmware HAL: the SoC's name lists (policies, results, interfaces) split into tables; no
 * hardware, so the host build of the firmware (fuzz/) uses this file as it is. */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"

const struct hal_names *hal_names(struct hal_names *t, const char *list)
{
	char *p;
	if (t->n)
		return t;
	strncpy(t->text, list, sizeof(t->text) - 1);
	for (p = t->text; t->n < HAL_NAMES_MAX; p++) {
		t->name[t->n++] = p;
		p = strchr(p, NANDLAB_LIST_SEPARATOR[0]);
		if (!p)
			break;
		*p = '\0';
	}
	return t;
}

const char *hal_name(const struct hal_names *t, int index)
{
	return index >= 0 && index < t->n && t->name[index][0] ? t->name[index] : "?";
}

int hal_name_index(const struct hal_names *t, const char *name)
{
	int i;
	for (i = 0; i < t->n; i++)
		if (t->name[i][0] && strcmp(t->name[i], name) == 0)
			return i;
	return -1;
}

void hal_names_print(const struct hal_names *t)
{
	int i, first = 1;
	for (i = 0; i < t->n; i++)
		if (t->name[i][0]) {
			printf("%s%s", first ? "" : ", ", t->name[i]);
			first = 0;
		}
}
