// !lmi and !dh: a loaded image's headers, read from the target's memory.
#include <absl/strings/ascii.h>
#include <absl/strings/str_format.h>
#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

const char* machine_name(uint16_t m) {
  switch (m) {
    case 0x8664: return "X64";
    case 0x14c: return "I386";
    case 0xaa64: return "ARM64";
    default: return "unknown";
  }
}

}  // namespace

absl::Status session::cmd_lmi(const std::string& name, std::string_view args) {
  const std::string which(trim(args));
  if (which.empty()) return usage_error(name, "!lmi needs a module name or an address in it");
  refresh_modules();
  const module* m = symbols_.find_module(module_name_of(which));
  if (m == nullptr) {
    auto address = eval(which);
    if (address.ok()) m = symbols_.module_at(*address);
  }
  if (m == nullptr) return absl::NotFoundError("no module named or holding '" + which + "' (lm lists them)");
  auto image = module_image(*m);
  if (!image.ok()) return image.status();
  const pe::headers& h = (*image)->header();
  auto cv = (*image)->codeview();
  symbols_.ensure_loaded(*m);
  const symbol_source* best = m->best();
  out_ += "Loaded Module Info: [" + which + "]\n";
  out_ += "         Module: " + m->name + "\n";
  out_ += "   Base Address: " + hex16(m->base) + "\n";
  out_ += "     Image Name: " + m->path.substr(m->path.find_last_of("\\/") + 1) + "\n";
  out_ += absl::StrFormat("   Machine Type: %d (%s)\n", h.machine, machine_name(h.machine));
  out_ += absl::StrFormat("     Time Stamp: %x\n", h.timestamp);
  out_ += absl::StrFormat("           Size: %x\n", h.size_of_image);
  out_ += absl::StrFormat("       CheckSum: %x\n", h.checksum);
  out_ += absl::StrFormat("Characteristics: %x\n", h.characteristics);
  if (cv.ok() && cv->has_value()) {
    out_ += absl::StrFormat("Debug Data Dirs: Type  Size     VA  Pointer\n             CODEVIEW  %s - GUID: %s\n",
                            (*cv)->rsds ? "RSDS" : "NB10", (*cv)->guid_text());
    out_ += absl::StrFormat("               Age: %u, Pdb: %s\n", (*cv)->age, (*cv)->pdb_path);
  }
  out_ += "     Image Type: MEMORY   - Image read successfully from loaded memory.\n";
  out_ +=
      std::string("    Symbol Type: ") +
      (best == nullptr ? "NONE     - " + (m->symbols.problem.empty() ? std::string("no symbols") : m->symbols.problem)
                       : absl::AsciiStrToUpper(best->status().substr(0, best->status().find(' '))) +
                             "      - Symbols loaded successfully.") +
      "\n";
  if (best != nullptr && !best->file().empty()) out_ += "                 " + best->file() + "\n";
  result_json_ = absl::StrFormat(
      R"({"module":%s,"base":"0x%x","machine":%d,"timestamp":"0x%x","size":"0x%x","checksum":"0x%x","pdb":%s,"guid":%s,"age":%s,"symbols":%s})",
      sdk::quote(m->name), m->base, h.machine, h.timestamp, h.size_of_image, h.checksum,
      cv.ok() && cv->has_value() ? sdk::quote((*cv)->pdb_path) : "null",
      cv.ok() && cv->has_value() ? sdk::quote((*cv)->guid_text()) : "null",
      cv.ok() && cv->has_value() ? std::to_string((*cv)->age) : "null",
      sdk::quote(best == nullptr ? "no symbols" : best->status()));
  return absl::OkStatus();
}

absl::Status session::cmd_dh(const std::string& name, std::string_view args) {
  bool sections = true, file = true;
  std::string which;
  size_t pos = 0;
  for (std::string w; !(w = take_word(args, pos)).empty();) {
    if (w == "-f")
      sections = false;
    else if (w == "-s")
      file = false;
    else if (w == "-a")
      sections = file = true;
    else if (w[0] == '-')
      return usage_error(name, "unknown option " + w);
    else
      which = w;
  }
  if (which.empty()) return usage_error(name, "!dh needs a module name or its base address");
  refresh_modules();
  const module* m = symbols_.find_module(module_name_of(which));
  if (m == nullptr) {
    auto address = eval(which);
    if (!address.ok()) return usage_error(name, std::string(address.status().message()));
    m = symbols_.module_at(*address);
    if (m == nullptr) return absl::NotFoundError("no module holds " + address_text(*address));
  }
  auto image = module_image(*m);
  if (!image.ok()) return image.status();
  const pe::headers& h = (*image)->header();
  std::string json = absl::StrFormat(R"({"module":%s,"base":"0x%x")", sdk::quote(m->name), m->base);
  if (file) {
    out_ += std::string("\nFile Type: ") + ((h.characteristics & 0x2000) ? "DLL" : "EXECUTABLE IMAGE") + "\n";
    out_ += "FILE HEADER VALUES\n";
    out_ += absl::StrFormat("%8X machine (%s)\n", h.machine, machine_name(h.machine));
    out_ += absl::StrFormat("%8X number of sections\n", h.number_of_sections);
    out_ += absl::StrFormat("%8X time date stamp\n", h.timestamp);
    out_ += absl::StrFormat("%8X characteristics\n", h.characteristics);
    out_ += "\nOPTIONAL HEADER VALUES\n";
    out_ += absl::StrFormat("%8X magic #\n", h.pe32_plus ? 0x20b : 0x10b);
    out_ += absl::StrFormat("%5u.%02u linker version\n", h.linker_major, h.linker_minor);
    out_ += absl::StrFormat("%8X address of entry point\n", h.entry_point);
    out_ += absl::StrFormat("%16X image base\n", h.image_base);
    out_ += absl::StrFormat("%8X section alignment\n", h.section_alignment);
    out_ += absl::StrFormat("%8X file alignment\n", h.file_alignment);
    out_ += absl::StrFormat("%5u.%02u operating system version\n", h.os_major, h.os_minor);
    out_ += absl::StrFormat("%5u.%02u subsystem version\n", h.subsystem_major, h.subsystem_minor);
    out_ += absl::StrFormat("%8X size of image\n", h.size_of_image);
    out_ += absl::StrFormat("%8X size of headers\n", h.size_of_headers);
    out_ += absl::StrFormat("%8X checksum\n", h.checksum);
    out_ += absl::StrFormat("%8X subsystem\n", h.subsystem);
    out_ += absl::StrFormat("%8X DLL characteristics\n", h.dll_characteristics);
    static const char* const kDirectories[] = {"Export",
                                               "Import",
                                               "Resource",
                                               "Exception",
                                               "Security",
                                               "Base Relocation",
                                               "Debug",
                                               "Description",
                                               "Special",
                                               "Thread Storage",
                                               "Load Configuration",
                                               "Bound Import",
                                               "Import Address Table",
                                               "Delay Import",
                                               "COR20 Header",
                                               "Reserved"};
    for (size_t i = 0; i < h.directories.size() && i < 16; ++i) {
      out_ += absl::StrFormat("%8X [%8X] address [size] of %s Directory\n", h.directories[i].rva, h.directories[i].size,
                              kDirectories[i]);
    }
    json +=
        absl::StrFormat(R"(,"machine":%d,"timestamp":"0x%x","entry":"0x%x","size_of_image":"0x%x","image_base":"0x%x")",
                        h.machine, h.timestamp, h.entry_point, h.size_of_image, h.image_base);
  }
  if (sections) {
    json += R"(,"sections":[)";
    for (size_t i = 0; i < (*image)->sections().size(); ++i) {
      const pe::section& s = (*image)->sections()[i];
      out_ += absl::StrFormat(
          "\nSECTION HEADER #%u\n%8s name\n%8X virtual size\n%8X virtual address\n%8X size of raw data\n"
          "%8X file pointer to raw data\n%8X flags\n",
          i + 1, s.name, s.virtual_size, s.virtual_address, s.raw_size, s.raw_offset, s.characteristics);
      json +=
          absl::StrFormat(R"(%s{"name":%s,"virtual_address":"0x%x","virtual_size":"0x%x","characteristics":"0x%x"})",
                          i ? "," : "", sdk::quote(s.name), s.virtual_address, s.virtual_size, s.characteristics);
    }
    json += "]";
  }
  result_json_ = json + "}";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
