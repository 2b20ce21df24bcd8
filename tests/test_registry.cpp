// The variant registry and the parameter-space contract every variant declares as data.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "variants/variant.hpp"
#include "tests/synthetic_devices.hpp"

namespace mk {
namespace {

using testing_support::h100_like;
using testing_support::t4_like;

// Shapes chosen to stress the parameter spaces: tiny, the seed's table shapes, wide, many K.
std::vector<Problem> probe_problems() {
  std::vector<Problem> problems;
  auto add = [&](int64_t m, int n, int kmin, int kmax) {
    Problem p;
    p.m = m;
    p.n = n;
    p.k = KRange{kmin, kmax};
    problems.push_back(p);
  };
  add(1000, 2, 3, 3);
  add(int64_t(1) << 20, 4, 3, 5);
  add(int64_t(1) << 25, 8, 3, 7);
  add(int64_t(1) << 25, 12, 3, 12);
  add(int64_t(1) << 21, 32, 16, 16);
  add(int64_t(1) << 21, 128, 256, 256);
  return problems;
}



DeviceInfo cpu_only() {
  DeviceInfo d;
  d.is_gpu = false;
  d.name = "CPU-only host (synthetic)";
  d.cpu_threads = 2;
  return d;
}

std::vector<DeviceInfo> devices_for(const Variant& variant) {
  if (variant.runs_on_gpu()) return {h100_like(), t4_like()};
  return {cpu_only()};
}

TEST(Registry, ListsTheCpuBaselineAndTheNaiveGpuBaseline) {
  std::set<std::string> names;
  for (const Variant* v : Registry::instance().all()) names.insert(v->name());
  EXPECT_TRUE(names.count("cpu-openmp"));
  EXPECT_TRUE(names.count("naive-atomics"));
  EXPECT_FALSE(Registry::instance().get("cpu-openmp").runs_on_gpu());
  EXPECT_TRUE(Registry::instance().get("naive-atomics").runs_on_gpu());
}

TEST(Registry, AllIsSortedByNameAndNamesAreUnique) {
  std::vector<std::string> names;
  for (const Variant* v : Registry::instance().all()) names.push_back(v->name());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(Registry, UnknownNameIsAnInputErrorListingKnownNames) {
  EXPECT_EQ(Registry::instance().find("no-such-variant"), nullptr);
  try {
    Registry::instance().get("no-such-variant");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no-such-variant"), std::string::npos) << message;
    EXPECT_NE(message.find("cpu-openmp"), std::string::npos) << message;
    EXPECT_EQ(e.exit_code, kExitBadInput);
  }
}

TEST(Registry, RegisteringADuplicateNameIsRejected) {
  class Duplicate : public Variant {
   public:
    std::string name() const override { return "cpu-openmp"; }
    std::string description() const override { return "duplicate"; }
    bool runs_on_gpu() const override { return false; }
    std::optional<std::string> can_implement(const Problem&, const DeviceInfo&) const override { return {}; }
    ParamSpace param_space(const Problem&, const DeviceInfo&) const override { return {}; }
    Params default_params(const Problem&, const DeviceInfo&) const override { return Params::object(); }
    std::unique_ptr<PreparedRun> prepare(const Problem&, const Dataset&, const Params&,
                                         const DeviceInfo&) const override {
      return nullptr;
    }
  };
  const size_t before = Registry::instance().all().size();
  EXPECT_ANY_THROW(Registry::instance().add(std::make_unique<Duplicate>()));
  EXPECT_EQ(Registry::instance().all().size(), before);
}

// block ∈ {64,128,256}, ppt ∈ {1,4,16}, restriction block*ppt <= 1024.
ParamSpace toy_space() {
  ParamSpace space;
  space.axes.push_back({"block", {64, 128, 256}, "threads per block"});
  space.axes.push_back({"ppt", {1, 4, 16}, "points per thread"});
  space.axes.push_back({"layout", {"aos", "soa"}, "layout"});
  space.restrictions.push_back({"block*ppt <= 1024", [](const Params& p) {
                                  return p.at("block").get<int>() * p.at("ppt").get<int>() <= 1024;
                                }});
  return space;
}

TEST(ParamSpace, CheckAcceptsALegalPoint) {
  EXPECT_EQ(toy_space().check({{"block", 64}, {"ppt", 16}, {"layout", "soa"}}), std::nullopt);
}

TEST(ParamSpace, CheckNamesAMissingParameter) {
  auto reason = toy_space().check({{"block", 64}, {"layout", "aos"}});
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("ppt"), std::string::npos) << *reason;
}

TEST(ParamSpace, CheckRejectsAValueOutsideTheAxis) {
  auto reason = toy_space().check({{"block", 96}, {"ppt", 1}, {"layout", "aos"}});
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("96"), std::string::npos) << *reason;
}

TEST(ParamSpace, CheckRejectsAValueOfTheWrongType) {
  EXPECT_TRUE(toy_space().check({{"block", "64"}, {"ppt", 1}, {"layout", "aos"}}));
}

TEST(ParamSpace, CheckRejectsAnUnknownParameter) {
  auto reason = toy_space().check({{"block", 64}, {"ppt", 1}, {"layout", "aos"}, {"grid", 3}});
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("grid"), std::string::npos) << *reason;
}

TEST(ParamSpace, CheckQuotesTheViolatedRestriction) {
  auto reason = toy_space().check({{"block", 256}, {"ppt", 16}, {"layout", "aos"}});
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("block*ppt <= 1024"), std::string::npos) << *reason;
}

TEST(ParamSpace, EnumerateListsExactlyTheLegalPointsInAxisOrder) {
  const ParamSpace space = toy_space();
  EXPECT_EQ(space.size_unrestricted(), 18u);
  const auto points = space.enumerate();
  // Illegal: block=128,ppt=16 and block=256,ppt=16, for each of 2 layouts.
  EXPECT_EQ(points.size(), 14u);
  for (const auto& p : points) EXPECT_EQ(space.check(p), std::nullopt) << p.dump();
  // The first axis varies slowest.
  EXPECT_EQ(points.front(), (Params{{"block", 64}, {"ppt", 1}, {"layout", "aos"}}));
  EXPECT_EQ(points[1], (Params{{"block", 64}, {"ppt", 1}, {"layout", "soa"}}));
  EXPECT_EQ(points.back(), (Params{{"block", 256}, {"ppt", 4}, {"layout", "soa"}}));
  std::set<std::string> distinct;
  for (const auto& p : points) distinct.insert(p.dump());
  EXPECT_EQ(distinct.size(), points.size());
}

TEST(ParamSpace, RepeatsAreLegalButNotEnumerated) {
  ParamSpace space = toy_space();
  space.repeats.push_back({"layout=soa repeats aos", [](const Params& p) { return p.at("layout") != "soa"; }});
  const Params soa{{"block", 64}, {"ppt", 1}, {"layout", "soa"}};
  EXPECT_EQ(space.check(soa), std::nullopt) << "a repeat is still a legal point";
  const auto points = space.enumerate();
  EXPECT_EQ(points.size(), 7u);  // the 14 legal points less their 7 soa twins
  for (const auto& p : points) EXPECT_EQ(p.at("layout"), "aos") << p.dump();
  EXPECT_EQ(space.to_json().at("repeats")[0], "layout=soa repeats aos");
}

TEST(ParamSpace, EmptySpaceHasOneEmptyPoint) {
  const ParamSpace space;
  EXPECT_EQ(space.enumerate().size(), 1u);
  EXPECT_EQ(space.size_unrestricted(), 1u);
}

TEST(ParamSpace, ToJsonCarriesAxesAndRestrictionText) {
  const auto json = toy_space().to_json();
  ASSERT_EQ(json.at("axes").size(), 3u);
  EXPECT_EQ(json.at("axes")[0].at("name"), "block");
  EXPECT_EQ(json.at("axes")[0].at("values"), (nlohmann::json{64, 128, 256}));
  EXPECT_EQ(json.at("restrictions")[0], "block*ppt <= 1024");
}

TEST(ResolveParams, UnknownParameterIsUnsupported) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  Problem p = probe_problems()[0];
  EXPECT_THROW(resolve_params(cpu, p, cpu_only(), {{"no_such_knob", 1}}), UnsupportedError);
}

TEST(ResolveParams, IllegalValueIsUnsupportedAndNamesTheParameter) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  Problem p = probe_problems()[0];
  try {
    resolve_params(cpu, p, cpu_only(), {{"schedule_chunk", 3}});
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule_chunk"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code, kExitUnsupported);
  }
}

TEST(ResolveParams, OverridesMergeOverDefaults) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  Problem p = probe_problems()[0];
  const Params params = resolve_params(cpu, p, cpu_only(), {{"schedule_chunk", 1024}});
  EXPECT_EQ(params.at("schedule_chunk"), 1024);
  EXPECT_EQ(params.at("threads"), cpu.default_params(p, cpu_only()).at("threads"));
}

TEST(ResolveParams, EmptyOverridesGiveTheDefaults) {
  const Variant& naive = Registry::instance().get("naive-atomics");
  Problem p = probe_problems()[1];
  EXPECT_EQ(resolve_params(naive, p, h100_like(), Params::object()), naive.default_params(p, h100_like()));
}

TEST(ParamsLabel, IsCommaSeparatedKeyValueWithBareStrings) {
  EXPECT_EQ(params_label({{"block", 256}, {"layout", "soa"}}), "block=256,layout=soa");
  EXPECT_EQ(params_label(Params::object()), "");
}

TEST(EveryVariant, HasANameDescriptionAndANonEmptyParamSpaceForShapesItAccepts) {
  for (const Variant* v : Registry::instance().all()) {
    SCOPED_TRACE(v->name());
    EXPECT_FALSE(v->name().empty());
    EXPECT_EQ(v->name().find_first_of(" /,="), std::string::npos) << "name is used in row names and paths";
    EXPECT_FALSE(v->description().empty());
    for (const DeviceInfo& device : devices_for(*v))
      for (const Problem& p : probe_problems()) {
        const ParamSpace space = v->param_space(p, device);
        EXPECT_FALSE(space.axes.empty()) << p.str() << " on " << device.name;
        // A refused shape may leave an axis without options; an accepted one must not,
        // or the tuner would have nothing to try.
        if (v->can_implement(p, device)) continue;
        for (const Axis& axis : space.axes)
          EXPECT_FALSE(axis.values.empty()) << axis.name << " for " << p.str() << " on " << device.name;
        EXPECT_FALSE(space.enumerate().empty()) << "no legal point for " << p.str() << " on " << device.name;
      }
  }
}

TEST(EveryVariant, DefaultParamsAreALegalPointOfItsOwnSpace) {
  int checked = 0;
  for (const Variant* v : Registry::instance().all())
    for (const DeviceInfo& device : devices_for(*v))
      for (const Problem& p : probe_problems()) {
        if (v->can_implement(p, device)) continue;  // a refused shape may have no sensible default
        const Params params = v->default_params(p, device);
        EXPECT_EQ(v->param_space(p, device).check(params), std::nullopt)
            << v->name() << " " << p.str() << " on " << device.name << ": " << params.dump();
        ++checked;
      }
  EXPECT_GT(checked, 0);
}

TEST(EveryVariant, GpuVariantsGiveAReasonOnACpuOnlyMachine) {
  int gpu_variants = 0;
  for (const Variant* v : Registry::instance().all()) {
    if (!v->runs_on_gpu()) continue;
    ++gpu_variants;
    for (const Problem& p : probe_problems()) {
      std::optional<std::string> reason;
      EXPECT_NO_THROW(reason = v->can_implement(p, cpu_only())) << v->name();
      ASSERT_TRUE(reason.has_value()) << v->name() << " claims it can run " << p.str() << " without a GPU";
      EXPECT_FALSE(reason->empty()) << v->name();
    }
  }
  EXPECT_GT(gpu_variants, 0);
}

// A variant that accepts points streamed in chunks must work from the chunk it is given, so the
// list in kRefuseStreamed is the whole truth: every variant it leaves out refuses with it.
// gemm-window accepted them and read the full data's rows while preparing (a null pointer in an
// out-of-core fit), found by review at 04dfbaa.
TEST(EveryVariant, StreamedPointsAreRefusedByExactlyTheVariantsTheRefusalLeavesOut) {
  const std::string refusal = kRefuseStreamed;
  const std::string can = refusal.substr(refusal.rfind(';') + 1);
  for (const Variant* v : Registry::instance().all())
    for (const DeviceInfo& device : devices_for(*v))
      for (Problem p : probe_problems()) {
        if (v->name() == "auto") continue;  // it runs one of the others, checked here on their own
        p.streamed = true;
        const std::optional<std::string> reason = v->can_implement(p, device);
        if (reason == refusal) continue;
        const bool named = can.find(" " + v->name() + ",") != std::string::npos ||
                           can.find(" " + v->name() + " ") != std::string::npos;
        EXPECT_TRUE(named || reason.has_value())
            << v->name() << " takes streamed points for " << p.str() << " on " << device.name
            << " but kRefuseStreamed does not name it among those that can";
      }
}

TEST(EveryVariant, CanImplementNeverThrowsForProbeShapes) {
  for (const Variant* v : Registry::instance().all())
    for (const DeviceInfo& device : devices_for(*v))
      for (const Problem& p : probe_problems())
        EXPECT_NO_THROW(v->can_implement(p, device)) << v->name() << " " << p.str() << " on " << device.name;
}

TEST(CpuOpenMp, ThreadCountsAboveTheHardwareAreRestricted) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  const Problem p = probe_problems()[0];
  const ParamSpace space = cpu.param_space(p, cpu_only());
  const int hardware = omp_get_num_procs();
  for (const auto& value : space.find("threads")->values) {
    const int threads = value.get<int>();
    const bool legal = !space.check({{"threads", threads}, {"schedule_chunk", 8192}}).has_value();
    EXPECT_EQ(legal, threads == 0 || threads <= hardware) << threads << " threads on " << hardware << " processors";
  }
}

}  // namespace
}  // namespace mk
