// io::Subprocess: lines in and out over pipes, a child that answers while still being fed, timeouts, a
// child that exits, its stderr tail, and kill.
#include <catch2/catch.hpp>
#include <string>

#include "runtime/error.h"
#include "runtime/io/subprocess.h"

using gtpo::io::Subprocess;

TEST_CASE("subprocess: lines go in and come back in order", "[subprocess]") {
  Subprocess cat("cat");
  const Subprocess::Exchange ex = cat.exchange("a\nbb\n\nccc\n", 4, 5.0);
  REQUIRE(ex.lines.size() == 4);
  CHECK(ex.lines[0] == "a");
  CHECK(ex.lines[1] == "bb");
  CHECK(ex.lines[2] == "");
  CHECK(ex.lines[3] == "ccc");
  CHECK_FALSE(ex.timed_out);
  CHECK_FALSE(ex.eof);
  // The same child again: it lives across exchanges.
  CHECK(cat.exchange("d\n", 1, 5.0).lines == std::vector<std::string>{"d"});
  CHECK(cat.unread().empty());
}

TEST_CASE("subprocess: a batch far larger than the pipe buffers does not deadlock", "[subprocess]") {
  // cat answers while we are still writing: 20000 lines of 100 bytes each way (2 MB).
  Subprocess cat("cat");
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::string(99, static_cast<char>('a' + i % 26)) + "\n";
  const Subprocess::Exchange ex = cat.exchange(text, 20000, 20.0);
  REQUIRE(ex.lines.size() == 20000);
  CHECK(ex.lines[19999] == std::string(99, static_cast<char>('a' + 19999 % 26)));
}

TEST_CASE("subprocess: silence past the timeout, exit, stderr tail, kill", "[subprocess]") {
  SECTION("timeout") {
    Subprocess slow("read line; sleep 30");
    const Subprocess::Exchange ex = slow.exchange("x\n", 1, 0.2);
    CHECK(ex.timed_out);
    CHECK(ex.lines.empty());
    slow.kill();
    CHECK(slow.exit_status(1.0) == "killed by signal 9");
  }
  SECTION("exit with stderr") {
    Subprocess dies("read line; echo first; echo 'something broke' >&2; exit 3");
    const Subprocess::Exchange ex = dies.exchange("x\ny\n", 2, 5.0);
    CHECK(ex.eof);
    REQUIRE(ex.lines.size() == 1);
    CHECK(ex.lines[0] == "first");
    CHECK(dies.exit_status(5.0) == "exited with status 3");
    CHECK(dies.stderr_tail() == "something broke\n");
  }
  SECTION("a partial last line stays unread") {
    Subprocess partial("printf 'one\\ntwo'; sleep 30");
    const Subprocess::Exchange ex = partial.exchange("", 2, 0.3);
    CHECK(ex.timed_out);
    REQUIRE(ex.lines.size() == 1);
    CHECK(partial.unread() == "two");
  }
  SECTION("a long stderr keeps its tail") {
    Subprocess noisy("i=0; while [ $i -lt 2000 ]; do echo \"line $i\" >&2; i=$((i+1)); done; echo done");
    const Subprocess::Exchange ex = noisy.exchange("", 1, 10.0);
    REQUIRE(ex.lines.size() == 1);
    const std::string tail = noisy.stderr_tail();
    CHECK(tail.size() <= Subprocess::kStderrTail);
    CHECK(tail.find("line 1999\n") != std::string::npos);
    CHECK(tail.find("line 0\n") == std::string::npos);
  }
  SECTION("a command that does not exist ends like any exit") {
    Subprocess missing("/nonexistent/reward-program");
    const Subprocess::Exchange ex = missing.exchange("x\n", 1, 5.0);
    CHECK(ex.eof);
    CHECK(missing.exit_status(5.0) == "exited with status 127");
    CHECK(missing.stderr_tail().find("nonexistent") != std::string::npos);
  }
}
