# tests/device.sh stage mainstream-sanitize (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# compute-sanitizer memcheck and racecheck on small shapes of every gemm-window path:
# each tile, each update, both table modes, ring stages, a K range, N not a multiple of 4, a
# partial tile, and blocks that take many point tiles.
sets=("128 1000 256 tile=128x128/4x2,update=global,table=stream"
      "96 1000 300 tile=128x128/4x1,update=sorted,table=stream"
      "32 3000 64 tile=128x64/4x1,update=shared,table=resident"
      "200 700 130 tile=64x128/2x2,update=global,table=stream"
      "8 5000 3..12 tile=128x16/4x1,update=shared,table=resident"
      "37 2001 50 tile=128x64/4x1,update=sorted,table=stream"
      # Few blocks over many tiles: the ring running on across point tiles, the next tile
      # fetched ahead, and the shared flush all happen inside one block.
      "128 9000 256 tile=64x128/2x2,update=global,table=stream,stage=64,grid=8"
      "64 20000 40 tile=128x64/4x1,update=shared,table=stream,stage=64,grid=4")
for set in "${sets[@]}"; do
  set -- $set
  params=""; for kv in ${4//,/ }; do params+=" --param $kv"; done
  for tool in memcheck racecheck; do
    tag=$tool-N$1-K$3-${4//[\/=,]/-}
    timeout $(cap 300) compute-sanitizer --tool $tool --error-exitcode 9 $MK run --variant gemm-window --dims $1 \
      --points $2 --k $3 --iters 1 --warmup 1 --verify --no-tuned $params >$OUT/raw/san-$tag.log 2>&1
    rc=$?
    note "sanitize $tool gemm-window N=$1 M=$2 K=$3 $4 rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tag.log | tail -1)"
  done
done
