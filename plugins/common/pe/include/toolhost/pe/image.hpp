// toolhost::pe: a PE32 or PE32+ image, from a file or from a target's memory.
//
//   auto img = toolhost::pe::image::open_file("ntoskrnl.exe");
//   auto img = toolhost::pe::image::from_memory("nt", reader);   // reader(rva, out) -> bytes read
//   if (!img.ok()) return img.status();
//   auto cv = img->codeview();     // PDB name, GUID and age: what the symbol server is asked for
//   auto ex = img->exports();      // names, ordinals, RVAs, forwarders
//
// The headers and the section table are parsed when the image is made; everything else is read
// on demand, so a loaded image whose export or exception directory is paged out still opens.
// In memory a page may be missing: a read that reaches one fails with an Unavailable status that
// names the RVA (`is_hole` tells it apart), never with bytes made up. Every count, size and
// offset the image declares is checked before use; a bad one is an InvalidArgument error that
// names the image and the field.
//
// An image is a value: cheap to copy (the bytes are shared), safe to read from several threads.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::pe {

inline constexpr uint16_t kMachineI386 = 0x14c;
inline constexpr uint16_t kMachineAmd64 = 0x8664;
inline constexpr uint16_t kMachineArm64 = 0xaa64;

// Data directory indexes.
enum directory : int {
  kExportDirectory = 0,
  kImportDirectory = 1,
  kResourceDirectory = 2,
  kExceptionDirectory = 3,
  kSecurityDirectory = 4,
  kBaseRelocationDirectory = 5,
  kDebugDirectory = 6,
  kTlsDirectory = 9,
  kLoadConfigDirectory = 10,
  kIatDirectory = 12,
};

// Reads bytes of the image at `offset` (an RVA for a loaded image, a file offset for a file)
// into `out`; returns how many were read: a prefix of `out` that ends at the first byte that is
// not there (a missing page, the end of the file).
using read_fn = std::function<size_t(uint64_t offset, std::span<uint8_t> out)>;

enum class layout { file, memory };

struct section {
  std::string name;  // up to 8 characters (a long "/123" name is kept as written)
  uint32_t virtual_address = 0;
  uint32_t virtual_size = 0;
  uint32_t raw_offset = 0;  // PointerToRawData
  uint32_t raw_size = 0;    // SizeOfRawData
  uint32_t characteristics = 0;
  bool executable() const noexcept { return (characteristics & 0x20000000u) != 0; }
  // The section's extent in the loaded image (the larger of its virtual and raw sizes).
  uint32_t extent() const noexcept { return virtual_size != 0 ? virtual_size : raw_size; }
  bool contains(uint32_t rva) const noexcept { return rva >= virtual_address && rva - virtual_address < extent(); }
};

struct data_directory {
  uint32_t rva = 0;
  uint32_t size = 0;
};

struct headers {
  uint16_t machine = 0;
  uint16_t number_of_sections = 0;
  uint32_t timestamp = 0;  // TimeDateStamp (a hash in /Brepro images; the image server's key all the same)
  uint16_t characteristics = 0;
  bool pe32_plus = false;  // PE32+ (64-bit) optional header
  uint8_t linker_major = 0, linker_minor = 0;
  uint32_t entry_point = 0;  // RVA; 0 when there is none
  uint64_t image_base = 0;   // the preferred base
  uint32_t section_alignment = 0, file_alignment = 0;
  uint16_t os_major = 0, os_minor = 0, image_major = 0, image_minor = 0, subsystem_major = 0, subsystem_minor = 0;
  uint32_t size_of_image = 0;
  uint32_t size_of_headers = 0;
  uint32_t checksum = 0;
  uint16_t subsystem = 0;
  uint16_t dll_characteristics = 0;
  uint64_t stack_reserve = 0, stack_commit = 0;
  std::vector<data_directory> directories;  // NumberOfRvaAndSizes of them (at most 16)
  uint32_t pe_offset = 0;                   // e_lfanew
};

struct export_entry {
  uint32_t ordinal = 0;   // biased by the directory's Base, as a user writes it
  uint32_t rva = 0;       // 0 for a forwarder
  std::string name;       // empty for an export by ordinal only
  std::string forwarder;  // "NTDLL.RtlAllocateHeap" for a forwarded export
};

struct export_table {
  std::string dll_name;
  uint32_t ordinal_base = 0;
  uint32_t timestamp = 0;
  std::vector<export_entry> entries;  // by ordinal; empty slots left out
};

// One imported function and the IAT slot the loader writes its address into.
struct import_entry {
  std::string dll;   // "KERNEL32.dll", as the image names it
  std::string name;  // empty for an import by ordinal
  uint16_t hint = 0;
  uint16_t ordinal = 0;  // an import by ordinal only
  uint32_t slot = 0;     // RVA of its IAT entry
};

// IMAGE_DEBUG_DIRECTORY.
struct debug_entry {
  uint32_t type = 0;  // 2 CodeView, 16 Repro, ...
  uint32_t timestamp = 0;
  uint16_t major = 0, minor = 0;
  uint32_t size = 0;
  uint32_t rva = 0;          // AddressOfRawData
  uint32_t file_offset = 0;  // PointerToRawData
};

// The CodeView record that names the image's PDB.
struct codeview {
  bool rsds = true;                // RSDS (GUID) record; false for an old NB10 (signature) record
  std::array<uint8_t, 16> guid{};  // as stored: Data1..Data3 little-endian, then Data4
  uint32_t signature = 0;          // NB10 only
  uint32_t age = 0;
  std::string pdb_path;  // as the linker wrote it ("ntkrnlmp.pdb", "C:\\...\\x.pdb")
  // The last component of pdb_path: the file name the symbol server is asked for.
  std::string pdb_name() const;
  // "{F59A9BF2-7A70-4062-4C4C-44205044422E}"
  std::string guid_text() const;
  // The symbol-store key: the GUID as 32 uppercase hex digits (Data1..3 as numbers, Data4 as
  // stored) followed by the age in hex without padding (the signature for NB10).
  std::string key() const;
};

// The symbol-store key of an image itself: TimeDateStamp (%08X) then SizeOfImage (%X).
std::string image_key(uint32_t timestamp, uint32_t size_of_image);

// RUNTIME_FUNCTION of .pdata (x64).
struct runtime_function {
  uint32_t begin = 0, end = 0, unwind_info = 0;  // RVAs
};

// One UNWIND_CODE slot group, decoded.
struct unwind_code {
  uint8_t prolog_offset = 0;  // offset in the prolog of the end of the instruction
  uint8_t op = 0;             // UWOP_*
  uint8_t info = 0;           // OpInfo: the register number, or the op's variant
  uint32_t value = 0;         // allocation size or save offset (already scaled), else 0
};

// UNWIND_CODE operations.
enum unwind_op : uint8_t {
  kPushNonvol = 0,
  kAllocLarge = 1,
  kAllocSmall = 2,
  kSetFpreg = 3,
  kSaveNonvol = 4,
  kSaveNonvolFar = 5,
  kEpilog = 6,  // version 2: an epilog location; version 1: SAVE_XMM
  kSpareCode = 7,
  kSaveXmm128 = 8,
  kSaveXmm128Far = 9,
  kPushMachframe = 10,
};

struct unwind_info {
  uint8_t version = 0;
  uint8_t flags = 0;  // UNW_FLAG_EHANDLER 1, UHANDLER 2, CHAININFO 4
  uint8_t prolog_size = 0;
  uint8_t frame_register = 0;               // 0: none
  uint8_t frame_offset = 0;                 // scaled: the offset from rsp, in bytes
  std::vector<unwind_code> codes;           // in the order stored (the reverse of the prolog's)
  std::optional<runtime_function> chained;  // UNW_FLAG_CHAININFO
  uint32_t handler = 0;                     // RVA of the exception handler, if any
};

// True when `status` says a read reached bytes that are not present (a missing page).
bool is_hole(const absl::Status& status);

class image {
 public:
  // Reads a whole image file. Errors name the file.
  static absl::StatusOr<image> open_file(const std::filesystem::path& path);
  // An image file already in memory; `name` is used in messages.
  static absl::StatusOr<image> from_bytes(std::string bytes, std::string name);
  // A loaded image read through `read` by RVA (offset from its base). The header page must be
  // readable; any other page may be missing.
  static absl::StatusOr<image> from_memory(std::string name, read_fn read);

  const std::string& name() const noexcept { return name_; }
  layout image_layout() const noexcept { return layout_; }
  const headers& header() const noexcept { return headers_; }
  bool is_64() const noexcept { return headers_.pe32_plus; }
  const std::vector<section>& sections() const noexcept { return sections_; }
  const section* section_at(uint32_t rva) const noexcept;
  const section* find_section(std::string_view name) const noexcept;
  data_directory directory_entry(int index) const noexcept;

  // `size` bytes at `rva`. In a file, bytes a section declares beyond its raw data read as zero
  // (the loader zero-fills them); in memory a missing page is an error (is_hole).
  absl::StatusOr<std::string> read(uint32_t rva, size_t size) const;
  // A NUL-terminated string at `rva`, at most `max` bytes.
  absl::StatusOr<std::string> read_string(uint32_t rva, size_t max = 512) const;

  absl::StatusOr<export_table> exports() const;
  // The import directory, DLL by DLL in the image's order.
  absl::StatusOr<std::vector<import_entry>> imports() const;
  // A file image's bytes as read (empty for an image in memory).
  std::string_view file_bytes() const noexcept {
    return file_bytes_ ? std::string_view(*file_bytes_) : std::string_view();
  }
  absl::StatusOr<std::vector<debug_entry>> debug_entries() const;
  // The CodeView record; nullopt when the image has none.
  absl::StatusOr<std::optional<pe::codeview>> codeview() const;
  // .pdata, sorted by begin as the linker wrote it (checked); empty for non-x64 images.
  absl::StatusOr<std::vector<runtime_function>> runtime_functions() const;
  // The entry whose [begin, end) holds `rva`, by binary search over .pdata; nullopt outside
  // every function (a leaf function has none).
  absl::StatusOr<std::optional<runtime_function>> function_entry(uint32_t rva) const;
  absl::StatusOr<pe::unwind_info> unwind(uint32_t unwind_info_rva) const;

 private:
  image() = default;
  absl::Status parse_headers();
  absl::Status error(std::string_view what) const;  // InvalidArgument naming the image

  std::string name_;
  layout layout_ = layout::file;
  read_fn read_;
  std::shared_ptr<const std::string> file_bytes_;  // for file images
  headers headers_;
  std::vector<section> sections_;
};

}  // namespace toolhost::pe
