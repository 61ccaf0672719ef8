// core/safe_text: what becomes of each kind of byte in each destination (issue #22).
#include "perfscope/core/safe_text.hpp"

#include <gtest/gtest.h>

namespace {

using namespace perfscope;

TEST(SafeText, Utf8SequencesAreCheckedStrictly) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("bad\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xe2\x82", 0), 0u);
}

TEST(SafeText, TerminalEscapesControlsDelC1AndInvalidBytes) {
  EXPECT_EQ(terminal_safe("\x1b]0;pwn\x07\x1b[31mX"), "\\x1b]0;pwn\\x07\\x1b[31mX");
  EXPECT_EQ(terminal_safe("bad\xff\xfe"), "bad\\xff\\xfe");
  EXPECT_EQ(terminal_safe("new\nline\ttab\x7f"), "new\\x0aline\\x09tab\\x7f");
  EXPECT_EQ(terminal_safe("csi\xc2\x9b"
                          "31m"),
            "csi\\u009b31m");                 // U+009B, a C1 CSI
  EXPECT_EQ(terminal_safe("\x9b"), "\\x9b");  // the raw 8-bit CSI byte
  // Printable text, valid UTF-8 and the separators of other formats stay as they are.
  EXPECT_EQ(terminal_safe("caf\xc3\xa9;x,y \"q\" \xc2\xa0"), "caf\xc3\xa9;x,y \"q\" \xc2\xa0");
  EXPECT_TRUE(is_terminal_safe("caf\xc3\xa9 std::vector<int>::at(unsigned long)"));
  EXPECT_FALSE(is_terminal_safe("a\x1b"));
  EXPECT_FALSE(is_terminal_safe("a\xff"));
  EXPECT_FALSE(is_terminal_safe("a\xc2\x85"));  // NEL
  EXPECT_EQ(terminal_safe(std::string_view("nul\0byte", 8)), "nul\\x00byte");
}

TEST(SafeText, ValidUtf8ReplacesEachInvalidByte) {
  EXPECT_EQ(valid_utf8("bad\xff\xfe"), "bad\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(valid_utf8("ok \xc3\xa9"), "ok \xc3\xa9");
  EXPECT_EQ(valid_utf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
  std::string out;
  append_valid_utf8(out, "x\xff", "?");
  EXPECT_EQ(out, "x?");
}

TEST(SafeText, CsvFieldsAreQuotedPerRfc4180) {
  EXPECT_EQ(csv_field("cycles"), "cycles");
  EXPECT_EQ(csv_field("cpu/event=0x3c,umask=0/"), "\"cpu/event=0x3c,umask=0/\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("a;b", ";"), "\"a;b\"");
  EXPECT_EQ(csv_field("a;b", ","), "a;b");
  EXPECT_EQ(csv_field("two\nlines"), "two\\x0alines");  // no raw newline splits the row
}

TEST(SafeText, FoldedNamesKeepTheSeparators) {
  EXPECT_EQ(folded_safe("semi;colon"), "semi:colon");
  EXPECT_EQ(folded_safe("new\nline"), "new\\x0aline");
  EXPECT_EQ(folded_safe("std::map<int, int>::find"), "std::map<int, int>::find");
}

}  // namespace
