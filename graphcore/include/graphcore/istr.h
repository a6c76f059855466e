// Interned strings: one process-wide copy of each distinct text, shared by every holder.
// Graph nodes repeat a few operator and API names, a handful of file paths and one scope per
// Cell instance; an IStr is a pointer to the pooled copy, so a node stores 8 bytes per field
// and comparing two IStrs compares pointers. Interned texts live until the process exits.
#pragma once

#include <compare>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>

namespace graphcore {

class IStr {
 public:
  IStr() noexcept : s_(&empty_string()) {}
  // Interning constructors are explicit so that `istr == std::string` has one meaning (text
  // comparison); assignment from text is implicit.
  explicit IStr(std::string_view s) : s_(intern(s)) {}
  explicit IStr(const std::string& s) : s_(intern(s)) {}
  explicit IStr(const char* s) : s_(intern(s)) {}

  IStr& operator=(std::string_view s) {
    s_ = intern(s);
    return *this;
  }
  IStr& operator=(const std::string& s) {
    s_ = intern(s);
    return *this;
  }
  IStr& operator=(const char* s) {
    s_ = intern(s);
    return *this;
  }

  [[nodiscard]] const std::string& str() const noexcept { return *s_; }
  operator const std::string&() const noexcept {
    return *s_;
  }                                                           // NOLINT(google-explicit-constructor)
  operator std::string_view() const noexcept { return *s_; }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] const char* c_str() const noexcept { return s_->c_str(); }
  [[nodiscard]] const char* data() const noexcept { return s_->data(); }
  [[nodiscard]] size_t size() const noexcept { return s_->size(); }
  [[nodiscard]] size_t length() const noexcept { return s_->size(); }
  [[nodiscard]] bool empty() const noexcept { return s_->empty(); }
  [[nodiscard]] std::string::const_iterator begin() const noexcept { return s_->begin(); }
  [[nodiscard]] std::string::const_iterator end() const noexcept { return s_->end(); }
  [[nodiscard]] char operator[](size_t i) const noexcept { return (*s_)[i]; }

  friend bool operator==(const IStr& a, const IStr& b) noexcept { return a.s_ == b.s_; }
  friend bool operator==(const IStr& a, std::string_view b) noexcept { return *a.s_ == b; }
  friend std::strong_ordering operator<=>(const IStr& a, const IStr& b) noexcept {
    return a.s_ == b.s_ ? std::strong_ordering::equal : (*a.s_ <=> *b.s_);
  }
  friend std::strong_ordering operator<=>(const IStr& a, std::string_view b) noexcept {
    return std::string_view(*a.s_) <=> b;
  }

  friend std::string operator+(const IStr& a, std::string_view b) { return cat(*a.s_, b); }
  friend std::string operator+(const IStr& a, const std::string& b) { return cat(*a.s_, b); }
  friend std::string operator+(const IStr& a, const char* b) { return cat(*a.s_, b); }
  friend std::string operator+(const IStr& a, char b) {
    return cat(*a.s_, std::string_view(&b, 1));
  }
  friend std::string operator+(std::string_view a, const IStr& b) { return cat(a, *b.s_); }
  friend std::string operator+(const std::string& a, const IStr& b) { return cat(a, *b.s_); }
  friend std::string operator+(std::string&& a, const IStr& b) { return std::move(a += *b.s_); }
  friend std::string operator+(const char* a, const IStr& b) { return cat(a, *b.s_); }
  friend std::string operator+(char a, const IStr& b) {
    return cat(std::string_view(&a, 1), *b.s_);
  }
  friend std::string operator+(const IStr& a, const IStr& b) { return cat(*a.s_, *b.s_); }
  friend std::string& operator+=(std::string& a, const IStr& b) { return a += *b.s_; }

  friend std::ostream& operator<<(std::ostream& os, const IStr& s);

  // Number of distinct interned texts (for tests and diagnostics).
  static size_t pool_size();

 private:
  static const std::string& empty_string() noexcept;
  static const std::string* intern(std::string_view s);
  static std::string cat(std::string_view a, std::string_view b) {
    std::string r;
    r.reserve(a.size() + b.size());
    r.append(a).append(b);
    return r;
  }
  const std::string* s_;
};

}  // namespace graphcore

template <>
struct std::hash<graphcore::IStr> {
  size_t operator()(const graphcore::IStr& s) const noexcept {
    return std::hash<const void*>()(&s.str());
  }
};
