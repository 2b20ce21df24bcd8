// Suite JSON -> SuiteDefinition. Every malformed suite is an InputError that names the
// suite and the key ("suite s: cases[2].dims: expected integers, got "8"").
#include "harness/suite_parse.hpp"

#include <limits>

#include "core/errors.hpp"
#include "core/problem.hpp"
#include "datasets/dataset.hpp"
#include "harness/suite.hpp"

namespace mk {
namespace suite_json {

std::string where_of(const std::string& suite, const std::string& where) { return "suite " + suite + ": " + where; }

std::vector<std::string> text_list(const ojson& value, const std::string& where) {
  std::vector<std::string> out;
  auto one = [&](const ojson& item) {
    if (item.is_string()) out.push_back(item.get<std::string>());
    else if (item.is_number_unsigned()) out.push_back(std::to_string(item.get<uint64_t>()));
    else if (item.is_number_integer()) out.push_back(std::to_string(item.get<int64_t>()));
    else if (item.is_number()) out.push_back(item.dump());
    else throw InputError(where + ": expected strings or numbers, got " + item.dump());
  };
  if (value.is_array()) {
    for (const auto& item : value) one(item);
  } else {
    one(value);
  }
  if (out.empty()) throw InputError(where + ": must not be empty");
  return out;
}

// A JSON integer that fits in an int; a larger one would otherwise wrap silently.
int checked_int(const ojson& item, const std::string& where, const char* expected) {
  const bool fits = item.is_number_unsigned() ? item.get<uint64_t>() <= uint64_t(std::numeric_limits<int>::max())
                    : item.is_number_integer()
                        ? item.get<int64_t>() >= std::numeric_limits<int>::min() &&
                              item.get<int64_t>() <= std::numeric_limits<int>::max()
                        : false;
  if (!fits) throw InputError(where + ": expected " + expected + ", got " + item.dump());
  return static_cast<int>(item.get<int64_t>());
}

std::vector<int> int_list(const ojson& value, const std::string& where) {
  std::vector<int> out;
  auto one = [&](const ojson& item) { out.push_back(checked_int(item, where, "integers")); };
  if (value.is_array()) {
    for (const auto& item : value) one(item);
  } else {
    one(value);
  }
  if (out.empty()) throw InputError(where + ": must not be empty");
  return out;
}

int int_value(const ojson& value, const std::string& where) { return checked_int(value, where, "an integer"); }

bool bool_value(const ojson& value, const std::string& where) {
  if (!value.is_boolean()) throw InputError(where + ": expected true or false, got " + value.dump());
  return value.get<bool>();
}

std::string string_value(const ojson& value, const std::string& where) {
  if (!value.is_string()) throw InputError(where + ": expected a string, got " + value.dump());
  return value.get<std::string>();
}

void reject_unknown_keys(const ojson& object, const std::set<std::string>& known, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!known.count(it.key())) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InputError(where + ": unknown key '" + it.key() + "' (known: " + list + ")");
    }
}

}  // namespace suite_json

using namespace suite_json;

SuiteDefinition parse_suite(const ojson& json, const std::string& name) {
  SuiteDefinition suite;
  suite.name = name;
  if (!json.is_object()) throw InputError(where_of(name, "expected a JSON object"));
  reject_unknown_keys(json,
                      {"name", "description", "dataset", "seed", "init", "iters", "warmup", "verify", "cases",
                       "quick", "cpu_fallback", "report"},
                      where_of(name, "top level"));
  if (json.contains("name")) suite.name = string_value(json.at("name"), where_of(name, "name"));
  if (json.contains("description")) suite.description = string_value(json.at("description"), where_of(name, "description"));
  if (json.contains("dataset")) suite.dataset = string_value(json.at("dataset"), where_of(name, "dataset"));
  if (json.contains("seed")) {
    const auto& seed = json.at("seed");
    if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
      throw InputError(where_of(name, "seed: expected a non-negative integer"));
    suite.seed = seed.get<uint64_t>();
  }
  if (json.contains("init")) {
    suite.init = string_value(json.at("init"), where_of(name, "init"));
    parse_init(suite.init);
  }
  if (json.contains("iters")) suite.iters = int_value(json.at("iters"), where_of(name, "iters"));
  if (json.contains("warmup")) suite.warmup = int_value(json.at("warmup"), where_of(name, "warmup"));
  if (json.contains("verify")) suite.verify = bool_value(json.at("verify"), where_of(name, "verify"));
  if (suite.iters < 1) throw InputError(where_of(name, "iters must be at least 1"));
  if (suite.warmup < 0) throw InputError(where_of(name, "warmup cannot be negative"));

  if (!json.contains("cases") || !json.at("cases").is_array() || json.at("cases").empty())
    throw InputError(where_of(name, "cases: expected a non-empty array"));
  const auto& cases = json.at("cases");
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string where = where_of(name, "cases[" + std::to_string(i) + "]");
    const auto& c = cases[i];
    if (!c.is_object()) throw InputError(where + ": expected an object");
    reject_unknown_keys(
        c, {"dims", "k", "points", "variants", "params", "dataset", "iters", "warmup", "verify", "batch", "label"}, where);
    SuiteCase sc;
    if (c.contains("dataset")) sc.dataset = string_value(c.at("dataset"), where + ".dataset");
    // A file dataset gives N and M itself; "dims"/"points" are then optional, and checked
    // against the file when the suite is planned.
    const bool from_file = is_file_dataset_spec(sc.dataset.value_or(suite.dataset));
    for (const char* required : {"dims", "k", "points", "variants"})
      if (!c.contains(required) && !(from_file && (std::string(required) == "dims" || std::string(required) == "points")))
        throw InputError(where + ": missing key '" + required + "'");
    if (c.contains("dims")) sc.dims = int_list(c.at("dims"), where + ".dims");
    sc.k = text_list(c.at("k"), where + ".k");
    for (const auto& k : sc.k) parse_k_range(k);
    if (c.contains("points")) sc.points = text_list(c.at("points"), where + ".points");
    for (const auto& p : sc.points) parse_count(p);
    sc.variants = text_list(c.at("variants"), where + ".variants");
    if (c.contains("params")) {
      sc.params = c.at("params");
      if (!sc.params.is_object() && !(sc.params.is_string() && sc.params.get<std::string>() == "all"))
        throw InputError(where + ".params: expected an object of axis -> values, or \"all\"");
    }
    if (c.contains("iters")) sc.iters = int_value(c.at("iters"), where + ".iters");
    if (c.contains("warmup")) sc.warmup = int_value(c.at("warmup"), where + ".warmup");
    if (c.contains("verify")) sc.verify = bool_value(c.at("verify"), where + ".verify");
    if (c.contains("batch")) {
      sc.batch = int_value(c.at("batch"), where + ".batch");
      if (sc.batch < 1 || sc.batch > kMaxBatch)
        throw InputError(where + ".batch: expected 1 to " + std::to_string(kMaxBatch) + " problems, got " +
                         std::to_string(sc.batch));
      for (const auto& p : sc.points)
        if (parse_count(p) > std::numeric_limits<int64_t>::max() / 2 / sc.batch)
          throw InputError(where + ": points " + p + " x batch " + std::to_string(sc.batch) + " is too many points");
    }
    suite.cases.push_back(std::move(sc));
  }
  if (json.contains("quick")) {
    suite.quick = json.at("quick");
    const std::string where = where_of(name, "quick");
    if (!suite.quick.is_object()) throw InputError(where + ": expected an object");
    reject_unknown_keys(suite.quick, {"points", "iters", "warmup"}, where);
    if (suite.quick.contains("points"))
      for (const auto& p : text_list(suite.quick.at("points"), where + ".points")) parse_count(p);
    if (suite.quick.contains("iters")) int_value(suite.quick.at("iters"), where + ".iters");
    if (suite.quick.contains("warmup")) int_value(suite.quick.at("warmup"), where + ".warmup");
  }
  if (json.contains("cpu_fallback")) {
    const auto& fb = json.at("cpu_fallback");
    const std::string where = where_of(name, "cpu_fallback");
    if (!fb.is_object()) throw InputError(where + ": expected an object");
    reject_unknown_keys(fb, {"points", "variants"}, where);
    if (fb.contains("points")) {
      suite.fallback_points = text_list(fb.at("points"), where + ".points");
      for (const auto& p : suite.fallback_points) parse_count(p);
    }
    if (fb.contains("variants")) suite.fallback_variants = text_list(fb.at("variants"), where + ".variants");
  }
  if (json.contains("report")) {
    const auto& report = json.at("report");
    const std::string where = where_of(name, "report");
    if (!report.is_object()) throw InputError(where + ": expected an object");
    reject_unknown_keys(report, {"kind", "published"}, where);
    if (report.contains("kind")) suite.report_kind = string_value(report.at("kind"), where + ".kind");
    if (suite.report_kind.empty()) throw InputError(where + ".kind: must not be empty");
    if (report.contains("published")) suite.published = string_value(report.at("published"), where + ".published");
  }
  return suite;
}

SuiteDefinition parse_suite_text(const std::string& text, const std::string& label) {
  ojson document;
  try {
    document = ojson::parse(text);
  } catch (const std::exception& e) {
    throw InputError("suite " + label + " is not valid JSON: " + e.what());
  }
  return parse_suite(document, label);
}

}  // namespace mk
