// The loading layer for JSON from outside the process: every way a file or text can be wrong
// ends in one InputError naming the file or flag, never in an nlohmann exception, a crash or a
// read that does not end.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_load.h"

namespace shardline {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

fs::path scratch(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "shardline_json_load_test";
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

template <typename Fn>
std::string error_of(Fn fn, const std::string& where) {
  try {
    fn();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected InputError at " << where;
  return "";
}

TEST(JsonLoad, ReadsAFile) {
  const fs::path p = scratch("ok.json", R"({"a": [1, 2, {"b": "c"}]})");
  EXPECT_EQ(load_json_file(p.string(), "x", kMaxInputJsonBytes)["a"][2]["b"], "c");
}

TEST(JsonLoad, SyntaxErrorsNameLineAndColumn) {
  const fs::path p = scratch("bad.json", "{\n  \"a\": 1,\n  \"b\": }\n");
  const std::string e = error_of([&] { load_json_file(p.string(), "scenario.json", kMaxInputJsonBytes); }, "scenario.json");
  EXPECT_THAT(e, HasSubstr("malformed JSON at line 3, column 8"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("json.exception")));
}

// A binary file: the parser's "last read" quotes the byte as \xff, not raw.
TEST(JsonLoad, BytesThatAreNotTextAreQuotedAsHex) {
  const fs::path p = scratch("binary.json", "\xff\xfe");
  const std::string e = error_of([&] { load_json_file(p.string(), "x", kMaxInputJsonBytes); }, "x");
  EXPECT_THAT(e, HasSubstr("'\\xff'"));
  for (const char c : e) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << static_cast<int>(static_cast<unsigned char>(c)) << " in: " << e;
}

TEST(JsonLoad, ANumberBeyondDoubleRangeIsAnInputError) {
  const fs::path p = scratch("huge.json", R"({"layers": 1e400})");
  const std::string e = error_of([&] { load_json_file(p.string(), "f", kMaxInputJsonBytes); }, "f");
  EXPECT_THAT(e, HasSubstr("1e400"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("json.exception")));
}

TEST(JsonLoad, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const fs::path p = scratch("deep.json", R"({"description": )" + deep + "}");
  EXPECT_THAT(error_of([&] { load_json_file(p.string(), "f", kMaxInputJsonBytes); }, "f"), HasSubstr("nested deeper than 64"));
  EXPECT_THAT(error_of([&] { parse_json_text(deep, "--set"); }, "--set"), HasSubstr("nested deeper than 64"));
  EXPECT_THAT(error_of([&] { parse_json_text_if_json(deep, "--set"); }, "--set"), HasSubstr("nested deeper"));
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(parse_json_text("\"" + std::string(1000, '[') + "\"", "x"));
  EXPECT_NO_THROW(parse_json_text(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), "x"));
}

TEST(JsonLoad, DirectoriesDevicesAndMissingFilesAreRefusedByName) {
  const fs::path dir = fs::temp_directory_path();
  EXPECT_THAT(error_of([&] { load_json_file(dir.string(), "--profile", kMaxInputJsonBytes); }, "--profile"), HasSubstr("is a directory"));
  EXPECT_THAT(error_of([&] { load_json_file("/dev/zero", "--profile", kMaxInputJsonBytes); }, "--profile"), HasSubstr("not a regular file"));
  EXPECT_THAT(error_of([&] { load_json_file((dir / "no-such-file.json").string(), "f", kMaxInputJsonBytes); }, "f"),
              HasSubstr("cannot open"));
}

TEST(JsonLoad, FilesOverTheSizeLimitAreRefused) {
  const fs::path p = scratch("big.json", "[" + std::string(4096, ' ') + "]");
  EXPECT_THAT(error_of([&] { load_json_file(p.string(), "f", 1024); }, "f"), HasSubstr("more than"));
}

// A key given twice in one object is refused by its JSON path (nlohmann would keep the last
// silently: a pasted "layers" twice made a 2-layer model); the same key in two objects is fine.
TEST(JsonLoad, DuplicateKeysAreRefusedByPath) {
  EXPECT_THAT(error_of([&] { parse_json_text(R"({"a": {"b": 1, "c": 2, "b": 3}})", "--set"); }, "--set"),
              HasSubstr("\"a.b\" is given twice"));
  EXPECT_THAT(error_of([&] { parse_json_text(R"({"u": [{"n": 1}, [0, {"m": 1, "m": 2}]]})", "x"); }, "x"),
              HasSubstr("\"u[1][1].m\" is given twice"));
  EXPECT_NO_THROW(parse_json_text(R"({"a": {"b": 1}, "c": {"b": 2}, "d": [{"b": 1}, {"b": 2}]})", "x"));
  const fs::path p = scratch("dup.json", R"({"model": {"transformer": {"layers": 32, "layers": 2}}})");
  EXPECT_THAT(error_of([&] { load_json_file(p.string(), "scenario", kMaxInputJsonBytes); }, "scenario"),
              HasSubstr("\"model.transformer.layers\" is given twice"));
  // Machine-written outputs (a larger limit) are parsed without the check, as nlohmann does.
  EXPECT_EQ(load_json_file(p.string(), "timeline", kMaxOutputJsonBytes)["model"]["transformer"]["layers"], 2);
}

TEST(JsonLoad, TextThatIsNotJsonIsNoValue) {
  EXPECT_FALSE(parse_json_text_if_json("64MiB", "--set").has_value());
  EXPECT_EQ(parse_json_text_if_json("16", "--set").value(), 16);
  EXPECT_THAT(error_of([&] { parse_json_text("{\"a\": }", "line 3"); }, "line 3"), HasSubstr("malformed JSON at line 1, column 7"));
}

}  // namespace
}  // namespace shardline
