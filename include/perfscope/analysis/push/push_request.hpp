// What a continuous-profiling backend is sent: one pprof profile with its labels and time span,
// as the HTTP request each backend's own clients make. Pyroscope: POST BASE/ingest?name=APP{k=v}
// &from=&until=&format=pprof with the profile in the multipart field `profile`. Parca: POST
// BASE/profiles/writeraw with the gRPC-gateway JSON of parca.profilestore.v1alpha1.WriteRawRequest
// (labels, samples[].rawProfile in base64, normalized). Building a request is pure: the transport
// and the retries are elsewhere (push_client.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace perfscope {

enum class PushFormat { pyroscope, parca };

// "pyroscope" or "parca"; nullopt for anything else.
std::optional<PushFormat> parse_push_format(std::string_view name) noexcept;
std::string_view push_format_name(PushFormat format) noexcept;

// Where profiles go: the backend's base address as its own clients take it
// (http://pyroscope:4040, https://parca.example.com), the wire format and the application name.
struct PushTarget {
  std::string base_url;
  PushFormat format = PushFormat::pyroscope;
  std::string application = "perfscope";  // Pyroscope's name=, Parca's __name__ label
};

// Throws std::invalid_argument saying what is wrong with `url` as a base address and how to write
// it: the scheme (http or https), a host, no query or fragment.
void check_push_url(std::string_view url);

// One profile to deliver.
struct PushProfile {
  std::string pprof;  // gzipped profile.proto bytes, as write_pprof writes them
  // Labels in order (host, command, event, ...); names and values are made valid for the backend
  // when the request is built.
  std::vector<std::pair<std::string, std::string>> labels;
  std::uint64_t from_seconds = 0, until_seconds = 0;  // Unix time of the profile's span
  std::uint64_t sample_rate = 0;                      // samples per second; 0 when not by rate
};

// An HTTP POST, complete but for the credentials (added when it is sent, never stored) and the
// backend's base address: a request spooled during an outage goes to the base address of the run
// that delivers it.
struct HttpRequest {
  std::string endpoint;  // path and query after the base address ("/ingest?name=...")
  std::string url;       // the full address, set by the client when it sends the request
  std::string content_type;
  std::string body;
  std::string description;  // for messages: "interval 10:04:00-10:04:10 (123 kB)"
};

HttpRequest build_push_request(const PushTarget& target, const PushProfile& profile);
// `base` (without trailing slashes) followed by the request's endpoint.
std::string push_url(std::string_view base, const HttpRequest& request);

// A label name as both backends accept it ([a-zA-Z_][a-zA-Z0-9_]*): other bytes become '_'.
std::string push_label_name(std::string_view name);
// A label value: valid UTF-8, without the characters Pyroscope's name{k=v,...} syntax reserves
// ('{', '}', ',', '=', and '"'), which become '_'; at most 256 bytes.
std::string push_label_value(std::string_view value);

// The credentials a request carries, as its Authorization header value ("Bearer T", "Basic B64").
// From `auth_file` when given: its first line, either "Bearer TOKEN", "Basic USER:PASSWORD" or a
// bare token (bearer); the file must not be readable by group or others. Else from the
// environment: PERFSCOPE_PUSH_TOKEN (bearer), or PERFSCOPE_PUSH_USER and PERFSCOPE_PUSH_PASSWORD
// (basic). nullopt: none. Throws std::invalid_argument for an unreadable, exposed or empty file
// and for a user without a password.
std::optional<std::string> load_push_authorization(const std::string& auth_file);

}  // namespace perfscope
