# tests/device.sh stage explore (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# Seed 000 section 4 on the GPU (docs/explore.md): the subset batch's GPU tests against the
# FP64 reference, compute-sanitizer memcheck and racecheck on its kernels (300 copies: two
# blocks of problems, one part-filled; 5003 rows: a part-filled tile and group; two classes,
# then three and none through the GPU test), then the
# seed's run timed: 10,000 copies of 3 attributes of 18, k=8, 5 steps over 5M rows. The
# real SUSY file is used when SUSY_CSV names it (label in column 0, as UCI ships it);
# otherwise the synthetic SUSY-shaped table (susy:, informative attributes 0, 6 and 17),
# where the top-ranked subset must be those three.
timeout $(cap 300) $BUILD/mkbench_tests --gtest_filter='*SubsetBatch*:Explore*' \
  >$OUT/raw/explore-tests.log 2>&1; rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $OUT/raw/explore-tests.log | head -20
cp $OUT/raw/explore-tests.log $OUT/explore-tests.txt
note "explore gpu tests rc=$rc: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' $OUT/raw/explore-tests.log | tr '\n' ' ')"
for tool in memcheck racecheck; do
  timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $MK explore --dataset susy --points 5003 \
    --copies 300 --k 8 --max-iter 3 --engine cuda --no-baseline --quiet >$OUT/raw/san-$tool-explore.log 2>&1
  rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-explore.log | tail -1)
  echo "$tool explore (subset batch) S=3 K=8 N=18 M=5003 B=300 rc=$rc: ${errs}" >>$OUT/sanitize-explore.txt
  note "sanitize $tool explore rc=$rc ${errs}"
  # The other scoring paths: three classes (the label pass) and none (cluster sizes in the step).
  timeout $(cap 240) compute-sanitizer --tool $tool --error-exitcode 9 $BUILD/mkbench_tests \
    --gtest_filter='*ThreeClassesAndNoLabelsScoreTheLastStep/M1003*' >$OUT/raw/san-$tool-explore-classes.log 2>&1
  rc=$?; errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/raw/san-$tool-explore-classes.log | tail -1)
  echo "$tool subset batch, 3 classes and none: S=3 K=8 N=18 M=1003 B=300 rc=$rc: ${errs}" >>$OUT/sanitize-explore.txt
  note "sanitize $tool subset batch 3 classes and none rc=$rc ${errs}"
done
if [[ -n ${SUSY_CSV:-} && -f ${SUSY_CSV:-} ]]; then dataset="csv:$SUSY_CSV:label=0"; source_note="real SUSY file $SUSY_CSV"
else dataset=susy; source_note="SUSY file absent (SUSY_CSV unset): synthetic SUSY-shaped data, susy: informative 0,6,17"; fi
echo "explore data: $source_note"
timeout $(cap 300) $MK explore --dataset "$dataset" --copies 10000 --subset-size 3 --k 8 --max-iter 5 --engine cuda \
  --repeat ${EXPLORE_REPEAT:-5} --out $OUT >$OUT/explore.txt 2>$OUT/raw/explore.log; rc=$?
tail -14 $OUT/explore.txt
note "explore seed run rc=$rc; data: $source_note"
[[ $rc == 0 ]] && while IFS= read -r line; do note "$line"; done < <(python3 - "$OUT/explore.json" "$dataset" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = d["time_s"]; s = d["summary"]
runs = sorted(t["steps_runs"]); scores = sorted(t["score_runs"])
print(f"explore | copies {s['copies']} ({s['distinct_subsets']} subsets) | M {d['dataset']['m']} N {d['dataset']['n']} | "
      f"engine {d['engine']['name']} on {d['device'].get('name', '?')}")
print(f"explore | 5 steps median {runs[len(runs)//2]:.3f} s | score median {scores[len(scores)//2]:.3f} s | "
      f"cluster median {t['cluster']:.3f} s (goal <= 0.5 s: {'met' if t['cluster'] <= 0.5 else 'NOT met'}) | "
      f"prepare {t['prepare']:.2f} s | total {t['total']:.1f} s")
top = d["subsets"][0]; base = d["baseline"]
print(f"explore | top subset {top['columns']} best {top['best']:.4f} | median copy {s['accuracy']['median']:.4f} | "
      f"all attributes {base['accuracy'] if base else 'n/a'} | majority class {d['majority_class_share']:.4f}")
if sys.argv[2] == "susy":
    planted = d["dataset"]["identity"]["params"]["informative"]
    print(f"explore | planted subset {sorted(planted)} ranked first: {'PASS' if top['columns'] == sorted(planted) else 'FAIL'}")
PY
)
