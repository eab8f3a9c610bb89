// collector/report/text_parts.h: what the text report's sections share: the width, colours, number and
// site formats, word wrap, and the table that keeps every line within the width.
#pragma once

#include "collector/analyze/analyze.h"

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace gpuspy::collect::textparts {

constexpr size_t kWidth = 100;

struct Style {
    bool on;
    std::string bold() const { return on ? "\033[1m" : ""; }
    std::string dim() const { return on ? "\033[2m" : ""; }
    std::string red() const { return on ? "\033[31m" : ""; }
    std::string yellow() const { return on ? "\033[33m" : ""; }
    std::string cyan() const { return on ? "\033[36m" : ""; }
    std::string reset() const { return on ? "\033[0m" : ""; }
};

// At most n bytes of s, "..." marking a cut, never inside a UTF-8 sequence.
std::string clip(const std::string& s, size_t n);
std::string pct(double v);    // "12.3"
std::string num(uint64_t v);  // "12,345"
// Greedy word wrap of `text` into lines of at most kWidth columns, each starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent);
std::string heading(const Style& st, const std::string& title);  // "== Title ====...", a blank line before
std::string siteText(const Report& r, uint32_t id);              // a call site's label; UINT32_MAX: the rest

// A table: right-aligned numeric columns, one flexible text column (the last) that absorbs the width.
class TextTable {
public:
    explicit TextTable(std::vector<std::string> titles, size_t flex) : m_titles(std::move(titles)), m_flex(flex) {}
    void row(std::vector<std::string> cells) { m_rows.push_back(std::move(cells)); }
    bool empty() const { return m_rows.empty(); }

    std::string render(const Style& st) const;
    void leftAlign(size_t c) { m_left.insert(c); }

private:
    std::vector<std::string> m_titles;
    std::vector<std::vector<std::string>> m_rows;
    size_t m_flex;
    std::set<size_t> m_left;
};


}  // namespace gpuspy::collect::textparts
