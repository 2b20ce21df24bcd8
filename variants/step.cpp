#include "variants/step.hpp"

#include "core/errors.hpp"
#include "variants/variant.hpp"

namespace mk {

const char* to_string(EmptyPolicy policy) {
  switch (policy) {
    case EmptyPolicy::Keep: return "keep";
    case EmptyPolicy::Farthest: return "farthest";
    case EmptyPolicy::Random: return "random";
  }
  return "keep";
}

EmptyPolicy parse_empty_policy(const std::string& text) {
  if (text == "keep") return EmptyPolicy::Keep;
  if (text == "farthest") return EmptyPolicy::Farthest;
  if (text == "random") return EmptyPolicy::Random;
  throw InputError("--empty must be keep, farthest or random, got '" + text + "'");
}

void PreparedRun::accumulate(const AccumulateOptions&) {
  throw UnsupportedError("this variant's run does not split its step into accumulate and update");
}

AccumulatorRefs PreparedRun::accumulators() {
  throw UnsupportedError("this variant's run does not expose its accumulators");
}

StepSummary PreparedRun::update(const UpdateOptions&) {
  throw UnsupportedError("this variant's run does not split its step into accumulate and update");
}

PointsSlot PreparedRun::points_slot() {
  throw UnsupportedError("this variant's run cannot take new points between steps (out-of-core)");
}

void PreparedRun::set_point_count(int64_t) {
  throw UnsupportedError("this variant's run cannot take new points between steps (out-of-core)");
}

void PreparedRun::set_generated_rows(const GeneratorSpec&, int64_t) {
  throw UnsupportedError("this variant's run cannot make a generator's rows in its own kernel");
}

}  // namespace mk
