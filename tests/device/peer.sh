# tests/device.sh stage peer (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Flash-KMeans on issue 32's shapes in the same call, if a checkout is in third_party/.
timeout $(cap 400) python3 scripts/peer-flash-kmeans.py ${PEER_CASES:+--cases "$PEER_CASES"} --out $OUT/peer-flash-kmeans.json \
  2>&1 | tee $OUT/peer-flash-kmeans.txt | tail -12
note "peer flash-kmeans rc=${PIPESTATUS[0]}: $(head -1 $OUT/peer-flash-kmeans.txt)"
