#pragma once
// Reading a suite's JSON (format in harness/suites/README.md), kept apart from the runner
// so the parser links without the CUDA code (the fuzz target tests/fuzz/fuzz_suite.cpp).
// The checked accessors are shared with the planner.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::suite_json {

using ojson = nlohmann::ordered_json;

std::string where_of(const std::string& suite, const std::string& where);
// A value or an array of strings/numbers, as strings; InputError when empty or mistyped.
std::vector<std::string> text_list(const ojson& value, const std::string& where);
// Integers that fit in an int (a larger one is an InputError, not a wrapped value).
std::vector<int> int_list(const ojson& value, const std::string& where);
int int_value(const ojson& value, const std::string& where);
bool bool_value(const ojson& value, const std::string& where);
std::string string_value(const ojson& value, const std::string& where);
void reject_unknown_keys(const ojson& object, const std::set<std::string>& known, const std::string& where);

}  // namespace mk::suite_json
