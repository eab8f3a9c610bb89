// collector/report/text_parts.cpp: see text_parts.h.
#include "collector/report/text_parts.h"

#include <algorithm>
#include <cstdio>

namespace gpuspy::collect::textparts {

namespace {

thread_local size_t t_width = kDefaultWidth;

// Takes from `rest` the longest prefix of at most `width` bytes, breaking after a space, a comma, an
// opening parenthesis or a slash where there is one; the rest loses its leading spaces. A word longer
// than the line is the only thing cut inside.
std::string takeLine(std::string& rest, size_t width)
{
    if (rest.size() <= width) {
        std::string all = std::move(rest);
        rest.clear();
        return all;
    }
    // A space first (not too early in the line), then after a comma, an opening parenthesis or a slash.
    size_t cut = 0;
    for (size_t i = width; i > width / 3 && !cut; --i)
        if (rest[i] == ' ' || rest[i - 1] == ' ') cut = i;
    for (size_t i = width; i > 1 && !cut; --i)
        if (rest[i - 1] == ',' || rest[i - 1] == '(' || rest[i - 1] == '/') cut = i;
    for (size_t i = width; i > 1 && !cut; --i)
        if (rest[i] == ' ' || rest[i - 1] == ' ') cut = i;
    if (!cut) cut = width;
    while (cut > 1 && (static_cast<unsigned char>(rest[cut]) & 0xC0) == 0x80) --cut;
    std::string head = rest.substr(0, cut);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    size_t skip = cut;
    while (skip < rest.size() && rest[skip] == ' ') ++skip;
    rest = rest.substr(skip);
    return head;
}

}  // namespace

size_t width() { return t_width; }

WidthScope::WidthScope(size_t columns) : m_saved(t_width)
{
    t_width = std::clamp<size_t>(columns ? columns : kDefaultWidth, kMinWidth, kMaxWidth);
}

WidthScope::~WidthScope() { t_width = m_saved; }

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

size_t columns(const std::string& s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
            // A colour (CSI) sequence: ESC [ parameters, then one final byte from '@' to '~'.
            i += 2;
            while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
            continue;
        }
        if ((c & 0xc0) != 0x80) ++n;  // a UTF-8 continuation byte adds no column
    }
    return n;
}

// Greedy word wrap of `text` into lines of at most width() columns, each starting with `indent`.
std::string wrap(const std::string& text, const std::string& indent) { return wrap(text, indent, indent); }

std::string wrap(const std::string& text, const std::string& first, const std::string& hanging)
{
    // Lengths in columns, not bytes: a coloured word ("\033[31mHIGH\033[0m") or a "µs" takes fewer
    // columns than bytes, and must wrap where its plain text would.
    std::string out, line = first;
    std::string indent = first;
    size_t lineCols = columns(line), indentCols = lineCols;
    const size_t limit = width();
    size_t i = 0;
    while (i < text.size()) {
        size_t j = text.find(' ', i);
        if (j == std::string::npos) j = text.size();
        std::string word = text.substr(i, j - i);
        i = j + 1;
        if (word.empty()) continue;
        size_t wordCols = columns(word);
        // A colour's end alone ("HIGH  " padded, then the reset): no column, no space before it.
        if (wordCols == 0 && lineCols > indentCols) {
            line += word;
            continue;
        }
        // A word longer than a line (a kernel's signature) is broken where it can be, never clipped.
        while (indentCols + wordCols > limit) {
            if (lineCols > indentCols) out += line + "\n", indent = hanging, indentCols = columns(hanging);
            out += indent + takeLine(word, limit - indentCols) + "\n";
            indent = hanging;
            indentCols = lineCols = columns(hanging);
            line = indent;
            wordCols = columns(word);
        }
        if (word.empty()) continue;
        const bool fresh = lineCols == indentCols;
        if (lineCols + (fresh ? 0 : 1) + wordCols > limit) {
            out += line + "\n";
            indent = hanging;
            indentCols = columns(hanging);
            line = indent + word;
            lineCols = indentCols + wordCols;
        } else {
            line += (fresh ? "" : " ") + word;
            lineCols += (fresh ? 0 : 1) + wordCols;
        }
    }
    if (lineCols > indentCols) out += line + "\n";
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
    // Too wide for the width: the optional columns go, the last marked first, until the rest fits.
    std::set<size_t> dropped;
    const size_t flexNeeds = std::min(w[m_flex], kMinFlex);
    for (auto it = m_optional.rbegin(); it != m_optional.rend() && fixed + 2 + flexNeeds > width(); ++it)
        for (size_t c : *it)
            if (c != m_flex && dropped.insert(c).second) fixed -= w[c] + 2;
    if (!dropped.empty()) {
        TextTable narrow({}, 0);
        for (size_t c = 0; c < m_titles.size(); ++c)
            if (!dropped.count(c)) {
                if (c == m_flex) narrow.m_flex = narrow.m_titles.size();
                if (m_left.count(c)) narrow.m_left.insert(narrow.m_titles.size());
                narrow.m_titles.push_back(m_titles[c]);
            }
        for (const auto& r : m_rows) {
            std::vector<std::string> cells;
            for (size_t c = 0; c < r.size(); ++c)
                if (!dropped.count(c)) cells.push_back(r[c]);
            narrow.m_rows.push_back(std::move(cells));
        }
        return narrow.render(st);
    }
    const size_t total = width();
    const size_t room = total > fixed + 2 ? total - fixed - 2 : 0;
    // Too little room beside the other columns: the flexible cell goes on lines of its own, indented.
    // ... or when one of its words is longer than the room (a kernel's mangled-looking name): never broken.
    size_t longestWord = 0;
    for (const auto& r : m_rows)
        for (size_t i = 0, j; i < r[m_flex].size(); i = j + 1) {
            j = r[m_flex].find_first_of(" ,(/", i);
            if (j == std::string::npos) j = r[m_flex].size();
            longestWord = std::max(longestWord, j - i);
        }
    const bool below = (room < kMinFlex && w[m_flex] > room && (w[m_flex] > kMinFlex / 2 || !room)) ||
                       (longestWord > room && room < total - 5);
    w[m_flex] = below ? 0 : std::min(w[m_flex], room);
    const size_t belowIndent = 5, belowWidth = total - belowIndent;
    // A flexible cell too long for its column continues on the next lines, aligned under it.
    size_t flexStart = 1;
    for (size_t c = 0; c < m_flex; ++c) flexStart += w[c] + 2;
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s = " ", rest;
        for (size_t c = 0; c < cells.size(); ++c) {
            std::string cell = cells[c];
            if (c == m_flex && below) {
                rest = cell;
                cell.clear();
            } else if (c == m_flex && cell.size() > w[c]) {
                rest = cell;
                cell = takeLine(rest, w[c]);
            }
            const size_t pad = w[c] > cell.size() ? w[c] - cell.size() : 0;
            const bool left = c == m_flex || m_left.count(c);
            s += left ? cell + std::string(pad, ' ') : std::string(pad, ' ') + cell;
            if (c + 1 < cells.size()) s += "  ";
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        if (s.size() > total) {
            // Still too wide with every optional column gone: cut between two columns, never inside a cell.
            size_t cut = s.rfind("  ", total - 3);
            while (cut != std::string::npos && cut > 0 && s[cut - 1] == ' ') --cut;
            s = (cut == std::string::npos || cut == 0 ? clip(s, total) : s.substr(0, cut) + " ...");
        }
        s += "\n";
        const size_t at = below ? belowIndent : flexStart, room = below ? belowWidth : w[m_flex];
        while (!rest.empty()) s += std::string(at, ' ') + takeLine(rest, room) + "\n";
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
    if (s.size() < width()) s += std::string(width() - s.size(), '=');
    else s = wrap(s, "", "   "), s.pop_back();  // longer than the width: wrapped, no rule
    return "\n" + st.bold() + s + st.reset() + "\n";
}

std::string siteText(const Report& r, uint32_t id)
{
    if (id == UINT32_MAX) return "(other sites)";
    return id < r.callsites.size() ? r.callsites[id].label : "site #" + std::to_string(id);
}

std::string foldTemplates(const std::string& name)
{
    std::string out;
    int depth = 0;
    for (char c : name) {
        if (c == '<') {
            if (depth++ == 0) out += "<...>";
            continue;
        }
        if (c == '>' && depth > 0) {
            --depth;
            continue;
        }
        if (depth == 0) out += c;
    }
    return depth == 0 ? out : name;  // "operator<" and the like: as it is
}

}  // namespace gpuspy::collect::textparts
