// Every `build/mkbench` command shown in the README and docs/ runs here, on a machine without a GPU,
// and exits as the docs say (0, or the `# exit N` of its comment). The substitutions are documented
// in docs/README.md and are the only ones: a GPU variant becomes cpu-openmp (its parameters are then
// checked against the GPU variant's own space on a synthetic H100 instead), sizes shrink, suites run
// --quick with their CPU rows, and `tune --suite` tunes the smoke suite. So a doc example that stops
// working (an axis renamed, an option dropped, a suite removed) fails CI.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/problem.hpp"
#include "harness/cli_run.hpp"
#include "synthetic_devices.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;

struct DocCommand {
  std::string page;
  int line = 0;
  std::string text;              // as written, without the comment
  std::vector<std::string> args;  // after `build/mkbench`
  std::set<int> exits{0};
};

// Shell-like words: whitespace separates, single and double quotes group (no escapes inside
// single quotes, as in sh).
std::vector<std::string> shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word), word.clear(), in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// The comment of a shell line: from the first '#' outside quotes that starts a word.
size_t comment_start(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      return i;
    }
  }
  return std::string::npos;
}

std::vector<DocCommand> commands_of(const fs::path& page) {
  std::vector<DocCommand> commands;
  std::ifstream in(page);
  std::string line, pending;
  bool in_sh = false;
  int number = 0, first_line = 0;
  static const std::regex exit_marker(R"(^#\s*exit\s+(\d)(\s+or\s+(\d))?)");
  while (std::getline(in, line)) {
    ++number;
    const std::string trimmed = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (trimmed.rfind("```", 0) == 0) {
      in_sh = !in_sh && trimmed == "```sh";
      continue;
    }
    if (!in_sh) continue;
    if (pending.empty()) first_line = number;
    if (!trimmed.empty() && trimmed.back() == '\\') {  // continued on the next line
      pending += trimmed.substr(0, trimmed.size() - 1) + " ";
      continue;
    }
    const std::string full = pending + trimmed;
    pending.clear();
    if (full.rfind("build/mkbench ", 0) != 0) continue;
    DocCommand command;
    command.page = page.filename().string();
    command.line = first_line;
    const size_t hash = comment_start(full);
    command.text = full.substr(0, hash);
    std::smatch match;
    const std::string comment = hash == std::string::npos ? "" : full.substr(hash);
    if (std::regex_search(comment, match, exit_marker)) {
      command.exits = {std::stoi(match[1])};
      if (match[3].matched) command.exits.insert(std::stoi(match[3]));
    }
    command.args = shell_words(command.text);
    command.args.erase(command.args.begin());  // build/mkbench
    commands.push_back(std::move(command));
  }
  return commands;
}

bool is_gpu_variant(const std::string& name) {
  const Variant* v = Registry::instance().find(name);
  return v && v->runs_on_gpu();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) parts.push_back(part);
  return parts;
}

// Value of the first of these options, or "".
std::string option(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    for (const char* name : names)
      if (args[i] == name) return args[i + 1];
  return "";
}

// A `run` or `tune` naming GPU variants: the parameters must be legal for each on an H100 (and the
// shape implementable), unless the docs say it exits 3. Returns whether a GPU variant refused, and
// adds a failure when that contradicts the docs.
bool check_gpu_params(const DocCommand& command) {
  const std::string verb = command.args.empty() ? "" : command.args[0];
  if (verb != "run" && verb != "tune") return false;
  const std::string names = option(command.args, verb == "run" ? std::initializer_list<const char*>{"--variant"}
                                                                : std::initializer_list<const char*>{"--variants"});
  std::vector<const Variant*> gpu;
  for (const auto& name : split_commas(names))
    if (is_gpu_variant(name)) gpu.push_back(Registry::instance().find(name));
  if (gpu.empty() || (verb == "tune" && option(command.args, {"--dims"}).empty())) return false;

  Problem problem;
  Params overrides = Params::object();
  if (verb == "run") {
    RunOptions options;
    CLI::App app;
    add_run_options(app, options);
    std::vector<std::string> reversed(command.args.rbegin(), command.args.rend() - 1);
    app.parse(reversed);  // CLI11 takes the words in reverse order
    problem.n = options.dims;
    problem.m = parse_count(options.points);
    problem.k = parse_k_range(options.k);
    overrides = collect_overrides(options);
  } else {
    problem.n = std::stoi(option(command.args, {"--dims"}));
    problem.m = parse_count(option(command.args, {"--points"}));
    problem.k = parse_k_range(option(command.args, {"--k"}));
    for (size_t i = 0; i + 1 < command.args.size(); ++i)
      if (command.args[i] == "--fix") {
        const Params fix = parse_param_assignments({command.args[i + 1]}, "--fix");
        overrides.update(fix);
      }
  }
  const DeviceInfo h100 = testing_support::h100_like();
  bool refused = false;
  std::string why;
  for (const Variant* variant : gpu) {
    if (auto reason = variant->can_implement(problem, h100)) {
      refused = true, why += variant->name() + ": " + *reason + "; ";
      continue;
    }
    try {
      resolve_params(*variant, problem, h100, overrides);
    } catch (const Error& e) {
      refused = true, why += std::string(e.what()) + "; ";
    }
  }
  const bool documented_refusal = command.exits.count(kExitUnsupported) > 0;
  EXPECT_EQ(refused, documented_refusal)
      << command.page << ":" << command.line << ": " << command.text << "\non a synthetic H100: "
      << (refused ? why : "every variant accepts the shape and the parameters");
  return refused;
}

// The command as the CPU test runs it (docs/README.md lists these substitutions).
std::vector<std::string> for_this_machine(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  const std::string verb = args.empty() ? "" : args[0];
  const bool suite = verb == "suite" || verb == "--suite";
  const bool tune = verb == "tune";
  bool gpu_variant_named = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if ((a == "--variant" || a == "--variants") && has_value) {
      std::vector<std::string> names;
      for (const auto& name : split_commas(args[++i])) {
        const bool gpu = is_gpu_variant(name);
        gpu_variant_named |= gpu;
        const std::string kept = gpu ? "cpu-openmp" : name;
        if (std::find(names.begin(), names.end(), kept) == names.end()) names.push_back(kept);
      }
      if (suite) gpu_variant_named = false;
      std::string joined;
      for (const auto& name : names) joined += (joined.empty() ? "" : ",") + name;
      // A suite keeps its variants: without a GPU it runs its own CPU fallback for them.
      out.insert(out.end(), {a, suite ? args[i] : joined});
    } else if ((a == "--points" || a == "-m") && has_value && verb != "verify-matrix" && verb != "list") {
      out.insert(out.end(), {a, std::to_string(std::min<int64_t>(parse_count(args[++i]), 16384))});
    } else if (a == "--iters" && has_value) {
      out.insert(out.end(), {a, std::to_string(std::min(std::stoi(args[++i]), 3))});
    } else if (tune && a == "--budget" && has_value) {
      ++i;
      out.insert(out.end(), {"--max-evals", "2", "--samples", "3", "--warmup", "1"});
    } else if (tune && a == "--suite" && has_value) {
      ++i;
      out.insert(out.end(), {"--suite", "smoke"});
    } else {
      out.push_back(a);
    }
  }
  if (gpu_variant_named) {  // the GPU variant's parameters go with it
    std::vector<std::string> kept;
    for (size_t i = 0; i < out.size(); ++i) {
      static const std::set<std::string> tunables{"--param", "--grid", "--block", "--ppt", "--layout", "--fix"};
      if (tunables.count(out[i]) && i + 1 < out.size()) ++i;
      else kept.push_back(out[i]);
    }
    out = kept;
  }
  if (suite) out.push_back("--quick");
  return out;
}

std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class DocPage : public ::testing::TestWithParam<std::string> {};

TEST_P(DocPage, EveryMkbenchCommandRunsAsDocumented) {
  const fs::path page = fs::path(MKBENCH_SOURCE_DIR) / GetParam();
  ASSERT_TRUE(fs::exists(page)) << page;
  const auto commands = commands_of(page);
  ASSERT_FALSE(commands.empty()) << GetParam();

  static std::atomic<int> counter{0};
  const fs::path work = fs::temp_directory_path() /
                        ("mkbench_docs_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(work);
  fs::create_directory_symlink(fs::path(MKBENCH_SOURCE_DIR) / "tests", work / "tests");  // fixtures the docs name
  const std::string env = "MKBENCH_CONFIG_DIR=" + quoted((work / "configs").string()) +
                          " MKBENCH_CACHE_DIR=" + quoted((work / "cache").string()) +
                          " MKBENCH_BASELINE_DIR=" + quoted((work / "baselines").string()) + " ";
  for (const auto& command : commands) {
    SCOPED_TRACE(GetParam() + ":" + std::to_string(command.line) + ": " + command.text);
    const bool gpu_refusal = check_gpu_params(command);
    // A documented GPU refusal cannot happen with the CPU variant in its place: the synthetic
    // check above is the test of that line.
    if (gpu_refusal && command.exits == std::set<int>{kExitUnsupported}) continue;
    std::string line = "cd " + quoted(work.string()) + " && " + env + quoted(MKBENCH_BINARY);
    for (const auto& word : for_this_machine(command.args)) line += " " + quoted(word);
    const std::string log = (work / "last.log").string();
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system((line + " >" + quoted(log) + " 2>&1").c_str());
    std::printf("  %5.1f s  %s:%d  %s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), GetParam().c_str(),
                command.line, command.text.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(log);
    std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (output.size() > 3000) output = "…" + output.substr(output.size() - 3000);
    EXPECT_TRUE(command.exits.count(code)) << "exit " << code << " from\n  " << line << "\n" << output;
  }
  std::error_code ignored;
  fs::remove_all(work, ignored);
}

// The README and every docs/ page that shows a command (FindsTheDocsCommands keeps the extraction
// from finding nothing).
std::vector<std::string> doc_pages() {
  std::vector<std::string> docs;
  for (const auto& entry : fs::directory_iterator(fs::path(MKBENCH_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md") docs.push_back("docs/" + entry.path().filename().string());
  std::sort(docs.begin(), docs.end());
  docs.insert(docs.begin(), "README.md");
  std::vector<std::string> pages;
  for (const auto& page : docs)
    if (!commands_of(fs::path(MKBENCH_SOURCE_DIR) / page).empty()) pages.push_back(page);
  return pages;
}

TEST(DocCommandExtraction, FindsTheDocsCommands) {
  size_t total = 0;
  for (const auto& page : doc_pages()) total += commands_of(fs::path(MKBENCH_SOURCE_DIR) / page).size();
  EXPECT_GE(commands_of(fs::path(MKBENCH_SOURCE_DIR) / "README.md").size(), 8u);
  EXPECT_GE(total, 40u);
}

std::string page_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Docs, DocPage, ::testing::ValuesIn(doc_pages()), page_name);

// The extraction itself, on a page written for the purpose: the reference is the text below.
TEST(DocCommandExtraction, ReadsShBlocksContinuationsAndExitMarkers) {
  const fs::path page = fs::temp_directory_path() / ("mkbench_doc_extract_" + std::to_string(getpid()) + ".md");
  std::ofstream(page) << "text\n```sh\nbuild/mkbench run --variant x \\\n    --dims 4   # exit 3: why\n"
                         "scripts/other.sh\nbuild/mkbench list --names-only # exit 0 or 1\n```\n"
                         "```\nbuild/mkbench not-sh\n```\n```sh\nbuild/mkbench report 'a b.json'\n```\n";
  const auto commands = commands_of(page);
  fs::remove(page);
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_EQ(commands[0].args, (std::vector<std::string>{"run", "--variant", "x", "--dims", "4"}));
  EXPECT_EQ(commands[0].exits, std::set<int>{3});
  EXPECT_EQ(commands[0].line, 3);
  EXPECT_EQ(commands[1].exits, (std::set<int>{0, 1}));
  EXPECT_EQ(commands[2].args, (std::vector<std::string>{"report", "a b.json"}));
  EXPECT_EQ(commands[2].exits, std::set<int>{0});
}

TEST(DocCommandExtraction, SubstitutionsTouchOnlyVariantsAndSizes) {
  EXPECT_EQ(for_this_machine({"run", "--variant", "tensor-multik,auto", "--dims", "8", "--points", "32M", "--iters",
                              "20", "--param", "fetch=ring", "--grid", "264", "--verify"}),
            (std::vector<std::string>{"run", "--variant", "cpu-openmp", "--dims", "8", "--points", "16384", "--iters",
                                      "3", "--verify"}));
  EXPECT_EQ(for_this_machine({"run", "--variant", "cpu-openmp", "--param", "threads=1", "--points", "1000"}),
            (std::vector<std::string>{"run", "--variant", "cpu-openmp", "--param", "threads=1", "--points", "1000"}));
  EXPECT_EQ(for_this_machine({"--suite", "table2", "--variants", "tensor-multik,auto", "--out", "t2.json"}),
            (std::vector<std::string>{"--suite", "table2", "--variants", "tensor-multik,auto", "--out", "t2.json",
                                      "--quick"}));
  EXPECT_EQ(for_this_machine({"tune", "--suite", "table2", "--budget", "10m"}),
            (std::vector<std::string>{"tune", "--suite", "smoke", "--max-evals", "2", "--samples", "3", "--warmup", "1"}));
}

}  // namespace
}  // namespace mk
