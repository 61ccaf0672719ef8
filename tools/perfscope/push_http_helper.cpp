// perfscope-push-http: performs one HTTP(S) POST with libcurl for `perfscope push` and
// `record --push` (the static perfscope binary cannot link libcurl: see helper_transport.cpp).
// Standard input: "perfscope-push-http 1", then "url U", "content-type T", "timeout S" and
// optionally "authorization A" and "ca-file PATH" lines, an empty line and the body. Standard
// output: "status N" and the start of the response's body, or "error TEXT". Not meant to be run by
// hand.
#include <curl/curl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

#include "perfscope/analysis/push/curl_transport.hpp"

int main() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  constexpr std::string_view magic = "perfscope-push-http 1\n";
  std::size_t end = input.find("\n\n");
  if (input.compare(0, magic.size(), magic) != 0 || end == std::string::npos) {
    std::fputs("error the HTTP helper was given no request (it is run by perfscope push)\n",
               stdout);
    return 2;
  }
  perfscope::HttpRequest request;
  std::string authorization, ca_file;
  int timeout = 30;
  std::size_t at = magic.size();
  while (at < end) {
    std::size_t line_end = input.find('\n', at);
    std::string line = input.substr(at, line_end - at);
    if (line.rfind("url ", 0) == 0) request.url = line.substr(4);
    if (line.rfind("content-type ", 0) == 0) request.content_type = line.substr(13);
    if (line.rfind("authorization ", 0) == 0) authorization = line.substr(14);
    if (line.rfind("ca-file ", 0) == 0) ca_file = line.substr(8);
    if (line.rfind("timeout ", 0) == 0) timeout = std::atoi(line.c_str() + 8);
    at = line_end + 1;
  }
  request.body = input.substr(end + 2);
  perfscope::HttpResponse response = perfscope::make_curl_transport(ca_file)->post(
      request, authorization, timeout > 0 ? timeout : 30);
  if (response.reached) {
    std::printf("status %ld\n", response.status);
    std::fwrite(response.body.data(), 1, response.body.size(), stdout);
  } else {
    std::printf("error %s\n", response.error.c_str());
  }
  // libcurl's (and OpenSSL's) global state released: the sanitizer build's leak check stays quiet.
  curl_global_cleanup();
  return 0;
}
