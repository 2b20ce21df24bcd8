// mkbench_kernel_snapshot: the machine code of the runtime-compiled kernels (tensor-multik,
// registers-multik) at a fixed list of shapes, so a change that must not touch the kernels can
// be shown not to. NVRTC compiles for sm_90 without a GPU.
//
//   mkbench_kernel_snapshot --out DIR [S]  compile every point (whose tag contains S), write
//                                          DIR/<tag>.cubin, .ptx and DIR/manifest.tsv (registers,
//                                          frame, .text size and hash)
//   mkbench_kernel_snapshot --compare A B  per point: is each kernel's .text byte-identical, and
//                                          are the registers, frame and PTX (without line info) equal
//
// The points: the five cases of `tests/device.sh perf` and every distinct (N, K range) of the
// table2 and kernels suites that the variant accepts on an H200 (described synthetically), each
// with its default parameters and, where configs/nvidia-h200.json resolves to others for the
// shape, those too; tensor-multik's perf cases also with the kernel of iterations that keep
// labels and the MKBENCH_TIMELINE one.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.hpp"
#include "harness/suite.hpp"
#include "variants/common/cubin_info.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/registers_multik/registers_multik.hpp"
#include "variants/tensor_multik/tensor_multik.hpp"
#include "variants/tuned_params.hpp"
#include "variants/variant.hpp"

namespace fs = std::filesystem;
using namespace mk;

namespace {

DeviceInfo h200() {
  DeviceInfo d;
  d.is_gpu = true;
  d.ordinal = 0;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.fp32_lanes_per_sm = 128;
  d.sm_clock_mhz = 1980;
  d.mem_clock_mhz = 3201;
  d.mem_bus_bits = 6144;
  d.global_mem_bytes = int64_t(143771) << 20;
  d.l2_bytes = int64_t(60) << 20;
  d.smem_per_block_optin = 232448;
  d.smem_per_sm = 233472;
  d.regs_per_sm = 65536;
  d.max_threads_per_sm = 2048;
  d.cpu_threads = 16;
  return d;
}

struct Point {
  std::string tag, variant, shape, kind;
  Params params;
  gpu::RuntimeCompileRequest request;
};

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v, int digits = 16) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%0*llx", digits, (unsigned long long)v);
  return buffer;
}

std::vector<Problem> shapes() {
  std::vector<Problem> out;
  auto add = [&](int n, const std::string& k, const std::string& m) {
    Problem p;
    p.n = n;
    p.k = parse_k_range(k);
    p.m = parse_count(m);
    for (const Problem& q : out)
      if (q.n == p.n && q.k.kmin == p.k.kmin && q.k.kmax == p.k.kmax) return;  // one M per (N, K range)
    out.push_back(p);
  };
  // tests/device.sh perf (N=32 K=1024 is tf32-window's: neither variant accepts it).
  add(8, "3..7", "32M"), add(4, "3..5", "32M"), add(16, "3..7", "32M"), add(8, "16", "8M"), add(32, "1024", "2M");
  for (const char* suite : {"table2", "kernels"})
    for (const SuiteCase& c : load_suite(suite).cases)
      for (int n : c.dims)
        for (const std::string& k : c.k)
          for (const std::string& m : c.points) add(n, k, m);
  return out;
}

// The non-default parameter points configs/nvidia-h200.json records for `variant` at exactly
// this shape (best and runner-up of every entry).
std::vector<Params> config_points(const std::string& variant, const Problem& problem) {
  static const nlohmann::json config = [] {
    std::ifstream in(std::string(MKBENCH_SOURCE_DIR) + "/configs/nvidia-h200.json");
    return nlohmann::json::parse(in);
  }();
  std::vector<Params> out;
  for (const auto& entry : config.at("entries")) {
    const auto& p = entry.at("problem");
    if (p.at("n") != problem.n || p.at("k_min") != problem.k.kmin || p.at("k_max") != problem.k.kmax) continue;
    for (const char* key : {"best", "runner_up"})
      if (entry.contains(key) && entry[key].at("variant") == variant)
        out.push_back(entry[key].at("params"));
  }
  return out;
}

std::string shape_label(const Problem& p) {
  return "n" + std::to_string(p.n) + "-k" + std::to_string(p.k.kmin) + "-" + std::to_string(p.k.kmax);
}

std::vector<Point> points() {
  const DeviceInfo device = h200();
  std::vector<Point> out;
  std::set<std::string> seen;
  int index = 0;
  for (const Problem& problem : shapes()) {
    const bool perf_case = index++ < 5;
    for (const char* name : {"tensor-multik", "registers-multik"}) {
      const Variant& variant = Registry::instance().get(name);
      if (variant.can_implement(problem, device)) continue;
      std::vector<std::pair<std::string, Params>> choices{{"default", variant.default_params(problem, device)}};
      if (auto tuned = tuned_params_for(variant, problem, device, nullptr); tuned && *tuned != choices[0].second)
        choices.push_back({"tuned", *tuned});
      // Every other point the config records for this variant at this shape (runners-up too).
      for (const Params& recorded : config_points(name, problem)) {
        Params params = choices[0].second;
        params.update(recorded);
        const bool known = std::any_of(choices.begin(), choices.end(), [&](const auto& c) { return c.second == params; });
        if (!known && !variant.param_space(problem, device).check(params)) choices.push_back({"config", params});
      }
      for (const auto& [kind, params] : choices) {
        std::vector<std::pair<std::string, gpu::RuntimeCompileRequest>> requests;
        if (std::string(name) == "tensor-multik") {
          requests.push_back({kind, tensor_multik::kernel_request(problem, params, 9, 0)});
          if (perf_case && params.value("operands", std::string()) == "prepared")
            requests.push_back({kind + "+labels", tensor_multik::kernel_request(problem, params, 9, 0, 1.f, true)});
          if (perf_case && kind == "default")
            requests.push_back({kind + "+timeline", tensor_multik::kernel_request(problem, params, 9, 0, 1.f, false, true)});
        } else {
          requests.push_back({kind, registers_multik::kernel_request(problem, params, device)});
        }
        for (auto& [point_kind, request] : requests) {
          Point point;
          point.variant = name;
          point.shape = problem.str();
          point.kind = point_kind;
          point.params = params;
          point.tag = std::string(name == std::string("tensor-multik") ? "tmk-" : "rmk-") + shape_label(problem) + "-" +
                      point_kind + "-" + hex(fnv1a(params.dump()), 8);
          point.request = std::move(request);
          if (seen.insert(point.tag).second) out.push_back(std::move(point));
        }
      }
    }
  }
  return out;
}

// PTX without what only says where code came from (.loc, .file, comments, the debug sections).
std::string strip_ptx(const std::string& ptx) {
  std::istringstream lines(ptx);
  std::string line, out;
  while (std::getline(lines, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    if (line.compare(start, 8, ".section") == 0) break;
    if (line.compare(start, 4, ".loc") == 0 || line.compare(start, 5, ".file") == 0 || line.compare(start, 2, "//") == 0)
      continue;
    out += line + "\n";
  }
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int snapshot(const fs::path& dir, const std::string& filter) {
  fs::create_directories(dir);
  std::vector<Point> all = points();
  // The filter: tag substrings separated by commas, any of which selects a point.
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const Point& p) {
                             std::istringstream parts(filter);
                             for (std::string part; std::getline(parts, part, ',');)
                               if (p.tag.find(part) != std::string::npos) return false;
                             return !filter.empty();
                           }),
            all.end());
  const std::string toolkit = gpu::nvrtc_version();
  std::vector<std::string> rows(all.size());
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  std::mutex print;
  auto work = [&]() {
    for (size_t i = next++; i < all.size(); i = next++) {
      const Point& p = all[i];
      try {
        const gpu::KernelImage image = gpu::compile_image(p.request);
        std::ofstream(dir / (p.tag + ".cubin"), std::ios::binary) << image.cubin;
        std::ofstream(dir / (p.tag + ".ptx")) << strip_ptx(image.ptx);
        std::ostringstream row;
        row << p.tag << "\t" << p.variant << "\t" << p.shape << "\t" << p.kind << "\t" << p.params.dump();
        for (const gpu::CubinKernel& k : gpu::read_cubin_kernels(image.cubin, toolkit))
          row << "\t" << k.name << ":regs=" << k.registers << ",frame=" << k.frame_bytes << ",shared=" << k.shared_bytes
              << ",text=" << k.text.size() << ",hash=" << hex(fnv1a(k.text));
        row << "\twarnings=" << (image.log.find("warning") != std::string::npos ? "yes" : "no");
        rows[i] = row.str();
        std::lock_guard<std::mutex> lock(print);
        std::cerr << "[" << i + 1 << "/" << all.size() << "] " << rows[i] << "\n";
      } catch (const std::exception& e) {
        ++failures;
        std::lock_guard<std::mutex> lock(print);
        std::cerr << p.tag << ": " << e.what() << "\n";
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned count = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  for (unsigned t = 0; t < count; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  std::ofstream manifest(dir / "manifest.tsv");
  manifest << "# " << toolkit << ", sm_90, " << all.size() << " points\n";
  for (const std::string& row : rows)
    if (!row.empty()) manifest << row << "\n";
  std::cout << all.size() << " points, " << failures << " failed, in " << dir << "\n";
  return failures ? 1 : 0;
}

int compare(const fs::path& old_dir, const fs::path& new_dir) {
  const std::string toolkit = gpu::nvrtc_version();
  std::ifstream manifest(old_dir / "manifest.tsv");
  std::set<std::string> compiled_new;
  for (const auto& entry : fs::directory_iterator(new_dir))
    if (entry.path().extension() == ".cubin") compiled_new.insert(entry.path().stem().string());
  std::string line;
  int identical = 0, different = 0, missing = 0;
  std::cout << "tag\tshape\tkind\tparams\ttext identical\tregs old/new\tframe old/new\tptx identical\n";
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string f; std::getline(split, f, '\t');) fields.push_back(f);
    const std::string tag = fields[0];
    if (!compiled_new.count(tag)) {
      std::cout << tag << "\t" << fields[2] << "\t" << fields[3] << "\t" << fields[4] << "\tMISSING\n";
      ++missing;
      continue;
    }
    const auto old_kernels = gpu::read_cubin_kernels(read_file(old_dir / (tag + ".cubin")), toolkit);
    const auto new_kernels = gpu::read_cubin_kernels(read_file(new_dir / (tag + ".cubin")), toolkit);
    bool same = old_kernels.size() == new_kernels.size();
    std::string regs, frames;
    for (const gpu::CubinKernel& o : old_kernels) {
      const auto n = std::find_if(new_kernels.begin(), new_kernels.end(), [&](const auto& k) { return k.name == o.name; });
      if (n == new_kernels.end()) {
        same = false;
        continue;
      }
      same = same && n->text == o.text && n->registers == o.registers && n->frame_bytes == o.frame_bytes &&
             n->shared_bytes == o.shared_bytes;
      regs += (regs.empty() ? "" : " ") + std::to_string(o.registers) + "/" + std::to_string(n->registers);
      frames += (frames.empty() ? "" : " ") + std::to_string(o.frame_bytes) + "/" + std::to_string(n->frame_bytes);
    }
    const bool ptx_same = read_file(old_dir / (tag + ".ptx")) == read_file(new_dir / (tag + ".ptx"));
    std::cout << tag << "\t" << fields[2] << "\t" << fields[3] << "\t" << fields[4] << "\t" << (same ? "yes" : "NO")
              << "\t" << regs << "\t" << frames << "\t" << (ptx_same ? "yes" : "no") << "\n";
    (same ? identical : different)++;
  }
  std::cout << identical << " identical, " << different << " different, " << missing << " missing\n";
  return different || missing ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if ((args.size() == 2 || args.size() == 3) && args[0] == "--out") return snapshot(args[1], args.size() == 3 ? args[2] : "");
    if (args.size() == 3 && args[0] == "--compare") return compare(args[1], args[2]);
    if (args.size() == 1 && args[0] == "--list") {
      for (const Point& p : points()) std::cout << p.tag << "\t" << p.shape << "\t" << p.kind << "\t" << p.params.dump() << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "mkbench_kernel_snapshot: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: mkbench_kernel_snapshot --out DIR [TAG_SUBSTRING] | --compare OLD_DIR NEW_DIR | --list\n";
  return 2;
}
