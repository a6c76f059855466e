#include "agent/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "files.h"

namespace cellscope::agent {

namespace fs = std::filesystem;

namespace {

std::string openssl_reason() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  std::array<char, 256> buf{};
  ERR_error_string_n(e, buf.data(), buf.size());
  ERR_clear_error();
  return buf.data();
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + openssl_reason());
}

std::string to_hex(const unsigned char* p, size_t n, bool upper_colon) {
  static constexpr char kLower[] = "0123456789abcdef";
  static constexpr char kUpper[] = "0123456789ABCDEF";
  const char* digits = upper_colon ? kUpper : kLower;
  std::string out;
  out.reserve(n * 3);
  for (size_t i = 0; i < n; ++i) {
    if (upper_colon && i > 0) out += ':';
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};

std::string bio_string(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx == nullptr || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(impl_->ctx);
    impl_->ctx = nullptr;
    fail("SHA-256");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::update(std::string_view data) {
  if (EVP_DigestUpdate(impl_->ctx, data.data(), data.size()) != 1) fail("SHA-256");
}

std::string Sha256::hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, md.data(), &n) != 1) fail("SHA-256");
  return to_hex(md.data(), n, false);
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

std::string sha256_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  Sha256 h;
  std::vector<char> buf(size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = in.gcount();
    if (got > 0) h.update(std::string_view(buf.data(), static_cast<size_t>(got)));
  }
  if (in.bad()) throw std::runtime_error("cannot read " + path.string());
  return h.hex();
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // The lengths are not secret (a token file's length); the contents are compared in full.
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) fail("random bytes");
  return to_hex(buf.data(), buf.size(), false);
}

std::string fingerprint_of_der(std::string_view der) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_Digest(der.data(), der.size(), md.data(), &n, EVP_sha256(), nullptr) != 1)
    fail("certificate fingerprint");
  return to_hex(md.data(), n, true);
}

namespace {

std::string fingerprint_of_pem(const std::string& pem, const fs::path& file) {
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::unique_ptr<X509, X509Deleter> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) fail("cannot read the certificate " + file.string());
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert.get(), &der);
  if (len <= 0) fail("cannot encode the certificate " + file.string());
  std::string out = fingerprint_of_der(
      std::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(len)));
  OPENSSL_free(der);
  return out;
}

}  // namespace

TlsIdentity load_or_create_identity(const fs::path& dir) {
  TlsIdentity id{dir / "agent.crt", dir / "agent.key", "", false};
  std::error_code ec;
  if (!fs::exists(id.cert_file, ec) || !fs::exists(id.key_file, ec)) {
    std::unique_ptr<EVP_PKEY, PkeyDeleter> key(EVP_EC_gen("P-256"));
    if (!key) fail("cannot make the agent's key");
    std::unique_ptr<X509, X509Deleter> cert(X509_new());
    if (!cert) fail("cannot make the agent's certificate");
    X509_set_version(cert.get(), 2);
    std::array<unsigned char, 16> serial{};
    if (RAND_bytes(serial.data(), serial.size()) != 1) fail("random serial");
    serial[0] &= 0x7f;
    BIGNUM* bn = BN_bin2bn(serial.data(), serial.size(), nullptr);
    ASN1_INTEGER* sn = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
    BN_free(bn);
    if (sn == nullptr) fail("certificate serial");
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 60L * 60 * 24 * 3650);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("cellscope-agent"), -1, -1,
                               0);
    X509_set_issuer_name(cert.get(), name);
    if (X509_set_pubkey(cert.get(), key.get()) != 1 ||
        X509_sign(cert.get(), key.get(), EVP_sha256()) == 0)
      fail("cannot sign the agent's certificate");
    std::unique_ptr<BIO, BioDeleter> kb(BIO_new(BIO_s_mem()));
    std::unique_ptr<BIO, BioDeleter> cb(BIO_new(BIO_s_mem()));
    if (PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
        PEM_write_bio_X509(cb.get(), cert.get()) != 1)
      fail("cannot encode the agent's identity");
    fs::create_directories(dir, ec);
    // The key 0600 from the start: its temporary is never readable by others either.
    server::write_file_atomic(id.key_file, bio_string(kb.get()), 0600);
    server::write_file_atomic(id.cert_file, bio_string(cb.get()), 0644);
    id.created = true;
  }
  struct stat st {};
  if (::stat(id.key_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    throw std::runtime_error(id.key_file.string() +
                             " is readable by other users: chmod 600 it (or delete it and the "
                             "certificate to make new ones)");
  }
  id.fingerprint = fingerprint_of_pem(read_all(id.cert_file), id.cert_file);
  return id;
}

}  // namespace cellscope::agent
