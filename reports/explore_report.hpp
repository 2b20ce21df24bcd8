#pragma once
// The report of `mkbench explore` (apps/explore): the explore.json document as Markdown and as
// one self-contained HTML page with plots (reports/explore_plots.py), built from the same
// tables (reports/report.hpp's ReportTable, render_markdown and render_html).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace mk::reports {

// The run, the best `top` distinct subsets, the five worst, and the attributes.
std::vector<ReportTable> explore_tables(const nlohmann::json& doc, int top);
std::string render_explore_markdown(const nlohmann::json& doc, int top);
// json_path: where `doc` was written (the plotting script reads it). When the plots cannot be
// made, the page says why and so does *plots_note.
std::string render_explore_html(const nlohmann::json& doc, const std::string& json_path, int top,
                                std::string* plots_note);
// Runs reports/explore_plots.py (matplotlib) on explore.json; never throws for a missing Python.
PlotOutcome render_explore_plots(const std::string& json_path);

}  // namespace mk::reports
