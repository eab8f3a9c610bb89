// collector/compare/significance.h: whether a figure measured over repeated runs (record --repeat) differs
// between two captures beyond the runs' noise: a rank test (Mann-Whitney's, exact by permutation) and
// Welch's t-test, each at kAlpha / 2, and a change of at least kMinChangePct of A's median. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspy::collect {

inline constexpr double kAlpha = 0.01;
inline constexpr double kMinChangePct = 1.0;

// Two-sided p-values; 1 when a side has fewer than two runs (nothing to test).
double rankTestP(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);
double welchTestP(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

// "higher" or "lower" (B against A, beyond the noise), "noise" (the runs cannot tell the two apart), or
// "too_few" (the medians differ, but neither test could reach significance with so few runs).
std::string changeVerdict(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

}  // namespace gpuspy::collect
