// One error style throughout the analyzer: functions throw UserError for bad input (a missing or
// malformed trace, a bad option); the CLI catches it at its boundary and prints one line, exit 2.
#pragma once

#include <stdexcept>
#include <string>

namespace cuoverlap {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cuoverlap
