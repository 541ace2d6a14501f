// Operators on template values with Python's meaning: truthiness, ==, ordering, + - * / // % **, `in`,
// len(), iteration, subscripts and slices, and jinja2's attribute lookup (x.y tries the attribute, then
// the item; x['y'] the item, then the attribute). Failures are ValueError (the evaluator adds the line).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "data/chat/value.h"

namespace gtpo::data::chat {

bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// a < b as Python orders them (numbers, strings, lists); other pairs are a ValueError.
bool less(const Value& a, const Value& b);
// OP is one of + - * / // % ** ; MAX_BYTES caps what a repetition or concatenation may build.
Value arithmetic(const std::string& op, const Value& a, const Value& b, std::size_t max_bytes);
Value negate(const Value& v);
bool contains(const Value& container, const Value& item);
std::size_t length(const Value& v);
// The items a for loop visits: list items, dict keys, string code points; Undefined is empty.
std::vector<Value> iterate(const Value& v);
Value subscript(const Value& container, const Value& key);
Value slice(const Value& container, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
            const std::optional<int64_t>& step);
// x.NAME: dict and str methods, namespace attributes, dict items; Undefined when there is none.
Value get_attribute(const Value& object, const std::string& name);
double as_double(const Value& v);  // int/float/bool

}  // namespace gtpo::data::chat
