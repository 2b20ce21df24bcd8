#pragma once
// A labelled table shaped like UCI's SUSY (seed 000 §5.4: 5M rows, 18 attributes, 2 classes,
// about 46 % signal), which cannot be downloaded here. The class is carried by a few chosen
// attributes only, so an attribute-subset explorer has a known right answer:
//   informative  x = z ± shift/2 (+ for class 1), z ~ N(0, 1): the class moves the mean;
//   correlated   x = rho · x_src + sqrt(1 − rho²) · z, x_src an informative attribute (taken in
//                turn): they carry the class only through their source, diluted by rho;
//   noise        the rest, class-independent, unit variance: N(0, 1) and centred Exp(1)
//                (skewed, like SUSY's momenta) in turn.
// Every value is a pure function of (seed, row, attribute) through the counter RNG, so the
// table does not depend on the thread count.
//
// Spec: "susy[:informative=0,6,17][:correlated=5][:rho=0.6][:shift=1.0][:signal=0.458]"; ','
// also separates settings, and a bare number continues the informative list, so
// "susy:informative=0,4,7,shift=1.2" works too. The default informative set is seed 000's best
// subset of SUSY, attributes {1, 7, 18} counted from 1 (Table 4).
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"

namespace mk {

struct SusySpec {
  int64_t m = 5000000;
  int n = 18;
  std::vector<int> informative{0, 6, 17};
  int correlated = 5;      // attributes correlated with an informative one (the first non-informative ones)
  double rho = 0.6;        // their correlation coefficient with the source's within-class value
  double shift = 1.0;      // class-mean separation along each informative attribute, in standard deviations
  double signal = 0.458;   // share of class 1 (SUSY: 45.8 % signal)
  uint64_t seed = 42;
};

struct SusyTable {
  Dataset data;                 // m × n, row-major
  std::vector<int32_t> labels;  // m, 0 (background) or 1 (signal)
};

// True for "susy" and "susy:...".
bool is_susy_spec(const std::string& spec);
// InputError naming the setting for anything malformed or out of range (an attribute outside
// [0, n), a repeated one, more correlated attributes than non-informative ones, rho outside
// [0, 1], signal outside (0, 1), shift negative or not finite, M or N below 1).
SusySpec parse_susy_spec(const std::string& spec, int64_t m, int n, uint64_t seed);
SusyTable generate_susy(const SusySpec& spec);

// What each attribute is: "informative", "correlated with A" or "noise (normal)"/"noise (exponential)".
std::vector<std::string> susy_attribute_roles(const SusySpec& spec);

}  // namespace mk
