#!/bin/sh
# The scheduler's decisions before and after a change (sched_diff.c): builds the harness against REV's sched.c
# and the worktree's (ASan/UBSan), runs 4 seeds of CONFIGS configurations through both, compares every line.
# usage: sw/firmware/host/sched_diff.sh [REV (main)] [CONFIGS (500)]   (run from the repository's top)
set -e
REV=${1:-main}
N=${2:-500}
OUT=build/test/sched_diff
mkdir -p "$OUT/old"
git show "$REV:sw/firmware/sched.c" > "$OUT/old/sched.c"
git show "$REV:sw/firmware/sched.h" > "$OUT/old/sched.h"
F="-O1 -g -std=c11 -fsanitize=address,undefined -fno-sanitize-recover=all -Wall"
cc $F -I"$OUT/old" -o "$OUT/h_old" sw/firmware/host/sched_diff.c "$OUT/old/sched.c"
cc $F -Isw/firmware -o "$OUT/h_new" sw/firmware/host/sched_diff.c sw/firmware/sched.c
for seed in 1 2 3 4; do
	"$OUT/h_old" $seed $N > "$OUT/old.$seed" 2>/dev/null
	"$OUT/h_new" $seed $N > "$OUT/new.$seed" 2>"$OUT/picks.$seed"
	cmp "$OUT/old.$seed" "$OUT/new.$seed"
	echo "seed $seed: identical ($(cat "$OUT/picks.$seed"))"
done
