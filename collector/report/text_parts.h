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

// The width the text report is laid out for: the terminal's, --width or COLUMNS (collector/cli), 100 for a
// pipe. Set for one rendering by a WidthScope (renderText); every section reads it through width().
constexpr size_t kDefaultWidth = 100, kMinWidth = 60, kMaxWidth = 400;
size_t width();
class WidthScope {
public:
    explicit WidthScope(size_t columns);
    ~WidthScope();
    WidthScope(const WidthScope&) = delete;
    WidthScope& operator=(const WidthScope&) = delete;

private:
    size_t m_saved;
};

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
// The columns `s` takes on a terminal: colour escapes take none, a UTF-8 character one.
size_t columns(const std::string& s);
// Greedy word wrap of `text` into lines of at most width() columns, each starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent);
// The same with the lines after the first starting with `hanging` (a numbered item's text under its text).
std::string wrap(const std::string& text, const std::string& indent, const std::string& hanging);
std::string heading(const Style& st, const std::string& title);  // "== Title ====...", a blank line before
std::string siteText(const Report& r, uint32_t id);              // a call site's label; UINT32_MAX: the rest
// "void k<float, 128>(float*)" -> "void k<...>(float*)": template arguments folded (the text report's
// and the metrics' kernel names; the full name in JSON and with --verbose).
std::string foldTemplates(const std::string& name);

// A table: right-aligned numeric columns, one flexible text column (the last) that absorbs the width; a
// flexible cell too long for its room continues on the next lines, broken between words (or after a comma,
// a parenthesis or a slash), never inside one where a break exists; when the other columns leave it less
// than kMinFlex columns, it goes on lines of its own under its row.
class TextTable {
public:
    explicit TextTable(std::vector<std::string> titles, size_t flex) : m_titles(std::move(titles)), m_flex(flex) {}
    void row(std::vector<std::string> cells) { m_rows.push_back(std::move(cells)); }
    bool empty() const { return m_rows.empty(); }

    std::string render(const Style& st) const;
    void leftAlign(size_t c) { m_left.insert(c); }
    // Column c (or a group of columns, left out together) may be left out where the table would not fit
    // the width otherwise (the last marked first).
    void optional(size_t c) { m_optional.push_back({c}); }
    void optional(std::vector<size_t> group) { m_optional.push_back(std::move(group)); }

    static constexpr size_t kMinFlex = 24;

private:
    std::vector<std::string> m_titles;
    std::vector<std::vector<std::string>> m_rows;
    size_t m_flex;
    std::set<size_t> m_left;
    std::vector<std::vector<size_t>> m_optional;
};


}  // namespace gpuspy::collect::textparts
