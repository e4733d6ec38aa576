// Facts about one procedure that several tools report (procedure_*, analyze_function,
// get_call_graph).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toolhost/analysis/function_body.hpp>
#include <toolhost/analysis/names.hpp>
#include <toolhost/analysis/program_analysis.hpp>

namespace toolhost::analysis_server {

namespace an = toolhost::analysis;

// What these answers cannot say, in the words the answers and their evidence use.
inline constexpr const char* kNoDecompiler =
    "No decompiler runs in this server: there is no pseudocode. Read the procedure with procedure_assembly, "
    "read_function_instructions or analyze_function.";
inline constexpr const char* kNoLocals = "Local variables are not recovered: locals is empty.";
inline constexpr const char* kNoCode = "The procedure has no bytes in the file to decode.";
inline constexpr const char* kInstructionText =
    "Instructions are Zydis's Intel syntax with absolute targets; <name> follows a target the analysis has a name for.";

// The demangled C++ name when the symbol is mangled (it spells the parameter types); else nullopt.
std::optional<std::string> signature_of(const an::function& f);
// "0x401136: call 0x401030 <puts>"
std::string instruction_line(const an::program_analysis& a, const disasm::instruction& insn);
// Entry addresses of the procedures that call `f` directly, and of those `f` calls directly.
std::set<uint64_t> caller_starts(const an::program_analysis& a, const an::function& f);
std::set<uint64_t> callee_starts(const an::program_analysis& a, const an::function& f);
// The addresses of the instructions that refer to `address` exactly.
std::set<uint64_t> reference_sources(const an::program_analysis& a, uint64_t address);
// The references the decoded instructions make (or, `incoming`, receive; `only_from_outside`
// drops those from the procedure itself), by source then target.
std::vector<disasm::code_reference> reference_edges(const an::program_analysis& a, const an::function_body& body,
                                                    bool incoming, bool only_from_outside);

}  // namespace toolhost::analysis_server
