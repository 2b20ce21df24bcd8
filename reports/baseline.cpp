#include "reports/baseline.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/results.hpp"
#include "reports/results_io.hpp"

namespace mk::reports {

using nlohmann::json;
namespace fs = std::filesystem;

std::string default_baseline_dir() {
  if (const char* dir = std::getenv("MKBENCH_BASELINE_DIR"); dir && *dir) return dir;
#ifdef MKBENCH_SOURCE_DIR
  return (fs::path(MKBENCH_SOURCE_DIR) / "reports" / "baselines").string();
#else
  return "reports/baselines";
#endif
}

static void check_component(const std::string& text, const std::string& what) {
  const bool plain = !text.empty() && text != "." && text != ".." &&
                     std::all_of(text.begin(), text.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                     });
  if (!plain)
    throw InputError(what + " \"" + text + "\" is not usable as a file name (letters, digits, - _ . only)");
}

std::string baseline_path(const std::string& dir, const std::string& device_slug,
                          const std::string& suite) {
  check_component(device_slug, "device slug");
  check_component(suite, "suite name");
  return (fs::path(dir) / device_slug / (suite + ".json")).string();
}

StoredBaseline store_baseline(const json& results, const std::string& origin, const std::string& suite,
                              const std::string& expected_slug, const std::string& dir, bool force) {
  StoredBaseline stored;
  auto refuse_or_warn = [&](const std::string& what) {
    if (!force) throw InputError(origin + ": " + what + " (--force stores it anyway)");
    stored.warnings.push_back(what + " (stored because of --force)");
  };
  const std::string file_suite = string_or(results, "suite", "");
  if (file_suite != suite)
    refuse_or_warn(file_suite.empty() ? "is not a suite run (\"suite\" is null), asked for suite " + suite
                                      : "is a run of suite " + file_suite + ", not " + suite);
  std::string slug = device_slug(results);
  if (slug.empty()) {
    if (expected_slug.empty()) throw InputError(origin + ": no device.slug; pass --device-slug");
    refuse_or_warn("has no device.slug");
    slug = expected_slug;
  } else if (!expected_slug.empty() && slug != expected_slug) {
    refuse_or_warn("ran on " + slug + ", not on " + expected_slug);
    slug = expected_slug;
  }
  // A baseline names the code that produced it, so a later reader can rebuild and rerun it.
  const json build = results.contains("build") && results["build"].is_object() ? results["build"] : json::object();
  const std::string commit = string_or(build, "git_sha", "");
  if (commit.empty() || commit == "unknown")
    refuse_or_warn("does not name the commit that produced it (build.git_sha is \"" + commit +
                   "\"); build from a git checkout, or set MKBENCH_GIT_SHA=<sha> when configuring");
  else if (commit.size() > 6 && commit.compare(commit.size() - 6, 6, "-dirty") == 0)
    stored.warnings.push_back("commit " + commit + " had uncommitted changes: the baseline cannot be rebuilt exactly");
  const json& rows = results.at("rows");
  if (rows.empty()) throw InputError(origin + ": has no rows; an empty baseline would gate nothing");
  size_t not_ok = 0;
  for (const json& row : rows) not_ok += row_status(row) != "ok";
  if (not_ok == rows.size()) throw InputError(origin + ": no row has status ok");
  // compare cannot judge a row without a baseline timing, and a gate then exits 2.
  if (not_ok > 0)
    refuse_or_warn(std::to_string(not_ok) + " of " + std::to_string(rows.size()) +
                   " rows are not ok, and a gate cannot judge those rows (compare exits 2 on them "
                   "unless --allow-missing)");
  stored.path = baseline_path(dir, slug, suite);
  mk::write_text_atomically(stored.path, results.dump(2) + "\n");
  return stored;
}

std::string describe_baselines(const std::string& dir, const std::string& device_slug_filter,
                               const std::string& suite_filter) {
  std::ostringstream out;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return "no baselines: " + dir + " does not exist\n";
  std::vector<fs::path> files;
  for (const auto& device_dir : fs::directory_iterator(dir, error)) {
    if (!device_dir.is_directory()) continue;
    if (!device_slug_filter.empty() && device_dir.path().filename() != device_slug_filter) continue;
    for (const auto& entry : fs::directory_iterator(device_dir.path(), error)) {
      if (entry.path().extension() != ".json") continue;
      if (!suite_filter.empty() && entry.path().stem() != suite_filter) continue;
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return "no baselines under " + dir + " matching the filter\n";
  for (const auto& path : files) {
    out << path.parent_path().filename().string() << "/" << path.filename().string() << ": ";
    try {
      const json doc = load_results_file(path.string());
      size_t ok = 0;
      for (const json& row : doc["rows"]) ok += row_status(row) == "ok";
      const json build = doc.contains("build") && doc["build"].is_object() ? doc["build"] : json::object();
      out << "suite " << string_or(doc, "suite", "?") << ", " << device_label(doc) << ", commit "
          << string_or(build, "git_sha", "unknown") << ", created " << string_or(doc, "created", "?")
          << ", " << doc["rows"].size() << " rows (" << ok << " ok)\n";
    } catch (const std::exception& failure) {
      out << "UNREADABLE: " << failure.what() << "\n";
    }
  }
  return out.str();
}

std::string current_device_slug() { return query_device(0).slug(); }

std::string self_executable() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) throw InputError("cannot find this executable via /proc/self/exe: " + error.message());
  return exe.string();
}

}  // namespace mk::reports
