// WinDbg's spelling of condition codes. Zydis names jcc, setcc and cmovcc after the negated
// forms (jnle, setnz, cmovnb); WinDbg, like GNU objdump, prints jg, setne, cmovae.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace toolhost::debugger {

// "jnle" -> "jg", "setz" -> "sete", "cmovnbe" -> "cmova"; any other mnemonic unchanged.
inline std::string windbg_mnemonic(std::string_view zydis) {
  static constexpr std::string_view kFamilies[] = {"cmov", "set", "j"};
  static constexpr std::pair<std::string_view, std::string_view> kConditions[] = {
      {"nb", "ae"}, {"nbe", "a"}, {"nl", "ge"}, {"nle", "g"}, {"nz", "ne"}, {"z", "e"}};
  for (std::string_view family : kFamilies) {
    if (!zydis.starts_with(family)) continue;
    const std::string_view condition = zydis.substr(family.size());
    for (const auto& [from, to] : kConditions) {
      if (condition == from) return std::string(family) + std::string(to);
    }
    break;
  }
  return std::string(zydis);
}

// The instruction text with its mnemonic (the first word that is one: prefixes such as `bnd`
// come before it) in WinDbg's spelling.
inline std::string windbg_instruction_text(const std::string& text, const std::string& mnemonic) {
  const std::string spelled = windbg_mnemonic(mnemonic);
  if (spelled == mnemonic) return text;
  for (size_t at = text.find(mnemonic); at != std::string::npos; at = text.find(mnemonic, at + 1)) {
    const size_t end = at + mnemonic.size();
    if ((at == 0 || text[at - 1] == ' ') && (end == text.size() || text[end] == ' ')) {
      return text.substr(0, at) + spelled + text.substr(end);
    }
  }
  return text;
}

}  // namespace toolhost::debugger
