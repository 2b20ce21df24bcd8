#pragma once
// Replaying a recorded cache: the recorded points of each shape become a search space
// (stand-in variants whose only legal points are the recorded ones) and an evaluator
// that returns the recorded measurement. Strategies can then be compared offline on real
// timing tables, and tests run the whole tuner without a GPU.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tuner/cache.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/search_space.hpp"

namespace mk::tuner {

class ReplayTable {
 public:
  // InputError when the file is missing or holds no records; warnings as load_cache_records.
  static ReplayTable load(const std::string& path, std::ostream* warnings);
  static ReplayTable from_records(std::vector<CacheRecord> records, std::string source);

  ReplayTable(ReplayTable&&) noexcept;
  ReplayTable& operator=(ReplayTable&&) noexcept;
  ~ReplayTable();

  const std::string& source() const;
  const std::vector<CacheRecord>& records() const;
  // Distinct shapes in first-recorded order.
  std::vector<Problem> problems() const;
  // The one device the table was recorded on; InputError when it mixes devices.
  DeviceKey device() const;
  // Stand-ins for the recorded variants (their prepare() refuses: they cannot run).
  std::vector<const Variant*> variants() const;
  // The recorded points of `problem`, every variant that has any. A variant's default
  // point is its registered namesake's default_params on the recorded device, when that
  // can be worked out from the records and was recorded (SearchSpace::default_notes).
  SearchSpace space_for(const Problem& problem, const Params& pinned = Params::object()) const;
  // Recorded measurement of a point; a point never recorded is a failed measurement.
  Evaluator evaluator() const;

 private:
  ReplayTable();
  struct Data;
  std::unique_ptr<Data> data_;
};

}  // namespace mk::tuner
