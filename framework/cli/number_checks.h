// DYNAMIX — number checks for command-line options whose errors say what is expected. CLI11's
// PositiveNumber and NonNegativeNumber report "Value 0 not in range 0.000000 to 1.797693e+308".
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace dynamix {

// A number > floor (`inclusive`: >= floor); otherwise "must be a number > 0, got 'x'".
inline CLI::Validator number_check(double floor, bool inclusive) {
  const std::string expected = std::string(inclusive ? ">= " : "> ") + CLI::detail::to_string(floor);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const bool parsed = CLI::detail::lexical_cast(text, value);
        if (parsed && (inclusive ? value >= floor : value > floor)) return {};
        return "must be a number " + expected + ", got '" + text + "'";
      },
      "NUMBER " + expected);
}

inline const CLI::Validator kPositive = number_check(0, false);
inline const CLI::Validator kNonNegative = number_check(0, true);

}  // namespace dynamix
