// Methods called on values in templates: str methods ("text".strip(), .split(), .startswith(), ...) and
// dict methods (.items(), .keys(), .values(), .get()). Mutating methods (list.append, dict.update) are not
// offered: transformers renders in jinja2's immutable sandbox, which refuses them too.
#pragma once
#include <optional>
#include <string>

#include "data/chat/value.h"

namespace gtpo::data::chat {

// OBJECT.NAME as a callable bound to OBJECT, or nullopt when OBJECT's type has no such method.
std::optional<Value> bound_method(const Value& object, const std::string& name);

}  // namespace gtpo::data::chat
