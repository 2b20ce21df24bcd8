#include "reports/fit_report.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "harness/results.hpp"
#include "reports/results_io.hpp"

namespace mk::reports {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string number_text(const json& value, int decimals) {
  if (!value.is_number()) return "-";
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value.get<double>());
  return text;
}

std::string scientific_text(const json& value) {
  if (!value.is_number()) return "-";
  char text[48];
  std::snprintf(text, sizeof text, "%.6e", value.get<double>());
  return text;
}

const json& required(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) throw InputError(where + ": missing \"" + key + "\"");
  return *it;
}

}  // namespace

bool is_fit_file(const std::string& path) {
  mk::require_regular_file(path, "report input");
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str(), nullptr, false);
  return doc.is_object() && doc.value("schema", json()).is_string() &&
         doc.at("schema").get<std::string>() == kFitReportSchema;
}

json load_fit_file(const std::string& path) {
  mk::require_regular_file(path, "fit file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::parse_error& error) {
    throw InputError(path + ": not valid JSON (" + error.what() + ")");
  }
  if (!doc.is_object() || doc.value("schema", std::string()) != kFitReportSchema)
    throw InputError(path + ": not a fit file (schema \"" + std::string(kFitReportSchema) + "\")");
  if (!required(doc, "device", path).is_object()) throw InputError(path + ": \"device\" is not an object");
  const json& per_k = required(doc, "per_k", path);
  if (!per_k.is_array() || per_k.empty()) throw InputError(path + ": \"per_k\" is not a non-empty array");
  for (size_t i = 0; i < per_k.size(); ++i) {
    const std::string where = path + ": per_k[" + std::to_string(i) + "]";
    if (!per_k[i].is_object()) throw InputError(where + " is not an object");
    for (const char* key : {"k", "iterations", "inertia"})
      if (!required(per_k[i], key, where).is_number()) throw InputError(where + "." + key + " is not a number");
  }
  required(doc, "best_k", path);
  required(doc, "best_k_rule", path);
  return doc;
}

ReportTable fit_table(const LoadedResults& file) {
  const json& doc = file.doc;
  ReportTable table;
  table.title = "fit — " + describe_dataset(doc.value("dataset", json::object())) + ", M=" +
                std::to_string(doc.value("m", int64_t(0))) + " N=" + std::to_string(doc.value("n", 0));
  table.provenance.push_back(fs::path(file.path).filename().string() + ": " + device_label(doc) + ", variant " +
                             doc.value("variant", json::object()).value("name", std::string("?")) + ", build " +
                             doc.value("build", json::object()).value("git_sha", std::string("?")) + ", " +
                             doc.value("created", std::string("?")));
  table.header = {"K", "iterations", "converged", "inertia", "Calinski-Harabasz", "Davies-Bouldin", "silhouette"};
  table.numeric = {true, true, false, true, true, true, true};
  const json best = doc.at("best_k");
  for (const json& entry : doc.at("per_k")) {
    const int k = entry.at("k").get<int>();
    table.rows.push_back({std::to_string(k), std::to_string(entry.at("iterations").get<int>()),
                          entry.value("converged", false) ? "yes" : "no", scientific_text(entry.at("inertia")),
                          number_text(entry.value("calinski_harabasz", json()), 1),
                          number_text(entry.value("davies_bouldin", json()), 4),
                          number_text(entry.value("silhouette", json()), 4)});
    table.bold.push_back(best.is_number() && best.get<int>() == k);
  }
  const std::string rule = doc.at("best_k_rule").is_string() ? doc.at("best_k_rule").get<std::string>() : "?";
  table.notes.push_back("best_k " + (best.is_number() ? std::to_string(best.get<int>()) : std::string("none")) +
                        " by the rule " + rule + " (bold); the inertia curve's elbow (kneedle): " +
                        (doc.value("elbow_k", json()).is_number() ? std::to_string(doc.at("elbow_k").get<int>())
                                                                  : std::string("none")) +
                        ".");
  const json time = doc.value("time_s", json::object());
  table.notes.push_back("Time: seeding " + number_text(time.value("seeding", json()), 3) + " s, iterations " +
                        number_text(time.value("iterations", json()), 3) + " s (" +
                        std::to_string(doc.value("steps", 0)) + " fused steps), labels " +
                        number_text(time.value("labels", json()), 3) + " s, metrics " +
                        number_text(time.value("metrics", json()), 3) + " s.");
  return table;
}

std::string render_fit_csv(const std::vector<LoadedResults>& files) {
  std::ostringstream csv;
  csv << "file,device,k,iterations,converged,inertia,calinski_harabasz,davies_bouldin,silhouette,best_k\n";
  for (const auto& file : files)
    for (const json& entry : file.doc.at("per_k")) {
      auto value = [&entry](const char* key) {
        const json v = entry.value(key, json());
        return v.is_number() ? v.dump() : std::string();
      };
      const json best = file.doc.at("best_k");
      csv << '"' << file.path << "\",\"" << device_label(file.doc) << "\"," << entry.at("k").dump() << ","
          << entry.at("iterations").dump() << "," << (entry.value("converged", false) ? "true" : "false") << ","
          << value("inertia") << "," << value("calinski_harabasz") << "," << value("davies_bouldin") << ","
          << value("silhouette") << "," << (best.is_number() && best == entry.at("k") ? "true" : "false") << "\n";
    }
  return csv.str();
}

std::string locate_fit_plots_script() {
  return (fs::path(locate_plots_script()).parent_path() / "fit_plots.py").string();
}

int run_fit_report(const std::vector<std::string>& paths, const ReportOptions& options, const std::string& out_path,
                   std::ostream& out, std::ostream& err) {
  try {
    if (options.format != "md" && options.format != "csv" && options.format != "html")
      throw InputError("--format must be md, csv or html (got \"" + options.format + "\")");
    if (options.merge) throw InputError("--merge compares result files; it does not apply to fit.json");
    std::vector<LoadedResults> files;
    for (const auto& path : paths) files.push_back({path, load_fit_file(path)});
    std::vector<ReportTable> tables;
    for (const auto& file : files) tables.push_back(fit_table(file));
    std::string text;
    if (options.format == "csv") {
      text = render_fit_csv(files);
    } else if (options.format == "md") {
      text = render_markdown(tables);
    } else {
      const PlotOutcome plots = run_plot_script(locate_fit_plots_script(), files, {});
      if (plots.plots.empty()) {
        if (options.require_plots) {
          err << "mkbench report: plots unavailable and --require-plots was given: " << plots.unavailable << "\n";
          return kExitBadInput;
        }
        err << "mkbench report: note: the html has tables only; plots unavailable: " << plots.unavailable << "\n";
      }
      text = render_html(tables, plots, files);
    }
    if (out_path.empty())
      out << text;
    else
      write_text_atomically(out_path, text);
    return kExitOk;
  } catch (const Error& error) {
    err << "mkbench report: " << error.what() << "\n";
    return error.exit_code;
  } catch (const std::exception& error) {
    err << "mkbench report: " << error.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace mk::reports
