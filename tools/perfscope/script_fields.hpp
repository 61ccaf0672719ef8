// The fields `perfscope script` prints (-F), as perf script takes them: a list names the fields
// of every event; "+field" and "-field" change each event's own defaults (a tracepoint's are
// comm,tid,cpu,time,event,trace; a sampling event's add period,ip,sym,symoff,dso and not trace).
#pragma once

#include <string>

namespace perfscope::cli {

struct ScriptFields {
  bool comm = true, pid = false, tid = true, cpu = true, time = true, period = true, event = true,
       ip = true, sym = true, symoff = true, dso = true;
  bool trace = false;      // a tracepoint's payload, decoded as its print fmt gives it
  bool addr = false;       // the sample's data address (record -d), with its symbol and file
  bool srcline = false;    // file:line of each frame, on a line of its own
  bool brstack = false;    // the branch stack: from/to/mispredicted/in-tx/abort/cycles per entry
  bool raw_names = false;  // --raw-names: the bytes of comms, files and symbols as recorded
};

class ScriptFieldSpec {
 public:
  // Throws std::invalid_argument for an unknown field, or one perf has that perfscope does not
  // print (saying so).
  explicit ScriptFieldSpec(const std::string& text = {});
  // The fields of an event: a tracepoint's or a sampling event's. A tracepoint with call chains
  // prints them by default, as perf script does.
  ScriptFields for_event(bool tracepoint, bool callchains) const;
  // Whether any event prints source lines (the symbolizer reads DWARF lines only then).
  bool wants_srcline() const noexcept { return list_.srcline || add_.srcline; }

 private:
  bool replaces_ = false;  // a plain list: every event prints list_
  ScriptFields list_{}, add_{}, remove_{};
};

}  // namespace perfscope::cli
