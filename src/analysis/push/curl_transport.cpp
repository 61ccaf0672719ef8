#include "perfscope/analysis/push/curl_transport.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <mutex>

#include "perfscope/version.hpp"

namespace perfscope {

namespace {

constexpr std::size_t kept_response_bytes = 4096;

std::size_t keep_start(char* data, std::size_t size, std::size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  std::size_t bytes = size * count;
  if (body->size() < kept_response_bytes) {
    body->append(data, std::min(bytes, kept_response_bytes - body->size()));
  }
  return bytes;
}

class CurlTransport final : public HttpTransport {
 public:
  explicit CurlTransport(std::string ca_file) : ca_file_(std::move(ca_file)) {
    static std::once_flag global;
    std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  HttpResponse post(const HttpRequest& request, const std::string& authorization,
                    int timeout_seconds) override {
    HttpResponse response;
    CURL* curl = curl_easy_init();
    if (!curl) {
      response.error = "libcurl could not start a transfer";
      return response;
    }
    curl_slist* headers = nullptr;
    std::string content_type = "Content-Type: " + request.content_type;
    headers = curl_slist_append(headers, content_type.c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    std::string credentials;
    if (!authorization.empty()) {
      credentials = "Authorization: " + authorization;
      headers = curl_slist_append(headers, credentials.c_str());
    }
    char error[CURL_ERROR_SIZE] = {};
    std::string user_agent = fmt::format("perfscope/{}", version);
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent.c_str());
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(timeout_seconds));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT,
                     static_cast<long>(std::min(timeout_seconds, 10)));
    if (!ca_file_.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file_.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_start);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) {
      response.reached = true;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    } else {
      response.error = error[0] != '\0' ? std::string(error) : curl_easy_strerror(code);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return response;
  }

 private:
  std::string ca_file_;
};

}  // namespace

std::unique_ptr<HttpTransport> make_curl_transport(std::string ca_file) {
  return std::make_unique<CurlTransport>(std::move(ca_file));
}

}  // namespace perfscope
