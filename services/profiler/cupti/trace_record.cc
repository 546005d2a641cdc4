#include "services/profiler/cupti/trace_record.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
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
  line += ",\"registers\":" + std::to_string(r.registers);
  line += ",\"static_smem\":" + std::to_string(r.static_smem);
  line += ",\"dynamic_smem\":" + std::to_string(r.dynamic_smem);
  line += "}\n";
  return line;
}

std::string FormatMarkerRecord(std::string_view name, uint64_t ts_ns) {
  std::string line = "{\"type\":\"marker\",\"name\":";
  AppendJsonString(name, &line);
  line += ",\"ts_ns\":" + std::to_string(ts_ns) + "}\n";
  return line;
}

std::string FormatCountersRecord(const CountersRecord& record) {
  std::string line = "{\"type\":\"counters\",\"range\":" + std::to_string(record.range);
  line += ",\"name\":";
  AppendJsonString(record.name, &line);
  line += ",\"values\":{";
  bool first = true;
  for (const auto& [metric, value] : record.values) {
    if (!first) line.push_back(',');
    first = false;
    AppendJsonString(metric, &line);
    line.push_back(':');
    if (std::isfinite(value)) {
      char number[32];
      std::snprintf(number, sizeof(number), "%.17g", value);
      line += number;
    } else {
      line += "null";  // JSON has no NaN or infinity
    }
  }
  line += "}}\n";
  return line;
}

std::string FormatCountersMeta(const CountersMeta& meta) {
  std::string line = "{\"type\":\"counters_meta\",\"passes\":" + std::to_string(meta.passes);
  line += ",\"ranges\":" + std::to_string(meta.ranges);
  line += ",\"dropped\":" + std::to_string(meta.dropped);
  line += ",\"missing\":[";
  for (size_t i = 0; i < meta.missing.size(); ++i) {
    if (i > 0) line.push_back(',');
    AppendJsonString(meta.missing[i], &line);
  }
  line += "],\"chip\":";
  AppendJsonString(meta.chip, &line);
  line += "}\n";
  return line;
}

std::vector<std::string> SplitMetricList(const char* csv) {
  std::vector<std::string> names;
  if (csv == nullptr) return names;
  std::string_view rest(csv);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    bool seen = false;
    for (const std::string& name : names) seen = seen || name == item;
    if (!seen) names.emplace_back(item);
  }
  return names;
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
