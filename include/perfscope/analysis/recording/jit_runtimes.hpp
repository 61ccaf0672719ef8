// What `record --jit` sets so that a runtime tells perfscope the names of the code it compiles,
// and which such runtimes a machine has (doctor). Each runtime is told through its environment,
// which the processes it starts inherit:
//   - Node.js: NODE_OPTIONS gets --perf-prof --perf-prof-unwinding-info
//     --interpreted-frames-native-stack (a jitdump, jit-PID.dump in its working directory, with
//     code bytes and unwinding information; interpreted functions as frames of their own);
//   - the JVM: JAVA_TOOL_OPTIONS gets -XX:+PreserveFramePointer (frame-pointer stacks through
//     compiled Java) and -XX:+DumpPerfMapAtExit (/tmp/perf-PID.map as it exits; JDK 17 and later);
//   - Python 3.12 and later: PYTHONPERFSUPPORT=1 (/tmp/perf-PID.map of its trampolines).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

struct JitRuntimeSwitches {
  std::string runtime;  // "node", "java", "python"; empty when the command is none of them
  std::string path;     // the runtime's executable, links resolved
  std::string version;  // as far as its path tells ("3.11"), else empty
  // Variables to set, with their values as they are to be (existing options kept before ours).
  std::vector<std::pair<std::string, std::string>> environment;
  std::string note;  // what the switches do, or why there are none
};

// The switches for `command` (its argv): argv[0] is found on PATH, links are followed, and a
// script's "#!" line names its interpreter. Existing options are kept before ours.
PERFSCOPE_EXPORT JitRuntimeSwitches jit_switches_for(const std::vector<std::string>& command);
// The runtimes on this machine's PATH (node, java, python3), with what --jit would set for each.
PERFSCOPE_EXPORT std::vector<JitRuntimeSwitches> installed_jit_runtimes();

}  // namespace perfscope
