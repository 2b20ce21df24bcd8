// The report of `mkbench explore` (reports/explore_report.hpp).
#include "reports/explore_report.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mk::reports {
namespace {

namespace fs = std::filesystem;

std::string percent(double share, int decimals = 2) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f %%", decimals, 100.0 * share);
  return text;
}

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f s", value);
  return text;
}

std::string join_columns(const nlohmann::json& columns) {
  std::string out;
  for (const auto& column : columns) out += (out.empty() ? "" : ", ") + std::to_string(column.get<int>());
  return out;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string provenance(const nlohmann::json& doc) {
  const std::string commit = doc.contains("build") ? doc["build"].value("git_sha", "?") : "?";
  return "mkbench " + commit + ", " + doc.value("created", "?") + ", " +
         (doc.contains("device") ? doc["device"].value("name", "?") : std::string("?"));
}

ReportTable run_table(const nlohmann::json& doc) {
  const auto& options = doc.at("options");
  const auto& dataset = doc.at("dataset");
  const auto& summary = doc.at("summary");
  const auto& time = doc.at("time_s");
  ReportTable table;
  table.title = "Attribute-subset exploration";
  table.provenance = {provenance(doc)};
  table.header = {"", "value"};
  table.numeric = {false, false};
  std::string shares;
  for (size_t c = 0; c < dataset.at("class_values").size(); ++c)
    shares += (c ? ", " : "") + std::to_string(dataset["class_values"][c].get<int64_t>()) + ": " +
              percent(dataset["class_shares"][c].get<double>(), 1);
  auto add = [&](const std::string& key, const std::string& value) { table.rows.push_back({key, value}); };
  add("dataset", options.at("dataset").get<std::string>() +
                     (options.at("labels").get<std::string>().empty() ? "" : " + labels " + options["labels"].get<std::string>()));
  add("table", std::to_string(dataset.at("m").get<int64_t>()) + " rows x " + std::to_string(dataset.at("n").get<int>()) +
                   " attributes");
  add("classes", shares);
  add("copies", std::to_string(summary.at("copies").get<int64_t>()) + " (" +
                    std::to_string(summary.at("distinct_subsets").get<int64_t>()) + " distinct subsets of " +
                    std::to_string(options.at("subset_size").get<int>()) + " attributes)");
  char clustering[160];
  std::snprintf(clustering, sizeof clustering, "k=%d, at most %d steps, tol %g, seed %llu; %lld converged, %.2f steps on average",
                options.at("k").get<int>(), options.at("max_iter").get<int>(), options.at("tol").get<double>(),
                static_cast<unsigned long long>(options.at("seed").get<uint64_t>()),
                static_cast<long long>(summary.at("converged").get<int64_t>()), summary.at("mean_steps").get<double>());
  add("k-means", clustering);
  add("engine", doc.at("engine").at("name").get<std::string>() + " (" + doc["engine"].at("reason").get<std::string>() + ")");
  add("time", "cluster " + seconds(time.at("cluster").get<double>()) + " (median of " +
                  std::to_string(time.at("cluster_runs").size()) + "); prepare " + seconds(time.at("prepare").get<double>()) +
                  ", load " + seconds(time.at("load").get<double>()) + ", total " + seconds(time.at("total").get<double>()));
  const auto& accuracy = summary.at("accuracy");
  add("accuracy", "min " + percent(accuracy.at("min").get<double>()) + ", median " +
                      percent(accuracy.at("median").get<double>()) + ", max " + percent(accuracy.at("max").get<double>()));
  add("majority class", percent(doc.at("majority_class_share").get<double>()) + " (a clustering that separates nothing)");
  if (!doc.at("baseline").is_null())
    add("all attributes", percent(doc["baseline"].at("accuracy").get<double>()) + " (" +
                              doc["baseline"].at("variant").get<std::string>() + ", " +
                              std::to_string(doc["baseline"].at("steps").get<int>()) + " steps)");
  table.notes = {"Accuracy is the majority-vote accuracy: each cluster takes the class most of its points have, and "
                 "the accuracy is the share of points whose cluster's class is their own. Attributes are numbered "
                 "from 0."};
  return table;
}

ReportTable subset_table(const std::string& title, const nlohmann::json& rows, size_t limit) {
  ReportTable table;
  table.title = title;
  table.header = {"rank", "attributes", "best accuracy", "mean accuracy", "copies"};
  table.numeric = {true, false, true, true, true};
  for (size_t r = 0; r < rows.size() && r < limit; ++r) {
    const auto& row = rows[r];
    table.rows.push_back({std::to_string(row.at("rank").get<int64_t>()), join_columns(row.at("columns")),
                          percent(row.at("best").get<double>()), percent(row.at("mean").get<double>()),
                          std::to_string(row.at("copies").get<int64_t>())});
  }
  return table;
}

ReportTable attribute_table(const nlohmann::json& doc) {
  ReportTable table;
  table.title = "Attributes, by the mean accuracy of the copies that hold them";
  const bool roles = doc.at("dataset").contains("attribute_roles");
  table.header = {"attribute", "copies", "mean accuracy", "best accuracy"};
  table.numeric = {true, true, true, true};
  if (roles) table.header.push_back("role (generator)"), table.numeric.push_back(false);
  std::vector<nlohmann::json> rows(doc.at("attributes").begin(), doc.at("attributes").end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const nlohmann::json& a, const nlohmann::json& b) { return a.at("mean") > b.at("mean"); });
  for (const auto& row : rows) {
    std::vector<std::string> cells{std::to_string(row.at("attribute").get<int>()),
                                   std::to_string(row.at("copies").get<int64_t>()),
                                   row.at("copies").get<int64_t>() ? percent(row.at("mean").get<double>()) : "-",
                                   row.at("copies").get<int64_t>() ? percent(row.at("best").get<double>()) : "-"};
    if (roles) cells.push_back(row.value("role", ""));
    table.rows.push_back(cells);
  }
  return table;
}

}  // namespace

std::vector<ReportTable> explore_tables(const nlohmann::json& doc, int top) {
  std::vector<ReportTable> tables{run_table(doc)};
  tables.push_back(subset_table("The best " + std::to_string(top) + " subsets", doc.at("subsets"), size_t(top)));
  tables.push_back(subset_table("The five worst subsets", doc.at("worst_subsets"), 5));
  tables.push_back(attribute_table(doc));
  return tables;
}

std::string render_explore_markdown(const nlohmann::json& doc, int top) {
  return "# mkbench explore\n\n" + render_markdown(explore_tables(doc, top));
}

PlotOutcome render_explore_plots(const std::string& json_path) {
  PlotOutcome outcome;
  const std::string script = (fs::path(locate_plots_script()).parent_path() / "explore_plots.py").string();
  if (!fs::exists(script)) {
    outcome.unavailable = "the plotting script " + script + " was not found (set MKBENCH_REPORTS_DIR)";
    return outcome;
  }
  std::string tried;
  const std::string python = find_python_with_matplotlib(&tried);
  if (python.empty()) {
    outcome.unavailable = "no Python with matplotlib (tried " + tried + "; install python3-matplotlib or set MKBENCH_PYTHON)";
    return outcome;
  }
  std::string pattern = (fs::temp_directory_path() / "mkbench-explore-plots-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    outcome.unavailable = "cannot create a temporary folder for the plots";
    return outcome;
  }
  const fs::path folder(pattern);
  const std::string command = quoted(python) + " " + quoted(script) + " --in " + quoted(json_path) + " --outdir " +
                              quoted(folder.string()) + " >" + quoted((folder / "plots.log").string()) + " 2>&1";
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string log = file_bytes(folder / "plots.log");
    if (log.size() > 600) log = "..." + log.substr(log.size() - 600);
    outcome.unavailable = "explore_plots.py failed: " + log;
  } else {
    try {
      const nlohmann::json manifest = nlohmann::json::parse(file_bytes(folder / "manifest.json"));
      for (const auto& entry : manifest.at("plots")) {
        const fs::path png = folder / entry.at("file").get<std::string>();
        if (png.filename() != png.lexically_relative(folder)) continue;  // stay inside the folder
        Plot plot{entry.value("caption", png.filename().string()), file_bytes(png)};
        if (!plot.png.empty()) outcome.plots.push_back(std::move(plot));
      }
      if (outcome.plots.empty()) outcome.unavailable = "explore_plots.py drew nothing";
    } catch (const std::exception& error) {
      outcome.unavailable = std::string("explore_plots.py wrote no usable manifest: ") + error.what();
    }
  }
  std::error_code ignored;
  fs::remove_all(folder, ignored);
  return outcome;
}

std::string render_explore_html(const nlohmann::json& doc, const std::string& json_path, int top,
                                std::string* plots_note) {
  const PlotOutcome plots = render_explore_plots(json_path);
  if (plots_note) *plots_note = plots.plots.empty() ? "plots unavailable: " + plots.unavailable : "";
  return render_html(explore_tables(doc, top), plots, {LoadedResults{json_path, doc}});
}

}  // namespace mk::reports
