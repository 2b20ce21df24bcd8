// `mkbench verify-matrix`: every variant × shape against the FP64 reference, printed as a
// matrix of ✓ / ✗ / the variant's own refusal reason: the one-command device check.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "datasets/dataset.hpp"
#include "harness/command.hpp"
#include "harness/memory_plan.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/special_output.hpp"
#include "harness/reference.hpp"
#include "harness/results.hpp"
#include "variants/tuned_params.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Cell {
  std::string mark;  // "✓", "✗", or "-" for refusal
  std::string detail;
};

using Matrix = std::map<std::string, std::map<std::string, Cell>>;  // shape -> variant -> cell

// Rows = shapes, columns = variants; refusals shown as short reasons below the table.
void print_matrix(const std::vector<std::string>& variant_names, const std::vector<std::string>& shape_order,
                  Matrix& matrix, int passes, int failures, int refusals) {
  std::cout << "| shape |";
  for (const auto& name : variant_names) std::cout << " " << name << " |";
  std::cout << "\n|---|";
  for (size_t i = 0; i < variant_names.size(); ++i) std::cout << "---|";
  std::cout << "\n";
  std::map<std::string, int> reason_ids;
  std::vector<std::string> reasons;
  for (const auto& shape : shape_order) {
    if (!matrix.count(shape)) {
      std::cout << "| " << shape << " | K > M: every variant refuses (InputError) |\n";
      continue;
    }
    std::cout << "| " << shape << " |";
    for (const auto& name : variant_names) {
      const auto found_cell = matrix[shape].find(name);
      if (found_cell == matrix[shape].end()) {
        std::cout << " not run |";
        continue;
      }
      const Cell& cell = found_cell->second;
      if (cell.mark == "-") {
        auto found = reason_ids.find(cell.detail);
        if (found == reason_ids.end()) {
          found = reason_ids.emplace(cell.detail, int(reasons.size()) + 1).first;
          reasons.push_back(cell.detail);
        }
        std::cout << " r" << found->second << " |";
      } else {
        std::cout << " " << cell.mark << " |";
      }
    }
    std::cout << "\n";
  }
  for (size_t i = 0; i < reasons.size(); ++i) std::cout << "\nr" << i + 1 << ": " << reasons[i];
  std::cout << "\n\n" << passes << " passed, " << failures << " failed, " << refusals << " refused\n";
}

// Several matrix files (one per device call) printed as one matrix, in file order. A cell
// in more than one file (re-verified after a change) takes the later file's result.
int merge_verify_matrices(const std::vector<std::string>& paths) {
  Matrix matrix;
  std::vector<std::string> shape_order, variant_names;
  int passes = 0, failures = 0, refusals = 0;
  for (const auto& path : paths) {
    require_regular_file(path, "verify matrix", /*pipes=*/true);
    std::ifstream in(path);
    if (!in) throw InputError("cannot read verify matrix " + path);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path + " is not valid JSON (truncated?): " + e.what());
    }
    if (!doc.is_object() || doc.value("schema", "") != "mkbench.verify-matrix/1" || !doc.contains("cells") ||
        !doc.at("cells").is_array())
      throw InputError(path + " is not a verify-matrix file (schema mkbench.verify-matrix/1)");
    if (!doc.value("complete", true)) std::cerr << "note: " << path << " was stopped before its last shape\n";
    // Every shape in run order, K > M ones (no cells) included.
    for (const auto& shape : doc.value("shapes", nlohmann::json::array()))
      if (shape.is_string() && std::find(shape_order.begin(), shape_order.end(), shape) == shape_order.end())
        shape_order.push_back(shape);
    for (const auto& each : doc.at("cells")) {
      std::string shape, variant;
      Cell cell;
      try {
        shape = each.at("shape").get<std::string>();
        variant = each.at("variant").get<std::string>();
        cell = {each.at("mark").get<std::string>(), each.at("detail").get<std::string>()};
      } catch (const nlohmann::json::exception& e) {
        throw InputError(path + ": malformed cell " + each.dump().substr(0, 120) + ": " + e.what());
      }
      if (!matrix.count(shape) && std::find(shape_order.begin(), shape_order.end(), shape) == shape_order.end())
        shape_order.push_back(shape);
      if (std::find(variant_names.begin(), variant_names.end(), variant) == variant_names.end())
        variant_names.push_back(variant);
      auto& slot = matrix[shape];
      if (slot.count(variant))
        std::cerr << "note: " << shape << " / " << variant << " re-verified in " << path << " (that cell is used)\n";
      slot[variant] = cell;
    }
  }
  for (const auto& [shape, row] : matrix)
    for (const auto& [variant, cell] : row) (cell.mark == "✓" ? passes : cell.mark == "✗" ? failures : refusals) += 1;
  std::sort(variant_names.begin(), variant_names.end());
  print_matrix(variant_names, shape_order, matrix, passes, failures, refusals);
  return failures == 0 ? kExitOk : kExitVerifyFailed;
}

// The (M, N) shapes to verify: the --points x --dims grid for generated data; the file's
// own shape for a file dataset (where --dims/--points were typed, they must agree with it).
std::vector<std::pair<int64_t, int>> matrix_shapes(const std::string& dataset, const std::string& dims_text,
                                                   const std::string& points_text, bool dims_given, bool points_given,
                                                   const Dataset* file_data) {
  std::vector<int> dims;
  for (const auto& d : split_list(dims_text)) dims.push_back(int(parse_count(d)));
  std::vector<int64_t> points;
  for (const auto& p : split_list(points_text)) points.push_back(parse_count(p));
  std::vector<std::pair<int64_t, int>> shapes;
  if (file_data) {
    for (int n : dims_given ? dims : std::vector<int>{})
      if (n != file_data->n)
        throw InputError("--dims " + std::to_string(n) + " does not match dataset '" + dataset + "', which has " +
                         std::to_string(file_data->n) + " dimensions per point (a file sets N: leave out --dims)");
    for (int64_t m : points_given ? points : std::vector<int64_t>{})
      if (m != file_data->m)
        throw InputError("--points " + format_count(m) + " does not match dataset '" + dataset + "', which has " +
                         std::to_string(file_data->m) + " points (a file sets M: leave out --points)");
    shapes.emplace_back(file_data->m, file_data->n);
    return shapes;
  }
  for (int64_t m : points)
    for (int n : dims) shapes.emplace_back(m, n);
  return shapes;
}

int run_verify_matrix(const std::string& variants_text, const std::string& dataset, const std::string& dims_text,
                      const std::string& k_text, const std::string& points_text, bool dims_given, bool points_given,
                      int iterations, const std::string& out_path, double max_reference_work) {
  // The matrix checks every variant's defaults, auto's delegate included.
  set_tuned_configs_enabled(false);
  if (iterations < 1) throw InputError("--iterations must be at least 1, got " + std::to_string(iterations));
  if (!(max_reference_work > 0) || !std::isfinite(max_reference_work))
    throw InputError("--max-reference-work must be a finite number above 0, got " + std::to_string(max_reference_work));
  if (!out_path.empty()) check_writable(out_path);  // before verifying, not after
  const DeviceInfo device = query_device(0);
  std::vector<const Variant*> variants;
  if (variants_text == "all") variants = Registry::instance().all();
  else
    for (const auto& name : split_list(variants_text)) variants.push_back(&Registry::instance().get(name));

  std::vector<KRange> ks;
  for (const auto& k : split_list(k_text)) ks.push_back(parse_k_range(k));
  if (ks.empty()) throw InputError("--k names no K: '" + k_text + "'");
  std::unique_ptr<Dataset> file_data;
  if (is_file_dataset_spec(dataset)) {
    file_data = std::make_unique<Dataset>(load_dataset_spec(dataset, 0, 0, 42));
    check_finite(*file_data);
  }
  const auto shapes = matrix_shapes(dataset, dims_text, points_text, dims_given, points_given, file_data.get());

  std::cerr << "verify-matrix on " << device.name << (device.is_gpu ? "" : " (no CUDA GPU: " + no_gpu_reason() + ")")
            << "\n";
  nlohmann::json cells = nlohmann::json::array();
  Matrix matrix;
  std::vector<std::string> variant_names;
  for (const Variant* v : variants) variant_names.push_back(v->name());
  std::vector<std::string> shape_order;
  int failures = 0, passes = 0, refusals = 0;
  // Rewritten after every shape: a matrix stopped by a time limit keeps what it verified.
  auto save = [&](bool complete) {
    if (out_path.empty() || (!complete && is_special_output(out_path))) return;  // a device: once
    nlohmann::json doc = {{"schema", "mkbench.verify-matrix/1"}, {"device", device.to_json()},
                          {"complete", complete}, {"shapes", shape_order}, {"cells", cells}};
    write_text_atomically(out_path, doc.dump(2) + "\n");
  };

  // Every shape's points, FP64 reference and CPU variant copies must fit the host before the
  // first shape is made (exit 2); the GPU is planned cell by cell and refuses that cell only.
  const MemoryLimits host_limits = current_memory_limits(DeviceInfo{});
  for (const auto& [m, n] : shapes)
    for (const KRange& k : ks)
      for (const Variant* variant : variants) {
        RowWork work{variant, Problem{}, Params::object(), k.kmax <= m, k.kmax <= m};
        work.problem.m = m;
        work.problem.n = n;
        work.problem.k = k;
        const DataSource source =
            file_data ? describe_loaded_data(*file_data) : held_whole(describe_data_source(dataset, m, n));
        const MemoryPlan plan = plan_memory(source, work, device, host_limits);
        if (plan.host_exceeded) plan.enforce();
      }

  for (const auto& [m, n] : shapes) {
    std::unique_ptr<Dataset> generated;
    if (!file_data) generated = std::make_unique<Dataset>(load_dataset_spec(dataset, m, n, 42));
    const Dataset& data = file_data ? *file_data : *generated;
    for (const KRange& k : ks) {
      Problem problem;
      problem.m = m;
      problem.n = n;
      problem.k = k;
      problem.sparsity = data.sparsity;
      const std::string shape = "N=" + std::to_string(n) + " K=" + k.str() + " M=" + format_count(m);
      shape_order.push_back(shape);
      if (k.kmax > m) continue;  // rejected as input: listed in "shapes", no cells
      const auto init = initial_centroids(data, k, InitMethod::FirstK, 42);
      const double work = double(m) * k.sum() * n;
      std::vector<KReference> first_step_reference;  // shared by every variant of this shape
      for (const Variant* variant : variants) {
        Cell cell;
        const auto t0 = std::chrono::steady_clock::now();
        if (auto reason = variant->can_implement(problem, device)) {
          cell = {"-", *reason};
          ++refusals;
        } else if (work > max_reference_work) {
          cell = {"-", "skipped: reference too costly (raise --max-reference-work)"};
          ++refusals;
        } else {
          try {
            const Params params = resolve_params(*variant, problem, device, Params::object());
            const RowWork cell_work{variant, problem, params, true, true};
            const MemoryPlan cell_plan =
                plan_memory(describe_loaded_data(data), cell_work, device, current_memory_limits(device));
            cell_plan.enforce();
            // The matrix checks variants in core; a cell that would stream is refused as before.
            if (!cell_plan.in_core()) throw UnsupportedError(cell_plan.summary() + ": the verify matrix runs in core");
            auto run = variant->prepare(problem, data, params, device);
            run->set_centroids(init);
            run->iterate(true);
            const IterationResult first = run->read_back();
            if (first_step_reference.empty()) first_step_reference = reference_step(data, k, init);
            VerifyReport report = compare_with_reference(data, k, init, first, first_step_reference);
            std::string detail = "step 1: " + report.summary();
            // Later steps from the variant's own state catch stale-accumulator bugs; they need
            // a fresh reference each, so they run where that stays cheap.
            const int steps = work <= max_reference_work / 8 ? iterations : 1;
            for (int step = 1; report.passed && step < steps; ++step) {
              std::vector<float> before;
              const IterationResult state = run->read_back();
              for (const auto& r : state.per_k) before.insert(before.end(), r.centroids.begin(), r.centroids.end());
              run->set_centroids(before);
              run->iterate(true);
              report = compare_with_reference(data, k, before, run->read_back());
              detail += "; step " + std::to_string(step + 1) + ": " + report.summary();
            }
            cell = {report.passed ? "✓" : "✗", detail};
            (report.passed ? passes : failures) += 1;
          } catch (const UnsupportedError& e) {
            cell = {"-", e.what()};
            ++refusals;
          } catch (const Error& e) {
            cell = {"✗", e.what()};
            ++failures;
          }
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::cerr << "  " << shape << "  " << variant->name() << "  " << cell.mark << "  (" << seconds << " s) "
                  << (cell.mark == "✓" ? "" : cell.detail) << "\n";
        matrix[shape][variant->name()] = cell;
        cells.push_back({{"shape", shape}, {"n", n}, {"k_min", k.kmin}, {"k_max", k.kmax}, {"m", m},
                         {"variant", variant->name()}, {"mark", cell.mark}, {"detail", cell.detail}});
      }
      save(false);
    }
  }

  print_matrix(variant_names, shape_order, matrix, passes, failures, refusals);
  save(true);
  // A matrix of no cell verified nothing: every shape's K was above its M, or no shape was named
  // (it printed "0 passed" and exited 0; a bad-input audit at 04dfbaa).
  if (passes + failures + refusals == 0 && !variants.empty())
    throw InputError("no cell to verify: every K is above its shape's M, or no shape was named");
  return failures == 0 ? kExitOk : kExitVerifyFailed;
}

MKBENCH_REGISTER_COMMAND("verify-matrix", "every variant x shape against the FP64 reference (✓ / ✗ / refusal)",
                         [](CLI::App& sub) -> std::function<int()> {
                           auto variants = std::make_shared<std::string>("all");
                           auto dataset = std::make_shared<std::string>("uniform");
                           auto dims = std::make_shared<std::string>("2,4,8,16,32,128");
                           auto ks = std::make_shared<std::string>("3..7,3..12,16..16,256..256,1024..1024");
                           auto points = std::make_shared<std::string>("1000,1M,8M");
                           auto iterations = std::make_shared<int>(2);
                           auto out = std::make_shared<std::string>();
                           auto max_work = std::make_shared<double>(4e11);
                           auto merge = std::make_shared<std::vector<std::string>>();
                           sub.add_option("--variants", *variants, "comma list or 'all'");
                           sub.add_option("--dataset", *dataset,
                                          "any --dataset spec; a file (csv:, npy:, idx:) sets N and M itself");
                           auto* dims_option = sub.add_option("--dims", *dims, "comma list of N (generated data)");
                           sub.add_option("--k", *ks, "comma list of K ranges");
                           auto* points_option =
                               sub.add_option("--points", *points, "comma list of M (1000, 1M, 8M; generated data)");
                           sub.add_option("--iterations", *iterations, "verified steps per cell");
                           sub.add_option("--out", *out, "write the matrix as JSON");
                           sub.add_option("--max-reference-work", *max_work,
                                          "skip cells whose M·ΣK·N exceeds this (CPU reference cost)");
                           sub.add_option("--merge", *merge,
                                          "print one matrix from these --out files (no measuring)");
                           return [=] {
                             if (!merge->empty()) return merge_verify_matrices(*merge);
                             return run_verify_matrix(*variants, *dataset, *dims, *ks, *points,
                                                      dims_option->count() > 0, points_option->count() > 0,
                                                      *iterations, *out, *max_work);
                           };
                         });

}  // namespace
}  // namespace mk
