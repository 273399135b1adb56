// Exact conversions of JSON number text: Kineto writes timestamps as microseconds with three
// decimals ("1700000000123.456"), 19 significant digits that a double cannot hold. The digits
// are read as integers, so "ts": 5.001 is exactly 5001 ns.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cuoverlap::kineto {

// Microseconds as written (optional sign, digits, optional fraction and exponent) to integer
// nanoseconds; digits below 1 ns round to nearest (half away from zero). nullopt for anything
// else ("NaN", "Infinity", "", "1e400") and for magnitudes of 2^62 ns or more.
std::optional<std::int64_t> microsToNs(std::string_view text);

// A JSON integer (optionally negative; a fraction of zeros such as "7.0" is accepted).
std::optional<std::int64_t> parseInteger(std::string_view text);

}  // namespace cuoverlap::kineto
