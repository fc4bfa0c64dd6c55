// Host memory sizes and limits (runtime/host_memory.hpp), and how an InputError keeps a message to one
// bounded printable line (runtime/core/error.hpp).
#include "runtime/host_memory.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <new>

#include "runtime/core/error.hpp"

using spsim::rt::parse_memory_size;

TEST_CASE("memory sizes: bytes with K, M, G, T binary multiples; anything else is no size") {
  CHECK(parse_memory_size("1000000000") == 1e9);
  CHECK(parse_memory_size("64K") == 64.0 * 1024);
  CHECK(parse_memory_size("512M") == 512.0 * 1024 * 1024);
  CHECK(parse_memory_size("2.5G") == 2.5 * 1024 * 1024 * 1024);
  CHECK(parse_memory_size("1T") == 1024.0 * 1024 * 1024 * 1024);
  CHECK(parse_memory_size("16GiB") == 16.0 * 1024 * 1024 * 1024);
  for (const char* bad : {"", "lots", "0", "-1G", "1X", "nan", "1e400", "G"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_memory_size(bad).has_value());
  }
}

TEST_CASE("the memory limit: --max-memory replaces the machine's; the machine's is positive here") {
  const auto asked = spsim::rt::host_memory_limit(123456.0);
  CHECK(asked.bytes == 123456.0);
  CHECK(asked.source == "--max-memory");
  const auto machine = spsim::rt::host_memory_limit();
  CHECK(machine.bytes > 0);
  CHECK_FALSE(machine.source.empty());
}

TEST_CASE("in_stage: an allocation failure is a ResourceError at memory naming the stage") {
  try {
    spsim::rt::in_stage("testing", []() -> int { throw std::bad_alloc(); });
    FAIL("expected a ResourceError");
  } catch (const spsim::ResourceError& e) {
    CHECK(e.where() == "memory");
    CHECK(e.message().rfind("out of memory while testing:", 0) == 0);
  }
  CHECK(spsim::rt::in_stage("testing", [] { return 7; }) == 7);
}

TEST_CASE("InputError: control characters escaped, an overlong text keeps its start and end") {
  const spsim::InputError e("a\nb", std::string("x\ty\x01z"));
  CHECK(e.where() == "a\\nb");
  CHECK(e.message() == "x\\ty\\x01z");
  CHECK(std::string(e.what()) == "a\\nb: x\\ty\\x01z");
  const std::string long_message = std::string(5000, 'a') + "valid choices: q, r";
  const spsim::InputError l("w", long_message);
  CHECK(l.message().size() <= 2000 + 5);
  CHECK(l.message().rfind("aaaa", 0) == 0);
  CHECK(l.message().find(" ... ") != std::string::npos);
  CHECK(l.message().size() >= 19);
  CHECK(l.message().substr(l.message().size() - 19) == "valid choices: q, r");  // the end survives
  // Cut on character boundaries: a run of two-byte characters stays valid UTF-8 (no lone continuation
  // byte right after the cut).
  std::string utf8;
  for (int i = 0; i < 3000; ++i) utf8 += "é";
  const spsim::InputError u("w", utf8);
  const auto cut = u.message().find(" ... ");
  REQUIRE(cut != std::string::npos);
  CHECK((static_cast<unsigned char>(u.message()[cut + 5]) & 0xc0) != 0x80);
}
