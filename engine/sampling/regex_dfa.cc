#include "engine/sampling/regex_dfa.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

// Code point ranges, inclusive; normalized: sorted, disjoint, not adjacent.
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxRepeat = 1000;

Ranges Normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

Ranges Complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

Ranges Intersect(const Ranges& a, const Ranges& b) {
  Ranges out;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint32_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo <= hi) out.push_back({lo, hi});
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// A JSON string's characters that need no escape, surrogates left out.
const Ranges& JsonStringAlphabet() {
  static const Ranges* allowed = new Ranges{{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, kMaxCodePoint}};
  return *allowed;
}

// The same with '"' and '\\', for patterns that write escapes themselves.
const Ranges& EscapedJsonStringAlphabet() {
  static const Ranges* allowed = new Ranges{{0x20, 0xD7FF}, {0xE000, kMaxCodePoint}};
  return *allowed;
}

// Every character, surrogates left out.
const Ranges& TextAlphabet() {
  static const Ranges* allowed = new Ranges{{0, 0xD7FF}, {0xE000, kMaxCodePoint}};
  return *allowed;
}

struct Node {
  enum class Kind { kEmpty, kChars, kConcat, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  Ranges chars;  // kChars, already within the alphabet
  std::vector<std::unique_ptr<Node>> children;
  int min = 0, max = -1;  // kRepeat; max -1: no bound
};

class Parser {
 public:
  Parser(std::string_view pattern, const Ranges& alphabet) : p_(pattern), alphabet_(alphabet) {}

  absl::StatusOr<std::unique_ptr<Node>> Parse() {
    if (Peek('^')) ++pos_;
    absl::StatusOr<std::unique_ptr<Node>> n = Alt();
    if (!n.ok()) return n;
    if (pos_ < p_.size()) return Error(p_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
    return n;
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("at offset ", pos_, ": ", what));
  }
  bool Peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }

  absl::StatusOr<std::unique_ptr<Node>> Alt() {
    std::vector<std::unique_ptr<Node>> branches;
    for (;;) {
      absl::StatusOr<std::unique_ptr<Node>> c = Concat();
      if (!c.ok()) return c;
      branches.push_back(std::move(*c));
      if (!Peek('|')) break;
      ++pos_;
    }
    if (branches.size() == 1) return std::move(branches[0]);
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kAlt;
    n->children = std::move(branches);
    return n;
  }

  absl::StatusOr<std::unique_ptr<Node>> Concat() {
    std::vector<std::unique_ptr<Node>> items;
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      if (p_[pos_] == '$' && pos_ + 1 == p_.size()) {
        ++pos_;
        break;
      }
      absl::StatusOr<std::unique_ptr<Node>> atom = Atom();
      if (!atom.ok()) return atom;
      absl::StatusOr<std::unique_ptr<Node>> repeated = Quantified(std::move(*atom));
      if (!repeated.ok()) return repeated;
      items.push_back(std::move(*repeated));
    }
    if (items.size() == 1) return std::move(items[0]);
    auto n = std::make_unique<Node>();
    n->kind = items.empty() ? Node::Kind::kEmpty : Node::Kind::kConcat;
    n->children = std::move(items);
    return n;
  }

  absl::StatusOr<int> Number() {
    const size_t begin = pos_;
    int v = 0;
    while (pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      v = std::min(v * 10 + (p_[pos_] - '0'), kMaxRepeat + 1);
      ++pos_;
    }
    if (pos_ == begin) return Error("a number expected in {}");
    if (v > kMaxRepeat) return Error(absl::StrCat("a repetition count above ", kMaxRepeat));
    return v;
  }

  absl::StatusOr<std::unique_ptr<Node>> Quantified(std::unique_ptr<Node> atom) {
    if (pos_ >= p_.size()) return atom;
    int min, max;
    switch (p_[pos_]) {
      case '*': min = 0, max = -1, ++pos_; break;
      case '+': min = 1, max = -1, ++pos_; break;
      case '?': min = 0, max = 1, ++pos_; break;
      case '{': {
        ++pos_;
        absl::StatusOr<int> lo = Number();
        if (!lo.ok()) return lo.status();
        min = max = *lo;
        if (Peek(',')) {
          ++pos_;
          max = -1;
          if (!Peek('}')) {
            absl::StatusOr<int> hi = Number();
            if (!hi.ok()) return hi.status();
            max = *hi;
            if (max < min) return Error("{n,m} with m below n");
          }
        }
        if (!Peek('}')) return Error("'}' expected");
        ++pos_;
        break;
      }
      default: return atom;
    }
    if (Peek('?')) ++pos_;  // lazy: the same strings
    if (pos_ < p_.size() && (p_[pos_] == '+' || p_[pos_] == '*' || p_[pos_] == '?' || p_[pos_] == '{')) {
      return Error("a quantifier after a quantifier (possessive or repeated) is not supported");
    }
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kRepeat;
    n->min = min;
    n->max = max;
    n->children.push_back(std::move(atom));
    return n;
  }

  // One UTF-8 character of the pattern.
  absl::StatusOr<uint32_t> Char() {
    const uint8_t b = static_cast<uint8_t>(p_[pos_]);
    const int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + n > p_.size()) return Error("not UTF-8");
    uint32_t cp = n == 1 ? b : b & (0xFF >> (n + 1));
    for (int i = 1; i < n; ++i) cp = cp << 6 | (static_cast<uint8_t>(p_[pos_ + i]) & 0x3F);
    pos_ += n;
    return cp;
  }

  absl::StatusOr<uint32_t> Hex(int digits) {
    if (pos_ + digits > p_.size()) return Error("hex digits expected");
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = p_[pos_ + i];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return Error("hex digits expected");
      v = v << 4 | d;
    }
    pos_ += digits;
    return v;
  }

  // After a backslash: the characters it stands for.
  absl::StatusOr<Ranges> Escape(bool in_class) {
    if (pos_ >= p_.size()) return Error("a pattern ending in '\\'");
    const char c = p_[pos_++];
    const Ranges digit = {{'0', '9'}}, word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}},
                 space = {{'\t', '\r'}, {' ', ' '}};
    switch (c) {
      case 'd': return digit;
      case 'D': return Complement(digit);
      case 'w': return word;
      case 'W': return Complement(word);
      case 's': return space;
      case 'S': return Complement(space);
      case 'n': return Ranges{{'\n', '\n'}};
      case 't': return Ranges{{'\t', '\t'}};
      case 'r': return Ranges{{'\r', '\r'}};
      case 'f': return Ranges{{'\f', '\f'}};
      case 'v': return Ranges{{'\v', '\v'}};
      case 'x': {
        absl::StatusOr<uint32_t> v = Hex(2);
        if (!v.ok()) return v.status();
        return Ranges{{*v, *v}};
      }
      case 'u': {
        absl::StatusOr<uint32_t> v = Hex(4);
        if (!v.ok()) return v.status();
        uint32_t cp = *v;
        // A surrogate pair written as two \u escapes is one character.
        if (cp >= 0xD800 && cp <= 0xDBFF && pos_ + 1 < p_.size() && p_[pos_] == '\\' && p_[pos_ + 1] == 'u') {
          const size_t at = pos_;
          pos_ += 2;
          absl::StatusOr<uint32_t> low = Hex(4);
          if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (*low - 0xDC00);
          } else {
            pos_ = at;
          }
        }
        return Ranges{{cp, cp}};
      }
      case 'b':
        if (in_class) return Ranges{{'\b', '\b'}};
        return Error("\\b (a word boundary) is not supported");
      default: break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      return Error(absl::StrCat("\\", std::string(1, c),
                                " is not supported (anchors, backreferences and properties are not)"));
    }
    return Ranges{{static_cast<uint8_t>(c), static_cast<uint8_t>(c)}};
  }

  absl::StatusOr<std::unique_ptr<Node>> Class() {
    ++pos_;  // '['
    const bool negate = Peek('^');
    if (negate) ++pos_;
    Ranges r;
    bool first = true;
    for (;;) {
      if (pos_ >= p_.size()) return Error("'[' without ']'");
      if (p_[pos_] == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      Ranges item;
      if (p_[pos_] == '\\') {
        ++pos_;
        absl::StatusOr<Ranges> e = Escape(true);
        if (!e.ok()) return e.status();
        item = std::move(*e);
      } else {
        absl::StatusOr<uint32_t> c = Char();
        if (!c.ok()) return c.status();
        item = {{*c, *c}};
      }
      if (Peek('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi;
        if (p_[pos_] == '\\') {
          ++pos_;
          absl::StatusOr<Ranges> e = Escape(true);
          if (!e.ok()) return e.status();
          if (e->size() != 1 || (*e)[0].first != (*e)[0].second) return Error("a class as a range's end");
          hi = (*e)[0].first;
        } else {
          absl::StatusOr<uint32_t> c = Char();
          if (!c.ok()) return c.status();
          hi = *c;
        }
        if (item.size() != 1 || item[0].first != item[0].second) return Error("a class as a range's start");
        if (hi < item[0].first) return Error("a range whose end is below its start");
        item = {{item[0].first, hi}};
      }
      r.insert(r.end(), item.begin(), item.end());
    }
    r = Normalize(std::move(r));
    return Chars(negate ? Complement(r) : r);
  }

  absl::StatusOr<std::unique_ptr<Node>> Atom() {
    const char c = p_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (Peek('?')) {
          ++pos_;
          if (Peek(':')) {
            ++pos_;
          } else if (Peek('<') || (Peek('P') && pos_ + 1 < p_.size() && p_[pos_ + 1] == '<')) {
            if (Peek('P')) ++pos_;
            if (pos_ + 1 < p_.size() && (p_[pos_ + 1] == '=' || p_[pos_ + 1] == '!')) {
              return Error("lookbehind is not supported");
            }
            const size_t close = p_.find('>', pos_);
            if (close == std::string_view::npos) return Error("a group name without '>'");
            pos_ = close + 1;
          } else {
            return Error("(? other than (?:, (?<name> and (?P<name> (lookaround, flags) is not supported");
          }
        }
        absl::StatusOr<std::unique_ptr<Node>> inner = Alt();
        if (!inner.ok()) return inner;
        if (!Peek(')')) return Error("'(' without ')'");
        ++pos_;
        return inner;
      }
      case '[': return Class();
      // Any character, newline included, as xgrammar (vLLM's default
      // backend) reads "."; in a JSON string a newline is never allowed.
      case '.': ++pos_; return Chars(Ranges{{0, kMaxCodePoint}});
      case '\\': {
        ++pos_;
        absl::StatusOr<Ranges> e = Escape(false);
        if (!e.ok()) return e.status();
        return Chars(std::move(*e));
      }
      case '^': return Error("'^' other than at the start is not supported");
      case '$': return Error("'$' other than at the end is not supported");
      case '*':
      case '+':
      case '?':
      case '{': return Error("a quantifier with nothing to repeat");
      default: {
        absl::StatusOr<uint32_t> cp = Char();
        if (!cp.ok()) return cp.status();
        return Chars(Ranges{{*cp, *cp}});
      }
    }
  }

  std::unique_ptr<Node> Chars(Ranges r) const {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kChars;
    n->chars = Intersect(Normalize(std::move(r)), alphabet_);
    return n;
  }

  std::string_view p_;
  const Ranges& alphabet_;
  size_t pos_ = 0;
};

void EncodeUtf8(uint32_t cp, int n, uint8_t* out) {
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
    return;
  }
  for (int i = n - 1; i > 0; --i, cp >>= 6) out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  out[0] = static_cast<uint8_t>((0xF00 >> n) | cp);  // 2: 0xC0, 3: 0xE0, 4: 0xF0
}

using ByteSequence = std::vector<std::pair<uint8_t, uint8_t>>;

// [lo, hi] (no surrogates) as UTF-8 byte sequences, each a product of byte
// ranges: split where the encoded length changes, then where a
// continuation byte's range would not be whole.
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteSequence>& out) {
  for (const uint32_t bound : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= bound && hi > bound) {
      Utf8Sequences(lo, bound, out);
      Utf8Sequences(bound + 1, hi, out);
      return;
    }
  }
  const int n = lo <= 0x7F ? 1 : lo <= 0x7FF ? 2 : lo <= 0xFFFF ? 3 : 4;
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Sequences(lo, lo | m, out);
        Utf8Sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Sequences(lo, (hi & ~m) - 1, out);
        Utf8Sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  EncodeUtf8(lo, n, a);
  EncodeUtf8(hi, n, b);
  ByteSequence seq;
  for (int i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
  out.push_back(std::move(seq));
}

struct Nfa {
  struct Edge {
    uint8_t lo, hi;
    int to;
  };
  std::vector<std::vector<Edge>> edges;
  std::vector<std::vector<int>> eps;

  absl::StatusOr<int> New() {
    if (static_cast<int>(edges.size()) >= kMaxRegexNfaStates) {
      return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxRegexNfaStates,
                                                     " automaton states (repetition counts too large)"));
    }
    edges.emplace_back();
    eps.emplace_back();
    return static_cast<int>(edges.size()) - 1;
  }
};

struct Fragment {
  int start, end;
};

absl::StatusOr<Fragment> Build(const Node& n, Nfa& nfa) {
  absl::StatusOr<int> s = nfa.New();
  if (!s.ok()) return s.status();
  switch (n.kind) {
    case Node::Kind::kEmpty: return Fragment{*s, *s};
    case Node::Kind::kChars: {
      absl::StatusOr<int> e = nfa.New();
      if (!e.ok()) return e.status();
      std::vector<ByteSequence> seqs;
      for (const auto& [lo, hi] : n.chars) Utf8Sequences(lo, hi, seqs);
      for (const ByteSequence& seq : seqs) {
        int at = *s;
        for (size_t i = 0; i < seq.size(); ++i) {
          int to = *e;
          if (i + 1 < seq.size()) {
            absl::StatusOr<int> mid = nfa.New();
            if (!mid.ok()) return mid.status();
            to = *mid;
          }
          nfa.edges[at].push_back({seq[i].first, seq[i].second, to});
          at = to;
        }
      }
      return Fragment{*s, *e};
    }
    case Node::Kind::kConcat: {
      int at = *s;
      for (const auto& c : n.children) {
        absl::StatusOr<Fragment> f = Build(*c, nfa);
        if (!f.ok()) return f;
        nfa.eps[at].push_back(f->start);
        at = f->end;
      }
      return Fragment{*s, at};
    }
    case Node::Kind::kAlt: {
      absl::StatusOr<int> e = nfa.New();
      if (!e.ok()) return e.status();
      for (const auto& c : n.children) {
        absl::StatusOr<Fragment> f = Build(*c, nfa);
        if (!f.ok()) return f;
        nfa.eps[*s].push_back(f->start);
        nfa.eps[f->end].push_back(*e);
      }
      return Fragment{*s, *e};
    }
    case Node::Kind::kRepeat: {
      int at = *s;
      for (int i = 0; i < n.min; ++i) {
        absl::StatusOr<Fragment> f = Build(*n.children[0], nfa);
        if (!f.ok()) return f;
        nfa.eps[at].push_back(f->start);
        at = f->end;
      }
      if (n.max < 0) {  // then any number more: a loop through `at`
        absl::StatusOr<Fragment> f = Build(*n.children[0], nfa);
        if (!f.ok()) return f;
        nfa.eps[at].push_back(f->start);
        nfa.eps[f->end].push_back(at);
        return Fragment{*s, at};
      }
      absl::StatusOr<int> e = nfa.New();
      if (!e.ok()) return e.status();
      for (int i = n.min; i < n.max; ++i) {
        absl::StatusOr<Fragment> f = Build(*n.children[0], nfa);
        if (!f.ok()) return f;
        nfa.eps[at].push_back(*e);
        nfa.eps[at].push_back(f->start);
        at = f->end;
      }
      nfa.eps[at].push_back(*e);
      return Fragment{*s, *e};
    }
  }
  return absl::InternalError("regex node");
}

// Epsilon closures, with one "seen" array for all of them (a generation
// stamp per NFA state) so a closure costs its own size, not the NFA's.
class Closures {
 public:
  explicit Closures(const Nfa& nfa) : nfa_(nfa), seen_(nfa.edges.size(), 0) {}

  std::vector<int> Of(std::vector<int> states) {
    ++generation_;
    std::vector<int> stack = states;
    for (int s : states) seen_[s] = generation_;
    while (!stack.empty()) {
      const int s = stack.back();
      stack.pop_back();
      for (int t : nfa_.eps[s]) {
        if (seen_[t] != generation_) {
          seen_[t] = generation_;
          states.push_back(t);
          stack.push_back(t);
        }
      }
    }
    std::sort(states.begin(), states.end());
    return states;
  }

 private:
  const Nfa& nfa_;
  std::vector<uint32_t> seen_;
  uint32_t generation_ = 0;
};

// Fills min_chars, max_chars and lengths_are_intervals. A byte that is
// not a UTF-8 continuation begins a character and weighs 1; a continuation
// weighs 0 (a class with a transition lies inside one edge's range, so its
// representative tells which). Every state left can reach a match.
void MeasureLengths(RegexDfa& dfa, const std::vector<uint8_t>& representative) {
  const int n = static_cast<int>(dfa.accepting.size()), k = dfa.num_classes;
  auto weight = [&](int c) { return representative[c] < 0x80 || representative[c] >= 0xC0 ? 1 : 0; };
  std::vector<std::vector<std::pair<int, int>>> preds(n);  // (state, weight) of each transition into a state
  std::vector<int> out_degree(n, 0);
  for (int d = 0; d < n; ++d) {
    for (int c = 0; c < k; ++c) {
      const int t = dfa.next[d * k + c];
      if (t < 0) continue;
      preds[t].push_back({d, weight(c)});
      ++out_degree[d];
    }
  }
  // Fewest: a 0-1 breadth-first search backwards from the accepting states.
  constexpr int32_t kUnknown = std::numeric_limits<int32_t>::max();
  dfa.min_chars.assign(n, kUnknown);
  std::deque<int> queue;
  for (int d = 0; d < n; ++d) {
    if (dfa.accepting[d]) {
      dfa.min_chars[d] = 0;
      queue.push_back(d);
    }
  }
  while (!queue.empty()) {
    const int t = queue.front();
    queue.pop_front();
    for (const auto& [d, w] : preds[t]) {
      if (dfa.min_chars[t] + w < dfa.min_chars[d]) {
        dfa.min_chars[d] = dfa.min_chars[t] + w;
        w == 0 ? queue.push_front(d) : queue.push_back(d);
      }
    }
  }
  for (int32_t m : dfa.min_chars) {
    if (m != kUnknown) dfa.max_min_chars = std::max(dfa.max_min_chars, m);
  }
  // Most: states peeled off from the end (all their successors known); a
  // state never peeled reaches a cycle, so its matches have no bound.
  dfa.max_chars.assign(n, -1);
  std::vector<int> ready;
  for (int d = 0; d < n; ++d) {
    if (out_degree[d] == 0) ready.push_back(d);
  }
  std::vector<uint8_t> known(n, 0);
  while (!ready.empty()) {
    const int d = ready.back();
    ready.pop_back();
    int32_t most = dfa.accepting[d] ? 0 : -1;
    for (int c = 0; c < k; ++c) {
      const int t = dfa.next[d * k + c];
      if (t >= 0) most = std::max(most, dfa.max_chars[t] + weight(c));
    }
    dfa.max_chars[d] = most;
    known[d] = 1;
    for (const auto& [p, w] : preds[d]) {
      if (--out_degree[p] == 0) ready.push_back(p);
    }
  }
  // No gaps: each state's interval is exactly the union of its own match
  // (0, if accepting) and its successors' intervals moved by their weight.
  // Where that holds at every state, every length in each interval is
  // reached (by induction on the length), so checking the two ends is exact.
  constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max() / 2;
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (int d = 0; d < n && dfa.lengths_are_intervals; ++d) {
    parts.clear();
    if (dfa.accepting[d]) parts.push_back({0, 0});
    for (int c = 0; c < k; ++c) {
      const int t = dfa.next[d * k + c];
      if (t < 0) continue;
      const int64_t hi = known[t] ? int64_t{dfa.max_chars[t]} + weight(c) : kNoBound;
      parts.push_back({int64_t{dfa.min_chars[t]} + weight(c), hi});
    }
    std::sort(parts.begin(), parts.end());
    int64_t reach = parts.empty() ? -1 : parts[0].second;
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i].first > reach + 1) {
        dfa.lengths_are_intervals = false;
        break;
      }
      reach = std::max(reach, parts[i].second);
    }
  }
}

absl::StatusOr<RegexDfa> Compile(std::string_view pattern, const Ranges& alphabet, std::string_view none) {
  if (pattern.size() > static_cast<size_t>(kMaxRegexBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(pattern.size(), " bytes, at most ", kMaxRegexBytes));
  }
  Parser parser(pattern, alphabet);
  absl::StatusOr<std::unique_ptr<Node>> ast = parser.Parse();
  if (!ast.ok()) return ast.status();
  Nfa nfa;
  absl::StatusOr<Fragment> whole = Build(**ast, nfa);
  if (!whole.ok()) return whole.status();

  RegexDfa dfa;
  // Byte classes: bytes no edge tells apart share one.
  std::array<bool, 257> cut{};
  cut[0] = true;
  for (const auto& edges : nfa.edges) {
    for (const Nfa::Edge& e : edges) cut[e.lo] = cut[e.hi + 1] = true;
  }
  std::vector<uint8_t> representative;
  for (int b = 0; b < 256; ++b) {
    if (cut[b]) representative.push_back(static_cast<uint8_t>(b));
    dfa.byte_class[b] = static_cast<uint8_t>(representative.size() - 1);
  }
  dfa.num_classes = static_cast<int>(representative.size());

  std::map<std::vector<int>, int> ids;
  std::vector<std::vector<int>> sets;
  auto intern = [&](std::vector<int> set) -> absl::StatusOr<int> {
    if (const auto it = ids.find(set); it != ids.end()) return it->second;
    if (static_cast<int>(sets.size()) >= kMaxRegexDfaStates) {
      return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxRegexDfaStates, " automaton states"));
    }
    const int id = static_cast<int>(sets.size());
    ids.emplace(set, id);
    sets.push_back(std::move(set));
    return id;
  };
  Closures closures(nfa);
  absl::StatusOr<int> start = intern(closures.Of({whole->start}));
  if (!start.ok()) return start.status();
  dfa.start = *start;
  // The subset construction's work (NFA states visited), bounded: a regex
  // is compiled on the engine's thread at its first request.
  int64_t work = 0;
  for (size_t d = 0; d < sets.size(); ++d) {
    dfa.accepting.push_back(std::binary_search(sets[d].begin(), sets[d].end(), whole->end));
    for (int c = 0; c < dfa.num_classes; ++c) {
      work += static_cast<int64_t>(sets[d].size());
      if (work > kMaxRegexWork) {
        return absl::InvalidArgumentError(
            absl::StrCat("too costly to compile (more than ", kMaxRegexWork, " automaton steps)"));
      }
      const uint8_t b = representative[c];
      std::vector<int> moved;
      for (int s : sets[d]) {
        for (const Nfa::Edge& e : nfa.edges[s]) {
          if (e.lo <= b && b <= e.hi) moved.push_back(e.to);
        }
      }
      int to = -1;
      if (!moved.empty()) {
        std::sort(moved.begin(), moved.end());
        moved.erase(std::unique(moved.begin(), moved.end()), moved.end());
        std::vector<int> closure = closures.Of(std::move(moved));
        work += static_cast<int64_t>(closure.size());
        absl::StatusOr<int> t = intern(std::move(closure));
        if (!t.ok()) return t.status();
        to = *t;
      }
      dfa.next.push_back(to);
    }
  }
  // Keep only states from which an accepting one can be reached.
  const int n = static_cast<int>(sets.size());
  std::vector<uint8_t> live(dfa.accepting.begin(), dfa.accepting.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (int d = 0; d < n; ++d) {
      if (live[d]) continue;
      for (int c = 0; c < dfa.num_classes && !live[d]; ++c) {
        const int t = dfa.next[d * dfa.num_classes + c];
        if (t >= 0 && live[t]) live[d] = changed = true;
      }
    }
  }
  if (!live[dfa.start]) return absl::InvalidArgumentError(std::string(none));
  for (int32_t& t : dfa.next) {
    if (t >= 0 && !live[t]) t = -1;
  }
  dfa.has_next.assign(n, 0);
  for (int d = 0; d < n; ++d) {
    for (int c = 0; c < dfa.num_classes; ++c) dfa.has_next[d] |= dfa.next[d * dfa.num_classes + c] >= 0;
  }
  MeasureLengths(dfa, representative);
  return dfa;
}

}  // namespace

absl::StatusOr<RegexDfa> CompileJsonStringRegex(std::string_view pattern) {
  return Compile(pattern, JsonStringAlphabet(),
                 "it matches no string written without escapes (no '\"', '\\' or control characters)");
}

absl::StatusOr<RegexDfa> CompileEscapedJsonStringRegex(std::string_view pattern) {
  absl::StatusOr<RegexDfa> dfa = Compile(pattern, EscapedJsonStringAlphabet(), "it matches no JSON string");
  if (!dfa.ok()) return dfa;
  for (size_t d = 0; d < dfa->accepting.size(); ++d) {
    if (dfa->accepting[d] && dfa->Step(static_cast<int>(d), '"') >= 0) {
      return absl::InvalidArgumentError("a '\"' may follow a whole match: it could not end the string");
    }
  }
  return dfa;
}

absl::StatusOr<RegexDfa> CompileTextRegex(std::string_view pattern) {
  return Compile(pattern, TextAlphabet(), "it matches no text");
}

}  // namespace attnserve
