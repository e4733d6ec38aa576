// Unit tests of toolhost::elf and toolhost::disasm against the fixture program, built by the
// test CMake twice (with symbols and stripped); expected addresses come from `nm`, read at
// test time, never hard-coded.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <toolhost/disasm/decoder.hpp>
#include <toolhost/elf/elf_file.hpp>

namespace {

// Function symbols `nm` reports for `path`: name -> address.
std::map<std::string, uint64_t> nm_functions(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("nm " + path).c_str(), "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::array<char, 512> line{};
  while (fgets(line.data(), line.size(), pipe.get()) != nullptr) {
    unsigned long long addr = 0;
    char type = 0;
    char name[400];
    if (std::sscanf(line.data(), "%llx %c %399s", &addr, &type, name) == 3 && (type == 'T' || type == 't')) {
      out[name] = addr;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("elf_file lists the function symbols nm reports", "[elf]") {
  auto file = toolhost::elf::elf_file::open(TEST_FIXTURE_DIR "/license");
  REQUIRE(file.ok());
  CHECK_FALSE(file->stripped());
  CHECK(file->is_64());
  CHECK(file->machine_name() == "x86-64");
  const auto expected = nm_functions(TEST_FIXTURE_DIR "/license");
  REQUIRE(expected.count("check_license") == 1);
  for (const char* name : {"check_license", "hash_key", "compare_hash", "main", "print_banner"}) {
    const auto* f = file->find_function(name);
    REQUIRE(f != nullptr);
    CHECK(f->address == expected.at(name));
    CHECK(f->size > 0);
    CHECK(file->function_at(f->address + f->size - 1) == f);
    CHECK(file->symbol_near(f->address + 1)->name == name);
  }
  const auto* text = file->find_section(".text");
  REQUIRE(text != nullptr);
  CHECK(text->executable());
  CHECK(file->section_at(file->entry()) == text);
}

TEST_CASE("elf_file reads bytes by virtual address like the file holds them", "[elf]") {
  auto file = toolhost::elf::elf_file::open(TEST_FIXTURE_DIR "/license");
  REQUIRE(file.ok());
  const auto* text = file->find_section(".text");
  REQUIRE(text != nullptr);
  auto bytes = file->read(text->address, 16);
  REQUIRE(bytes.ok());
  CHECK(*bytes == std::string(file->bytes().substr(text->offset, 16)));
  CHECK(file->file_offset(text->address) == text->offset);
  CHECK_FALSE(file->read(0x10, 4).ok());
}

TEST_CASE("elf_file reports a stripped file and refuses a non-ELF one", "[elf]") {
  auto stripped = toolhost::elf::elf_file::open(TEST_FIXTURE_DIR "/license-stripped");
  REQUIRE(stripped.ok());
  CHECK(stripped->stripped());
  CHECK(stripped->find_function("check_license") == nullptr);

  auto text = toolhost::elf::elf_file::parse("#!/bin/sh\necho hi\n", "script.sh");
  REQUIRE_FALSE(text.ok());
  CHECK(std::string(text.status().message()) == "script.sh is not an ELF file");
  CHECK_FALSE(toolhost::elf::elf_file::open("/nonexistent/file").ok());
}

TEST_CASE("elf_file lists the imports the loader binds, as readelf -r shows them", "[elf]") {
  auto file = toolhost::elf::elf_file::open(TEST_FIXTURE_DIR "/license-stripped");
  REQUIRE(file.ok());
  // readelf -r: name -> relocation offset.
  std::map<std::string, uint64_t> expected;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("readelf -rW " TEST_FIXTURE_DIR "/license-stripped", "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::array<char, 512> line{};
  while (fgets(line.data(), line.size(), pipe.get()) != nullptr) {
    unsigned long long offset = 0, info = 0, value = 0;
    char type[64], name[256];
    if (std::sscanf(line.data(), "%llx %llx %63s %llx %255s", &offset, &info, type, &value, name) == 5) {
      std::string n = name;
      expected[n.substr(0, n.find('@'))] = offset;
    }
  }
  REQUIRE(expected.count("puts") == 1);
  REQUIRE(expected.count("printf") == 1);
  for (const auto& [name, slot] : expected) {
    INFO(name);
    const auto* imp = file->import_at_slot(slot);
    REQUIRE(imp != nullptr);
    CHECK(imp->name == name);
  }
  CHECK(file->imports().size() == expected.size());
}

TEST_CASE("decoder decodes calls, jumps and returns with their targets", "[disasm]") {
  toolhost::disasm::decoder d;
  // call rel32 to 0x1000 + 5 + 0x10
  const std::string call = std::string("\xe8\x10\x00\x00\x00", 5);
  auto c = d.decode(0x1000, call);
  REQUIRE(c.ok());
  CHECK(c->length == 5);
  CHECK(c->is_call());
  CHECK(c->target == 0x1015);
  CHECK(c->text == "call 0x0000000000001015");

  auto j = d.decode(0x2000, std::string("\x74\xfe", 2));  // je to itself
  REQUIRE(j.ok());
  CHECK(j->kind == toolhost::disasm::flow::conditional_jump);
  CHECK(j->target == 0x2000);

  auto r = d.decode(0, std::string("\xc3", 1));
  REQUIRE(r.ok());
  CHECK(r->is_ret());
  CHECK_FALSE(r->falls_through());

  auto lea = d.decode(0x3000, std::string("\x48\x8d\x3d\x00\x01\x00\x00", 7));  // lea rdi, [rip+0x100]
  REQUIRE(lea.ok());
  CHECK(lea->memory_target == 0x3107);
  CHECK(lea->mnemonic == "lea");

  auto got = d.decode(0x401030, std::string("\xff\x25\xca\x2f\x00\x00", 6));  // jmp qword ptr [rip+0x2fca]
  REQUIRE(got.ok());
  CHECK(got->kind == toolhost::disasm::flow::jump);
  CHECK_FALSE(got->target);
  CHECK(got->memory_target == 0x404000);
  toolhost::disasm::decoder d32(toolhost::disasm::mode::x86_32);
  auto abs = d32.decode(0x8049030, std::string("\xff\x25\x0c\xa0\x04\x08", 6));  // jmp dword ptr [0x804a00c]
  REQUIRE(abs.ok());
  CHECK(abs->memory_target == 0x804a00c);
  auto fs = d.decode(0, std::string("\x64\x48\x8b\x04\x25\x28\x00\x00\x00", 9));  // mov rax, fs:[0x28]
  REQUIRE(fs.ok());
  CHECK_FALSE(fs->memory_target);

  auto mov = d.decode(0, std::string("\xbf\x36\x11\x40\x00", 5));  // mov edi, 0x401136
  REQUIRE(mov.ok());
  CHECK(mov->immediate == 0x401136);

  CHECK(d.decode(0, std::string("\xe8\x10", 2)).status().code() == absl::StatusCode::kOutOfRange);
  CHECK_FALSE(d.decode(0, std::string()).ok());
}

TEST_CASE("decoder finds the fixture's direct calls the way objdump shows them", "[disasm]") {
  auto file = toolhost::elf::elf_file::open(TEST_FIXTURE_DIR "/license");
  REQUIRE(file.ok());
  const auto* main_fn = file->find_function("main");
  const auto* check = file->find_function("check_license");
  REQUIRE(main_fn != nullptr);
  REQUIRE(check != nullptr);
  auto code = file->read(main_fn->address, main_fn->size);
  REQUIRE(code.ok());
  toolhost::disasm::decoder d;
  auto insns = d.decode_all(main_fn->address, std::span(reinterpret_cast<const uint8_t*>(code->data()), code->size()));
  bool calls_check = false;
  uint64_t covered = 0;
  for (const auto& insn : insns) {
    covered += insn.length;
    if (insn.is_call() && insn.target == check->address) calls_check = true;
  }
  CHECK(calls_check);
  CHECK(covered == main_fn->size);
  CHECK(insns.back().is_ret());
}
