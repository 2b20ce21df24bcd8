#pragma once
// The shapes each GPU variant must accept on Hopper (CC 9.0), written down from what each
// declares it can do (its can_implement limits, README's variant table). GPU tests run these
// shapes and fail, not skip, when a Hopper GPU refuses one: a variant that wrongly starts
// refusing must not show as skipped. On CPU, tests/test_variant_claims.cpp checks the same
// claims against the synthetic H100 and H200 descriptions.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"

namespace mk::testing_support {

struct ShapeClaim {
  int n;
  KRange k;
};

// The M every claim holds for: the generic GPU tests' sizes.
inline const std::vector<int64_t>& claim_points() {
  static const std::vector<int64_t> points = {1000, 100000};
  return points;
}

inline std::vector<ShapeClaim> grid_of(const std::vector<int>& dims, const std::vector<KRange>& ks) {
  std::vector<ShapeClaim> claims;
  for (int n : dims)
    for (const KRange& k : ks) claims.push_back({n, k});
  return claims;
}

// Variant name -> the shapes it must accept on Hopper. A GPU variant missing here fails
// tests/test_variant_claims.cpp: a new variant names its shapes when it is added.
inline const std::map<std::string, std::vector<ShapeClaim>>& hopper_claims() {
  static const std::map<std::string, std::vector<ShapeClaim>> claims = [] {
    const std::vector<KRange> ranges = {KRange{3, 3}, KRange{3, 7}, KRange{16, 16}};
    const std::vector<ShapeClaim> general = grid_of({2, 4, 8, 32}, ranges);
    std::map<std::string, std::vector<ShapeClaim>> table;
    for (const char* name : {"naive-atomics", "shared-atomics", "registers-multik", "gemm-cublas", "gemm-tf32x3",
                             "csr-sparse", "auto"})
      table[name] = general;
    // ⌈ΣK/8⌉·⌈N/8⌉ ≤ 8 register-resident tiles: N=32 takes ΣK ≤ 16.
    table["tensor-multik"] = grid_of({2, 4, 8}, ranges);
    for (const ShapeClaim& claim : grid_of({32}, {KRange{3, 3}, KRange{16, 16}})) table["tensor-multik"].push_back(claim);
    // N=64 with one small K: its default block steps down to one whose rings fit.
    table["tensor-multik"].push_back(ShapeClaim{64, KRange{8, 8}});
    // ΣK beyond one tensor-multik pass (64 slots up to N=8, 32 at N=16), split into passes.
    table["tensor-multik-passes"] = grid_of({2, 4, 8}, {KRange{3, 12}});
    table["tensor-multik-passes"].push_back(ShapeClaim{16, KRange{3, 9}});
    // Lanes split the dimensions: N ≥ 16.
    table["warp-centric"] = grid_of({16, 32, 64}, ranges);
    // One K ≥ 64 per run, N ≤ 128 (96 and 128 dims on the wide kernels, 70 zero-padded).
    table["tf32-window"] = grid_of({2, 8, 32, 64}, {KRange{64, 64}, KRange{256, 256}});
    for (const ShapeClaim& claim : grid_of({70, 128}, {KRange{100, 100}, KRange{300, 300}}))
      table["tf32-window"].push_back(claim);
    // A table that leaves no room for 16 warps of scratch: the default block steps down.
    table["tf32-window"].push_back(ShapeClaim{48, KRange{2000, 2000}});
    // N <= 1024, any K up to 8192 and ranges of up to 64 Ks (sm_80+): the general grid and wide rows.
    table["gemm-window"] = general;
    for (const ShapeClaim& claim : grid_of({128, 1000}, {KRange{100, 100}, KRange{30, 40}})) table["gemm-window"].push_back(claim);
    return table;
  }();
  return claims;
}

inline const std::vector<ShapeClaim>& claims_of(const std::string& variant) {
  static const std::vector<ShapeClaim> none;
  const auto it = hopper_claims().find(variant);
  return it == hopper_claims().end() ? none : it->second;
}

// The claimed shape a fixed-shape test should run: `preferred` when claimed, else the widest
// claimed shape (largest N, then largest ΣK), so every variant runs the test at some shape.
inline ShapeClaim pick_claim(const std::string& variant, ShapeClaim preferred) {
  const std::vector<ShapeClaim>& claims = claims_of(variant);
  for (const ShapeClaim& claim : claims)
    if (claim.n == preferred.n && claim.k.kmin == preferred.k.kmin && claim.k.kmax == preferred.k.kmax) return claim;
  if (claims.empty()) return preferred;
  return *std::max_element(claims.begin(), claims.end(), [](const ShapeClaim& a, const ShapeClaim& b) {
    return a.n != b.n ? a.n < b.n : a.k.sum() < b.k.sum();
  });
}

// Claims are about Hopper; elsewhere (a T4, an A100) a refusal may be the device's limit.
inline bool claims_apply_to(const DeviceInfo& device) { return device.is_gpu && device.cc_major == 9; }

}  // namespace mk::testing_support
