// collector/compare/significance.cpp: see significance.h.
#include "collector/compare/significance.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace gpuspy::collect {

namespace {

double median(std::vector<uint64_t> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? double(v[n / 2]) : (double(v[n / 2 - 1]) + double(v[n / 2])) / 2;
}

// The continued fraction of the regularized incomplete beta function (modified Lentz's method).
double betaFraction(double a, double b, double x)
{
    constexpr double kTiny = 1e-300, kEps = 1e-14;
    const double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (std::fabs(d) < kTiny) d = kTiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 300; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        d = std::fabs(d) < kTiny ? kTiny : d;
        c = 1 + aa / c;
        c = std::fabs(c) < kTiny ? kTiny : c;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        d = std::fabs(d) < kTiny ? kTiny : d;
        c = 1 + aa / c;
        c = std::fabs(c) < kTiny ? kTiny : c;
        d = 1 / d;
        const double step = d * c;
        h *= step;
        if (std::fabs(step - 1) < kEps) break;
    }
    return h;
}

double incompleteBeta(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
    return x < (a + 1) / (a + b + 2) ? front * betaFraction(a, b, x) / a : 1 - front * betaFraction(b, a, 1 - x) / b;
}

// The number of ways to choose k of n, as a double (saturating far beyond what is enumerated).
double choose(size_t n, size_t k)
{
    return std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1));
}

}  // namespace

double rankTestP(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b)
{
    const size_t na = a.size(), nb = b.size(), n = na + nb;
    if (na < 2 || nb < 2) return 1;
    // Mid-ranks of the pooled values (ties share theirs).
    std::vector<std::pair<uint64_t, size_t>> pooled;
    for (size_t i = 0; i < n; ++i) pooled.emplace_back(i < na ? a[i] : b[i - na], i);
    std::sort(pooled.begin(), pooled.end());
    std::vector<double> rank(n);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && pooled[j].first == pooled[i].first) ++j;
        for (size_t k = i; k < j; ++k) rank[pooled[k].second] = (double(i) + double(j) + 1) / 2;
        i = j;
    }
    double observed = 0;
    for (size_t i = 0; i < na; ++i) observed += rank[i];
    const double expected = double(na) * double(n + 1) / 2;
    const double distance = std::fabs(observed - expected) - 1e-9;
    // Every split of the ranks into A's and B's, or 20,000 random ones beyond 200,000 (a fixed seed: the
    // same captures give the same verdict).
    size_t extreme = 0, total = 0;
    if (choose(n, na) <= 200000) {
        std::vector<bool> pick(n, false);
        std::fill(pick.begin(), pick.begin() + long(na), true);
        do {
            double sum = 0;
            for (size_t i = 0; i < n; ++i)
                if (pick[i]) sum += rank[i];
            extreme += std::fabs(sum - expected) >= distance;
            ++total;
        } while (std::prev_permutation(pick.begin(), pick.end()));
    } else {
        std::mt19937_64 rng(0x6770757370ULL);
        std::vector<double> r = rank;
        for (int k = 0; k < 20000; ++k) {
            std::shuffle(r.begin(), r.end(), rng);
            double sum = 0;
            for (size_t i = 0; i < na; ++i) sum += r[i];
            extreme += std::fabs(sum - expected) >= distance;
            ++total;
        }
    }
    return double(extreme) / double(total);
}

double welchTestP(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b)
{
    if (a.size() < 2 || b.size() < 2) return 1;
    auto meanVar = [](const std::vector<uint64_t>& v) {
        double m = 0;
        for (uint64_t x : v) m += double(x);
        m /= double(v.size());
        double s = 0;
        for (uint64_t x : v) s += (double(x) - m) * (double(x) - m);
        return std::make_pair(m, s / double(v.size() - 1));
    };
    const auto [ma, va] = meanVar(a);
    const auto [mb, vb] = meanVar(b);
    const double sa = va / double(a.size()), sb = vb / double(b.size());
    if (sa + sb == 0) return ma == mb ? 1 : 0;  // no spread on either side: any difference is real
    const double t = (mb - ma) / std::sqrt(sa + sb);
    const double df = (sa + sb) * (sa + sb) / (sa * sa / double(a.size() - 1) + sb * sb / double(b.size() - 1));
    return incompleteBeta(df / 2, 0.5, df / (df + t * t));
}

std::string changeVerdict(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b)
{
    if (a.empty() || b.empty()) return "noise";
    const double ma = median(a), mb = median(b);
    const bool large = std::fabs(mb - ma) >= kMinChangePct / 100 * std::max(ma, 1.0) && ma != mb;
    const double p = std::min(rankTestP(a, b), welchTestP(a, b));
    if (large && p < kAlpha / 2) return mb > ma ? "higher" : "lower";
    // Could a test have told a change with these runs? The rank test's smallest p-value is 2 / C(n, na).
    const bool rankCould = a.size() >= 2 && b.size() >= 2 && 2 / choose(a.size() + b.size(), a.size()) < kAlpha / 2;
    const uint64_t maxA = *std::max_element(a.begin(), a.end()), minA = *std::min_element(a.begin(), a.end());
    const uint64_t maxB = *std::max_element(b.begin(), b.end()), minB = *std::min_element(b.begin(), b.end());
    const bool apart = minB > maxA || maxB < minA;
    return large && apart && !rankCould ? "too_few" : "noise";
}

}  // namespace gpuspy::collect
