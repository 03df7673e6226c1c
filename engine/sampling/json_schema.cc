// JSON schema mode's acceptor: the output read a byte at a time against a
// compiled schema (json_schema_compile.cc builds it).
#include "engine/sampling/json_schema.h"

#include <algorithm>
#include <limits>

namespace attnserve {

JsonSchemaAcceptor::JsonSchemaAcceptor(const CompiledJsonSchema* schema)
    : schema_(schema), node_(static_cast<uint16_t>(schema->root)) {
  if (node().kind == SchemaNode::Kind::kText) {
    phase_ = Phase::kText;
    cand_ = static_cast<uint64_t>(node().pattern->start);
  }
}

bool JsonSchemaAcceptor::complete() const {
  return phase_ == Phase::kDone || (phase_ == Phase::kText && node().pattern->accepting[cand_]);
}

bool JsonSchemaAcceptor::can_continue() const {
  return phase_ != Phase::kDone && (phase_ != Phase::kText || node().pattern->has_next[cand_]);
}

void JsonSchemaAcceptor::EnterMembers(int next, bool written) {
  const SchemaNode& n = node();
  phase_ = Phase::kMembers;
  flags_ = static_cast<uint8_t>(next | (written ? kWritten : 0));
  offset_ = 0;
  cand_ = 0;
  // Any property up to and including the next required one may come next;
  // "}" only when no required one is left.
  const int count = static_cast<int>(n.keys.size());
  bool required_left = false;
  for (int j = next; j < count; ++j) {
    cand_ |= uint64_t{1} << j;
    if (n.required[j]) {
      required_left = true;
      break;
    }
  }
  if (!required_left) cand_ |= uint64_t{1} << kCloseBrace;
  // Past the last required property, a key of its own choosing
  // (additionalProperties), but none of the declared ones: every declared
  // key is followed too, to tell when the free key is one of them.
  if (n.has_extra && !required_left) cand_ |= uint64_t{1} << kFreeKey | ((uint64_t{1} << count) - 1);
}

uint64_t JsonSchemaAcceptor::AllowedMembers() const {
  const SchemaNode& n = node();
  const int count = static_cast<int>(n.keys.size());
  uint64_t allowed = uint64_t{1} << kCloseBrace | uint64_t{1} << kFreeKey;
  for (int j = flags_ & kNextMask; j < count; ++j) {
    allowed |= uint64_t{1} << j;
    if (n.required[j]) break;
  }
  return allowed;
}

int JsonSchemaAcceptor::MemberByte(int j, int k) const {
  if (j == kCloseBrace) return k == 0 ? '}' : -1;
  if (flags_ & kWritten) {
    if (k < 2) return ", "[k];
    k -= 2;
  }
  const std::string& key = node().keys[j];
  return k < static_cast<int>(key.size()) ? static_cast<uint8_t>(key[k]) : -1;
}

bool JsonSchemaAcceptor::FeedMembers(uint8_t byte) {
  constexpr uint64_t kFree = uint64_t{1} << kFreeKey;
  uint64_t next_cand = 0;
  for (uint64_t c = cand_ & ~kFree; c != 0; c &= c - 1) {
    const int j = __builtin_ctzll(c);
    if (MemberByte(j, offset_) == byte) next_cand |= uint64_t{1} << j;
  }
  if (cand_ & kFree) {
    // The free key: ", " after a member, '"', the string, then ": " (in
    // kMapColon, once it is known not to be a declared key).
    const int lead = flags_ & kWritten ? 2 : 0;
    bool alive = false, closed = false;
    if (offset_ < lead) {
      alive = byte == ", "[offset_];
    } else if (offset_ == lead) {
      alive = byte == '"';
      lexer_.string = JsonStringLexer();
    } else {
      const LexStep step = lexer_.string.Feed(byte);
      alive = step != LexStep::kRefused;
      closed = step == LexStep::kDone;
    }
    if (alive && closed) {
      // A declared key still matching through its closing quote is this
      // very key: then it is not free. Otherwise only the free one is left.
      const uint64_t declared = next_cand & ~(uint64_t{1} << kCloseBrace);
      if (declared == 0) {
        phase_ = Phase::kMapColon;
        offset_ = 0;
        return true;
      }
    } else if (alive) {
      next_cand |= kFree;
    }
  }
  // Declared keys not allowed here are followed only for the free key.
  if (next_cand == 0 || (node().has_extra && (next_cand & AllowedMembers()) == 0)) return false;
  cand_ = next_cand;
  ++offset_;
  if (cand_ & kFree) return true;  // still in the free key (or its lead)
  // No candidate's text begins another's (each key's ends in ": ", "}" is
  // alone), so a whole one is the only one left.
  const int j = __builtin_ctzll(cand_);
  if (MemberByte(j, offset_) != -1) return true;
  if (j == kCloseBrace) return EndValue();
  node_ = static_cast<uint16_t>(node().children[j]);
  phase_ = Phase::kStart;
  offset_ = 0;
  cand_ = 0;
  return true;
}

bool JsonSchemaAcceptor::FeedLiteral(uint8_t byte) {
  const std::vector<std::string>& lits = node().literals;
  uint64_t next_cand = 0;
  bool whole = false;  // a literal already ended before this byte
  for (uint64_t c = cand_; c != 0; c &= c - 1) {
    const int i = __builtin_ctzll(c);
    if (lits[i].size() == offset_) {
      whole = true;
    } else if (static_cast<uint8_t>(lits[i][offset_]) == byte) {
      next_cand |= uint64_t{1} << i;
    }
  }
  if (next_cand == 0) {
    // "1" of {1, 10} followed by "," is the value 1, then the ",".
    if (whole && EndValue()) return Feed(byte);
    return false;
  }
  cand_ = next_cand;
  ++offset_;
  // A literal that is whole now ends the value at once unless a longer one
  // goes on from it (then the next byte decides).
  bool now_whole = false, longer = false;
  for (uint64_t c = cand_; c != 0; c &= c - 1) {
    if (lits[__builtin_ctzll(c)].size() == offset_) {
      now_whole = true;
    } else {
      longer = true;
    }
  }
  if (now_whole && !longer) {
    const SchemaNode& n = node();
    if (n.kind != SchemaNode::Kind::kTagged) return EndValue();
    // A tag read whole (string tags: none is a prefix of another): the rest
    // of its object, after that first member.
    node_ = static_cast<uint16_t>(n.children[n.literal_owner[__builtin_ctzll(cand_)]]);
    EnterMembers(1, true);
  }
  return true;
}

bool JsonSchemaAcceptor::EndValue() {
  const SchemaNode& n = node();
  if (n.count_slot >= 0) items_[n.count_slot] = 0;  // the array is closed: its slot is free again
  if (n.parent < 0) {
    phase_ = Phase::kDone;
    return true;
  }
  const int index = n.index_in_parent;
  node_ = static_cast<uint16_t>(n.parent);
  switch (node().kind) {
    case SchemaNode::Kind::kUnion:
    case SchemaNode::Kind::kTagged:
      return EndValue();
    case SchemaNode::Kind::kObject:
      EnterMembers(index + 1, true);
      return true;
    case SchemaNode::Kind::kMap:
      phase_ = Phase::kMapNext;
      flags_ = kWritten;
      offset_ = 0;
      return true;
    case SchemaNode::Kind::kArray: {
      phase_ = Phase::kAfterItem;
      offset_ = 0;
      const SchemaNode& a = node();
      // A tuple's next position (the rest's child stays the rest's).
      cand_ = a.prefix_items > 0 ? static_cast<uint64_t>(std::min(index + 1, a.prefix_items)) : 0;
      if (a.count_slot >= 0) {
        const int cap = a.max_items >= 0 ? a.max_items : a.min_items;
        ItemCount() = static_cast<uint16_t>(std::min<int>(ItemCount() + 1, cap));
      }
      return true;
    }
    default:
      return false;  // only containers have children
  }
}

bool JsonSchemaAcceptor::StartValue(uint8_t byte) {
  const SchemaNode& n = node();
  switch (n.kind) {
    case SchemaNode::Kind::kObject:
      if (byte != '{') return false;
      EnterMembers(0, false);
      return true;
    case SchemaNode::Kind::kArray:
      if (byte != '[') return false;
      phase_ = Phase::kArrayOpen;
      return true;
    case SchemaNode::Kind::kString:
      if (byte != '"') return false;
      phase_ = Phase::kString;
      lexer_.string = JsonStringLexer();
      offset_ = 0;
      cand_ = n.pattern ? n.pattern->start : 0;
      return true;
    case SchemaNode::Kind::kNumber:
    case SchemaNode::Kind::kInteger:
      lexer_.number = JsonNumberLexer(n.kind == SchemaNode::Kind::kInteger);
      if (lexer_.number.Start(byte) == LexStep::kRefused) return false;
      phase_ = Phase::kNumber;
      flags_ = 0;
      cand_ = 0;
      return !n.range.bounded() || StartBoundedNumber(n.range, byte, cand_, flags_);
    case SchemaNode::Kind::kLiterals:
    case SchemaNode::Kind::kTagged:
      phase_ = Phase::kLiteral;
      offset_ = 0;
      cand_ = n.literals.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << n.literals.size()) - 1;
      return FeedLiteral(byte);
    case SchemaNode::Kind::kUnion:
      for (int child : n.children) {
        const SchemaNode& alt = schema_->nodes[child];
        bool starts = false;
        switch (alt.kind) {
          case SchemaNode::Kind::kObject:
          case SchemaNode::Kind::kTagged: starts = byte == '{'; break;
          case SchemaNode::Kind::kArray: starts = byte == '['; break;
          case SchemaNode::Kind::kString: starts = byte == '"'; break;
          case SchemaNode::Kind::kNumber:
          case SchemaNode::Kind::kInteger: starts = byte == '-' || json_lexer_internal::IsDigit(byte); break;
          case SchemaNode::Kind::kLiterals:
            for (const std::string& l : alt.literals) starts |= static_cast<uint8_t>(l[0]) == byte;
            break;
          case SchemaNode::Kind::kMap: starts = byte == '{'; break;
          case SchemaNode::Kind::kAny:  // never beside another alternative (Union leaves it alone)
          case SchemaNode::Kind::kUnion:
          case SchemaNode::Kind::kText: break;  // flattened; only a root
        }
        if (starts) {
          node_ = static_cast<uint16_t>(child);
          phase_ = Phase::kStart;
          return StartValue(byte);
        }
      }
      return false;
    case SchemaNode::Kind::kText:
      return false;  // read in Phase::kText from the start
    case SchemaNode::Kind::kAny:
      phase_ = Phase::kAny;
      cand_ = 0;
      offset_ = 0;
      return AnyStart(byte);
    case SchemaNode::Kind::kMap:
      if (byte != '{') return false;
      phase_ = Phase::kMapNext;
      flags_ = 0;
      offset_ = 0;
      return true;
  }
  return false;
}

bool JsonSchemaAcceptor::AnyStart(uint8_t byte) {
  switch (byte) {
    case '{':
    case '[':
      if (AnyDepth() == kMaxAnyDepth) return false;
      if (byte == '{') {
        cand_ |= uint64_t{1} << AnyDepth();
      } else {
        cand_ &= ~(uint64_t{1} << AnyDepth());
      }
      ++offset_;
      SetAnyMode(byte == '{' ? kAnyObjectOpen : kAnyArrayOpen);
      return true;
    case '"':
      SetAnyMode(kAnyString);
      lexer_.string = JsonStringLexer();
      return true;
    case 't':
    case 'f':
    case 'n':
      flags_ = static_cast<uint8_t>(kAnyLiteral | (byte == 't' ? 0 : byte == 'f' ? 1 : 2) << kAnyLiteralShift);
      offset_ = static_cast<uint16_t>(AnyDepth() | 1 << 8);
      return true;
    default:
      lexer_.number = JsonNumberLexer(false);
      if (lexer_.number.Start(byte) == LexStep::kRefused) return false;
      SetAnyMode(kAnyNumber);
      return true;
  }
}

bool JsonSchemaAcceptor::AnyValueDone() {
  if (AnyDepth() == 0) return EndValue();
  SetAnyMode(kAnyAfter);
  return true;
}

bool JsonSchemaAcceptor::FeedAny(uint8_t byte) {
  const bool bit = flags_ & kAnyBit;
  switch (static_cast<AnyMode>(flags_ & kAnyModeMask)) {
    case kAnyValue:
      return AnyStart(byte);
    case kAnyArrayOpen:
      if (byte != ']') return AnyStart(byte);
      --offset_;
      return AnyValueDone();
    case kAnyObjectOpen:
    case kAnyKey:
      if (byte == '}' && (flags_ & kAnyModeMask) == kAnyObjectOpen) {
        --offset_;
        return AnyValueDone();
      }
      if (byte != '"') return false;
      flags_ = kAnyString | kAnyBit;
      lexer_.string = JsonStringLexer();
      return true;
    case kAnyColon:
      if (byte != (bit ? ' ' : ':')) return false;
      flags_ = bit ? kAnyValue : kAnyColon | kAnyBit;
      return true;
    case kAnyAfter:
      if (bit) {
        if (byte != ' ') return false;
        SetAnyMode(AnyInObject() ? kAnyKey : kAnyValue);
        return true;
      }
      if (byte == ',') {
        flags_ = kAnyAfter | kAnyBit;
        return true;
      }
      if (byte != (AnyInObject() ? '}' : ']')) return false;
      --offset_;
      return AnyValueDone();
    case kAnyString:
      switch (lexer_.string.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone:
          if (!bit) return AnyValueDone();
          SetAnyMode(kAnyColon);
          return true;
      }
      return false;
    case kAnyNumber:
      switch (lexer_.number.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone:  // the byte is the container's, or the parent's
          if (AnyDepth() == 0) return EndValue() && Feed(byte);
          SetAnyMode(kAnyAfter);
          return FeedAny(byte);
      }
      return false;
    case kAnyLiteral: {
      static constexpr const char* kLiterals[] = {"true", "false", "null"};
      const char* literal = kLiterals[(flags_ >> kAnyLiteralShift) & 3];
      const int matched = offset_ >> 8;
      if (static_cast<uint8_t>(literal[matched]) != byte) return false;
      if (literal[matched + 1] != '\0') {
        offset_ = static_cast<uint16_t>(AnyDepth() | (matched + 1) << 8);
        return true;
      }
      offset_ = static_cast<uint16_t>(AnyDepth());
      return AnyValueDone();
    }
  }
  return false;
}

bool JsonSchemaAcceptor::Feed(uint8_t byte) {
  switch (phase_) {
    case Phase::kStart:
      return StartValue(byte);
    case Phase::kMembers:
      return FeedMembers(byte);
    case Phase::kArrayOpen:
      if (byte == ']') return node().min_items == 0 && EndValue();
      if (node().max_items == 0) return false;
      node_ = static_cast<uint16_t>(node().children[0]);
      phase_ = Phase::kStart;
      return StartValue(byte);
    case Phase::kAfterItem:
      if (offset_ == 0) {
        // Items so far: the count slot's, or a tuple's position (cand_).
        const SchemaNode& a = node();
        const bool counted = a.count_slot >= 0, by_position = !counted && a.prefix_items > 0;
        const int written = counted ? ItemCount() : by_position ? static_cast<int>(cand_) : 0;
        if (byte == ']') return (!(counted || by_position) || written >= a.min_items) && EndValue();
        if (byte != ',') return false;
        if ((counted || by_position) && a.max_items >= 0 && written >= a.max_items) return false;
        offset_ = 1;
        return true;
      }
      if (byte != ' ') return false;
      node_ = static_cast<uint16_t>(node().children[node().prefix_items > 0 ? cand_ : 0]);
      phase_ = Phase::kStart;
      offset_ = 0;
      return true;
    case Phase::kString:
      return FeedString(byte);
    case Phase::kNumber:
      switch (lexer_.number.Feed(byte)) {
        case LexStep::kMore:
          return !node().range.bounded() || FeedBoundedNumber(node().range, byte, cand_, flags_);
        case LexStep::kRefused: return false;
        case LexStep::kDone:  // the byte is the parent's
          return (!node().range.bounded() || BoundedNumberEnds(node().range, cand_, flags_)) && EndValue() &&
                 Feed(byte);
      }
      return false;
    case Phase::kLiteral:
      return FeedLiteral(byte);
    case Phase::kText: {
      const int next = node().pattern->Step(static_cast<int>(cand_), byte);
      if (next < 0) return false;
      cand_ = static_cast<uint64_t>(next);
      return true;
    }
    case Phase::kAny:
      return FeedAny(byte);
    case Phase::kMapNext:
      // After "{": a key or "}"; after a value: ", " then a key, or "}".
      if (!(flags_ & kWritten) || offset_ == 2) {
        if (byte == '}' && offset_ == 0) return EndValue();
        if (byte != '"') return false;
        phase_ = Phase::kMapKey;
        lexer_.string = JsonStringLexer();
        return true;
      }
      if (offset_ == 0 && byte == '}') return EndValue();
      if (byte != ", "[offset_]) return false;
      ++offset_;
      return true;
    case Phase::kMapKey:
      switch (lexer_.string.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone:
          phase_ = Phase::kMapColon;
          offset_ = 0;
          return true;
      }
      return false;
    case Phase::kMapColon:
      if (byte != ": "[offset_]) return false;
      if (++offset_ < 2) return true;
      node_ = static_cast<uint16_t>(node().children.back());  // a kMap's values, or an object's additional ones
      phase_ = Phase::kStart;
      offset_ = 0;
      return true;
    case Phase::kDone:
      return false;
  }
  return false;
}

bool JsonSchemaAcceptor::FeedString(uint8_t byte) {
  const SchemaNode& n = node();
  if (n.pattern) {
    // '"' ends the string unless the automaton takes it: only a pattern
    // that writes its own escapes (CompileEscapedJsonStringRegex) does, right
    // after a '\\', where it never accepts.
    const RegexDfa& dfa = *n.pattern;
    const int next = dfa.Step(static_cast<int>(cand_), byte);
    if (byte == '"' && next < 0) return dfa.accepting[cand_] && offset_ >= n.min_length && EndValue();
    if (next < 0) return false;
    if (n.min_length > 0 || n.max_length >= 0) {
      // offset_ counts characters, saturated at the larger bound (past it
      // nothing changes). A byte is taken only if some match can still end
      // within the bounds: exact, as PatternLengths made sure.
      const int count = offset_ + (byte < 0x80 || byte >= 0xC0 ? 1 : 0);
      if (n.max_length >= 0 && count + dfa.min_chars[next] > n.max_length) return false;
      if (dfa.max_chars[next] >= 0 && count + dfa.max_chars[next] < n.min_length) return false;
      offset_ = static_cast<uint16_t>(std::min(count, std::max(n.min_length, n.max_length)));
    }
    cand_ = static_cast<uint64_t>(next);
    return true;
  }
  const bool bounded = n.min_length > 0 || n.max_length >= 0;
  // A bounded string has no escapes (as xgrammar writes one), so '"' ends it.
  if (bounded && byte == '\\') return false;
  switch (lexer_.string.Feed(byte)) {
    case LexStep::kMore:
      // A byte that is not a UTF-8 continuation begins a character.
      if (bounded && (byte < 0x80 || byte >= 0xC0)) {
        if (n.max_length >= 0 && offset_ >= n.max_length) return false;
        offset_ = static_cast<uint16_t>(std::min(offset_ + 1, std::max(n.min_length, n.max_length)));
      }
      return true;
    case LexStep::kRefused: return false;
    case LexStep::kDone: return offset_ >= n.min_length && EndValue();
  }
  return false;
}

static_assert(sizeof(JsonSchemaAcceptor) == 32, "the mask walk copies the state per byte: keep it at 32 bytes");

JsonSchemaAcceptor::Key JsonSchemaAcceptor::StateKey(int horizon) const {
  uint64_t lexer = 0, members = 0, offset = 0, cand = 0, value = 0;
  switch (phase_) {
    case Phase::kString:
      lexer = lexer_.string.Key();
      value = offset_ | cand_ << 16;  // a bounded string's length, and a pattern's state
      if (const SchemaNode& n = node(); n.max_length >= 0 && offset_ >= n.min_length) {
        // `horizon` bytes are at most as many characters, and a pattern
        // may need max_min_chars more to end: short of that, the bound
        // refuses nothing.
        const int64_t reach = int64_t{horizon} + (n.pattern ? n.pattern->max_min_chars : 0);
        if (n.max_length - offset_ > reach) value = cand_ << 16 | uint64_t{1} << 63;
      }
      break;
    case Phase::kNumber:
      lexer = lexer_.number.Key() | uint64_t{flags_} << 40;
      value = cand_;
      // Where the bounds refuse nothing more, the values share one key: a
      // number's fractional digits well inside its range are one mask walk,
      // not one per value written.
      if (const NumberRange& r = node().range;
          horizon < std::numeric_limits<int>::max() && r.bounded() && BoundedNumberIsFree(r, cand_, flags_)) {
        value = uint64_t{1} << 63;
      }
      break;
    case Phase::kMembers:
      members = flags_;
      offset = offset_;
      cand = cand_;
      // Inside a free key, its string's state (the declared keys matching
      // and the offset tell the rest).
      if ((cand_ >> kFreeKey & 1) && offset_ > (flags_ & kWritten ? 2 : 0)) lexer = lexer_.string.Key();
      break;
    case Phase::kLiteral:
      offset = offset_;
      cand = cand_;
      break;
    case Phase::kAfterItem:
      offset = offset_;
      cand = cand_;  // a tuple's position
      break;
    case Phase::kText:
      value = cand_;
      break;
    case Phase::kAny: {
      // The lexers' state only where a string or number is being read; the
      // open containers below the depth.
      const uint8_t mode = flags_ & kAnyModeMask;
      lexer = (mode == kAnyString ? lexer_.string.Key() : mode == kAnyNumber ? lexer_.number.Key() : 0) |
              uint64_t{flags_} << 40;
      offset = offset_;
      value = AnyDepth() >= 64 ? cand_ : cand_ & ((uint64_t{1} << AnyDepth()) - 1);
      break;
    }
    case Phase::kMapNext:
    case Phase::kMapColon:
      members = flags_ & kWritten ? 1 : 0;
      offset = offset_;
      break;
    case Phase::kMapKey:
      lexer = lexer_.string.Key();
      break;
    default:
      break;
  }
  uint64_t items = 0;
  for (int i = 0; i < kMaxBoundedArrayDepth; ++i) items |= uint64_t{items_[i]} << (16 * i);
  // The lexers' state and the candidates never go with the same phase.
  return {uint64_t{node_} | static_cast<uint64_t>(phase_) << 16 | members << 21 | offset << 28, cand | lexer, items,
          value};
}

}  // namespace attnserve
