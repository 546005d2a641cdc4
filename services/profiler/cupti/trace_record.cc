#include "services/profiler/cupti/trace_record.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace kagent::cupti {

void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
          out->append(escaped);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string FormatKernelRecord(const KernelRecord& r) {
  std::string line = "{\"type\":\"kernel\",\"name\":";
  AppendJsonString(r.name, &line);
  line += ",\"start_ns\":" + std::to_string(r.start_ns);
  line += ",\"end_ns\":" + std::to_string(r.end_ns);
  line += ",\"stream\":" + std::to_string(r.stream);
  line += ",\"device\":" + std::to_string(r.device);
  line += ",\"grid\":[" + std::to_string(r.grid[0]) + "," + std::to_string(r.grid[1]) + "," +
          std::to_string(r.grid[2]) + "]";
  line += ",\"block\":[" + std::to_string(r.block[0]) + "," + std::to_string(r.block[1]) +
          "," + std::to_string(r.block[2]) + "]";
  line += ",\"correlation\":" + std::to_string(r.correlation);
  line += "}\n";
  return line;
}

std::string FormatMarkerRecord(std::string_view name, uint64_t ts_ns) {
  std::string line = "{\"type\":\"marker\",\"name\":";
  AppendJsonString(name, &line);
  line += ",\"ts_ns\":" + std::to_string(ts_ns) + "}\n";
  return line;
}

std::string DemangleKernelName(const char* name) {
  if (name == nullptr) return "";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) close(fd_);
}

bool TraceWriter::Write(std::string_view lines) {
  if (lines.empty()) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) {
    fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return false;
  }
  size_t done = 0;
  while (done < lines.size()) {
    ssize_t n = write(fd_, lines.data() + done, lines.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace kagent::cupti
