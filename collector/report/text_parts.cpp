// collector/report/text_parts.cpp: see text_parts.h.
#include "collector/report/text_parts.h"

#include <algorithm>
#include <cstdio>

namespace gpuspy::collect::textparts {

namespace {

// Takes from `rest` the longest prefix of at most `width` bytes, breaking after a space or a comma
// when one is in the second half of the line; the rest loses its leading spaces.
std::string takeLine(std::string& rest, size_t width)
{
    if (rest.size() <= width) {
        std::string all = std::move(rest);
        rest.clear();
        return all;
    }
    size_t cut = width;
    for (size_t i = width; i > width / 2; --i)
        if (rest[i - 1] == ' ' || rest[i - 1] == ',') {
            cut = i;
            break;
        }
    while (cut > 1 && (static_cast<unsigned char>(rest[cut]) & 0xC0) == 0x80) --cut;
    std::string head = rest.substr(0, cut);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    size_t skip = cut;
    while (skip < rest.size() && rest[skip] == ' ') ++skip;
    rest = rest.substr(skip);
    return head;
}

}  // namespace

std::string clip(const std::string& s, size_t n)
{
    if (s.size() <= n) return s;
    if (n <= 3) return s.substr(0, n);
    size_t cut = n - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return s.substr(0, cut) + "...";
}

std::string pct(double v)
{
    char b[16];
    std::snprintf(b, sizeof b, "%.1f", v);
    return b;
}

std::string num(uint64_t v)
{
    // Thousands separators: counts in the hundred thousands are common.
    std::string s = std::to_string(v), o;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i && (s.size() - i) % 3 == 0) o += ',';
        o += s[i];
    }
    return o;
}

// Greedy word wrap of `text` into lines of at most kWidth columns, each starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent)
{
    std::string out, line = indent;
    const size_t limit = kWidth;
    size_t i = 0;
    while (i < text.size()) {
        size_t j = text.find(' ', i);
        if (j == std::string::npos) j = text.size();
        std::string word = text.substr(i, j - i);
        i = j + 1;
        if (word.empty()) continue;
        if (indent.size() + word.size() > limit) word = clip(word, limit - indent.size());
        const bool fresh = line.size() == indent.size();
        if (line.size() + (fresh ? 0 : 1) + word.size() > limit) {
            out += line + "\n";
            line = indent + word;
        } else {
            line += (fresh ? "" : " ") + word;
        }
    }
    if (line.size() > indent.size()) out += line + "\n";
    return out;
}

std::string TextTable::render(const Style& st) const
{
    std::vector<size_t> w(m_titles.size());
    for (size_t c = 0; c < w.size(); ++c) {
        w[c] = m_titles[c].size();
        for (const auto& r : m_rows) w[c] = std::max(w[c], r[c].size());
    }
    size_t fixed = 0;
    for (size_t c = 0; c < w.size(); ++c)
        if (c != m_flex) fixed += w[c] + 2;
    const size_t room = kWidth > fixed + 2 ? kWidth - fixed - 2 : 8;
    w[m_flex] = std::min(w[m_flex], room);
    // A flexible cell too long for its column continues on the next lines, aligned under it.
    size_t flexStart = 1;
    for (size_t c = 0; c < m_flex; ++c) flexStart += w[c] + 2;
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s = " ", rest;
        for (size_t c = 0; c < cells.size(); ++c) {
            std::string cell = cells[c];
            if (c == m_flex && cell.size() > w[c]) {
                rest = cell;
                cell = takeLine(rest, w[c]);
            }
            const size_t pad = w[c] > cell.size() ? w[c] - cell.size() : 0;
            const bool left = c == m_flex || m_left.count(c);
            s += left ? cell + std::string(pad, ' ') : std::string(pad, ' ') + cell;
            if (c + 1 < cells.size()) s += "  ";
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        s = clip(s, kWidth) + "\n";
        for (int more = 0; !rest.empty(); ++more) {
            std::string piece = more == 2 ? clip(rest, w[m_flex]) : takeLine(rest, w[m_flex]);
            if (more == 2) rest.clear();
            s += std::string(flexStart, ' ') + piece + "\n";
        }
        return s;
    };
    std::string out = st.bold() + line(m_titles);
    if (st.on) out.insert(out.find('\n'), st.reset());
    for (const auto& r : m_rows) out += line(r);
    return out;
}

std::string heading(const Style& st, const std::string& title)
{
    std::string s = "== " + title + " ";
    if (s.size() < kWidth) s += std::string(kWidth - s.size(), '=');
    return "\n" + st.bold() + s + st.reset() + "\n";
}

std::string siteText(const Report& r, uint32_t id)
{
    if (id == UINT32_MAX) return "(other sites)";
    return id < r.callsites.size() ? r.callsites[id].label : "site #" + std::to_string(id);
}

}  // namespace gpuspy::collect::textparts
