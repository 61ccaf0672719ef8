// Names from untrusted processes (issue #22): threads that call themselves an escape sequence,
// invalid UTF-8, "semi;colon" and "new\nline", run from a file whose path holds a newline and
// invalid UTF-8, recorded and passed through report, script, annotate, diff, the error messages
// and every exporter. Text output has no raw control byte; every export parses strictly;
// --raw-names gives the bytes back exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/core/safe_text.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace pt = perfscope::testing;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string escape_comm = "\x1b]0;pwn\x07\x1b[31mX";
const std::string invalid_comm = "bad\xff\xfe";
const std::string semicolon_comm = "semi;colon";
const std::string newline_comm = "new\nline";
const std::string program_name = "na\nme\xff";  // the file the threads run from

// No byte a terminal would act on: controls other than newline, DEL, C1 controls, and no
// invalid UTF-8 (whose bytes 0x80-0x9f are C1 controls to an 8-bit terminal).
::testing::AssertionResult terminal_clean(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      return ::testing::AssertionFailure() << "raw control byte " << int(c) << " at " << i;
    }
  }
  if (!perfscope::is_valid_utf8(text)) return ::testing::AssertionFailure() << "invalid UTF-8";
  if (text.find("\xc2\x9b") != std::string::npos) {
    return ::testing::AssertionFailure() << "a C1 CSI";
  }
  return ::testing::AssertionSuccess();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class NameSafety : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    directory_ = pt::temp_path("name_safety");
    fs::create_directories(directory_);
    program_ = directory_ + "/" + program_name;
    fs::copy_file(PERFSCOPE_NAMED_THREADS_PATH, program_, fs::copy_options::overwrite_existing);
    ::chmod(program_.c_str(), 0755);
    recording_ = directory_ + "/names.data";
    auto result = pt::run_perfscope(
        {"record", "-e", "cpu-clock", "-F", "1000", "-o", recording_, "--", program_, "300"});
    record_status_ = result.exit_status;
    record_err_ = result.err;
  }
  static void TearDownTestSuite() { fs::remove_all(directory_); }

  void SetUp() override {
    ASSERT_EQ(record_status_, 0) << record_err_;
    EXPECT_TRUE(terminal_clean(record_err_)) << record_err_;
  }

  static pt::CommandResult perfscope(std::vector<std::string> arguments) {
    auto result = pt::run_perfscope(arguments);
    pt::expect_no_crash(result);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return result;
  }

  static std::string export_to_file(const std::string& format) {
    std::string path = directory_ + "/export." + format;
    perfscope({"report", "-i", recording_, "--format", format, "-o", path});
    return read_file(path);
  }

  static inline std::string directory_, program_, recording_, record_err_;
  static inline int record_status_ = -1;
};

TEST_F(NameSafety, ReportTextEscapesNames) {
  auto result = perfscope({"report", "--stdio", "-i", recording_, "--sort", "comm,dso"});
  EXPECT_TRUE(terminal_clean(result.out));
  EXPECT_TRUE(terminal_clean(result.err)) << result.err;
  EXPECT_THAT(result.out, HasSubstr("\\x1b]0;pwn\\x07\\x1b[31mX"));
  EXPECT_THAT(result.out, HasSubstr("bad\\xff\\xfe"));
  EXPECT_THAT(result.out, HasSubstr("new\\x0aline"));
  EXPECT_THAT(result.out, HasSubstr("semi;colon"));
  EXPECT_THAT(result.out, HasSubstr("na\\x0ame\\xff"));  // the program's file
}

TEST_F(NameSafety, ReportRawNamesGivesTheBytesBack) {
  auto result =
      perfscope({"report", "--stdio", "--raw-names", "-i", recording_, "--sort", "comm,dso"});
  for (const auto& name : {escape_comm, invalid_comm, semicolon_comm, newline_comm, program_name}) {
    EXPECT_NE(result.out.find(name), std::string::npos) << perfscope::terminal_safe(name);
  }
}

TEST_F(NameSafety, ScriptEscapesNamesAndRawNamesGivesThemBack) {
  auto text = perfscope({"script", "-i", recording_});
  EXPECT_TRUE(terminal_clean(text.out));
  EXPECT_TRUE(terminal_clean(text.err)) << text.err;
  EXPECT_THAT(text.out, HasSubstr("\\x1b]0;pwn\\x07\\x1b[31mX"));
  EXPECT_THAT(text.out, HasSubstr("bad\\xff\\xfe"));
  EXPECT_THAT(text.out, HasSubstr("na\\x0ame\\xff"));
  // One line per sample: the newline in the comm and in the path are escaped.
  std::size_t lines = static_cast<std::size_t>(std::count(text.out.begin(), text.out.end(), '\n'));
  auto json = perfscope({"script", "--json", "-i", recording_});
  std::size_t samples = 0;
  std::istringstream records(json.out);
  for (std::string line; std::getline(records, line);) {
    // nlohmann's parser rejects invalid UTF-8: every line must be strict JSON.
    nlohmann::json record = nlohmann::json::parse(line);
    if (record["type"] == "SAMPLE") ++samples;
  }
  EXPECT_GT(samples, 0u);
  EXPECT_EQ(lines, samples);

  auto raw = perfscope({"script", "--raw-names", "-i", recording_});
  for (const auto& name : {escape_comm, invalid_comm, semicolon_comm, newline_comm}) {
    EXPECT_NE(raw.out.find(name), std::string::npos) << perfscope::terminal_safe(name);
  }
  EXPECT_NE(raw.out.find("/" + program_name + ")"), std::string::npos);
}

TEST_F(NameSafety, AnnotateEscapesTheFileItNamesAndRawNamesGivesItBack) {
  auto text = perfscope({"annotate", "-i", recording_, "(anonymous namespace)::burn"});
  EXPECT_TRUE(terminal_clean(text.out));
  EXPECT_TRUE(terminal_clean(text.err)) << text.err;
  EXPECT_THAT(text.out, HasSubstr("burn in /"));
  EXPECT_THAT(text.out, HasSubstr("na\\x0ame\\xff"));  // the header's file
  auto raw =
      perfscope({"annotate", "--raw-names", "-i", recording_, "(anonymous namespace)::burn"});
  EXPECT_THAT(raw.out, HasSubstr("/" + program_name + " ("));
}

TEST_F(NameSafety, DiffEscapesNamesAndRawNamesGivesThemBack) {
  auto text = perfscope({"diff", recording_, recording_, "--sort", "comm,dso"});
  EXPECT_TRUE(terminal_clean(text.out));
  EXPECT_TRUE(terminal_clean(text.err)) << text.err;
  EXPECT_THAT(text.out, HasSubstr("\\x1b]0;pwn\\x07\\x1b[31mX"));
  EXPECT_THAT(text.out, HasSubstr("bad\\xff\\xfe"));
  EXPECT_THAT(text.out, HasSubstr("na\\x0ame\\xff"));
  auto raw = perfscope({"diff", "--raw-names", recording_, recording_, "--sort", "comm,dso"});
  for (const auto& name : {escape_comm, invalid_comm, newline_comm, program_name}) {
    EXPECT_NE(raw.out.find(name), std::string::npos) << perfscope::terminal_safe(name);
  }
}

TEST_F(NameSafety, ErrorMessagesEscapeTheNamesTheyQuote) {
  // The file name a user passes on is quoted back by the error: escaped like any name.
  auto result = pt::run_perfscope({"report", "--stdio", "-i", directory_ + "/" + escape_comm});
  pt::expect_no_crash(result);
  EXPECT_NE(result.exit_status, 0);
  EXPECT_TRUE(terminal_clean(result.err)) << perfscope::terminal_safe(result.err);
  EXPECT_THAT(result.err, HasSubstr("\\x1b]0;pwn"));
}

TEST_F(NameSafety, FoldedKeepsOneStackALine) {
  std::string folded = export_to_file("folded");
  EXPECT_TRUE(terminal_clean(folded));
  nlohmann::json profile = nlohmann::json::parse(export_to_file("json"));
  std::uint64_t samples = profile["summary"]["samples"].get<std::uint64_t>();
  static const std::regex line_pattern(R"(^[^ ;][^\n]* ([0-9]+)$)");
  std::uint64_t counted = 0;
  std::size_t lines = 0;
  bool semicolon_comm_seen = false;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line); ++lines) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, line_pattern)) << perfscope::terminal_safe(line);
    counted += std::stoull(match[1]);
    semicolon_comm_seen |= line.starts_with("semi:colon;");
  }
  EXPECT_GT(lines, 0u);
  EXPECT_EQ(counted, samples);
  EXPECT_TRUE(semicolon_comm_seen) << folded;
}

TEST_F(NameSafety, JsonExportsAreValidUtf8) {
  for (std::string format : {"json", "speedscope", "gecko"}) {
    std::string text = export_to_file(format);
    EXPECT_TRUE(perfscope::is_valid_utf8(text)) << format;
    nlohmann::json document;
    ASSERT_NO_THROW(document = nlohmann::json::parse(text)) << format;
    // The invalid bytes became U+FFFD, the escape sequence's bytes JSON escapes.
    EXPECT_NE(text.find("bad\xef\xbf\xbd\xef\xbf\xbd"), std::string::npos) << format;
    EXPECT_NE(text.find("\\u001b]0;pwn\\u0007"), std::string::npos) << format;
  }
}

TEST_F(NameSafety, SvgIsWellFormedXml) {
  std::string path = directory_ + "/export.svg";
  perfscope({"report", "-i", recording_, "--format", "svg", "-o", path});
  auto parsed = pt::run_command(
      {"python3", "-c", "import sys, xml.etree.ElementTree as t; t.parse(sys.argv[1])", path});
  EXPECT_EQ(parsed.exit_status, 0) << parsed.err;
}

TEST_F(NameSafety, PprofDecodesStrictly) {
  if (pt::run_command({"/usr/bin/python3", "-c", "import google.protobuf"}).exit_status != 0) {
    GTEST_SKIP() << "python3-protobuf is not installed (scripts/install-deps installs it)";
  }
  std::string path = directory_ + "/profile.pb.gz";
  perfscope({"report", "-i", recording_, "--format", "pprof", "-o", path});
  auto generated =
      pt::run_command({"protoc", std::string("--proto_path=") + PERFSCOPE_SOURCE_DIR + "/proto",
                       "--python_out=" + directory_, "profile.proto"});
  ASSERT_EQ(generated.exit_status, 0) << generated.err;
  // proto3 strings are checked as UTF-8 when parsed: a profile with invalid bytes raises.
  // Debian's interpreter: python3-protobuf installs there, whatever python3 PATH finds first.
  auto decoded = pt::run_command(
      {"/usr/bin/python3", "-c",
       "import gzip, sys\n"
       "sys.path.insert(0, sys.argv[1])\n"
       "import profile_pb2\n"
       "p = profile_pb2.Profile()\n"
       "p.ParseFromString(gzip.open(sys.argv[2]).read())\n"
       "print(sum(1 for s in p.string_table if s.startswith('bad\\ufffd\\ufffd')))\n"
       "print(sum(1 for s in p.string_table if '\\x1b]0;pwn' in s))\n",
       directory_, path});
  ASSERT_EQ(decoded.exit_status, 0) << decoded.err;
  EXPECT_EQ(decoded.out, "1\n1\n");
}

}  // namespace
