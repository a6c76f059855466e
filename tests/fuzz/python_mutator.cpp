#include "python_mutator.h"

#include <array>
#include <cctype>
#include <random>

namespace cellscope::fuzz {

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Tokens worth inserting: keywords, the MindSpore API the analyser models, edge-case numbers and
// the punctuation of calls, subscripts and blocks.
constexpr std::array<std::string_view, 72> kDictionary = {
    "def",
    "class",
    "return",
    "if",
    "else",
    "elif",
    "for",
    "while",
    "in",
    "not",
    "and",
    "or",
    "lambda",
    "yield",
    "import",
    "from",
    "as",
    "with",
    "try",
    "except",
    "raise",
    "None",
    "True",
    "False",
    "self",
    "super().__init__()",
    "construct",
    "nn.Cell",
    "nn.Conv2d",
    "nn.Dense",
    "nn.BatchNorm2d",
    "nn.ReLU()",
    "nn.SequentialCell",
    "nn.CellList",
    "ops.matmul",
    "ops.concat",
    "ops.reshape",
    "ops.transpose",
    "ops.Reshape()",
    "Tensor",
    "Parameter",
    "mindspore.float16",
    "x.shape",
    "x.view",
    "range",
    "len",
    "isinstance",
    "getattr",
    "0",
    "1",
    "-1",
    "2",
    "3",
    "2**31",
    "2**63",
    "1e308",
    "0.5",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "=",
    ".",
    "*",
    "**",
    "\n    ",
    "\n        ",
    "\n",
    "'s'",
    "*args",
};

constexpr std::array<std::string_view, 9> kNumbers = {"0",     "-1",     "1",     "65536", "2**31",
                                                      "2**62", "-2**63", "1e308", "3.5"};

}  // namespace

std::vector<std::pair<size_t, size_t>> python_tokens(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    size_t start = i;
    if (c == '\n') {
      ++i;  // a line break with the indentation after it
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    } else if (is_name_char(c)) {
      while (i < text.size() && (is_name_char(text[i]) || text[i] == '.')) ++i;
    } else if (c == '\'' || c == '"') {
      ++i;
      while (i < text.size() && text[i] != c && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
      i = std::min(i + 1, text.size());
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      ++i;
      if (i < text.size() && (text[i] == '=' || text[i] == c)) ++i;  // ==, **, //, ->
    }
    out.emplace_back(start, i);
  }
  return out;
}

std::string mutate_python(std::string_view text, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto tokens = python_tokens(text);
  std::string s(text);
  if (tokens.empty()) return s + std::string(kDictionary[pick(kDictionary.size())]);
  auto [b, e] = tokens[pick(tokens.size())];
  std::string tok(text.substr(b, e - b));
  switch (pick(7)) {
    case 0:  // delete a token
      s.erase(b, e - b);
      break;
    case 1:  // duplicate a token
      s.insert(e, " " + tok);
      break;
    case 2: {  // swap two tokens
      auto [b2, e2] = tokens[pick(tokens.size())];
      if (b2 == b) break;
      std::string other(text.substr(b2, e2 - b2));
      if (b2 < b) {
        s.replace(b, e - b, other);
        s.replace(b2, e2 - b2, tok);
      } else {
        s.replace(b2, e2 - b2, tok);
        s.replace(b, e - b, other);
      }
      break;
    }
    case 3:  // a token from the dictionary
      s.replace(b, e - b, kDictionary[pick(kDictionary.size())]);
      break;
    case 4: {  // a number to an edge value
      std::vector<size_t> numbers;
      for (size_t i = 0; i < tokens.size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(text[tokens[i].first])) != 0)
          numbers.push_back(i);
      if (numbers.empty()) break;
      auto [nb, ne] = tokens[numbers[pick(numbers.size())]];
      s.replace(nb, ne - nb, kNumbers[pick(kNumbers.size())]);
      break;
    }
    case 5: {  // duplicate a line elsewhere
      size_t ls = text.rfind('\n', b);
      ls = ls == std::string_view::npos ? 0 : ls + 1;
      size_t le = text.find('\n', b);
      le = le == std::string_view::npos ? text.size() : le + 1;
      std::string line(text.substr(ls, le - ls));
      auto [tb, te] = tokens[pick(tokens.size())];
      (void)te;
      size_t at = text.rfind('\n', tb);
      at = at == std::string_view::npos ? 0 : at + 1;
      if (line.empty() || line.back() != '\n') line += '\n';
      s.insert(at, line);
      break;
    }
    default: {  // delete a line
      size_t ls = text.rfind('\n', b);
      ls = ls == std::string_view::npos ? 0 : ls + 1;
      size_t le = text.find('\n', b);
      le = le == std::string_view::npos ? text.size() : le + 1;
      s.erase(ls, le - ls);
      break;
    }
  }
  return s;
}

}  // namespace cellscope::fuzz
