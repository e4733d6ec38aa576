#include "output_store.hpp"

#include <algorithm>
#include <cctype>

namespace toolhost::debugger {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    out.emplace_back(line);
    start = end + 1;
  }
  return out;
}

std::string output_store::page(std::string text) {
  if (text.size() <= kPageChars) return text;
  entry e;
  e.lines = split_lines(text);
  e.bytes = text.size();
  std::string shown;
  size_t last = 0;
  for (size_t i = 0; i < e.lines.size(); ++i) {
    if (i > 0 && shown.size() + e.lines[i].size() + 1 > kPageChars) break;
    shown += e.lines[i].substr(0, kPageChars);
    shown += '\n';
    last = i;
  }
  std::lock_guard lock(mutex_);
  e.id = next_id_++;
  shown += "[output " + std::to_string(e.id) + ": " + std::to_string(e.lines.size()) + " lines, offsets 0-" +
           std::to_string(last) + " shown; the output tool reads on from offset " + std::to_string(last + 1) +
           ", or with a filter finds lines in it]";
  bytes_ += e.bytes;
  entries_.push_back(std::move(e));
  while (bytes_ > kBudgetBytes && entries_.size() > 1) {
    bytes_ -= entries_.front().bytes;
    entries_.pop_front();
  }
  return shown;
}

absl::StatusOr<std::string> output_store::read(uint64_t id, uint64_t offset, uint64_t limit, std::string_view filter) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.id == id; });
  if (it == entries_.end()) {
    return absl::NotFoundError("there is no stored output " + std::to_string(id) +
                               " (long results are kept until 64 MB of newer ones replace them)");
  }
  const auto& lines = it->lines;
  if (offset >= lines.size()) {
    return absl::OutOfRangeError("output " + std::to_string(id) + " has " + std::to_string(lines.size()) +
                                 " lines (offsets 0-" + std::to_string(lines.size() - 1) + ")");
  }
  std::string needle(filter);
  for (char& c : needle) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string out;
  uint64_t count = 0;
  size_t i = offset;
  for (; i < lines.size(); ++i) {
    if (!needle.empty()) {
      std::string l = lines[i];
      for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (l.find(needle) == std::string::npos) continue;
    }
    std::string row = std::to_string(i) + ": " + lines[i] + "\n";
    if ((limit != 0 && count >= limit) || (count > 0 && out.size() + row.size() > kPageChars)) break;
    out += row;
    ++count;
  }
  if (i < lines.size()) {
    out += "[output " + std::to_string(id) + ": more from offset " + std::to_string(i) + "]";
  } else if (count == 0) {
    out += needle.empty() ? "[no lines]" : "[no line matches '" + std::string(filter) + "']";
  } else {
    out += "[output " + std::to_string(id) + ": end]";
  }
  return out;
}

}  // namespace toolhost::debugger
