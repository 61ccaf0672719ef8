#include "perfscope/analysis/push/push_request.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "perfscope/core/base64.hpp"
#include "perfscope/core/safe_text.hpp"
#include "perfscope/core/trim_whitespace.hpp"

namespace perfscope {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// RFC 3986 percent-encoding of a query value (as URLSearchParams writes it, less the '+').
std::string query_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (unreserved(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string without_trailing_slashes(std::string_view url) {
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  return std::string(url);
}

std::string clock_text(std::uint64_t seconds) {
  auto t = static_cast<std::time_t>(seconds);
  std::tm parts{};
  gmtime_r(&t, &parts);
  return fmt::format("{:02}:{:02}:{:02}", parts.tm_hour, parts.tm_min, parts.tm_sec);
}

std::string describe(const PushProfile& profile) {
  std::string span = profile.from_seconds == 0
                         ? std::string("profile")
                         : fmt::format("profile {}-{} UTC", clock_text(profile.from_seconds),
                                       clock_text(profile.until_seconds));
  return fmt::format("{} ({:.1f} kB)", span, static_cast<double>(profile.pprof.size()) / 1e3);
}

HttpRequest pyroscope_request(const PushTarget& target, const PushProfile& profile) {
  // name=APP{k=v,...}: the labels travel in the application name, as Pyroscope's clients send.
  std::string name = push_label_value(target.application);
  name.push_back('{');
  bool first = true;
  for (const auto& [key, value] : profile.labels) {
    if (!first) name.push_back(',');
    first = false;
    name += push_label_name(key) + "=" + push_label_value(value);
  }
  name.push_back('}');
  HttpRequest request;
  request.endpoint = fmt::format("/ingest?name={}&from={}&until={}&format=pprof&spyName=perfscope",
                                 query_escape(name), profile.from_seconds, profile.until_seconds);
  if (profile.sample_rate != 0) {
    request.endpoint += fmt::format("&sampleRate={}", profile.sample_rate);
  }
  request.url = push_url(target.base_url, request);
  // A boundary that the profile's bytes do not hold (gzip output makes a clash unlikely, not
  // impossible).
  std::string boundary = "perfscope-push-7d3c1f0a9b";
  for (int salt = 0; profile.pprof.find(boundary) != std::string::npos; ++salt) {
    boundary = fmt::format("perfscope-push-{:08x}", static_cast<unsigned>(salt) * 2654435761u);
  }
  request.content_type = "multipart/form-data; boundary=" + boundary;
  request.body.reserve(profile.pprof.size() + 256);
  request.body += "--" + boundary + "\r\n";
  request.body +=
      "Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
      "Content-Type: application/octet-stream\r\n\r\n";
  request.body += profile.pprof;
  request.body += "\r\n--" + boundary + "--\r\n";
  request.description = describe(profile);
  return request;
}

HttpRequest parca_request(const PushTarget& target, const PushProfile& profile) {
  nlohmann::json labels = nlohmann::json::array();
  labels.push_back({{"name", "__name__"}, {"value", push_label_value(target.application)}});
  for (const auto& [key, value] : profile.labels) {
    labels.push_back({{"name", push_label_name(key)}, {"value", push_label_value(value)}});
  }
  // The gRPC-gateway JSON mapping of WriteRawRequest: lowerCamelCase field names, bytes in
  // base64. The profile's addresses are as recorded (absolute): not normalized.
  nlohmann::json body = {
      {"series", nlohmann::json::array(
                     {{{"labels", {{"labels", labels}}},
                       {"samples", nlohmann::json::array(
                                       {{{"rawProfile", base64_encode(profile.pprof)}}})}}})},
      {"normalized", false}};
  HttpRequest request;
  request.endpoint = "/profiles/writeraw";
  request.url = push_url(target.base_url, request);
  request.content_type = "application/json";
  request.body = body.dump();
  request.description = describe(profile);
  return request;
}

}  // namespace

std::optional<PushFormat> parse_push_format(std::string_view name) noexcept {
  if (name == "pyroscope") return PushFormat::pyroscope;
  if (name == "parca") return PushFormat::parca;
  return std::nullopt;
}

std::string_view push_format_name(PushFormat format) noexcept {
  return format == PushFormat::parca ? "parca" : "pyroscope";
}

void check_push_url(std::string_view url) {
  auto fail = [&](std::string_view why) {
    throw std::invalid_argument(fmt::format(
        "push URL '{}': {}; give the backend's base address, e.g. http://localhost:4040 "
        "(Pyroscope) or http://localhost:7070 (Parca)",
        terminal_safe(url), why));
  };
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) fail("it has no scheme (http:// or https://)");
  std::string_view scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    fail(fmt::format("the scheme '{}' is not http or https", terminal_safe(scheme)));
  }
  std::string_view rest = url.substr(scheme_end + 3);
  std::string_view host = rest.substr(0, rest.find('/'));
  if (host.empty()) fail("it names no host");
  if (url.find_first_of("?#") != std::string_view::npos) {
    fail("a base address has no query or fragment (the endpoint's path and query are added)");
  }
  for (unsigned char c : url) {
    if (c <= ' ' || c >= 0x7f) fail("it holds a space, a control or a non-ASCII byte");
  }
  std::size_t colon = host.rfind(':');
  if (colon != std::string_view::npos && host.back() != ']') {
    std::string_view port = host.substr(colon + 1);
    bool digits = !port.empty() && port.size() <= 5 &&
                  port.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits || std::strtoul(std::string(port).c_str(), nullptr, 10) > 65535) {
      fail(fmt::format("the port '{}' is not a number from 1 to 65535", terminal_safe(port)));
    }
  }
}

HttpRequest build_push_request(const PushTarget& target, const PushProfile& profile) {
  return target.format == PushFormat::parca ? parca_request(target, profile)
                                            : pyroscope_request(target, profile);
}

std::string push_url(std::string_view base, const HttpRequest& request) {
  return without_trailing_slashes(base) + request.endpoint;
}

std::string push_label_name(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    out.push_back(letter || (digit && i > 0) ? static_cast<char>(c) : '_');
  }
  if (out.empty()) out = "_";
  return out;
}

std::string push_label_value(std::string_view value) {
  std::string out = valid_utf8(value.substr(0, 256));
  // A multi-byte character cut at 256 bytes became U+FFFD: valid either way.
  for (char& c : out) {
    if (c == '{' || c == '}' || c == ',' || c == '=' || c == '"' ||
        static_cast<unsigned char>(c) < ' ') {
      c = '_';
    }
  }
  return out;
}

std::optional<std::string> load_push_authorization(const std::string& auth_file) {
  if (!auth_file.empty()) {
    struct stat info {};
    if (::stat(auth_file.c_str(), &info) != 0) {
      throw std::invalid_argument(
          fmt::format("--push-auth-file {}: {}", auth_file, std::strerror(errno)));
    }
    if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
      throw std::invalid_argument(
          fmt::format("--push-auth-file {}: group or others may read it (mode {:o}); credentials "
                      "must be private: chmod 600 {}",
                      auth_file, info.st_mode & 07777, auth_file));
    }
    std::ifstream in(auth_file);
    std::string line;
    if (!in || !std::getline(in, line) || trim_whitespace(line).empty()) {
      throw std::invalid_argument(fmt::format(
          "--push-auth-file {}: its first line is empty or unreadable; write \"Bearer TOKEN\", "
          "\"Basic USER:PASSWORD\" or the token alone",
          auth_file));
    }
    line = trim_whitespace(line);
    if (line.rfind("Bearer ", 0) == 0) return "Bearer " + trim_whitespace(line.substr(7));
    if (line.rfind("Basic ", 0) == 0) {
      std::string pair = trim_whitespace(line.substr(6));
      if (pair.find(':') == std::string::npos) {
        throw std::invalid_argument(
            fmt::format("--push-auth-file {}: \"Basic\" takes USER:PASSWORD (a colon between them)",
                        auth_file));
      }
      return "Basic " + base64_encode(pair);
    }
    return "Bearer " + line;
  }
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
  };
  std::string token = env("PERFSCOPE_PUSH_TOKEN");
  if (!token.empty()) return "Bearer " + trim_whitespace(token);
  std::string user = env("PERFSCOPE_PUSH_USER");
  if (!user.empty()) {
    std::string password = env("PERFSCOPE_PUSH_PASSWORD");
    if (password.empty()) {
      throw std::invalid_argument(
          "PERFSCOPE_PUSH_USER is set but PERFSCOPE_PUSH_PASSWORD is not: basic authentication "
          "needs both");
    }
    return "Basic " + base64_encode(user + ":" + password);
  }
  return std::nullopt;
}

}  // namespace perfscope
