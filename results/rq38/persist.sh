#!/bin/bash
# Keeps the finished runs of issue 17's two paper studies (nandlab reproduce dwsdw / mpnfm, run in a clone
# of this repository at revision $REV) in this repository's main branch, so they survive a new machine.
# Usage: persist.sh [once]   (no argument: every 10 minutes until killed)
# Only results/rq38/kept is committed (git commit --only): nothing else staged in /work/main is touched.
REV=ddf0153
SRC=${SRC:-/work/rq38}
DST=${DST:-/work/main}
persist() {
    cd "$SRC" || return
    local n=0
    while IFS= read -r f; do
        mkdir -p "$DST/results/rq38/kept/$(dirname "$f")"
        cmp -s "$f" "$DST/results/rq38/kept/$f" || cp "$f" "$DST/results/rq38/kept/$f"
        n=$((n + 1))
    done < <(find build/rq38 -name result.pickle | sort)
    cd "$DST" || return
    git add results/rq38 || return
    if ! git diff --cached --quiet -- results/rq38; then
        git commit -q --only -m "results/rq38: $n kept runs of the dwsdw and mpnfm studies (revision $REV)" \
            -- results/rq38 && echo "$(date +%H:%M) committed $n kept runs"
    else
        echo "$(date +%H:%M) $n kept runs, nothing new"
    fi
}
if [ "$1" = once ]; then persist; exit; fi
while true; do persist; sleep 600; done
