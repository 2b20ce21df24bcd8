// auto: a meta-variant that picks a real variant for the problem and hands back that
// variant's PreparedRun, so it times exactly what the delegate does.
//
// Rule (seed 004 measures sparsity before launching and only uses CSR on sparse data):
//   sparsity ≥ sparse_threshold and csr-sparse can run   → csr-sparse
//   otherwise the first dense GPU variant that is registered and can run, in the order
//   measured at the closest shape of the problem's N and K classes (its own M class first) in the device's tuned configuration's
//   "auto" table (tuner/config.hpp, written by scripts/fit-auto-table.py from suite results; docs/tuning.md,
//   "auto's measured order"), then in the built-in order for the shape class (dense_preference
//   below; from the H200 kernels suite, reports/results/nvidia-h200/kernels/).
// The sparsity is Problem::sparsity, which the CLI copies from Dataset::sparsity (the
// fraction of exact zeros counted when the data was loaded or generated); csr-sparse counts
// it again on the device while it builds the CSR, but auto has to decide before that. The
// delegate runs with its own default parameters; auto's only parameter is the threshold.
//
// sparse_threshold defaults to 0.7: seed 004 found CSR ahead at 80-95% zeros and behind on
// dense data; at 70% zeros a row carries 30% of its values, so the gather-based CSR dot
// products touch about a third of the bytes of a dense pass, which is where they start to
// repay their irregular access. The tuner can move it.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "variants/tuned_params.hpp"
#include "variants/variant.hpp"

namespace mk {

// Dense delegates in order of preference for the shape. On the H200 kernels suite (M 2M
// and 8M, defaults): N=128 was won by warp-centric at K=16, 64, 1024 and 4096 (gemm-cublas
// at 256); below that, registers-multik won every K ≤ 64 and gemm-tf32x3 every K ≥ 256
// except N=4 K=256 (within 7 %). shared-atomics had been the fallback there and ran
// 1.4–15x slower than gemm-tf32x3 at K ≥ 1024. Only N ∈ {4,8,16,32,128} and K ∈ {16,64,256,
// 1024,4096} were measured: the boundaries N=64 and K=256 between them are extrapolated.
// tensor-multik (commit 9ba5d6b) then beat registers-multik on all four small-K cases of issue 4
// (N=4/8/16 with K=3..5/3..7, N=8 K=16 at 8M) and on every K range and every N=12 row of
// table2 (H200, registers-multik tuned). With its FP16 update (commit ec3d72e, table2, best
// parameters of each) it also took every single K at N=8 (K=3..5 by 5–9 %, K=25 by 4 %) and
// N=12; registers-multik stays ahead only at N=4 for K=3 (26 %), K=4 (3 %) and K=25 (16 %),
// so one K ≤ 4 or > 16 at N ≤ 4 goes to it (N=5..7 are not measured: they follow N=8).
// tensor-multik refuses ΣK > 64 and wide tiles, which fall through to registers-multik. tf32-window
// (commit 16597f1) took one K ≥ 128 from every other variant (N=32 M=2M: K=128 0.89 against
// registers-multik's 5.89 ms, K=256 0.94 against gemm-tf32x3's 3.61, K=1024 1.82 against
// 9.54; N=8 M=8M K=128: 2.10 against 2.90); at K=64 it won at N=32 but lost at N=8, so the
// boundary is K=128. It refuses K ranges, N > 128 and centroid tables beyond
// shared memory, which fall through to the class's chain.
// gemm-window (issue 32's mainstream shapes) goes first for N ≥ 64 with a K of 48 or more: on
// an H100 at 325a8bc it beat warp-centric, the chain's first, on every row measured (N=128
// K=1024 M=2M 12.6 against 87.0 ms, N=64 K=256 M=4M 6.70 against 59.4, N=128 K=100 M=1M 2.89
// against 3.68; reports/results/nvidia-h100-80gb-hbm3/mainstream.txt). The mid-n suite (H200,
// 76de9f5, reports/results/nvidia-h200/mid-n.json, M=8M) moved its boundary to K=48: one K=48
// went to it at every N measured (N=20 2.51 ms against registers-multik's 2.92, N=32 2.47
// against 4.91, N=48 4.46 where registers-multik refuses, N=64 4.94 and N=96 8.50 against
// warp-centric's 13.0 and 13.2), and it is first for one K of 48..127 from N=20. Below K=48
// the order was mixed (K=32: registers-multik 0.80 against 2.49 at N=20, a tie at N=32,
// gemm-window 4.42 against 4.96 at N=48) and stays with the chain; the table decides there.

//
// tf32-window's kernels of 96 and 128 dims (b809491, 909355b) took one K of 100 and more at
// N = 64..128 from gemm-window on the H200: 128/100/1M 0.942 ms against 1.730, 64/256/4M 1.765
// against 3.755, 128/512/1M 1.967 against 2.540, 96/256/2M 1.808 against 3.414
// (reports/results/nvidia-h200/ab/tf32-window-measured-window.txt, gemm-window-update.txt,
// tf32-window-wide-rows.txt);
// K = 64..99 there is not measured and stays with gemm-window.
std::vector<std::string> dense_preference(const Problem& problem) {
  const bool single_k = problem.k.kmin == problem.k.kmax;
  if (problem.n >= 64 && problem.k.kmax >= 48) {
    std::vector<std::string> wide{"gemm-window", "warp-centric", "gemm-cublas", "gemm-tf32x3", "shared-atomics",
                                  "naive-atomics"};
    if (single_k && problem.n <= 128 && problem.k.kmax >= 100) wide.insert(wide.begin(), "tf32-window");
    return wide;
  }
  if (problem.n >= 64) return {"warp-centric", "gemm-cublas", "gemm-tf32x3", "shared-atomics", "naive-atomics"};
  std::vector<std::string> chain;
  if (problem.k.kmax < 256 && problem.n <= 4 && single_k && (problem.k.kmax <= 4 || problem.k.kmax > 16))
    chain = {"registers-multik", "tensor-multik", "shared-atomics", "gemm-tf32x3", "naive-atomics"};
  else if (problem.k.kmax < 256)
    chain = {"tensor-multik", "registers-multik", "shared-atomics", "gemm-tf32x3", "naive-atomics"};
  else
    chain = {"gemm-tf32x3", "gemm-cublas", "registers-multik", "shared-atomics", "naive-atomics"};
  // A range beyond one tensor-multik pass at N = 4..16 goes to tensor-multik-passes, right after
  // tensor-multik (which takes the range when one pass holds it). Against registers-multik on an
  // H200 (908b37d, b8889ba; reports/results/nvidia-h200/tensor-multik-passes-ranges.txt):
  // N=8 K=3..12 M=32M 1.397 ms against 3.915, N=4 K=3..12 1.359 against 2.644, N=8 K=8..14
  // M=16M 0.716 against 1.966, N=16 K=3..9 M=16M 0.797 against 2.232; at N=2 K=10..16 M=32M
  // registers-multik was ahead, 2.609 against 2.807, so N < 4 keeps it.
  if (problem.n >= 4 && problem.n <= 16 && problem.k.kmax < 256)
    chain.insert(std::find(chain.begin(), chain.end(), "tensor-multik") + 1, "tensor-multik-passes");
  if (single_k && problem.k.kmax >= 128) chain.insert(chain.begin(), "tf32-window");
  // One K in 48..127 at N = 20..63: gemm-window ran N=32 K=64 M=16M in 6.88 ms against the
  // chain's 13.06 (H100, 89f67ae, reports/results/nvidia-h100-80gb-hbm3/mainstream.txt), and
  // K=48 at N=20, 32 and 48 on the H200 (mid-n.json, above).
  if (single_k && problem.n >= 20 && problem.k.kmax >= 48 && problem.k.kmax < 128)
    chain.insert(chain.begin(), "gemm-window");
  return chain;
}

// The delegate's name and why it was chosen; an empty name means nothing can run, and the
// text says why. Not static: tests/test_variant_spaces.cpp checks the rule directly.
std::pair<std::string, std::string> choose_auto_delegate(const Problem& problem, const DeviceInfo& device,
                                                         double sparse_threshold) {
  const Registry& registry = Registry::instance();
  char sparsity_text[96];
  std::snprintf(sparsity_text, sizeof sparsity_text, "sparsity %.3f %s threshold %.2f", problem.sparsity,
                problem.sparsity >= sparse_threshold ? ">=" : "<", sparse_threshold);
  std::string refusals;
  if (problem.sparsity >= sparse_threshold) {
    if (const Variant* csr = registry.find("csr-sparse")) {
      const auto refusal = csr->can_implement(problem, device);
      if (!refusal) return {"csr-sparse", sparsity_text};
      refusals = "csr-sparse: " + *refusal;
    } else {
      refusals = "csr-sparse is not registered";
    }
  }
  // Measured first: the variants of the closest measured shape of the problem's N and K classes, fastest
  // first (issue 32: auto's choice from measurements); then the built-in chain for the shape
  // class, which is what a device without such a table gets.
  std::string measured_from;
  std::vector<std::string> order;
  if (auto measured = measured_variant_order(problem, device, &measured_from))
    for (const std::string& name : *measured)
      if (name != "auto" && name != "csr-sparse") order.push_back(name);
  const size_t measured_count = order.size();
  for (const std::string& name : dense_preference(problem))
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& name = order[i];
    const Variant* dense = registry.find(name);
    if (!dense || !dense->runs_on_gpu()) continue;
    auto refusal = dense->can_implement(problem, device);
    // A delegate that accepts the shape but cannot run it with its own defaults would make
    // auto refuse a shape the next variant runs (tf32-window at N=48 K=2000 on an H200,
    // mainstream-heldout.json at 2af15e6): it counts as refusing.
    if (!refusal) try {
        resolve_params(*dense, problem, device, Params::object());
      } catch (const std::exception& error) {
        std::string text = error.what();
        if (text.rfind(name + " ", 0) == 0) text.erase(0, name.size() + 1);  // the list names it already
        refusal = text;
      }
    if (!refusal) {
      std::string reason = std::string(sparsity_text) + ": dense, " +
                           (i < measured_count ? "the fastest that runs at " + measured_from
                                               : std::string("the built-in order for the shape class"));
      if (!refusals.empty()) reason += " (" + refusals + ")";
      return {name, reason};
    }
    refusals += (refusals.empty() ? "" : "; ") + name + ": " + *refusal;
  }
  return {"", refusals.empty() ? "no delegate variant is registered" : refusals};
}

namespace {

constexpr double kDefaultSparseThreshold = 0.7;

double threshold_of(const Params& params) {
  return params.contains("sparse_threshold") ? params.at("sparse_threshold").get<double>() : kDefaultSparseThreshold;
}

class AutoSelect : public Variant {
 public:
  std::string name() const override { return "auto"; }
  std::string description() const override {
    return "meta-variant: csr-sparse when the data's sparsity reaches sparse_threshold, else the dense variant "
           "measured fastest at the closest shape of the problem's N and K classes (its own M class first, any above 1M points) in the tuned configuration's auto table, else the built-in order "
           "for the shape class (warp-centric for N >= 64, gemm-window first there for K >= 48 and tf32-window before it for "
           "one K >= 100 up to N = 128; for K < 256 tensor-multik, "
           "except one K <= 4 or > 16 at N <= 4: registers-multik; gemm-tf32x3 above; tf32-window first for one "
           "K >= 128, gemm-window first for one K of 48..127 at N >= 20), with the delegate's tuned-config entry where one applies, else its defaults";
  }
  bool runs_on_gpu() const override { return true; }

  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    if (!device.is_gpu) return "needs a CUDA GPU";
    // The default threshold decides which delegate is asked; a dense fallback exists for
    // every threshold, so if no delegate can run at the default none can at another.
    const auto [delegate, reason] = choose_auto_delegate(problem, device, kDefaultSparseThreshold);
    if (delegate.empty()) return "no delegate can run: " + reason;
    return std::nullopt;
  }

  ParamSpace param_space(const Problem&, const DeviceInfo&) const override {
    ParamSpace space;
    space.axes.push_back({"sparse_threshold", {0.5, 0.6, 0.7, 0.8, 0.9},
                          "fraction of exact zeros at or above which csr-sparse is chosen"});
    return space;
  }

  Params default_params(const Problem&, const DeviceInfo&) const override {
    return {{"sparse_threshold", kDefaultSparseThreshold}};
  }

  // The footprint of the delegate prepare() would choose, with its default parameters (a
  // tuned entry changes tiles and layouts, not what dominates: the points and their copies).
  DeviceFootprint device_footprint(const Problem& problem, const Params& params, const DeviceInfo& device,
                                   bool with_labels) const override {
    const auto [delegate_name, reason] = choose_auto_delegate(problem, device, threshold_of(params));
    if (const Variant* delegate = delegate_name.empty() ? nullptr : Registry::instance().find(delegate_name)) {
      try {
        return delegate->device_footprint(problem, resolve_params(*delegate, problem, device, Params::object()),
                                          device, with_labels);
      } catch (const Error&) {
      }
    }
    return Variant::device_footprint(problem, params, device, with_labels);
  }

  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    const auto [delegate, delegate_params] = choose(problem, params, device);
    return delegate->prepare(problem, data, delegate_params, device);
  }

  // A batch: the delegate and parameters one problem gets (as when each problem has its own
  // run), serving the whole batch in one launch where the delegate can.
  std::unique_ptr<PreparedRun> prepare_batch(const Problem& problem, const Dataset& data, const Params& params,
                                             const DeviceInfo& device) const override {
    Problem one = problem;
    one.batch = 1;
    const auto [delegate, delegate_params] = choose(one, params, device);
    return delegate->prepare_batch(problem, data, delegate_params, device);
  }

 private:
  std::pair<const Variant*, Params> choose(const Problem& problem, const Params& params, const DeviceInfo& device) const {
    const auto [delegate_name, reason] = choose_auto_delegate(problem, device, threshold_of(params));
    if (delegate_name.empty()) throw UnsupportedError("auto: no delegate can run " + problem.str() + ": " + reason);
    const Variant& delegate = Registry::instance().get(delegate_name);
    // The delegate runs as `mkbench run --variant <delegate>` would: with its entry in this
    // GPU's tuned config where one applies (unless --no-tuned), else its defaults.
    // A config file that cannot be read is an input error here as in `mkbench run`; an entry
    // that does not resolve for this shape is skipped with a warning, as there.
    Params delegate_params;
    std::string tuned_from;
    if (auto tuned = tuned_params_for(delegate, problem, device, &tuned_from)) {
      try {
        delegate_params = resolve_params(delegate, problem, device, *tuned);
      } catch (const Error& e) {
        std::fprintf(stderr, "auto: warning: ignoring tuned config %s for %s (%s)\n", tuned_from.c_str(),
                     delegate_name.c_str(), e.what());
        tuned_from.clear();
      }
    }
    if (delegate_params.is_null() || delegate_params.empty()) {
      delegate_params = resolve_params(delegate, problem, device, Params::object());
      tuned_from.clear();
    }
    std::fprintf(stderr, "auto: chose %s (%s) with %s%s\n", delegate_name.c_str(), reason.c_str(),
                 params_label(delegate_params).c_str(),
                 tuned_from.empty() ? " (defaults)" : (" (tuned: " + tuned_from + ")").c_str());
    return {&delegate, delegate_params};
  }
};

MKBENCH_REGISTER_VARIANT(AutoSelect);

}  // namespace
}  // namespace mk
