// A structure-aware mutator for Python source: it edits whole tokens (names, numbers, strings,
// operators, line breaks with their indentation) instead of bytes, so that most mutants still
// parse and reach the evaluator, the optimizer and the hardware model rather than dying in the
// tokenizer. Used by python_fuzz.cpp and config_fuzz.cpp (libFuzzer's custom mutator), alternating
// with libFuzzer's own byte-level mutations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cellscope::fuzz {

// [begin, end) byte ranges of the tokens of `text` (a rough Python lexer: never fails).
std::vector<std::pair<size_t, size_t>> python_tokens(std::string_view text);

// One token-level edit of `text` chosen by `seed`: delete, duplicate, swap or replace a token
// (from the text itself or from a dictionary of Python and MindSpore tokens), duplicate or
// delete a line, change a number to an edge value. Returns the mutant.
std::string mutate_python(std::string_view text, uint32_t seed);

}  // namespace cellscope::fuzz

#ifdef CELLSCOPE_FUZZING
#include <cstring>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace cellscope::fuzz {
// The body of a harness's LLVMFuzzerCustomMutator: half the mutations are token edits
// (mutate_python), half libFuzzer's own.
inline size_t mutate_python_or_bytes(uint8_t* data, size_t size, size_t max_size,
                                     unsigned int seed) {
  if (seed % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string mutant =
      mutate_python(std::string_view(reinterpret_cast<const char*>(data), size), seed);
  if (mutant.size() > max_size) mutant.resize(max_size);
  std::memcpy(data, mutant.data(), mutant.size());
  return mutant.size();
}
}  // namespace cellscope::fuzz
#endif
