// Where a JSON object's or array's text ends, read a byte at a time: its
// brackets counted outside strings, escapes skipped. Nothing else is
// checked; what tells the value's end is all the tool-call readers need
// (openai_tools.cc reads a whole answer, tool_calls_reader.cc one that
// comes in pieces).
#ifndef ATTNSERVE_SERVER_HTTP_JSON_VALUE_END_H_
#define ATTNSERVE_SERVER_HTTP_JSON_VALUE_END_H_

namespace attnserve {

class JsonValueEnd {
 public:
  // Reads one byte; true when it closed the outermost bracket.
  bool Feed(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && depth_ > 0) {
      return --depth_ == 0;
    }
    return false;
  }
  // Brackets open (0 before the first).
  int depth() const { return depth_; }

 private:
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_JSON_VALUE_END_H_
