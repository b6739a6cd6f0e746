#include "tests/observability/dashboard.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace breaker::testing {
namespace {

using Json = nlohmann::json;
using Variables = std::map<std::string, std::string, std::less<>>;

std::string StringField(const Json& object, const char* field) {
  if (!object.is_object() || !object.contains(field) || !object[field].is_string()) return "";
  return object[field].get<std::string>();
}

bool BoolField(const Json& object, const char* field) {
  return object.is_object() && object.contains(field) && object[field].is_boolean() &&
         object[field].get<bool>();
}

// "17s": Prometheus durations in whole seconds, rounded up (never an empty window).
std::string Seconds(absl::Duration duration) {
  return absl::StrCat(static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(duration))), "s");
}

// Grafana's built-in variables. $__interval is the range over the panel's points (Grafana
// takes at most about a thousand), never below the scrape interval; $__rate_interval is
// max($__interval + scrape interval, 4 x scrape interval), the shortest window rate() is sure
// to find two samples in.
Variables BuiltIns(const DashboardContext& context) {
  const absl::Duration range = context.to - context.from;
  const absl::Duration interval = std::max(context.scrape_interval, range / 1000);
  const absl::Duration rate_interval =
      std::max(interval + context.scrape_interval, 4 * context.scrape_interval);
  const int64_t range_seconds = static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(range)));
  return {
      {"__interval", Seconds(interval)},
      {"__interval_ms", absl::StrCat(absl::ToInt64Milliseconds(interval))},
      {"__rate_interval", Seconds(rate_interval)},
      {"__range", absl::StrCat(range_seconds, "s")},
      {"__range_s", absl::StrCat(range_seconds)},
      {"__range_ms", absl::StrCat(range_seconds * 1000)},
      {"__from", absl::StrCat(absl::ToUnixMillis(context.from))},
      {"__to", absl::StrCat(absl::ToUnixMillis(context.to))},
  };
}

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `text` with every $name, ${name}, ${name:format} and [[name]] replaced by its value.
// `where` names the text's owner in the error for an undefined variable.
absl::StatusOr<std::string> Substitute(absl::string_view text, const Variables& variables,
                                       absl::string_view where) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    std::string name;
    size_t end = i;
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      end = text.find('}', i);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": '${' without '}' in ", text));
      }
      // The format (":regex", ":pipe", ...) is Grafana's choice of escaping; the values here
      // need none beyond what the variables already carry.
      name = std::string(text.substr(i + 2, end - i - 2));
      name = name.substr(0, name.find(':'));
      ++end;
    } else if (text[i] == '$' && i + 1 < text.size() && NameChar(text[i + 1])) {
      end = i + 1;
      while (end < text.size() && NameChar(text[end])) ++end;
      name = std::string(text.substr(i + 1, end - i - 1));
    } else if (absl::StartsWith(text.substr(i), "[[") &&
               text.find("]]", i) != absl::string_view::npos) {
      end = text.find("]]", i);
      const absl::string_view inside = text.substr(i + 2, end - i - 2);
      if (std::all_of(inside.begin(), inside.end(), NameChar) && !inside.empty()) {
        name = std::string(inside);
        end += 2;
      }
    }
    if (name.empty()) {
      out.push_back(text[i++]);
      continue;
    }
    auto it = variables.find(name);
    if (it == variables.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " uses $", name, ", which the dashboard does not define (templating.list)"));
    }
    out += it->second;
    i = end;
  }
  return out;
}

// Grafana's regex escaping of a value for a multi-valued Prometheus variable: the value goes
// into a PromQL string literal, so each regex escape's backslash is itself escaped ("\\.").
std::string RegexEscape(absl::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\\\\\";
    } else if (absl::string_view("^$.|?*+()[]{}'").find(c) != absl::string_view::npos) {
      out += "\\\\";
      out.push_back(c);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A variable's values as Grafana puts them into an expression.
std::string Format(const Json& variable, const std::vector<std::string>& values) {
  const bool all = BoolField(variable, "includeAll");
  if (all && !StringField(variable, "allValue").empty()) return StringField(variable, "allValue");
  if (!all && !BoolField(variable, "multi")) return values.front();
  std::vector<std::string> escaped;
  for (const std::string& value : values) escaped.push_back(RegexEscape(value));
  return escaped.size() == 1 ? escaped.front()
                             : absl::StrCat("(", absl::StrJoin(escaped, "|"), ")");
}

// The values of a variable's optional regex filter ("/pattern/"): those it matches, or their
// first capture group.
absl::StatusOr<std::vector<std::string>> Filter(const Json& variable,
                                                std::vector<std::string> values,
                                                const std::string& where) {
  std::string pattern = StringField(variable, "regex");
  if (pattern.empty()) return values;
  if (pattern.size() >= 2 && pattern.front() == '/') {
    pattern = pattern.substr(1, pattern.rfind('/') - 1);
  }
  std::regex regex;
  try {
    regex = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": regex '", pattern, "' does not compile: ", error.what()));
  }
  std::vector<std::string> kept;
  for (const std::string& value : values) {
    std::smatch match;
    if (!std::regex_search(value, match, regex)) continue;
    kept.push_back(match.size() > 1 ? match[1].str() : value);
  }
  return kept;
}

// label_values(label) or label_values(selector, label), its variables substituted.
absl::StatusOr<std::vector<std::string>> QueryValues(const Json& variable,
                                                     const Variables& variables,
                                                     const DashboardContext& context,
                                                     const std::string& where) {
  const Json& query_field = variable.contains("query") ? variable["query"] : Json();
  // Grafana 10 saves the query as an object ({"query": "...", "refId": ...}) or as text.
  const std::string query =
      query_field.is_string() ? query_field.get<std::string>() : StringField(query_field, "query");
  absl::StatusOr<std::string> text = Substitute(query, variables, where);
  if (!text.ok()) return text.status();
  absl::string_view arguments = absl::StripAsciiWhitespace(*text);
  if (!absl::ConsumePrefix(&arguments, "label_values(") || !absl::ConsumeSuffix(&arguments, ")")) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": query '", *text, "' is not label_values(...), the one form evaluated here"));
  }
  const size_t comma = arguments.rfind(',');
  const absl::string_view selector = comma == absl::string_view::npos
                                         ? ""
                                         : absl::StripAsciiWhitespace(arguments.substr(0, comma));
  const absl::string_view label = absl::StripAsciiWhitespace(
      comma == absl::string_view::npos ? arguments : arguments.substr(comma + 1));
  absl::StatusOr<std::vector<std::string>> values = context.label_values(selector, label);
  if (!values.ok()) return values.status();
  return Filter(variable, *std::move(values), where);
}

// The current value(s) a non-query variable holds, or its options.
std::vector<std::string> CurrentValues(const Json& variable) {
  const Json current = variable.contains("current") ? variable["current"] : Json();
  if (current.is_object() && current.contains("value")) {
    const Json& value = current["value"];
    if (value.is_string() && value.get<std::string>() != "$__all")
      return {value.get<std::string>()};
    if (value.is_array() && !value.empty() && value[0].is_string() &&
        value[0].get<std::string>() != "$__all") {
      std::vector<std::string> values;
      for (const Json& each : value) {
        if (each.is_string()) values.push_back(each.get<std::string>());
      }
      return values;
    }
  }
  const std::string query = StringField(variable, "query");
  if (query.empty()) return {};
  std::vector<std::string> values;
  for (absl::string_view option : absl::StrSplit(query, ',')) {
    option = absl::StripAsciiWhitespace(option);
    // Custom options may read "label : value".
    const size_t colon = option.find(" : ");
    if (colon != absl::string_view::npos) option = option.substr(colon + 3);
    values.emplace_back(option);
  }
  return values;
}

absl::Status AddVariable(const Json& variable, const DashboardContext& context,
                         Variables& variables) {
  const std::string name = StringField(variable, "name");
  const std::string type = StringField(variable, "type");
  const std::string where = absl::StrCat("variable '", name, "' (", type, ")");
  if (name.empty()) {
    return absl::InvalidArgumentError("a templating variable has no name: give it one");
  }
  if (type == "datasource") {
    // Named in each panel's datasource, never inside an expression.
    variables[name] = StringField(variable, "query");
    return absl::OkStatus();
  }
  if (type == "adhoc") return absl::OkStatus();
  std::vector<std::string> values;
  if (type == "query") {
    absl::StatusOr<std::vector<std::string>> listed =
        QueryValues(variable, variables, context, where);
    if (!listed.ok()) return listed.status();
    values = *std::move(listed);
  } else {
    values = CurrentValues(variable);
  }
  if (values.empty()) {
    return absl::NotFoundError(
        absl::StrCat(where, " has no value: its query lists none while the fleet runs"));
  }
  variables[name] = type == "query" || type == "custom" ? Format(variable, values) : values.front();
  return absl::OkStatus();
}

absl::Status AddPanel(const Json& panel, absl::string_view row, const Variables& variables,
                      std::vector<PanelQuery>& queries) {
  const std::string title = StringField(panel, "title");
  if (StringField(panel, "type") == "row") {
    if (panel.contains("panels") && panel["panels"].is_array()) {
      for (const Json& nested : panel["panels"]) {
        if (absl::Status added = AddPanel(nested, title, variables, queries); !added.ok()) {
          return added;
        }
      }
    }
    return absl::OkStatus();
  }
  if (!panel.contains("targets") || !panel["targets"].is_array()) return absl::OkStatus();
  for (const Json& target : panel["targets"]) {
    const std::string expr = StringField(target, "expr");
    if (expr.empty() || BoolField(target, "hide")) continue;
    PanelQuery query;
    query.panel = row.empty() ? title : absl::StrCat(row, " / ", title);
    query.ref_id = StringField(target, "refId");
    absl::StatusOr<std::string> substituted = Substitute(
        expr, variables, absl::StrCat("panel '", query.panel, "' target ", query.ref_id));
    if (!substituted.ok()) return substituted.status();
    query.expr = *std::move(substituted);
    query.instant = BoolField(target, "instant") && !BoolField(target, "range");
    queries.push_back(std::move(query));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PanelQuery>> DashboardQueries(absl::string_view json,
                                                         const DashboardContext& context) {
  const Json dashboard = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (dashboard.is_discarded() || !dashboard.is_object()) {
    return absl::InvalidArgumentError("the dashboard is not a JSON object");
  }
  if (!dashboard.contains("panels") || !dashboard["panels"].is_array()) {
    return absl::InvalidArgumentError(
        "the dashboard has no 'panels' array (rows of schema versions before 16 are not read)");
  }
  Variables variables = BuiltIns(context);
  const Json templating = dashboard.contains("templating") ? dashboard["templating"] : Json();
  if (templating.is_object() && templating.contains("list") && templating["list"].is_array()) {
    // In order: a variable's query may use the ones before it.
    for (const Json& variable : templating["list"]) {
      if (absl::Status added = AddVariable(variable, context, variables); !added.ok()) return added;
    }
  }
  std::vector<PanelQuery> queries;
  // An expanded row's panels follow it at the top level; a collapsed row holds its own.
  std::string row;
  for (const Json& panel : dashboard["panels"]) {
    if (StringField(panel, "type") == "row") row = StringField(panel, "title");
    if (absl::Status added = AddPanel(panel, row, variables, queries); !added.ok()) return added;
  }
  return queries;
}

}  // namespace breaker::testing
