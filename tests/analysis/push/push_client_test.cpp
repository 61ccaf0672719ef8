// The push room without a network: the requests each backend's documented API takes (Pyroscope's
// multipart /ingest, Parca's writeraw JSON), base addresses and labels checked, the bounded spool
// in memory and on disk, and the client's retries, rejections and drops over a scripted transport.
#include "perfscope/analysis/push/push_client.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perfscope/analysis/push/push_request.hpp"
#include "perfscope/core/base64.hpp"
#include "support/test_support.hpp"

namespace {

using namespace perfscope;
namespace fs = std::filesystem;

std::string base64_decode(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = bits << 6 | static_cast<std::uint32_t>(alphabet.find(c));
    if ((count += 6) >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

PushProfile sample_profile(std::size_t size = 100) {
  PushProfile profile;
  profile.pprof = std::string("\x1f\x8b", 2) + std::string(size - 2, '\x7f');
  profile.labels = {{"host", "box"}, {"command", "a,b{c}=d"}, {"event", "cpu-clock"}};
  profile.from_seconds = 1700000000;
  profile.until_seconds = 1700000010;
  profile.sample_rate = 4000;
  return profile;
}

TEST(PushRequest, PyroscopeIngestIsMultipartWithTheProfileFieldAndLabelsInTheName) {
  HttpRequest request = build_push_request(
      PushTarget{"http://pyro:4040//", PushFormat::pyroscope, "app"}, sample_profile());
  EXPECT_EQ(request.url, "http://pyro:4040" + request.endpoint);
  // name=app{host=box,command=a_b_c__d,event=cpu-clock}, percent-encoded.
  EXPECT_EQ(request.endpoint,
            "/ingest?name=app%7Bhost%3Dbox%2Ccommand%3Da_b_c__d%2Cevent%3Dcpu-clock%7D"
            "&from=1700000000&until=1700000010&format=pprof&spyName=perfscope&sampleRate=4000");
  std::string boundary = request.content_type.substr(request.content_type.find('=') + 1);
  EXPECT_EQ(request.content_type, "multipart/form-data; boundary=" + boundary);
  std::string expected = "--" + boundary +
                         "\r\nContent-Disposition: form-data; name=\"profile\"; "
                         "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream"
                         "\r\n\r\n" +
                         sample_profile().pprof + "\r\n--" + boundary + "--\r\n";
  EXPECT_EQ(request.body, expected);
}

TEST(PushRequest, ABoundaryThatTheProfileHoldsIsNotUsed) {
  PushProfile profile = sample_profile();
  profile.pprof += "perfscope-push-7d3c1f0a9b";
  HttpRequest request =
      build_push_request(PushTarget{"http://h", PushFormat::pyroscope, "a"}, profile);
  std::string boundary = request.content_type.substr(request.content_type.find('=') + 1);
  EXPECT_EQ(profile.pprof.find(boundary), std::string::npos) << boundary;
}

TEST(PushRequest, ParcaWriteRawIsTheGatewayJsonOfWriteRawRequest) {
  HttpRequest request = build_push_request(
      PushTarget{"https://parca.example.com/base", PushFormat::parca, "my app"}, sample_profile());
  EXPECT_EQ(request.url, "https://parca.example.com/base/profiles/writeraw");
  EXPECT_EQ(request.content_type, "application/json");
  auto json = nlohmann::json::parse(request.body);
  EXPECT_EQ(json["normalized"], false);
  ASSERT_EQ(json["series"].size(), 1u);
  const auto& labels = json["series"][0]["labels"]["labels"];
  ASSERT_EQ(labels.size(), 4u);
  EXPECT_EQ(labels[0], (nlohmann::json{{"name", "__name__"}, {"value", "my app"}}));
  EXPECT_EQ(labels[2], (nlohmann::json{{"name", "command"}, {"value", "a_b_c__d"}}));
  EXPECT_EQ(base64_decode(json["series"][0]["samples"][0]["rawProfile"]), sample_profile().pprof);
}

TEST(PushRequest, Base64AndLabelsFollowTheirRules) {
  for (auto [in, out] : std::vector<std::pair<std::string, std::string>>{{"", ""},
                                                                         {"f", "Zg=="},
                                                                         {"fo", "Zm8="},
                                                                         {"foo", "Zm9v"},
                                                                         {"foob", "Zm9vYg=="},
                                                                         {"fooba", "Zm9vYmE="},
                                                                         {"foobar", "Zm9vYmFy"}}) {
    EXPECT_EQ(base64_encode(in), out) << in;
  }
  EXPECT_EQ(push_label_name("9 lives.x"), "__lives_x");
  EXPECT_EQ(push_label_value("caf\xc3\xa9\xff\n\"x\""), "caf\xc3\xa9\xef\xbf\xbd__x_");
  EXPECT_EQ(push_label_value(std::string(300, 'a')).size(), 256u);
}

TEST(PushRequest, BaseAddressesAreCheckedWithTheReason) {
  EXPECT_NO_THROW(check_push_url("http://localhost:4040"));
  EXPECT_NO_THROW(check_push_url("https://[::1]:7070/prefix/"));
  auto reason = [](const std::string& url) {
    try {
      check_push_url(url);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(reason("localhost:4040").find("no scheme"), std::string::npos);
  EXPECT_NE(reason("ftp://h").find("the scheme 'ftp'"), std::string::npos);
  EXPECT_NE(reason("http:///x").find("no host"), std::string::npos);
  EXPECT_NE(reason("http://h:0x1").find("the port '0x1'"), std::string::npos);
  EXPECT_NE(reason("http://h/ingest?name=a").find("no query or fragment"), std::string::npos);
  EXPECT_NE(reason("http://h /x").find("a space"), std::string::npos);
}

HttpRequest request_of(const std::string& name, std::size_t size) {
  HttpRequest request;
  // Moved in, not assigned from literals: GCC 12 at -O3 reports a false -Wrestrict in the
  // inlined assignment (the plain Release build stops on it).
  request.endpoint = std::string("/e");
  request.content_type = std::string("t");
  request.body = std::string(size, 'x');
  request.description = name;
  return request;
}

TEST(PushSpoolTest, TheBoundDropsTheOldestAndSaysWhich) {
  PushSpool spool("", 300);
  EXPECT_TRUE(spool.add(request_of("one", 100)).empty());
  EXPECT_TRUE(spool.add(request_of("two", 100)).empty());
  EXPECT_EQ(spool.add(request_of("three", 100)), std::vector<std::string>{"one"});
  auto too_big = spool.add(request_of("huge", 400));
  ASSERT_EQ(too_big.size(), 1u);
  EXPECT_NE(too_big[0].find("huge: larger than the queue's bound (300 bytes)"), std::string::npos);
  std::vector<std::string> problems;
  auto front = spool.front(problems);
  ASSERT_TRUE(front);
  EXPECT_EQ(front->request.description, "two");
  spool.remove(front->sequence);
  EXPECT_EQ(spool.size(), 1u);
}

TEST(PushSpoolTest, ADirectoryKeepsRequestsForTheNextRunInOrder) {
  perfscope::testing::TempDir dir;
  std::string path = dir.path() + "/spool";
  {
    PushSpool spool(path, 1 << 20);
    spool.add(request_of("first", 10));
    spool.add(request_of("second", 20));
  }
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::group_all, fs::perms::none);
  dir.write("spool/00000000000000000000.push", "garbage");  // sorts first, is not ours
  PushSpool again(path, 1 << 20);
  EXPECT_EQ(again.size(), 3u);
  std::vector<std::string> problems;
  auto front = again.front(problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("not a perfscope spool file"), std::string::npos);
  ASSERT_TRUE(front);
  EXPECT_EQ(front->request.description, "first");
  EXPECT_EQ(front->request.body, std::string(10, 'x'));
  EXPECT_EQ(front->request.endpoint, "/e");
  again.remove(front->sequence);
  front = again.front(problems);
  ASSERT_TRUE(front);
  EXPECT_EQ(front->request.description, "second");
  again.remove(front->sequence);
  EXPECT_TRUE(fs::is_empty(path));
}

// Answers from a script, and remembers what it was sent.
class ScriptedTransport final : public HttpTransport {
 public:
  explicit ScriptedTransport(std::deque<HttpResponse> answers) : answers_(std::move(answers)) {}
  HttpResponse post(const HttpRequest& request, const std::string& authorization, int) override {
    sent.push_back(request.url + " " + authorization);
    HttpResponse answer = answers_.front();
    if (answers_.size() > 1) answers_.pop_front();
    return answer;
  }
  static std::vector<std::string> sent;

 private:
  std::deque<HttpResponse> answers_;
};
std::vector<std::string> ScriptedTransport::sent;

HttpResponse status(long code) { return HttpResponse{true, code, "", "body"}; }
HttpResponse unreachable() { return HttpResponse{false, 0, "connection refused", ""}; }

TEST(PushClientTest, RetriesWithBackoffUntilTheBackendRecovers) {
  ScriptedTransport::sent.clear();
  std::vector<std::string> lines;
  PushClientOptions options;
  options.base_url = "http://b";
  options.authorization = "Bearer t";
  options.first_retry = std::chrono::milliseconds(1);
  PushClient client(std::make_unique<ScriptedTransport>(std::deque<HttpResponse>{
                        unreachable(), status(503), status(429), status(200)}),
                    PushSpool("", 1 << 20), options,
                    [&](const std::string& line) { lines.push_back(line); });
  client.enqueue(request_of("p1", 10));
  client.enqueue(request_of("p2", 10));
  EXPECT_TRUE(client.deliver(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  PushStats stats = client.stats();
  EXPECT_EQ(stats.delivered, 2u);
  EXPECT_EQ(stats.failed_attempts, 3u);
  EXPECT_EQ(ScriptedTransport::sent.size(), 5u);
  EXPECT_EQ(ScriptedTransport::sent[0], "http://b/e Bearer t");
  ASSERT_EQ(lines.size(), 4u);  // three failures, one recovery
  EXPECT_NE(lines[0].find("connection refused"), std::string::npos);
  EXPECT_NE(lines[1].find("retrying in 0.0 s"), std::string::npos) << lines[1];
  EXPECT_NE(lines[3].find("answers again"), std::string::npos);
}

TEST(PushClientTest, ARejectionIsNotRetriedAndADeadlineStopsRetrying) {
  std::vector<std::string> lines;
  PushClientOptions options;
  options.base_url = "http://b";
  options.first_retry = std::chrono::milliseconds(1);
  PushClient rejecting(std::make_unique<ScriptedTransport>(std::deque<HttpResponse>{status(400)}),
                       PushSpool("", 1 << 20), options,
                       [&](const std::string& line) { lines.push_back(line); });
  rejecting.enqueue(request_of("bad", 10));
  EXPECT_TRUE(rejecting.deliver(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(rejecting.stats().rejected, 1u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("rejected bad (HTTP 400: body); not retried"), std::string::npos);

  options.first_retry = std::chrono::milliseconds(200);
  PushClient down(std::make_unique<ScriptedTransport>(std::deque<HttpResponse>{unreachable()}),
                  PushSpool("", 1 << 20), options, [](const std::string&) {});
  down.enqueue(request_of("kept", 10));
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(down.deliver(start + std::chrono::milliseconds(500)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(down.pending(), 1u);
}

TEST(PushClientTest, TheBackgroundThreadDeliversWhatIsQueued) {
  PushClientOptions options;
  options.base_url = "http://b";
  PushClient client(std::make_unique<ScriptedTransport>(std::deque<HttpResponse>{status(204)}),
                    PushSpool("", 1 << 20), options, [](const std::string&) {});
  client.start_background();
  for (int i = 0; i < 5; ++i) client.enqueue(request_of("p", 10));
  EXPECT_TRUE(client.stop_background(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(client.stats().delivered, 5u);
}

}  // namespace
