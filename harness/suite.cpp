#include "harness/suite.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "datasets/dataset.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/tuned_params.hpp"
#include "harness/build_info.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/special_output.hpp"
#include "harness/format.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/sharded_variant.hpp"
#include "harness/peak.hpp"
#include "harness/suite_parse.hpp"
#include "harness/suite_resume.hpp"

namespace mk {

namespace {

using ojson = nlohmann::ordered_json;

// ---------------------------------------------------------------- expressions

class ExpressionParser {
 public:
  ExpressionParser(const std::string& text, const NameLookup& lookup) : text_(text), lookup_(lookup) {}

  ExpressionResult run() {
    ExpressionResult result;
    double value = 0;
    if (!expression(value)) return result;  // NotExpression
    skip_spaces();
    if (pos_ != text_.size()) return result;
    if (!unknown_.empty()) {
      result.kind = ExpressionResult::UnknownName;
      result.unknown_name = unknown_;
      return result;
    }
    result.kind = ExpressionResult::Value;
    result.value = value;
    return result;
  }

 private:
  static constexpr int kMaxNesting = 200;

  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool expression(double& out) {
    if (!term(out)) return false;
    for (;;) {
      double rhs = 0;
      if (accept('+')) {
        if (!term(rhs)) return false;
        out += rhs;
      } else if (accept('-')) {
        if (!term(rhs)) return false;
        out -= rhs;
      } else {
        return true;
      }
    }
  }

  bool term(double& out) {
    if (!factor(out)) return false;
    for (;;) {
      double rhs = 0;
      if (accept('*')) {
        if (!factor(rhs)) return false;
        out *= rhs;
      } else if (accept('/')) {
        if (!factor(rhs)) return false;
        out = rhs != 0 ? out / rhs : NAN;
      } else {
        return true;
      }
    }
  }

  bool factor(double& out) {
    skip_spaces();
    if (pos_ >= text_.size()) return false;
    // Each nesting is a recursion: a suite's text must not run the stack out (100,000 '(' did).
    struct Nesting {
      int& depth;
      explicit Nesting(int& d, const std::string& text) : depth(d) {
        if (++depth > kMaxNesting)
          throw InputError("expression '" + text.substr(0, 40) + (text.size() > 40 ? "...'" : "'") +
                           " nests deeper than " + std::to_string(kMaxNesting));
      }
      ~Nesting() { --depth; }
    } nesting(depth_, text_);
    if (accept('(')) return expression(out) && accept(')');
    if (accept('-')) {
      if (!factor(out)) return false;
      out = -out;
      return true;
    }
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* begin = text_.c_str() + pos_;
      char* end = nullptr;
      out = std::strtod(begin, &end);
      if (end == begin) return false;
      pos_ += size_t(end - begin);
      return true;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      const std::string name = text_.substr(start, pos_ - start);
      if (accept('(')) return call(name, out);
      if (auto value = lookup_(name)) {
        out = *value;
      } else {
        if (unknown_.empty()) unknown_ = name;
        out = 0;
      }
      return true;
    }
    return false;
  }

  bool call(const std::string& name, double& out) {
    double a = 0, b = 0;
    if (!expression(a) || !accept(',') || !expression(b) || !accept(')')) return false;
    if (name == "cdiv") out = b != 0 ? std::ceil(a / b) : NAN;
    else if (name == "min") out = std::min(a, b);
    else if (name == "max") out = std::max(a, b);
    else if (unknown_.empty()) unknown_ = name + "()";
    return true;
  }

  const std::string& text_;
  const NameLookup& lookup_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string unknown_;
};

// ---------------------------------------------------------------- expansion

std::string strip_no_gpu_prefix(std::string reason) {
  const std::string prefix = "no CUDA GPU available (";
  if (reason.rfind(prefix, 0) == 0 && !reason.empty() && reason.back() == ')')
    return reason.substr(prefix.size(), reason.size() - prefix.size() - 1);
  return reason.empty() ? "none found" : reason;
}

std::optional<double> base_name(const std::string& name, const DeviceInfo& device, const Problem& problem) {
  if (name == "sm") return double(device.sm_count);
  if (name == "m") return double(problem.m);
  if (name == "n") return double(problem.n);
  if (name == "ksum") return double(problem.k.sum());
  if (name == "kmin") return double(problem.k.kmin);
  if (name == "kmax") return double(problem.k.kmax);
  if (name == "kcount") return double(problem.k.count());
  if (name == "l2_bytes") return double(device.l2_bytes);
  if (name == "threads_per_sm") return double(device.max_threads_per_sm);
  return std::nullopt;
}

bool looks_like_expression(const std::string& text) { return text.find_first_of("*/()+") != std::string::npos; }

std::optional<double> numeric(const Params& params, const std::string& key) {
  auto it = params.find(key);
  if (it == params.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// One combination of raw suite values -> concrete overrides.
Params resolve_combination(const std::vector<std::pair<std::string, ojson>>& combo, const Variant& variant,
                           const Problem& problem, const DeviceInfo& device, const Params& defaults,
                           const ParamSpace& space, const std::string& where) {
  Params out = Params::object();
  std::set<std::string> pending;
  for (const auto& [key, raw] : combo) {
    if (raw.is_string() && raw.get<std::string>() == "default") continue;
    if (raw.is_number_integer() || raw.is_number_unsigned()) out[key] = raw.get<int64_t>();
    else if (raw.is_number()) out[key] = raw.get<double>();
    else if (raw.is_boolean()) out[key] = raw.get<bool>();
    else if (raw.is_string()) pending.insert(key);
    else throw InputError(where + ": parameter " + key + " has unsupported value " + raw.dump());
  }
  auto lookup = [&](const std::string& name) -> std::optional<double> {
    if (auto value = base_name(name, device, problem)) return value;
    if (auto value = numeric(out, name)) return value;
    if (pending.count(name)) return std::nullopt;
    return numeric(defaults, name);
  };
  const NameLookup name_lookup = lookup;
  while (!pending.empty()) {
    bool progress = false;
    for (const auto& [key, raw] : combo) {
      if (!pending.count(key)) continue;
      std::string text = raw.get<std::string>();
      if (text == "one-point-per-thread") text = "cdiv(m, block)";
      const ExpressionResult result = evaluate_expression(text, name_lookup);
      if (result.kind == ExpressionResult::Value) {
        if (!std::isfinite(result.value))
          throw InputError(where + ": parameter " + key + "='" + raw.get<std::string>() + "' is not finite here");
        if (std::fabs(result.value) >= 0x1p62)
          throw InputError(where + ": parameter " + key + "='" + raw.get<std::string>() +
                           "' is 2^62 or more here, beyond any parameter");
        out[key] = round_parameter(result.value);
      } else if (result.kind == ExpressionResult::UnknownName && pending.count(result.unknown_name) &&
                 result.unknown_name != key) {
        continue;  // depends on a parameter of this combination not resolved yet
      } else if (result.kind == ExpressionResult::UnknownName &&
                 (looks_like_expression(text) || space.find(result.unknown_name))) {
        throw InputError(where + ": cannot evaluate " + key + "='" + raw.get<std::string>() + "' for " +
                         variant.name() + ": unknown name '" + result.unknown_name +
                         "' (names: sm, m, n, ksum, kmin, kmax, kcount, l2_bytes, threads_per_sm, and parameters)");
      } else {
        out[key] = raw.get<std::string>();  // a plain string value such as "soa"
      }
      pending.erase(key);
      progress = true;
    }
    if (!progress) {
      std::string keys;
      for (const auto& k : pending) keys += (keys.empty() ? "" : ", ") + k;
      throw InputError(where + ": parameter expressions depend on each other in a cycle: " + keys);
    }
  }
  return out;
}

std::vector<Params> expand_params(const Variant& variant, const Problem& problem, const DeviceInfo& device,
                                  const ojson& spec, const std::string& where) {
  const ParamSpace space = variant.param_space(problem, device);
  if (spec.is_string()) {
    if (spec.get<std::string>() != "all")
      throw InputError(where + ": params must be an object or \"all\", got " + spec.dump());
    std::vector<Params> points = space.enumerate();
    if (points.empty()) points.push_back(Params::object());
    return points;
  }
  const Params defaults = variant.default_params(problem, device);
  std::vector<std::pair<std::string, std::vector<ojson>>> axes;
  bool skipped_key = false;
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    const Axis* axis = space.find(it.key());
    // Cases list several variants; an axis only some of them declare applies to those.
    if (!axis) {
      skipped_key = true;
      continue;
    }
    std::vector<ojson> values;
    const ojson list = it.value().is_array() ? it.value() : ojson::array({it.value()});
    for (const auto& value : list) {
      if (value.is_string() && value.get<std::string>() == "all") {
        for (const auto& v : axis->values) values.push_back(ojson::parse(v.dump()));
      } else {
        values.push_back(value);
      }
    }
    if (values.empty()) throw InputError(where + ": params." + it.key() + " is empty");
    axes.emplace_back(it.key(), std::move(values));
  }
  std::vector<std::vector<std::pair<std::string, ojson>>> combos{{}};
  for (const auto& [key, values] : axes) {
    std::vector<std::vector<std::pair<std::string, ojson>>> next;
    for (const auto& combo : combos)
      for (const auto& value : values) {
        auto extended = combo;
        extended.emplace_back(key, value);
        next.push_back(std::move(extended));
      }
    combos.swap(next);
  }
  std::vector<Params> out;
  std::set<std::string> seen;
  for (const auto& combo : combos) {
    Params params = resolve_combination(combo, variant, problem, device, defaults, space, where);
    if (skipped_key && !seen.insert(params.dump()).second) continue;
    out.push_back(std::move(params));
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_variant_names(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names) {
    if (name == "all" || name == "all-gpu" || name == "all-cpu") {
      for (const Variant* v : Registry::instance().all())
        if (name == "all" || v->runs_on_gpu() == (name == "all-gpu")) out.push_back(v->name());
    } else {
      out.push_back(name);
    }
  }
  std::vector<std::string> unique;
  for (const auto& name : out)
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) unique.push_back(name);
  return unique;
}

// ---------------------------------------------------------------- public

ExpressionResult evaluate_expression(const std::string& text, const NameLookup& lookup) {
  return ExpressionParser(text, lookup).run();
}

int64_t round_parameter(double value) { return std::max<int64_t>(1, int64_t(std::llround(value))); }

size_t SuitePlan::row_count() const {
  size_t total = 0;
  for (const auto& group : groups) total += group.rows.size();
  return total;
}

std::vector<std::string> known_suite_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : embedded_suites()) names.push_back(name);
  return names;
}

SuiteDefinition load_suite(const std::string& name_or_path) {
  const auto& suites = embedded_suites();
  auto it = suites.find(name_or_path);
  std::string text, label = name_or_path;
  if (it != suites.end()) {
    text = it->second;
  } else if (name_or_path.find('/') != std::string::npos ||
             (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json")) {
    require_regular_file(name_or_path, "suite file", /*pipes=*/true);
    std::ifstream in(name_or_path);
    if (!in) throw InputError("cannot open suite file " + name_or_path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    label = std::filesystem::path(name_or_path).stem().string();
  } else {
    std::string known;
    for (const auto& name : known_suite_names()) known += (known.empty() ? "" : ", ") + name;
    throw InputError("unknown suite '" + name_or_path + "' (known: " + (known.empty() ? "none embedded" : known) +
                     "; or give a path to a suite .json file)");
  }
  return parse_suite_text(text, label);
}

// A case without "params" asks for each variant's best known parameters: the tuned
// config when one applies, else the defaults. Explicit params (table1's grid sweep) stay.
bool case_leaves_params_open(const SuiteCase& suite_case) {
  return suite_case.params.is_null() || suite_case.params.empty();
}

std::vector<PlannedRow> expand_group_rows(const PlannedGroup& group, int n, int64_t m, const DeviceInfo& device) {
  std::vector<PlannedRow> rows;
  const std::string where = "suite case (dims " + std::to_string(n) + ", points " + format_count(m) +
                            (group.batch > 1 ? " x batch " + std::to_string(group.batch) : "") + ")";
  for (const auto& k_text : group.source.k) {
    Problem problem;
    problem.m = m;
    problem.n = n;
    problem.k = parse_k_range(k_text);
    problem.batch = group.batch;
    try {
      validate(problem);
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    for (const auto& name : group.source.variants) {
      PlannedRow base;
      base.variant_name = name;
      base.problem = problem;
      try {
        base.variant = &Registry::instance().get(name);  // a name no variant has is a typo: exit 2
      } catch (const InputError& e) {
        throw InputError(where + ": " + e.what());
      }
      const Variant* v = base.variant;
      // Refusals are recorded by measure_row; expanding a refused variant's space would
      // only ask it about a device it already said it cannot use.
      // A batch's variant answers for one of its problems (variants/batched/).
      const Problem one = problem_of_one(problem);
      if ((v->runs_on_gpu() && !device.is_gpu) || v->can_implement(one, device) || group.cpu_fallback) {
        rows.push_back(base);
        continue;
      }
      for (auto& params : expand_params(*v, one, device, group.source.params, where + " " + name)) {
        PlannedRow row = base;
        row.overrides = std::move(params);
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

namespace {

// A file dataset's shape, read once per spec; a case's "dims"/"points", where it gives
// them, must agree with it.
DataShape file_case_shape(const SuiteDefinition& suite, size_t case_index, const std::string& spec,
                          std::map<std::string, DataShape>& known) {
  auto found = known.find(spec);
  if (found == known.end()) found = known.emplace(spec, file_dataset_shape(spec)).first;
  const DataShape shape = found->second;
  const SuiteCase& suite_case = suite.cases[case_index];
  const std::string where = "suite " + suite.name + ": cases[" + std::to_string(case_index) + "]";
  for (int dims : suite_case.dims)
    if (dims != shape.n)
      throw InputError(where + ".dims: " + std::to_string(dims) + " does not match dataset '" + spec + "', which has " +
                       std::to_string(shape.n) + " dimensions per point (a file sets N: leave \"dims\" out)");
  if (shape.m > 0 && shape.m % suite_case.batch != 0)
    throw InputError(where + ".batch: " + std::to_string(suite_case.batch) + " does not divide dataset '" + spec +
                     "', which has " + std::to_string(shape.m) + " points (a batch's problems take equal shares)");
  for (const auto& text : suite_case.points)
    if (parse_count(text) * suite_case.batch != shape.m)
      throw InputError(where + ".points: " + text + (suite_case.batch > 1 ? " x batch " + std::to_string(suite_case.batch) : "") +
                       " does not match dataset '" + spec + "', which has " + std::to_string(shape.m) +
                       " points (a file sets M: leave \"points\" out)");
  return shape;
}

}  // namespace

SuitePlan plan_suite(const SuiteDefinition& suite, const DeviceInfo& device,
                     const std::vector<std::string>& variant_filter, bool quick) {
  SuitePlan plan;
  for (const auto& name : variant_filter)
    if (!Registry::instance().find(name)) Registry::instance().get(name);  // InputError listing known names
  const int64_t quick_cap = int64_t(1) << 20;
  std::map<std::string, DataShape> file_shapes;
  // Without a GPU, --quick runs the CPU fallback at the smoke suite's size: the fallback's own M
  // (1M-2M) takes minutes on a 2-core CI machine once every GPU case has collapsed onto it.
  const int64_t quick_fallback_cap = int64_t(64) << 10;
  for (const auto& suite_case : suite.cases) {
    // Every name, whatever this machine runs of it (without a GPU the GPU names fall back to the
    // CPU baseline and would hide a typo among them).
    for (const auto& name : expand_variant_names(suite_case.variants)) Registry::instance().get(name);
    PlannedGroup proto;
    proto.source = suite_case;
    proto.dataset_spec = suite_case.dataset.value_or(suite.dataset);
    proto.seed = suite.seed;
    proto.init = suite.init;
    proto.iters = suite_case.iters.value_or(suite.iters);
    proto.warmup = suite_case.warmup.value_or(suite.warmup);
    proto.verify = suite_case.verify.value_or(suite.verify);
    proto.batch = suite_case.batch;

    std::vector<std::string> variants;
    for (const auto& name : expand_variant_names(suite_case.variants))
      if (variant_filter.empty() ||
          std::find(variant_filter.begin(), variant_filter.end(), name) != variant_filter.end())
        variants.push_back(name);
    if (variants.empty()) continue;

    std::vector<std::string> points = suite_case.points;
    bool needs_gpu = false;
    for (const auto& name : variants)
      if (const Variant* v = Registry::instance().find(name); v && v->runs_on_gpu()) needs_gpu = true;
    if (needs_gpu && !device.is_gpu) {
      // Keep the case's CPU variants and shape (N, K) but swap the GPU work for the CPU
      // baseline at a size a CPU finishes in seconds.
      std::vector<std::string> cpu_variants;
      for (const auto& name : variants)
        if (const Variant* v = Registry::instance().find(name); v && !v->runs_on_gpu()) cpu_variants.push_back(name);
      for (const auto& name : suite.fallback_variants)
        if (std::find(cpu_variants.begin(), cpu_variants.end(), name) == cpu_variants.end())
          cpu_variants.push_back(name);
      variants = cpu_variants;
      points = suite.fallback_points;
      proto.cpu_fallback = true;
      plan.used_cpu_fallback = true;
    }
    if (quick) {
      if (suite.quick.is_object() && suite.quick.contains("points") && !proto.cpu_fallback)
        points = suite_json::text_list(suite.quick.at("points"), "quick.points");
      if (suite.quick.is_object() && suite.quick.contains("iters")) proto.iters = suite.quick.at("iters").get<int>();
      else proto.iters = std::min(proto.iters, 10);
      if (suite.quick.is_object() && suite.quick.contains("warmup")) proto.warmup = suite.quick.at("warmup").get<int>();
      else proto.warmup = std::min(proto.warmup, 1);
    }
    proto.source.variants = variants;
    if (is_file_dataset_spec(proto.dataset_spec)) {
      // A file sets N and M: one group of its shape, whatever the CPU fallback or --quick
      // would pick for generated data.
      const DataShape shape = file_case_shape(suite, size_t(&suite_case - suite.cases.data()), proto.dataset_spec,
                                              file_shapes);
      PlannedGroup group = proto;
      group.dims = shape.n;
      group.points = shape.m / proto.batch;  // file_case_shape: the batch divides the rows
      group.rows = expand_group_rows(group, shape.n, group.points, device);
      plan.groups.push_back(std::move(group));
      continue;
    }
    for (int dims : suite_case.dims) {
      for (const auto& point_text : points) {
        PlannedGroup group = proto;
        group.dims = dims;
        group.points = parse_count(point_text);
        if (quick && !(suite.quick.is_object() && suite.quick.contains("points")))
          group.points = std::min(group.points, quick_cap);
        if (quick && group.cpu_fallback) group.points = std::min(group.points, quick_fallback_cap);
        if (group.batch > 1 && (quick || group.cpu_fallback)) {
          // The reduced sizes are a row's: a batch's problems share them, each keeping at least
          // its largest K of points (mainstream's batched fallback: 32 x 1024 points, not 32 x 8K).
          int kmax = 1;
          for (const auto& k_text : suite_case.k) kmax = std::max(kmax, parse_k_range(k_text).kmax);
          group.points = std::max<int64_t>(kmax, group.points / group.batch);
        }
        group.rows = expand_group_rows(group, dims, group.points, device);
        plan.groups.push_back(std::move(group));
      }
    }
  }
  if (plan.used_cpu_fallback) {
    // Different GPU cases collapse onto the same CPU rows; measure each once.
    std::set<std::string> seen;
    for (auto& group : plan.groups) {
      std::vector<PlannedRow> kept;
      for (auto& row : group.rows) {
        const std::string key = group.dataset_spec + "|" + std::to_string(group.seed) + "|" + row.variant_name + "|" +
                                row_name(row.variant_name, row.problem, row.overrides);
        if (seen.insert(key).second) kept.push_back(std::move(row));
      }
      group.rows = std::move(kept);
    }
  }
  plan.groups.erase(std::remove_if(plan.groups.begin(), plan.groups.end(),
                                   [](const PlannedGroup& g) { return g.rows.empty(); }),
                    plan.groups.end());
  if (plan.row_count() == 0)
    throw InputError("suite " + suite.name + " has no rows" + (variant_filter.empty() ? "" : " for the chosen --variants"));
  return plan;
}

void add_suite_options(CLI::App& app, SuiteOptions& options) {
  app.add_option("--variants", options.variants, "only run these variants (comma-separated)")->delimiter(',');
  app.add_option("--out", options.out, "write the results JSON here (rewritten after every row)");
  app.add_option("--format", options.format, "table | csv | json | md")
      ->check(CLI::IsMember(output_format_names()));
  app.add_flag("--quick", options.quick, "reduced M and fewer samples (CI smoke)");
  add_device_option(app, options.device);
  app.add_flag("--benchmark-console", options.benchmark_console, "also print Google Benchmark's report (stderr)");
  app.add_flag("--hide-launch-latency", options.hide_launch_latency,
               "hold the stream (a 200 us spin) before each GPU sample's start event, so the host's launch latency "
               "stays out of the timing (as nvbench's blocking kernel)");
  app.add_flag("!--no-peak-measure", options.measure_peaks, "do not measure peaks when none are cached");
  app.add_flag("--dry-run", options.dry_run, "list the rows the suite would measure on this machine, then stop");
  app.add_flag("!--no-tuned", options.use_tuned,
               "ignore tuned configurations: rows without suite params run the variants' defaults");
  app.add_flag("--verify", options.verify_all,
               "check every row against the FP64 CPU reference (first and last iteration), overriding the suite's "
               "\"verify\"; a mismatch makes the exit status non-zero");
  app.add_flag("--resume", options.resume,
               "continue the --out file of this suite (after a kill): keep its rows, measure the rest, append them");
}

namespace {

// The tuned parameters a row runs with, when its case leaves params open and a config for
// this GPU applies. A config that cannot be read is reported once per row and ignored,
// so one bad file does not stop a sweep halfway.
std::optional<Params> tuned_row_params(const SuiteOptions& options, const PlannedGroup& group, const PlannedRow& row,
                                       const Problem& problem, const DeviceInfo& device,
                                       std::string* tuned_from = nullptr) {
  if (!options.use_tuned || !row.variant || group.cpu_fallback || !case_leaves_params_open(group.source))
    return std::nullopt;
  try {
    return tuned_params_for(*row.variant, problem_of_one(problem), device, tuned_from);  // a batch: one problem's
  } catch (const std::exception& e) {
    std::cerr << "mkbench: warning: ignoring the tuned config for " << row.variant_name << " ("
              << e.what() << "); the defaults run\n";
    return std::nullopt;
  }
}

}  // namespace

int run_suite(const SuiteOptions& options) {
  set_tuned_configs_enabled(options.use_tuned);
  const OutputFormat format = parse_output_format(options.format);
  if (!options.out.empty() && !options.dry_run) check_writable(options.out);  // before measuring, not after
  const SuiteDefinition suite = load_suite(options.name);
  auto placement = std::make_shared<const Placement>(
      resolve_placement(options.device, options.measure_peaks && !options.dry_run));
  DeviceInfo device = placement->primary();
  SuitePlan plan = plan_suite(suite, device, options.variants, options.quick);
  if (options.verify_all)
    for (auto& group : plan.groups) group.verify = true;
  if (plan.used_cpu_fallback) {
    std::string points, variants;
    std::set<int64_t> seen_points;
    for (const auto& group : plan.groups)
      if (group.cpu_fallback && seen_points.insert(group.points).second)
        points += (points.empty() ? "" : ",") + format_count(group.points);
    for (const auto& v : suite.fallback_variants) variants += (variants.empty() ? "" : ",") + v;
    // The suite's own CPU cases (table2's baseline) are not GPU work and keep their M: say so.
    std::string kept;
    std::set<int64_t> seen_kept;
    for (const auto& group : plan.groups)
      if (!group.cpu_fallback && !group.rows.empty() && seen_kept.insert(group.points).second)
        kept += (kept.empty() ? "" : ",") + format_count(group.points);
    std::cerr << "mkbench: no CUDA GPU (" << strip_no_gpu_prefix(no_gpu_reason()) << "): the GPU cases run the CPU "
              << "baseline (" << variants << ") at reduced M=" << points << " instead";
    if (!kept.empty()) std::cerr << "; the suite's CPU cases keep their M=" << kept;
    std::cerr << "\n";
  }

  if (options.dry_run) {
    size_t index = 0;
    for (const auto& group : plan.groups)
      for (const auto& row : group.rows)
        std::cout << "[" << ++index << "/" << plan.row_count() << "] "
                  << row_name(row.variant_name, row.problem,
                              tuned_row_params(options, group, row, row.problem, device).value_or(row.overrides))
                  << "  (dataset " << group.dataset_spec
                  << ", iters " << group.iters << ", warmup " << group.warmup << (group.verify ? ", verify" : "")
                  << ")\n";
    return kExitOk;
  }

  const std::vector<bool> unheld_groups = check_suite_host_memory(plan, device, placement->sharded());
  if (options.resume && options.out.empty())
    throw InputError("--resume continues the results file of --out; give --out FILE");
  ResultFile file =
      options.resume ? load_rows_to_resume(options.out, suite, plan, device) : new_result_file(device, suite.name);
  const size_t resumed = file.rows.size();
  // The file is rewritten after every row, so a killed suite keeps what it measured; a device or a
  // FIFO (/dev/stdout) would get one document a row instead, so it gets the whole file once.
  const bool write_once = is_special_output(options.out);
  auto save_rows = [&] {
    if (options.out.empty() || !writes_outputs()) return;  // rank 0 under mpirun
    file.created = utc_now_iso();
    write_results_atomically(options.out, file);
  };
  size_t total = plan.row_count();
  size_t done = 0;
  std::string dataset_key;
  std::unique_ptr<Dataset> data;
  MeasureOptions measure_options;
  measure_options.benchmark_console = options.benchmark_console;
  measure_options.hide_launch_latency = options.hide_launch_latency;

  for (auto& group : plan.groups) {
    if (done + group.rows.size() <= resumed) {
      done += group.rows.size();  // measured before the restart or the kill
      continue;
    }
    // Out of core on a .npy or a generator, the points stay in the file's mapping or are made
    // chunk by chunk (docs/out-of-core.md), as for `run`: decided once, by the host check.
    const bool unheld = unheld_groups[size_t(&group - plan.groups.data())];
    const int64_t rows = group.points * group.batch;  // every problem's rows
    const std::string key = group.dataset_spec + "|" + std::to_string(group.dims) + "|" + std::to_string(rows) + "|" +
                            std::to_string(group.seed) + (unheld ? "|unheld" : "");
    if (key != dataset_key || !data) {
      data.reset();
      dataset_key.clear();
      data = std::make_unique<Dataset>(unheld
                                           ? load_dataset_spec_unheld(group.dataset_spec, rows, group.dims, group.seed)
                                           : load_dataset_spec(group.dataset_spec, rows, group.dims, group.seed));
      check_finite(*data);
      dataset_key = key;
    }
    if (data->m != rows || data->n != group.dims) {
      // A file dataset decides its own shape; expand this group for the real one.
      if (data->m % group.batch != 0)
        throw InputError("suite " + suite.name + ": batch " + std::to_string(group.batch) + " does not divide dataset '" +
                         group.dataset_spec + "', which has " + std::to_string(data->m) + " points");
      total -= group.rows.size();
      group.rows = expand_group_rows(group, data->n, data->m / group.batch, device);
      total += group.rows.size();
    }
    std::map<std::string, std::vector<float>> init_by_k;
    for (const auto& planned : group.rows) {
      if (++done <= resumed) continue;
      Problem problem = planned.problem;
      problem.sparsity = data->sparsity;
      ResultRow row;
      {
        const std::string k_key = problem.k.str();
        if (!init_by_k.count(k_key))
          init_by_k[k_key] = batch_initial_centroids(*data, problem, parse_init(group.init), group.seed);
        RowSpec spec;
        const std::unique_ptr<Variant> placed = variant_for_placement(*planned.variant, placement);  // --device lists
        spec.variant = placed ? placed.get() : planned.variant;
        spec.problem = problem;
        spec.params = planned.overrides;
        std::string tuned_from;
        if (auto tuned = tuned_row_params(options, group, planned, problem, device, &tuned_from)) spec.params = *tuned;
        spec.dataset = data.get();
        spec.init_centroids = init_by_k[k_key];
        spec.warmup = group.warmup;
        spec.samples = group.iters;
        spec.verify = group.verify;
        measure_options.row_index = done;
        row = measure_row(spec, device, measure_options);
        if (!tuned_from.empty()) row.tuned_config = tuned_from;
      }
      std::cerr << "[" << done << "/" << total << "] " << row.name << " ... ";
      if (row.ok()) {
        std::cerr << format_number(row.summary.median_ms, 4) << " ms";
        if (row.verified()) std::cerr << (row.verify_passed() ? " verify pass" : " VERIFY FAIL");
      } else {
        std::cerr << row.status << ": " << row.reason;
      }
      std::cerr << "\n";
      const bool failed = row.status == "failed";
      const std::string name = row.name;
      file.rows.push_back(std::move(row));
      if (!write_once) save_rows();
      if (failed)
        if (auto code = restart_if_context_lost(name, options.out, total - done, device.is_gpu)) {
          if (write_once) save_rows();
          print_suite_output(std::cout, suite, file, format, plan.used_cpu_fallback);
          return *code;
        }
    }
  }
  if (write_once) save_rows();
  int verify_failures = 0, failures = 0, refusals = 0;  // resumed rows included
  for (const auto& row : file.rows) {
    if (row.status == "refused") ++refusals;
    if (row.status == "failed") ++failures;
    if (!row.verify_passed()) ++verify_failures;
  }
  print_suite_output(std::cout, suite, file, format, plan.used_cpu_fallback);
  std::cerr << "mkbench: suite " << suite.name << ": " << file.rows.size() << " rows, "
            << (file.rows.size() - refusals - failures) << " measured, " << refusals << " refused, " << failures
            << " failed";
  if (verify_failures) std::cerr << ", " << verify_failures << " FAILED verification";
  if (!options.out.empty()) std::cerr << "; results in " << options.out;
  std::cerr << "\n";
  if (verify_failures) return kExitVerifyFailed;
  if (failures) return kExitDevice;
  return kExitOk;
}

}  // namespace mk
