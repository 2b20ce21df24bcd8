#!/bin/bash
# session 9 diagnostic (not committed): old vs new build on N=4, cubins dumped, new first.
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/cub
for round in 1 2; do for side in new old; do
  bin=build-device/mkbench; [[ $side == old ]] && bin=/tmp/abb/b/mkbench
  MKBENCH_DUMP_CUBIN=$OUT/cub/$side $bin run --variant tensor-multik --dims 4 --k 3..5 --points 32M --iters 20 --out /tmp/n4-$side-$round.json >/dev/null 2>&1
  printf 'n4probe %s round %s rc=%s %s\n' $side $round $? "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(round(r["summary"]["median_ms"],4), r["name"])' /tmp/n4-$side-$round.json)" | tee -a $OUT/n4probe.txt
done; done
ls -la $OUT/cub | tee -a $OUT/n4probe.txt
for side in new old; do f=$(ls $OUT/cub/$side-*.cubin | head -1); cuobjdump -sass $f | grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's@/\* 0x[0-9a-f]+ \*/@@' > /tmp/sass-$side.txt; cuobjdump -elf $f | grep -iE "shared|EIATTR_(REGCOUNT|MAX_THREADS|MIN_STACK|CUDA_API)" -A1 | head -20 > /tmp/elf-$side.txt; done
echo "sass lines: $(wc -l < /tmp/sass-new.txt) new, $(wc -l < /tmp/sass-old.txt) old; differing lines: $(diff /tmp/sass-new.txt /tmp/sass-old.txt | grep -c '^[<>]')" | tee -a $OUT/n4probe.txt
diff /tmp/sass-new.txt /tmp/sass-old.txt | head -40 >> $OUT/n4probe.txt
diff /tmp/elf-new.txt /tmp/elf-old.txt | head -20 >> $OUT/n4probe.txt
cmp $OUT/cub/new-*.cubin $OUT/cub/old-*.cubin >> $OUT/n4probe.txt 2>&1
rm -rf $OUT/cub
