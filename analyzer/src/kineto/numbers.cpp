#include "numbers.h"

namespace cuoverlap::kineto {
namespace {

constexpr std::int64_t kLimit = std::int64_t{1} << 62;
__extension__ typedef __int128 Wide;  // 19-digit timestamps times 10^k need more than 64 bits

struct Decimal {
  bool negative = false;
  Wide digits = 0;       // all significant digits, integer and fraction
  int exponent = 0;      // value = digits * 10^exponent
};

std::optional<Decimal> parseDecimal(std::string_view text) {
  Decimal d;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) d.negative = text[i++] == '-';
  int count = 0;
  auto digit = [&](char c) {
    if (d.digits < (Wide{1} << 100)) {
      d.digits = d.digits * 10 + (c - '0');
    } else {
      ++d.exponent;  // beyond any valid timestamp; keep the magnitude, drop the digit
    }
    ++count;
  };
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') digit(text[i++]);
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      digit(text[i++]);
      --d.exponent;
    }
  }
  if (count == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative_exp = false;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative_exp = text[i++] == '-';
    int exp = 0;
    bool any = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (exp < 10000) exp = exp * 10 + (text[i] - '0');
      ++i;
      any = true;
    }
    if (!any) return std::nullopt;
    d.exponent += negative_exp ? -exp : exp;
  }
  if (i != text.size()) return std::nullopt;
  return d;
}

// digits * 10^exponent rounded to an integer, or nullopt beyond the limit.
std::optional<std::int64_t> scaled(const Decimal& d, int exponent) {
  Wide value = d.digits;
  if (value == 0) return 0;
  for (; exponent > 0; --exponent) {
    value *= 10;
    if (value >= kLimit) return std::nullopt;
  }
  if (exponent < 0) {
    if (exponent < -40) return std::int64_t{0};
    Wide divisor = 1;
    for (; exponent < 0; ++exponent) divisor *= 10;
    value = (value + divisor / 2) / divisor;
  }
  if (value >= kLimit) return std::nullopt;
  const auto result = static_cast<std::int64_t>(value);
  return d.negative ? -result : result;
}

}  // namespace

std::optional<std::int64_t> microsToNs(std::string_view text) {
  const std::optional<Decimal> d = parseDecimal(text);
  if (!d) return std::nullopt;
  return scaled(*d, d->exponent + 3);
}

std::optional<std::int64_t> parseInteger(std::string_view text) {
  const std::optional<Decimal> d = parseDecimal(text);
  if (!d || d->exponent < 0) {
    // Only a fraction of zeros keeps an integer exact.
    if (!d) return std::nullopt;
    Wide unit = 1;
    for (int e = d->exponent; e < 0 && unit < (Wide{1} << 100); ++e) unit *= 10;
    if (d->digits % unit != 0) return std::nullopt;
  }
  return scaled(*d, d->exponent);
}

}  // namespace cuoverlap::kineto
