// The HTML report's embedded bytes and its plots: base64 and HTML escaping, and render_plots,
// which runs reports/plots.py (or another script of its interface) under a Python with
// matplotlib and reads the PNGs back. Apart from report.cpp's tables: it is the one part of the
// report that starts a process.
#include "reports/report.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "core/errors.hpp"
#include "reports/results_io.hpp"

namespace mk::reports {

using nlohmann::json;
namespace fs = std::filesystem;

std::string base64_encode(std::string_view bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                       uint32_t(uint8_t(bytes[i + 2]));
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += alphabet[v >> 6 & 63];
    out += alphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += alphabet[v >> 6 & 63];
    out += '=';
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int exit_status_of(int system_result) {
  if (system_result == -1) return -1;
  if (WIFEXITED(system_result)) return WEXITSTATUS(system_result);
  return 128 + (WIFSIGNALED(system_result) ? WTERMSIG(system_result) : 0);
}

std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string tail_of(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : "…" + text.substr(text.size() - limit);
}

}  // namespace

std::string locate_plots_script() {
  if (const char* dir = std::getenv("MKBENCH_REPORTS_DIR"); dir && *dir)
    return (fs::path(dir) / "plots.py").string();
#ifdef MKBENCH_SOURCE_DIR
  return (fs::path(MKBENCH_SOURCE_DIR) / "reports" / "plots.py").string();
#else
  return "reports/plots.py";
#endif
}

std::string find_python_with_matplotlib(std::string* tried) {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("MKBENCH_PYTHON"); chosen && *chosen)
    candidates = {chosen};
  else
    candidates = {"python3", "/usr/bin/python3"};
  std::string tried_text;
  for (const auto& candidate : candidates) {
    tried_text += (tried_text.empty() ? "" : ", ") + candidate;
    const std::string probe = shell_quote(candidate) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (exit_status_of(std::system(probe.c_str())) == 0) return candidate;
  }
  if (tried) *tried = tried_text;
  return "";
}

PlotOutcome render_plots(const std::vector<LoadedResults>& files, const std::string& published_path) {
  std::vector<std::string> extra;
  if (!published_path.empty() && published_path != "none" && fs::exists(published_path))
    extra = {"--published", published_path};
  return run_plot_script(locate_plots_script(), files, extra);
}

PlotOutcome run_plot_script(const std::string& script, const std::vector<LoadedResults>& files,
                            const std::vector<std::string>& extra_args) {
  PlotOutcome outcome;
  if (!fs::exists(script)) {
    outcome.unavailable = "the plotting script " + script + " was not found (set MKBENCH_REPORTS_DIR)";
    return outcome;
  }
  std::string tried;
  const std::string python = find_python_with_matplotlib(&tried);
  if (python.empty()) {
    outcome.unavailable = "no Python with matplotlib (tried " + tried +
                          "; install python3-matplotlib or set MKBENCH_PYTHON)";
    return outcome;
  }
  std::string pattern = (fs::temp_directory_path() / "mkbench-plots-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    outcome.unavailable = "cannot create a temporary folder for the plots";
    return outcome;
  }
  const fs::path folder(pattern);
  std::string command = shell_quote(python) + " " + shell_quote(script) + " --in";
  for (const auto& file : files) command += " " + shell_quote(file.path);
  command += " --outdir " + shell_quote(folder.string());
  for (const auto& argument : extra_args) command += " " + shell_quote(argument);
  command += " >" + shell_quote((folder / "plots.log").string()) + " 2>&1";
  const int status = exit_status_of(std::system(command.c_str()));
  if (status != 0) {
    outcome.unavailable = "plots.py failed (exit " + std::to_string(status) + "): " +
                          tail_of(read_file_bytes(folder / "plots.log"), 600);
  } else {
    try {
      const json manifest = json::parse(read_file_bytes(folder / "manifest.json"));
      for (const json& entry : manifest.at("plots")) {
        const fs::path png = folder / entry.at("file").get<std::string>();
        if (png.filename() != png.lexically_relative(folder)) continue;  // stay inside the folder
        Plot plot{entry.value("caption", png.filename().string()), read_file_bytes(png)};
        if (!plot.png.empty()) outcome.plots.push_back(std::move(plot));
      }
      if (outcome.plots.empty()) outcome.unavailable = "these results have nothing plots.py can draw";
    } catch (const std::exception& error) {
      outcome.unavailable = std::string("plots.py wrote no usable manifest: ") + error.what();
    }
  }
  std::error_code ignored;
  fs::remove_all(folder, ignored);
  return outcome;
}

std::string render_html(const std::vector<ReportTable>& tables, const PlotOutcome& plots,
                        const std::vector<LoadedResults>& files) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<title>mkbench report</title>\n<style>\n"
          "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1300px;"
          "padding:0 1em;color:#1d232b;background:#fff}\n"
          "h1{font-size:1.6em;border-bottom:2px solid #2b6cb0;padding-bottom:.2em}\n"
          "h2{font-size:1.2em;margin-top:2em}\n"
          "table{border-collapse:collapse;margin:.6em 0;font-size:.9em}\n"
          "th,td{border:1px solid #c8ced6;padding:.25em .6em}\n"
          "th{background:#edf2f7;text-align:left}\n"
          "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
          "tr.best td{font-weight:bold;background:#fefcbf}\n"
          "p.prov{font-size:.8em;color:#4a5568;margin:.2em 0}\n"
          "p.note{font-size:.85em;color:#2d3748}\n"
          "p.warn{background:#fff5f5;border-left:4px solid #c53030;padding:.4em .8em}\n"
          "figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid #e2e8f0}\n"
          "figcaption{font-size:.85em;color:#4a5568}\n"
          "</style>\n</head>\n<body>\n<h1>mkbench report</h1>\n";
  html << "<p class=\"prov\">Sources:";
  for (const auto& file : files)
    html << " " << html_escape(fs::path(file.path).filename().string()) << " ("
         << html_escape(device_label(file.doc)) << ", " << html_escape(string_or(file.doc, "created", "?"))
         << ");";
  html << "</p>\n";
  for (const auto& table : tables) {
    html << "<h2>" << html_escape(table.title) << "</h2>\n";
    for (const auto& line : table.provenance)
      html << "<p class=\"prov\">Provenance — " << html_escape(line) << "</p>\n";
    html << "<table>\n<thead><tr>";
    for (const auto& h : table.header) html << "<th>" << html_escape(h) << "</th>";
    html << "</tr></thead>\n<tbody>\n";
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const bool bold = r < table.bold.size() && table.bold[r];
      html << (bold ? "<tr class=\"best\">" : "<tr>");
      for (size_t c = 0; c < table.rows[r].size(); ++c) {
        const bool numeric = c < table.numeric.size() && table.numeric[c];
        html << (numeric ? "<td class=\"num\">" : "<td>") << html_escape(table.rows[r][c]) << "</td>";
      }
      html << "</tr>\n";
    }
    html << "</tbody>\n</table>\n";
    for (const auto& note : table.notes) html << "<p class=\"note\">" << html_escape(note) << "</p>\n";
  }
  html << "<h2>Plots</h2>\n";
  if (plots.plots.empty()) {
    html << "<p class=\"warn\">Plots unavailable: " << html_escape(plots.unavailable) << "</p>\n";
  }
  for (const auto& plot : plots.plots) {
    html << "<figure><img alt=\"" << html_escape(plot.caption) << "\" src=\"data:image/png;base64,"
         << base64_encode(plot.png) << "\"><figcaption>" << html_escape(plot.caption)
         << "</figcaption></figure>\n";
  }
  html << "</body>\n</html>\n";
  return html.str();
}

}  // namespace mk::reports
