// JSON Schema text for the tools' arguments and answers, built from a few pieces so the shapes
// REA's tools share (pages, procedure identities, reference edges) are written once.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace toolhost::analysis_server::schema {

using property = std::pair<std::string_view, std::string>;

// {"type":"object","properties":{...},"required":[...]}; `closed` adds additionalProperties:false.
std::string object(std::initializer_list<property> properties, std::initializer_list<std::string_view> required,
                   bool closed = true);
// The same from lists built at run time (a shape that extends another).
std::string object(std::span<const property> properties, std::span<const std::string_view> required,
                   bool closed = true);
std::string array(const std::string& items);
std::string nullable(const std::string& s);
std::string one_of(std::initializer_list<std::string> options);
std::string text(std::string_view description = {});
std::string integer(std::string_view description = {});
std::string flag(std::string_view description = {});
std::string constant(std::string_view json_value);
std::string enumeration(std::initializer_list<std::string_view> values, std::string_view description = {});
std::string ranged(int64_t low, int64_t high, int64_t fallback, std::string_view description);

// Arguments most tools take.
std::string document_argument();
std::string procedure_argument();
std::string address_argument();
std::string offset_argument();
std::string limit_argument(int64_t fallback, int64_t high);

// REA's shapes.
std::string page(const std::string& item);     // {items, offset, limit, total, next_offset, has_more}
std::string bounded(const std::string& item);  // {items, total, returned, truncated, next_offset}
std::string classification();
std::string identity();  // {address, name, classification}
std::string reference_edge();
std::string containing();    // resolve_containing_procedure's answer
std::string address_list();  // string[]

// The whole answer: {result, evidence_id, evidence_uri} or, for session tools, {result}.
std::string envelope(const std::string& result, bool with_evidence);

}  // namespace toolhost::analysis_server::schema
