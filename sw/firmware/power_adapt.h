/* `power adapt`: the ring's token tables raised, per die, to the current the die really draws
 * (power_adapt.c). */
#ifndef NANDLAB_POWER_ADAPT_H
#define NANDLAB_POWER_ADAPT_H

/* `power set` loaded the compiled tables of `tg` into every node. */
void power_adapt_reset(unsigned int tg);
/* One step: every die's peak against its tables, raises written to its node; 0, or -1 (printed). */
int power_adapt(void);

#endif
