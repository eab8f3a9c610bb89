// check_trace: checks the simulated driver's ground-truth trace (SIMCUDA_TRACE, one JSON object a line)
// against expectations written as facts, so that each app test asserts what the program really did.
//
// Usage: check_trace [--consts SRC]... [--set NAME=EXPR]... [--expect FILE]... [--fact LINE]... TRACE...
//   TRACE       a trace file, or a directory whose regular files are all traces (one per process with %p)
//   --consts    reads `constexpr <type> kName = EXPR;` and `enum { kName = EXPR };` lines from a source, so the
//               facts can use the program's own constants instead of numbers copied from a run
//   --set       defines a name (the CMake tests set ptds, legacy and shared for the variant under test)
//   --expect    a file of facts, one a line; --fact gives one on the command line
// Exit status: 0 all facts hold, 1 a fact failed, 2 bad usage, unreadable or malformed trace, bad fact.
//
// Fact grammar ('#' starts a comment, blank lines are ignored):
//   let NAME = EXPR                       defines a name for later lines
//   [if EXPR:] [TYPE] TERM...             the fact applies only if EXPR != 0;
//                                         TYPE: op kernel memcpy memset host_func wait graph_event any (default any)
//   TERM is a filter on each record's field, or a check on the matched set:
//     FIELD=VALUE   FIELD!=VALUE          string fields compare as text, numbers as EXPR, bools as true/false,
//                                         arrays as [EXPR,EXPR,EXPR] (e.g. grid=[kBlocks,1,1])
//     FIELD~=REGEX  (or FIELD=~REGEX)     ECMAScript regex search in a string field
//     FIELD>=EXPR  <=  >  <               numeric comparison on a number field
//     AGG OP EXPR                         OP one of = != >= <= > <; AGG one of
//       count                             matched records
//       sum_bytes                         sum of "bytes"
//       min_ns max_ns sum_ns              over end - start of each matched record
//       pids tids streams devs ctxs names distinct values of pid, (pid,tid), and per process of stream,
//                                         dev, ctx, name
//       overlapped                        matched records whose [start,end) overlaps a matched record of the
//                                         same process on another stream (device work running concurrently)
//   A fact without a check means count>=1. A record without the filtered field never matches.
//   EXPR: integers, names, + - * / % << >> ( ), sizeof(char|short|int|float|long|double|size_t|...).
//
// Examples:
//   memcpy dir=HtoD host_mem=pageable sync=true count=kIters sum_bytes=kIters*kBytes
//   kernel name~=gemm_tile count=kSteps*kLayers*kTiles grid=[kTileBlocks,1,1]
//   wait api~=Synchronize reason=ctx_sync min_ns>=slow_ns
//   if ptds: kernel api!=cuLaunchKernel_ptsz count=0
//   pids=2
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;
using Names = std::map<std::string, long long>;

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Integer expression evaluator: recursive descent over a small C-like grammar.
class Expr {
public:
    Expr(const std::string& text, const Names& names) : m_s(text), m_names(names) {}

    long long eval()
    {
        const long long v = shift();
        skipSpace();
        if (m_i != m_s.size()) fail("unexpected '" + m_s.substr(m_i) + "'");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& why) const
    {
        throw UsageError("in expression '" + m_s + "': " + why);
    }
    void skipSpace()
    {
        while (m_i < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_i]))) ++m_i;
    }
    bool take(const char* tok)
    {
        skipSpace();
        const size_t n = std::char_traits<char>::length(tok);
        if (m_s.compare(m_i, n, tok) != 0) return false;
        // "<" must not take the first half of "<<", nor "<=".
        if (n == 1 && (tok[0] == '<' || tok[0] == '>') && m_i + 1 < m_s.size() &&
            (m_s[m_i + 1] == tok[0] || m_s[m_i + 1] == '='))
            return false;
        m_i += n;
        return true;
    }
    long long shift()
    {
        long long v = additive();
        for (;;) {
            if (take("<<")) v <<= additive();
            else if (take(">>")) v >>= additive();
            else return v;
        }
    }
    long long additive()
    {
        long long v = term();
        for (;;) {
            if (take("+")) v += term();
            else if (take("-")) v -= term();
            else return v;
        }
    }
    long long term()
    {
        long long v = unary();
        for (;;) {
            if (take("*")) v *= unary();
            else if (take("/") || take("%")) {
                const char op = m_s[m_i - 1];
                const long long d = unary();
                if (d == 0) fail("division by zero");
                v = op == '/' ? v / d : v % d;
            } else return v;
        }
    }
    long long unary()
    {
        if (take("-")) return -unary();
        if (take("+")) return unary();
        if (take("(")) {
            const long long v = shift();
            if (!take(")")) fail("missing ')'");
            return v;
        }
        skipSpace();
        if (m_i < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[m_i]))) return number();
        const std::string id = ident();
        if (id.empty()) fail("expected a number or a name");
        if (id == "sizeof") return sizeOf();
        const auto it = m_names.find(id);
        if (it == m_names.end()) fail("unknown name '" + id + "'");
        return it->second;
    }
    std::string ident()
    {
        skipSpace();
        const size_t b = m_i;
        while (m_i < m_s.size() && (std::isalnum(static_cast<unsigned char>(m_s[m_i])) || m_s[m_i] == '_' ||
                                    (m_s[m_i] == ':' && m_i > b)))
            ++m_i;
        return m_s.substr(b, m_i - b);
    }
    long long number()
    {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(m_s.substr(m_i), &used, 0);
        } catch (const std::exception&) {
            fail("bad number");
        }
        m_i += used;
        while (m_i < m_s.size() && std::strchr("uUlLzZ", m_s[m_i]) && m_s[m_i] != '\0') ++m_i;  // C suffixes
        return v;
    }
    long long sizeOf()
    {
        static const std::map<std::string, long long> kSizes = {
            {"char", 1},     {"int8_t", 1},   {"uint8_t", 1},       {"short", 2},    {"int16_t", 2},
            {"uint16_t", 2}, {"int", 4},      {"unsigned", 4},      {"float", 4},    {"int32_t", 4},
            {"uint32_t", 4}, {"long", 8},     {"double", 8},        {"size_t", 8},   {"int64_t", 8},
            {"uint64_t", 8}, {"float2", 8},   {"float4", 16},       {"std::size_t", 8}};
        if (!take("(")) fail("sizeof needs '('");
        const std::string t = ident();
        if (!take(")")) fail("sizeof(" + t + ": missing ')'");
        const auto it = kSizes.find(t);
        if (it == kSizes.end()) fail("sizeof(" + t + ") is not known");
        return it->second;
    }

    std::string m_s;
    const Names& m_names;
    size_t m_i = 0;
};

long long evalExpr(const std::string& text, const Names& names) { return Expr(text, names).eval(); }

// Reads `constexpr <type> kName = <expr>;` (C++) and `enum { kName = <expr> };` (C) from a source file. Non-integer constants are skipped:
// a fact that uses one fails with "unknown name", which is the right place to complain.
void readConsts(const std::string& path, Names& names)
{
    std::ifstream in(path);
    if (!in) throw UsageError("cannot read constants from " + path);
    static const std::regex kDecl(R"(\bconstexpr\s+[A-Za-z_:][\w:\s]*?\b(k[A-Za-z0-9_]+)\s*=\s*([^;]+);)");
    static const std::regex kEnum(R"(\benum\s*\{\s*(k[A-Za-z0-9_]+)\s*=\s*([^;,}]+)\}\s*;)");
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, kDecl) && !std::regex_search(line, m, kEnum)) continue;
        try {
            names[m[1]] = evalExpr(m[2], names);
        } catch (const UsageError&) {
        }
    }
}

enum class Op { Eq, Ne, Ge, Le, Gt, Lt, Match };

const char* opText(Op op)
{
    switch (op) {
    case Op::Eq: return "=";
    case Op::Ne: return "!=";
    case Op::Ge: return ">=";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Lt: return "<";
    case Op::Match: return "~=";
    }
    return "?";
}

bool compare(long long a, Op op, long long b)
{
    switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Ge: return a >= b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Lt: return a < b;
    case Op::Match: return false;
    }
    return false;
}

// Splits "key<op>value" at the first operator.
bool splitTerm(const std::string& term, std::string& key, Op& op, std::string& value)
{
    const size_t p = term.find_first_of("=!<>~");
    if (p == std::string::npos || p == 0) return false;
    key = term.substr(0, p);
    const std::string rest = term.substr(p);
    static const std::pair<const char*, Op> kOps[] = {{"=~", Op::Match}, {"~=", Op::Match}, {"!=", Op::Ne},
                                                      {">=", Op::Ge},    {"<=", Op::Le},    {"=", Op::Eq},
                                                      {">", Op::Gt},     {"<", Op::Lt}};
    for (const auto& [text, o] : kOps) {
        const size_t n = std::char_traits<char>::length(text);
        if (rest.compare(0, n, text) == 0) {
            op = o;
            value = rest.substr(n);
            return true;
        }
    }
    return false;
}

struct Filter {
    std::string field;
    Op op;
    std::string value;
    std::optional<std::regex> re;
};

struct Check {
    std::string agg;
    Op op;
    std::string exprText;
    long long expected;
};

const std::set<std::string> kAggs = {"count", "sum_bytes", "min_ns", "max_ns",     "sum_ns", "pids",
                                     "tids",  "streams",   "devs",   "ctxs",       "names",  "overlapped"};
const std::set<std::string> kTypes = {"op", "kernel", "memcpy", "memset", "host_func", "wait", "graph_event", "any"};

struct Fact {
    int line = 0;
    std::string text;
    std::string type = "any";
    std::vector<Filter> filters;
    std::vector<Check> checks;
};

std::string trim(const std::string& s)
{
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string fieldText(const Json& v)
{
    if (v.is_string()) return v.get<std::string>();
    return v.dump();
}

bool filterMatches(const Filter& f, const Json& rec, const Names& names)
{
    const auto it = rec.find(f.field);
    if (it == rec.end()) return false;
    const Json& v = *it;
    if (f.op == Op::Match) return v.is_string() && std::regex_search(v.get<std::string>(), *f.re);
    if (v.is_number_integer() || v.is_number_unsigned()) {
        return compare(v.get<long long>(), f.op, evalExpr(f.value, names));
    }
    if (f.op != Op::Eq && f.op != Op::Ne) {
        throw UsageError("field '" + f.field + "' is not a number; use = != or ~=");
    }
    bool same = false;
    if (v.is_array()) {
        // [EXPR,EXPR,...] against an array of numbers.
        std::string inner = f.value;
        if (inner.size() < 2 || inner.front() != '[' || inner.back() != ']') {
            throw UsageError("field '" + f.field + "' is an array; write [a,b,c]");
        }
        inner = inner.substr(1, inner.size() - 2);
        std::vector<long long> want;
        std::stringstream ss(inner);
        std::string part;
        while (std::getline(ss, part, ',')) want.push_back(evalExpr(part, names));
        same = want.size() == v.size();
        for (size_t i = 0; same && i < want.size(); ++i) {
            same = v[i].is_number_integer() && v[i].get<long long>() == want[i];
        }
    } else {
        same = fieldText(v) == f.value;
    }
    return f.op == Op::Eq ? same : !same;
}

bool typeMatches(const std::string& type, const Json& rec)
{
    if (type == "any") return true;
    const std::string t = rec.value("type", "");
    if (type == "op") return t == "op";
    if (type == "wait") return t == "wait";
    if (type == "graph_event") return t == "graph_event";
    return t == "op" && rec.value("op", "") == type;
}

// Parses one fact line; returns false for blank or comment lines and for `let`, which it applies.
bool parseFact(const std::string& raw, int lineNo, Names& names, Fact& fact)
{
    std::string line = raw;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) return false;
    if (line.rfind("let ", 0) == 0) {
        const size_t eq = line.find('=');
        if (eq == std::string::npos) throw UsageError("line " + std::to_string(lineNo) + ": let NAME = EXPR");
        names[trim(line.substr(4, eq - 4))] = evalExpr(line.substr(eq + 1), names);
        return false;
    }
    if (line.rfind("if ", 0) == 0) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) throw UsageError("line " + std::to_string(lineNo) + ": if EXPR: FACT");
        if (evalExpr(line.substr(3, colon - 3), names) == 0) return false;
        line = trim(line.substr(colon + 1));
    }
    fact.line = lineNo;
    fact.text = line;
    std::stringstream ss(line);
    std::string term;
    bool first = true;
    while (ss >> term) {
        if (first && kTypes.count(term)) {
            fact.type = term;
            first = false;
            continue;
        }
        first = false;
        std::string key, value;
        Op op;
        if (!splitTerm(term, key, op, value) || value.empty()) {
            throw UsageError("line " + std::to_string(lineNo) + ": cannot read term '" + term + "'");
        }
        if (kAggs.count(key)) {
            if (op == Op::Match) throw UsageError("line " + std::to_string(lineNo) + ": " + key + " takes a number");
            fact.checks.push_back({key, op, value, evalExpr(value, names)});
        } else {
            Filter f{key, op, value, std::nullopt};
            if (op == Op::Match) f.re = std::regex(value);
            fact.filters.push_back(std::move(f));
        }
    }
    if (fact.checks.empty()) fact.checks.push_back({"count", Op::Ge, "1", 1});
    return true;
}

long long overlapped(std::vector<const Json*> recs)
{
    auto start = [](const Json* r) { return r->value("start", 0LL); };
    auto end = [](const Json* r) { return r->value("end", 0LL); };
    std::sort(recs.begin(), recs.end(), [&](const Json* a, const Json* b) { return start(a) < start(b); });
    std::vector<bool> hit(recs.size(), false);
    for (size_t i = 0; i < recs.size(); ++i) {
        for (size_t j = i + 1; j < recs.size() && start(recs[j]) < end(recs[i]); ++j) {
            if (recs[i]->value("pid", Json()) != recs[j]->value("pid", Json())) continue;
            if (recs[i]->value("stream", Json()) == recs[j]->value("stream", Json())) continue;
            if (start(recs[i]) < end(recs[j])) hit[i] = hit[j] = true;
        }
    }
    return std::count(hit.begin(), hit.end(), true);
}

std::optional<long long> aggregate(const std::string& agg, const std::vector<const Json*>& recs)
{
    if (agg == "count") return static_cast<long long>(recs.size());
    if (agg == "sum_bytes") {
        long long s = 0;
        for (const Json* r : recs) s += r->value("bytes", 0LL);
        return s;
    }
    if (agg == "min_ns" || agg == "max_ns" || agg == "sum_ns") {
        if (recs.empty()) return std::nullopt;
        long long mn = 0, mx = 0, sum = 0;
        bool firstRec = true;
        for (const Json* r : recs) {
            const long long d = r->value("end", 0LL) - r->value("start", 0LL);
            mn = firstRec ? d : std::min(mn, d);
            mx = firstRec ? d : std::max(mx, d);
            sum += d;
            firstRec = false;
        }
        return agg == "min_ns" ? mn : agg == "max_ns" ? mx : sum;
    }
    if (agg == "overlapped") return overlapped(recs);
    std::set<std::string> distinct;
    for (const Json* r : recs) {
        if (agg == "tids") distinct.insert(fieldText(r->value("pid", Json())) + "/" + fieldText(r->value("tid", Json())));
        else {
            const std::string field = agg == "pids"      ? "pid"
                                      : agg == "streams" ? "stream"
                                      : agg == "devs"    ? "dev"
                                      : agg == "ctxs"    ? "ctx"
                                                         : "name";
            // Streams are per process: the same handle in two processes is two streams.
            const auto it = r->find(field);
            if (it != r->end()) distinct.insert(fieldText(r->value("pid", Json())) + "/" + fieldText(*it));
        }
    }
    return static_cast<long long>(distinct.size());
}

// What the trace holds, grouped, printed once when a fact fails so the difference is visible.
void printSummary(const std::vector<Json>& recs)
{
    std::map<std::string, std::pair<long long, long long>> groups;
    std::set<long long> pids;
    for (const Json& r : recs) {
        pids.insert(r.value("pid", 0LL));
        std::string key = r.value("type", "?");
        if (key == "op") {
            const std::string op = r.value("op", "?");
            key = op;
            if (op == "kernel") key += " name=" + r.value("name", "?");
            if (op == "memcpy") {
                key += " dir=" + r.value("dir", "?") + " host_mem=" + r.value("host_mem", "?") +
                       " sync=" + fieldText(r.value("sync", Json()));
            }
            if (op == "memset") key += " sync=" + fieldText(r.value("sync", Json()));
            key += " graph=" + fieldText(r.value("graph", Json()));
        } else if (key == "wait") {
            key += " reason=" + r.value("reason", "?");
        }
        key += " api=" + r.value("api", "?");
        auto& g = groups[key];
        g.first += 1;
        g.second += r.value("bytes", 0LL);
    }
    std::cerr << "trace summary: " << recs.size() << " records, " << pids.size() << " process(es)\n";
    for (const auto& [key, g] : groups) {
        std::cerr << "  " << g.first << " x " << key;
        if (g.second) std::cerr << " (bytes " << g.second << ")";
        std::cerr << "\n";
    }
}

void readTrace(const std::filesystem::path& path, std::vector<Json>& out)
{
    std::ifstream in(path);
    if (!in) throw UsageError("cannot read trace " + path.string());
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        if (trim(line).empty()) continue;
        try {
            out.push_back(Json::parse(line));
        } catch (const Json::exception& e) {
            throw UsageError(path.string() + ":" + std::to_string(lineNo) + ": malformed trace line: " + e.what());
        }
    }
}

int run(int argc, char** argv)
{
    Names names;
    std::vector<std::pair<std::string, std::string>> sources;  // (where, text) of facts, in order
    std::vector<std::filesystem::path> traces;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "--consts") readConsts(next(), names);
        else if (a == "--set") {
            const std::string kv = next();
            const size_t eq = kv.find('=');
            if (eq == std::string::npos) throw UsageError("--set NAME=EXPR");
            names[kv.substr(0, eq)] = evalExpr(kv.substr(eq + 1), names);
        } else if (a == "--expect") {
            const std::string path = next();
            std::ifstream in(path);
            if (!in) throw UsageError("cannot read expectations " + path);
            std::stringstream ss;
            ss << in.rdbuf();
            sources.emplace_back(path, ss.str());
        } else if (a == "--fact") sources.emplace_back("--fact", next());
        else if (!a.empty() && a[0] == '-') throw UsageError("unknown option " + a);
        else if (std::filesystem::is_directory(a)) {
            std::vector<std::filesystem::path> files;
            for (const auto& e : std::filesystem::directory_iterator(a)) {
                if (e.is_regular_file()) files.push_back(e.path());
            }
            std::sort(files.begin(), files.end());
            traces.insert(traces.end(), files.begin(), files.end());
        } else traces.emplace_back(a);
    }
    if (traces.empty()) throw UsageError("no trace given (or the trace directory is empty)");
    std::vector<Json> recs;
    for (const auto& t : traces) readTrace(t, recs);
    if (recs.empty()) throw UsageError("the trace is empty: the simulated driver recorded nothing");

    // Facts are parsed in order so that `let` and `if` see the names defined above them.
    std::vector<std::pair<std::string, Fact>> facts;
    for (const auto& [where, text] : sources) {
        std::stringstream ss(text);
        std::string line;
        int lineNo = 0;
        while (std::getline(ss, line)) {
            ++lineNo;
            Fact f;
            try {
                if (parseFact(line, lineNo, names, f)) facts.emplace_back(where, std::move(f));
            } catch (const std::regex_error& e) {
                throw UsageError(where + ":" + std::to_string(lineNo) + ": bad regex: " + e.what());
            } catch (const UsageError& e) {
                throw UsageError(where + ":" + std::to_string(lineNo) + ": " + e.what());
            }
        }
    }
    if (facts.empty()) throw UsageError("no facts to check: a test must assert something");

    int failed = 0;
    for (const auto& [where, f] : facts) {
        std::vector<const Json*> matched;
        for (const Json& r : recs) {
            if (!typeMatches(f.type, r)) continue;
            bool ok = true;
            for (const Filter& flt : f.filters) {
                if (!filterMatches(flt, r, names)) {
                    ok = false;
                    break;
                }
            }
            if (ok) matched.push_back(&r);
        }
        for (const Check& c : f.checks) {
            const std::optional<long long> actual = aggregate(c.agg, matched);
            const bool ok = actual && compare(*actual, c.op, c.expected);
            std::ostringstream msg;
            msg << (ok ? "PASS " : "FAIL ") << where << ":" << f.line << ": " << f.text << "\n     expected "
                << c.agg << " " << opText(c.op) << " " << c.expected;
            if (c.exprText != std::to_string(c.expected)) msg << " (" << c.exprText << ")";
            msg << ", actual ";
            if (actual) msg << *actual;
            else msg << "none (no record matched)";
            msg << " over " << matched.size() << " matching record(s)";
            (ok ? std::cout : std::cerr) << msg.str() << "\n";
            if (!ok) ++failed;
        }
    }
    std::cout.flush();
    if (failed) {
        printSummary(recs);
        std::cerr << failed << " check(s) failed\n";
        return 1;
    }
    std::cout << "all " << facts.size() << " fact(s) hold over " << recs.size() << " trace record(s)\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "check_trace: " << e.what() << "\n";
        return 2;
    }
}
