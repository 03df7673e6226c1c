// Tool calls written in JSON schema mode read from the answer as it comes,
// so a stream can send each call's name as soon as it is whole and then its
// arguments as they are written, as vLLM streams them. The answer follows
// JSON schema mode's one way of writing vLLM's schema (openai_tools.h):
//   tool_choice "required":  [{"name": "N", "parameters": {...}}, {"name": ...}]
//   tool_choice "auto" (a call the model began): {"name": "N", "parameters": {...}}
//   a hermes call after its "<tool_call>\n": {"name": "N", "arguments": {...}}
// so reading it needs no JSON parser: fixed text, a string, then an object
// whose end is found by counting braces outside strings.
#ifndef ATTNSERVE_SERVER_HTTP_TOOL_CALLS_READER_H_
#define ATTNSERVE_SERVER_HTTP_TOOL_CALLS_READER_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/http/json_value_end.h"

namespace attnserve {

class ToolCallsReader {
 public:
  enum class Form { kList, kOneCall };
  // `arguments_key`: the member after "name" ("parameters" in vLLM's
  // schema; "arguments" in a hermes call).
  explicit ToolCallsReader(Form form = Form::kList, absl::string_view arguments_key = "parameters")
      : form_(form),
        literal_(form == Form::kList ? "[{\"name\": \"" : "{\"name\": \""),
        after_name_(absl::StrCat(", \"", arguments_key, "\": ")) {}

  // What one Feed learned about call `index`: it opened (its name is
  // whole), and/or more of its arguments' text, as written.
  struct Piece {
    int index = 0;
    bool opens = false;
    std::string name;       // when it opens
    std::string arguments;  // the arguments' text read in this Feed
  };

  // Reads the answer's next bytes; appends what they told, a piece per
  // call they touched, in order.
  void Feed(absl::string_view text, std::vector<Piece>* pieces);

  // The list's closing ']' (kOneCall: the call's closing '}') was read:
  // every call is whole.
  bool complete() const { return state_ == State::kDone; }
  // The text left the form (which schema mode never writes): nothing more
  // is read.
  bool broken() const { return state_ == State::kBroken; }
  // How many calls opened.
  int calls() const { return calls_; }

 private:
  enum class State { kLiteral, kName, kArguments, kBetween, kDone, kBroken };
  enum class Next { kName, kArguments, kCallEnd };

  void Expect(absl::string_view literal, Next next);

  Form form_;
  State state_ = State::kLiteral;
  std::string literal_;                     // kLiteral: the text still expected
  std::string after_name_;                  // what follows the name: ", \"parameters\": "
  Next next_ = Next::kName;                 // kLiteral: what follows it
  std::string name_;                        // kName: the name's text so far (JSON escapes as written)
  bool escaped_ = false;                    // kName: after a backslash
  JsonValueEnd arguments_end_;              // kArguments: where the object ends
  int calls_ = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_TOOL_CALLS_READER_H_
