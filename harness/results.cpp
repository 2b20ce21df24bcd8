#include "harness/results.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/special_output.hpp"
#include "harness/fault_injection.hpp"

namespace mk {

namespace {

using nlohmann::json;

// Schema-checked accessors: every failure names the file location and the key, so a
// hand-edited or truncated baseline produces an actionable message, not a json exception.
const json& member(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) throw InputError(where + ": missing key '" + key + "'");
  return *it;
}

double number_at(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_number()) throw InputError(where + "." + key + ": expected a number, got " + value.dump());
  return value.get<double>();
}

int64_t integer_at(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_number_integer() && !value.is_number_unsigned())
    throw InputError(where + "." + key + ": expected an integer, got " + value.dump());
  return value.get<int64_t>();
}

std::string string_at(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_string()) throw InputError(where + "." + key + ": expected a string, got " + value.dump());
  return value.get<std::string>();
}

const json& object_at(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_object()) throw InputError(where + "." + key + ": expected an object");
  return value;
}

std::vector<double> numbers_at(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_array()) throw InputError(where + "." + key + ": expected an array");
  std::vector<double> out;
  for (const auto& item : value) {
    if (!item.is_number()) throw InputError(where + "." + key + ": expected numbers, got " + item.dump());
    out.push_back(item.get<double>());
  }
  return out;
}

json timing_to_json(const Timing& t) {
  json j = {{"clock", t.clock},
            {"warmup", t.warmup},
            {"l2_flushed", t.l2_flushed},
            {"launch_latency_hidden", t.launch_latency_hidden},
            {"samples_ms", t.samples_ms},
            {"sm_clock_mhz", t.sm_clock_mhz}};
  if (t.conversion_ms) j["conversion_ms"] = *t.conversion_ms;
  return j;
}

Timing timing_from_json(const json& j, const std::string& where) {
  Timing t;
  t.clock = string_at(j, "clock", where);
  t.warmup = int(integer_at(j, "warmup", where));
  const json& flushed = member(j, "l2_flushed", where);
  if (!flushed.is_boolean()) throw InputError(where + ".l2_flushed: expected true or false");
  t.l2_flushed = flushed.get<bool>();
  if (j.contains("launch_latency_hidden")) {
    const json& hidden = j.at("launch_latency_hidden");
    if (!hidden.is_boolean()) throw InputError(where + ".launch_latency_hidden: expected true or false");
    t.launch_latency_hidden = hidden.get<bool>();
  }
  t.samples_ms = numbers_at(j, "samples_ms", where);
  if (j.contains("sm_clock_mhz")) t.sm_clock_mhz = numbers_at(j, "sm_clock_mhz", where);
  if (j.contains("conversion_ms")) t.conversion_ms = number_at(j, "conversion_ms", where);
  return t;
}

json summary_to_json(const Summary& s) {
  return {{"count", s.count},   {"median_ms", s.median_ms}, {"min_ms", s.min_ms}, {"max_ms", s.max_ms},
          {"mean_ms", s.mean_ms}, {"q1_ms", s.q1_ms},       {"q3_ms", s.q3_ms},   {"iqr_ms", s.iqr_ms}};
}

Summary summary_from_json(const json& j, const std::string& where) {
  Summary s;
  s.count = integer_at(j, "count", where);
  s.median_ms = number_at(j, "median_ms", where);
  s.min_ms = number_at(j, "min_ms", where);
  s.max_ms = number_at(j, "max_ms", where);
  s.mean_ms = number_at(j, "mean_ms", where);
  s.q1_ms = number_at(j, "q1_ms", where);
  s.q3_ms = number_at(j, "q3_ms", where);
  s.iqr_ms = number_at(j, "iqr_ms", where);
  return s;
}

json metrics_to_json(const Metrics& m) {
  return {{"gops", m.gops},
          {"effective_gbps", m.effective_gbps},
          {"pct_fp32_theoretical", m.pct_fp32_theoretical},
          {"pct_fp32_measured", m.pct_fp32_measured},
          {"pct_dram_theoretical", m.pct_dram_theoretical},
          {"pct_dram_measured", m.pct_dram_measured},
          {"arithmetic_intensity", m.arithmetic_intensity},
          {"roofline_bound_ms", m.roofline_bound_ms},
          {"roofline_limit", m.roofline_limit}};
}

Metrics metrics_from_json(const json& j, const std::string& where) {
  Metrics m;
  m.gops = number_at(j, "gops", where);
  m.effective_gbps = number_at(j, "effective_gbps", where);
  m.pct_fp32_theoretical = number_at(j, "pct_fp32_theoretical", where);
  m.pct_fp32_measured = number_at(j, "pct_fp32_measured", where);
  m.pct_dram_theoretical = number_at(j, "pct_dram_theoretical", where);
  m.pct_dram_measured = number_at(j, "pct_dram_measured", where);
  m.arithmetic_intensity = number_at(j, "arithmetic_intensity", where);
  m.roofline_bound_ms = number_at(j, "roofline_bound_ms", where);
  m.roofline_limit = string_at(j, "roofline_limit", where);
  return m;
}

json parallel_to_json(const ParallelInfo& p) {
  json shards = json::array();
  for (const auto& s : p.shards)
    shards.push_back({{"rank", s.rank},
                      {"host", s.host},
                      {"device", s.device},
                      {"rows", s.rows},
                      {"step_median_ms", s.step_median_ms},
                      {"allreduce_median_ms", s.allreduce_median_ms}});
  return {{"communicator", p.communicator},       {"launch", p.launch},
          {"ranks", p.ranks},                     {"allreduce_bytes", p.allreduce_bytes},
          {"allreduce_median_ms", p.allreduce_median_ms}, {"shards", shards}};
}

ParallelInfo parallel_from_json(const json& j, const std::string& where) {
  ParallelInfo p;
  p.communicator = string_at(j, "communicator", where);
  p.launch = string_at(j, "launch", where);
  p.ranks = int(integer_at(j, "ranks", where));
  p.allreduce_bytes = integer_at(j, "allreduce_bytes", where);
  p.allreduce_median_ms = number_at(j, "allreduce_median_ms", where);
  const json& shards = member(j, "shards", where);
  if (!shards.is_array()) throw InputError(where + ".shards: expected an array");
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string at = where + ".shards[" + std::to_string(i) + "]";
    if (!shards[i].is_object()) throw InputError(at + ": expected an object");
    ShardRecord s;
    s.rank = int(integer_at(shards[i], "rank", at));
    s.host = string_at(shards[i], "host", at);
    s.device = string_at(shards[i], "device", at);
    s.rows = integer_at(shards[i], "rows", at);
    s.step_median_ms = number_at(shards[i], "step_median_ms", at);
    s.allreduce_median_ms = number_at(shards[i], "allreduce_median_ms", at);
    p.shards.push_back(std::move(s));
  }
  return p;
}

std::string& invocation_storage() {
  static std::string text = "mkbench";
  return text;
}

std::string format_utc(const char* pattern) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, pattern, &utc);
  return buffer;
}

}  // namespace

nlohmann::json parallel_info_to_json(const ParallelInfo& info) { return parallel_to_json(info); }

bool ResultRow::verify_passed() const {
  if (!verify.is_object()) return true;
  auto it = verify.find("passed");
  return it != verify.end() && it->is_boolean() && it->get<bool>();
}

std::string row_name(const std::string& variant, const Problem& problem, const Params& params) {
  // A batch's M part is "64Kx32": B problems of 64K points each.
  return variant + "/" + std::to_string(problem.n) + "/" + problem.k.str() + "/" + format_count(problem.m) +
         (problem.batch > 1 ? "x" + std::to_string(problem.batch) : std::string()) + "/" + params_label(params);
}

json row_to_json(const ResultRow& row) {
  json out = {{"name", row.name},
          {"variant", row.variant},
          {"params", row.params},
          {"problem",
           {{"n", row.problem.n},
            {"k_min", row.problem.k.kmin},
            {"k_max", row.problem.k.kmax},
            {"sum_k", row.problem.k.sum()},
            {"m", row.problem.m}}},
          {"dataset", row.dataset},
          {"status", row.status},
          {"reason", row.reason},
          {"timing", timing_to_json(row.timing)},
          {"summary", summary_to_json(row.summary)},
          {"metrics", metrics_to_json(row.metrics)},
          {"verify", row.verify}};
  if (row.problem.batch > 1) out["problem"]["batch"] = row.problem.batch;  // m is each problem's
  if (!row.tuned_config.empty()) out["tuned_config"] = row.tuned_config;
  if (!row.out_of_core.is_null()) out["out_of_core"] = row.out_of_core;
  if (row.parallel) out["parallel"] = parallel_to_json(*row.parallel);
  return out;
}

ResultRow row_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected an object");
  ResultRow row;
  row.name = string_at(j, "name", where);
  row.variant = string_at(j, "variant", where);
  row.params = object_at(j, "params", where);
  const json& problem = object_at(j, "problem", where);
  const std::string problem_where = where + ".problem";
  row.problem.n = int(integer_at(problem, "n", problem_where));
  row.problem.k.kmin = int(integer_at(problem, "k_min", problem_where));
  row.problem.k.kmax = int(integer_at(problem, "k_max", problem_where));
  row.problem.m = integer_at(problem, "m", problem_where);
  if (problem.contains("batch")) {
    const int64_t batch = integer_at(problem, "batch", problem_where);
    if (batch < 1 || batch > kMaxBatch)
      throw InputError(problem_where + ".batch: expected 1 to " + std::to_string(kMaxBatch) + ", got " +
                       std::to_string(batch));
    row.problem.batch = int(batch);
  }
  if (j.contains("dataset")) row.dataset = j.at("dataset");
  row.status = string_at(j, "status", where);
  if (row.status != "ok" && row.status != "refused" && row.status != "failed")
    throw InputError(where + ".status: expected ok, refused or failed, got '" + row.status + "'");
  if (j.contains("reason") && j.at("reason").is_string()) row.reason = j.at("reason").get<std::string>();
  if (j.contains("tuned_config") && j.at("tuned_config").is_string())
    row.tuned_config = j.at("tuned_config").get<std::string>();
  if (j.contains("out_of_core") && j.at("out_of_core").is_object()) row.out_of_core = j.at("out_of_core");
  if (j.contains("timing")) row.timing = timing_from_json(object_at(j, "timing", where), where + ".timing");
  if (j.contains("summary")) row.summary = summary_from_json(object_at(j, "summary", where), where + ".summary");
  if (j.contains("metrics")) row.metrics = metrics_from_json(object_at(j, "metrics", where), where + ".metrics");
  if (j.contains("parallel"))
    row.parallel = parallel_from_json(object_at(j, "parallel", where), where + ".parallel");
  if (j.contains("verify")) {
    row.verify = j.at("verify");
    if (!row.verify.is_null() && !row.verify.is_object())
      throw InputError(where + ".verify: expected null or an object");
  }
  return row;
}

bool is_readable_results_schema(const std::string& schema) {
  return schema == kResultsSchema || schema == kResultsSchemaV1;
}

json results_to_json(const ResultFile& file) {
  json rows = json::array();
  for (const auto& row : file.rows) rows.push_back(row_to_json(row));
  return {{"schema", file.schema},
          {"created", file.created},
          {"command", file.command},
          {"suite", file.suite ? json(*file.suite) : json(nullptr)},
          {"device", file.device},
          {"build", file.build.to_json()},
          {"rows", rows}};
}

ResultFile results_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw InputError(source + ": expected a JSON object at the top level");
  ResultFile file;
  file.schema = string_at(j, "schema", source);
  if (!is_readable_results_schema(file.schema))
    throw InputError(source + ": unsupported schema '" + file.schema + "' (expected " + kResultsSchema + " or " +
                     kResultsSchemaV1 + ")");
  if (j.contains("created") && j.at("created").is_string()) file.created = j.at("created").get<std::string>();
  if (j.contains("command") && j.at("command").is_string()) file.command = j.at("command").get<std::string>();
  if (j.contains("suite") && j.at("suite").is_string()) file.suite = j.at("suite").get<std::string>();
  file.device = object_at(j, "device", source);
  if (j.contains("build")) file.build = BuildInfo::from_json(j.at("build"));
  const json& rows = member(j, "rows", source);
  if (!rows.is_array()) throw InputError(source + ".rows: expected an array");
  for (size_t i = 0; i < rows.size(); ++i)
    file.rows.push_back(row_from_json(rows[i], source + ".rows[" + std::to_string(i) + "]"));
  return file;
}

// What a failed write left: the previous file is untouched, since only the temporary file
// beside it was written (and has been removed).
static std::string previous_file_note(const std::filesystem::path& target) {
  std::error_code error;
  return std::filesystem::exists(target, error) ? "the previous " + target.string() + " is left as it was"
                                                : "no file was created";
}

void write_text_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  if (is_special_output(path)) return write_special_output(path, text.data(), text.size());
  const fs::path target(path);
  fs::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw InputError("cannot create folder " + folder.string() + ": " + error.message());

  static std::atomic<unsigned> counter{0};
  // Same folder as the target: rename() is only atomic within one file system.
  const fs::path temp = folder / ("." + target.filename().string() + "." + std::to_string(getpid()) + "." +
                                  std::to_string(counter++) + ".partial");
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  auto fail = [&](const char* step) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    throw InputError("cannot write " + path + " (" + step + "): " + reason + "; " + previous_file_note(target));
  };
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write_with_fault_seam(fd, text.data() + written, text.size() - written, written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw InputError("cannot write " + path + ": " + reason + " after " + std::to_string(written) + " of " +
                       std::to_string(text.size()) + " bytes; " + previous_file_note(target));
    }
    written += size_t(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    throw InputError("cannot write " + path + " (close): " + std::strerror(errno));
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw InputError("cannot write " + path + " (rename): " + reason);
  }
  // Persist the rename itself; failure here only weakens durability, not atomicity.
  int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("the output path is empty");
  if (is_special_output(path)) {
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && (S_ISBLK(info.st_mode) || S_ISSOCK(info.st_mode)))
      throw InputError("cannot write " + path + ": it is a " + (S_ISBLK(info.st_mode) ? "block device" : "socket") +
                       ", not a file, a character device or a FIFO");
    if (::access(path.c_str(), W_OK) != 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    return;
  }
  const fs::path target(path);
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
    throw InputError("cannot write " + path + ": it names a folder, not a file");
  fs::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw InputError("cannot write " + path + ": cannot create folder " + folder.string() + ": " + error.message());
  if (fs::is_directory(target, error)) throw InputError("cannot write " + path + ": it is a folder");
  // The writer's temporary file lives beside the target, so that is what must be creatable.
  const fs::path probe =
      folder / ("." + target.filename().string() + "." + std::to_string(getpid()) + ".check.partial");
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {  // left by a process of the same id that was killed mid-check
    ::unlink(probe.c_str());
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_results_atomically(const std::string& path, const json& document) {
  write_text_atomically(path, document.dump(2) + "\n");
}

void write_results_atomically(const std::string& path, const ResultFile& file) {
  write_results_atomically(path, results_to_json(file));
}

ResultFile load_results(const std::string& path) {
  require_regular_file(path, "results file", /*pipes=*/true);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open results file " + path + ": " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  json document;
  try {
    document = json::parse(buffer.str());
  } catch (const json::parse_error& e) {
    throw InputError("results file " + path + " is not valid JSON (truncated or corrupt?): " + e.what());
  }
  return results_from_json(document, path);
}

ResultFile new_result_file(const DeviceInfo& device, std::optional<std::string> suite) {
  ResultFile file;
  file.created = utc_now_iso();
  file.command = invocation();
  file.suite = std::move(suite);
  file.device = device.to_json();
  file.build = current_build_info();
  return file;
}

DeviceInfo device_from_json(const json& j) {
  DeviceInfo d;
  if (!j.is_object()) return d;
  auto num = [&](const char* key) { return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : 0.0; };
  auto text = [&](const json& o, const char* key) {
    return o.contains(key) && o.at(key).is_string() ? o.at(key).get<std::string>() : std::string();
  };
  d.is_gpu = j.value("is_gpu", false);
  d.name = text(j, "name");
  d.ordinal = int(j.contains("ordinal") && j.at("ordinal").is_number() ? j.at("ordinal").get<int>() : -1);
  const std::string cc = text(j, "compute_capability");
  if (auto dot = cc.find('.'); dot != std::string::npos) {
    d.cc_major = std::atoi(cc.substr(0, dot).c_str());
    d.cc_minor = std::atoi(cc.substr(dot + 1).c_str());
  }
  d.sm_count = int(num("sm_count"));
  d.fp32_lanes_per_sm = int(num("fp32_lanes_per_sm"));
  d.sm_clock_mhz = num("sm_clock_mhz");
  d.mem_clock_mhz = num("mem_clock_mhz");
  d.mem_bus_bits = int(num("mem_bus_bits"));
  d.global_mem_bytes = int64_t(num("global_mem_bytes"));
  d.l2_bytes = int64_t(num("l2_bytes"));
  d.smem_per_block_optin = int64_t(num("smem_per_block_optin"));
  d.driver = text(j, "driver");
  d.runtime = text(j, "cuda_runtime");
  d.cpu_threads = int(num("cpu_threads"));
  if (j.contains("peaks") && j.at("peaks").is_object()) {
    const json& p = j.at("peaks");
    auto peak = [&](const char* key) { return p.contains(key) && p.at(key).is_number() ? p.at(key).get<double>() : 0.0; };
    d.peaks.fp32_gflops_theoretical = peak("fp32_gflops_theoretical");
    d.peaks.dram_gbps_theoretical = peak("dram_gbps_theoretical");
    d.peaks.fp32_gflops_measured = peak("fp32_gflops_measured");
    d.peaks.dram_read_gbps_measured = peak("dram_read_gbps_measured");
    d.peaks.dram_copy_gbps_measured = peak("dram_copy_gbps_measured");
    d.peaks.measured_at = text(p, "measured_at");
  }
  return d;
}

std::string utc_now_iso() { return format_utc("%Y-%m-%dT%H:%M:%SZ"); }
std::string utc_today() { return format_utc("%Y-%m-%d"); }

void set_invocation(int argc, const char* const* argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i == 0) {
      // The program's own path varies between machines; the basename is what matters.
      auto slash = arg.find_last_of('/');
      if (slash != std::string::npos) arg = arg.substr(slash + 1);
    }
    const bool needs_quotes = arg.empty() || arg.find_first_of(" \t\"'$\\") != std::string::npos;
    if (!text.empty()) text += ' ';
    if (needs_quotes) {
      text += '\'';
      for (char c : arg) text += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      text += '\'';
    } else {
      text += arg;
    }
  }
  invocation_storage() = text;
}

const std::string& invocation() { return invocation_storage(); }

}  // namespace mk
