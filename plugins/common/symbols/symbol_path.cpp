#include "toolhost/symbols/symbol_path.hpp"

#include <cstdlib>

#include <absl/strings/ascii.h>
#include <absl/strings/str_split.h>

namespace toolhost::symbols {

namespace {

bool is_url(std::string_view s) {
  const std::string l = absl::AsciiStrToLower(std::string(s.substr(0, 8)));
  return l.rfind("http://", 0) == 0 || l.rfind("https://", 0) == 0;
}

std::string trimmed(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

}  // namespace

std::string default_cache() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/toolhost/symbols";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : "/tmp") + "/.cache/toolhost/symbols";
}

std::string symfix_text(std::string_view cache) {
  return "srv*" + (cache.empty() ? default_cache() : std::string(cache)) + "*" + std::string(kMicrosoftSymbolServer);
}

bool symbol_path::uses_network() const {
  for (const auto& e : elements_) {
    if (!e.server.empty()) return true;
  }
  return false;
}

absl::StatusOr<symbol_path> symbol_path::parse(std::string_view text) {
  symbol_path path;
  path.text_ = trimmed(absl::string_view(text.data(), text.size()));
  std::vector<std::string> pending_caches;  // from cache*DIR, for the elements after it
  for (absl::string_view raw : absl::StrSplit(path.text_, ';')) {
    const std::string piece = trimmed(raw);
    if (piece.empty()) continue;
    path_element e;
    e.text = piece;
    std::vector<std::string> parts = absl::StrSplit(piece, '*');
    std::string head = absl::AsciiStrToLower(parts[0]);
    if (parts.size() > 1 && (head == "srv" || head == "symsrv")) {
      if (head == "symsrv") {
        if (parts.size() < 3)
          return absl::InvalidArgumentError("symbol path element '" + piece + "': symsrv*symsrv.dll*... needs a store");
        parts.erase(parts.begin());  // the DLL name
      }
      parts.erase(parts.begin());
      std::vector<std::string> stores;
      for (auto& p : parts) p = trimmed(p);
      for (size_t i = 0; i < parts.size(); ++i) {
        const std::string& p = parts[i];
        if (p.empty()) {
          // srv**URL: the default downstream store.
          stores.push_back(default_cache());
          continue;
        }
        if (is_url(p)) {
          if (i + 1 != parts.size()) {
            return absl::InvalidArgumentError("symbol path element '" + piece + "': a server URL must come last");
          }
          e.server = p;
        } else {
          stores.push_back(p);
        }
      }
      if (!e.server.empty() && stores.empty()) stores.push_back(default_cache());
      if (stores.empty() && e.server.empty()) {
        return absl::InvalidArgumentError("symbol path element '" + piece + "' names no store or server");
      }
      e.stores = stores;
      if (!e.server.empty()) e.caches = stores;  // a download goes into every store before it
    } else if (parts.size() > 1 && head == "cache") {
      e.cache_marker = true;
      const std::string dir = trimmed(piece.substr(6));
      pending_caches = {dir.empty() ? default_cache() : dir};
      path.elements_.push_back(std::move(e));
      continue;
    } else if (is_url(piece)) {
      e.server = piece;
    } else {
      e.stores = {piece};
      e.plain_folder = true;
    }
    // cache*DIR applies to what comes after it.
    for (const auto& c : pending_caches) {
      if (std::find(e.caches.begin(), e.caches.end(), c) == e.caches.end()) e.caches.push_back(c);
    }
    if (!pending_caches.empty() && e.stores.empty()) e.stores = pending_caches;
    path.elements_.push_back(std::move(e));
  }
  return path;
}

}  // namespace toolhost::symbols
