// The shapes every GPU variant claims on Hopper (tests/variant_claims.hpp), checked on CPU
// against the synthetic H100 and H200: each is accepted, and its default parameters resolve.
// The GPU tests run the same shapes and fail on a refusal, so together a variant that starts
// refusing a shape it should run shows as a failure, never as a skip.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.hpp"
#include "tests/synthetic_devices.hpp"
#include "tests/variant_claims.hpp"
#include "variants/variant.hpp"

namespace mk {

// variants/auto_select.cpp (not in a header: the tests check the rule directly).
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold);

namespace {

using testing_support::claim_points;
using testing_support::claims_of;
using testing_support::hopper_claims;

std::vector<DeviceInfo> hopper_devices() { return {testing_support::h100_like(), testing_support::h200()}; }

void expect_accepted(const Variant& variant, const Problem& problem, const DeviceInfo& device) {
  SCOPED_TRACE(variant.name() + " " + problem.str() + " sparsity " + std::to_string(problem.sparsity) + " on " +
               device.name);
  const auto refusal = variant.can_implement(problem, device);
  EXPECT_FALSE(refusal.has_value()) << "refused a claimed shape: " << refusal.value_or("");
  if (refusal) return;
  try {
    resolve_params(variant, problem, device, Params::object());
  } catch (const Error& error) {
    ADD_FAILURE() << "accepted, but its default parameters do not resolve: " << error.what();
  }
}

TEST(VariantClaims, EveryGpuVariantNamesTheShapesItMustAccept) {
  int gpu_variants = 0;
  for (const Variant* variant : Registry::instance().all()) {
    if (!variant->runs_on_gpu()) continue;
    ++gpu_variants;
    EXPECT_FALSE(claims_of(variant->name()).empty())
        << variant->name() << " has no entry in tests/variant_claims.hpp: name the shapes it must accept on Hopper";
  }
  EXPECT_GT(gpu_variants, 0);
  for (const auto& [name, claims] : hopper_claims())
    EXPECT_NE(Registry::instance().find(name), nullptr) << "tests/variant_claims.hpp names unknown variant " << name;
}

TEST(VariantClaims, ClaimedShapesAreAcceptedOnSyntheticHopper) {
  int checked = 0;
  for (const auto& [name, claims] : hopper_claims()) {
    const Variant* variant = Registry::instance().find(name);
    if (!variant) continue;  // reported by the test above
    for (const DeviceInfo& device : hopper_devices())
      for (const auto& claim : claims)
        for (int64_t m : claim_points()) {
          Problem problem;
          problem.m = m;
          problem.n = claim.n;
          problem.k = claim.k;
          expect_accepted(*variant, problem, device);
          ++checked;
        }
  }
  EXPECT_GT(checked, 100);
}

// The shapes the fixed-shape GPU tests pick (sparse data at 90 % zeros, a step without labels).
TEST(VariantClaims, PickedShapesOfTheFixedShapeGpuTestsAreAccepted) {
  for (const auto& [name, claims] : hopper_claims()) {
    const Variant* variant = Registry::instance().find(name);
    if (!variant) continue;
    for (const DeviceInfo& device : hopper_devices()) {
      const auto sparse = testing_support::pick_claim(name, {32, KRange{3, 7}});
      Problem problem;
      problem.m = 100000;
      problem.n = sparse.n;
      problem.k = sparse.k;
      problem.sparsity = 0.9;
      expect_accepted(*variant, problem, device);
      const auto labels = testing_support::pick_claim(name, {8, KRange{3, 7}});
      problem.n = labels.n;
      problem.k = labels.k;
      problem.sparsity = 0.0;
      expect_accepted(*variant, problem, device);
    }
  }
}

// Beyond the claims: wherever a GPU variant (auto included) accepts a shape on the synthetic
// Hopper devices or a T4, its default parameters satisfy its own restrictions. tf32-window once
// accepted N=48 K=2000 and then refused its own default block of 512 (the held-out suite on an
// H200, reports/results/nvidia-h200/mainstream-heldout.json at 2af15e6), and auto, delegating to
// it, refused the shape.
TEST(VariantClaims, AcceptedShapesResolveTheirDefaultParameters) {
  const std::vector<int> dims{1, 2, 3, 4, 8, 16, 24, 32, 48, 52, 56, 60, 64, 96, 128, 200, 256, 512, 768, 784, 1024};
  const std::vector<KRange> ks{{2, 2},       {3, 3},       {8, 8},       {32, 32},     {64, 64},
                               {100, 100},   {128, 128},   {255, 255},   {256, 256},   {300, 300},
                               {512, 512},   {1000, 1000}, {1024, 1024}, {2000, 2000}, {4096, 4096},
                               {3, 7},       {3, 12},      {5, 20},      {2, 64},      {60, 70}};
  int accepted = 0;
  std::vector<DeviceInfo> devices = hopper_devices();
  devices.push_back(testing_support::t4_like());  // the default build's oldest target, sm_75
  for (const Variant* variant : Registry::instance().all()) {
    if (!variant->runs_on_gpu()) continue;
    for (const DeviceInfo& device : devices)
      for (int n : dims)
        for (const KRange& k : ks)
          for (int64_t m : {int64_t(65536), int64_t(1) << 20, int64_t(1) << 24}) {
            Problem problem;
            problem.m = m;
            problem.n = n;
            problem.k = k;
            if (variant->can_implement(problem, device)) continue;
            ++accepted;
            try {
              resolve_params(*variant, problem, device, Params::object());
            } catch (const Error& error) {
              ADD_FAILURE() << variant->name() << " accepts " << problem.str() << " on " << device.name
                            << " but its default parameters do not resolve: " << error.what();
            }
          }
  }
  EXPECT_GT(accepted, 1000);
}

// auto runs every shape some GPU variant runs with its defaults (it never refuses where a
// variant it could delegate to would run), on the same grid of shapes and devices.
TEST(VariantClaims, AutoRunsEveryShapeSomeGpuVariantRuns) {
  const Variant& automatic = Registry::instance().get("auto");
  const std::vector<int> dims{1, 2, 3, 8, 16, 32, 48, 64, 96, 128, 200, 512, 784, 1024};
  const std::vector<KRange> ks{{2, 2},     {3, 3},     {8, 8},       {32, 32},     {64, 64},     {100, 100},
                               {128, 128}, {256, 256}, {300, 300},   {1000, 1000}, {2000, 2000}, {4096, 4096},
                               {3, 7},     {3, 12},    {5, 20},      {2, 64}};
  std::vector<DeviceInfo> devices = hopper_devices();
  devices.push_back(testing_support::t4_like());
  int runnable = 0;
  for (const DeviceInfo& device : devices)
    for (int n : dims)
      for (const KRange& k : ks) {
        Problem problem;
        problem.m = int64_t(1) << 20;
        problem.n = n;
        problem.k = k;
        std::string runner;
        for (const Variant* variant : Registry::instance().all()) {
          if (!variant->runs_on_gpu() || variant->name() == "auto" || variant->name() == "csr-sparse") continue;
          if (variant->can_implement(problem, device)) continue;
          try {
            resolve_params(*variant, problem, device, Params::object());
            runner = variant->name();
            break;
          } catch (const Error&) {
          }
        }
        if (runner.empty()) continue;
        ++runnable;
        const auto refusal = automatic.can_implement(problem, device);
        EXPECT_FALSE(refusal.has_value()) << "auto refuses " << problem.str() << " on " << device.name << ", which "
                                          << runner << " runs: " << refusal.value_or("");
        // And the delegate it would prepare runs with its defaults (auto's prepare falls back
        // to them when no tuned entry applies).
        const std::string delegate = choose_auto_delegate(problem, device, 0.7).first;
        if (delegate.empty()) continue;
        try {
          resolve_params(Registry::instance().get(delegate), problem, device, Params::object());
        } catch (const Error& error) {
          ADD_FAILURE() << "auto delegates " << problem.str() << " on " << device.name << " to " << delegate
                        << ", whose defaults do not resolve: " << error.what();
        }
      }
  EXPECT_GT(runnable, 300);
}

TEST(VariantClaims, PickFallsBackToTheWidestClaimedShape) {
  // tf32-window runs one K ≥ 64: a test preferring K=3..7 gets its widest claim instead
  // (N=128 K=300, on the wide kernels).
  const auto picked = testing_support::pick_claim("tf32-window", {32, KRange{3, 7}});
  EXPECT_EQ(picked.n, 128);
  EXPECT_EQ(picked.k.kmax, 300);
  const auto kept = testing_support::pick_claim("naive-atomics", {32, KRange{3, 7}});
  EXPECT_EQ(kept.n, 32);
  EXPECT_EQ(kept.k.kmin, 3);
  EXPECT_EQ(kept.k.kmax, 7);
}

}  // namespace
}  // namespace mk
