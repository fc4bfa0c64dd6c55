// End-to-end tests of `spsim collective`: calibration against published nccl-tests measurements,
// argument errors, and deterministic JSON.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CliResult {
  int rc = -1;
  std::string out;  // stdout and stderr
};

CliResult run_cli(const std::string& args) {
  CliResult r;
  const std::string cmd = std::string(SPSIM_BINARY) + " collective " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// busbw (GB/s) per size from --json output.
nlohmann::json rows(const std::string& args) {
  const auto r = run_cli(args + " --json");
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("schema_version") == 1);
  return doc.at("rows");
}

struct Measured {
  double bytes;
  double busbw_GBps;
};

// Checks every measured point within 15 % of the simulated busbw at the same size.
void check_within_15pct(const std::string& args, std::initializer_list<Measured> measured) {
  for (const Measured& m : measured) {
    const auto size = std::to_string(static_cast<long long>(m.bytes));
    const auto r = rows(args + " --min-bytes " + size + " --max-bytes " + size);
    REQUIRE(r.size() == 1);
    const double sim = r[0].at("busbw_GBps").get<double>();
    CAPTURE(args);
    CAPTURE(m.bytes);
    CAPTURE(sim);
    CAPTURE(m.busbw_GBps);
    CHECK(std::abs(sim - m.busbw_GBps) <= 0.15 * m.busbw_GBps);
  }
}

constexpr double MiB = 1024.0 * 1024, GiB = MiB * 1024;

// The time (µs) of the first row of --json output.
double first_time_us(const std::string& out) { return std::stod(out.substr(out.find("\"time_us\": ") + 11)); }

}  // namespace

// All measured values: shared/data/hardware-and-measurements.md, "Measured collective bandwidth
// (nccl-tests busbw, GB/s)". nccl-tests sizes are powers of two: "16 MB" = 16 MiB, "268 MB" =
// 256 MiB, "1 GB" = 1 GiB, "8 GB" = 8 GiB. Only sizes >= 16 MB are held to 15 %.

TEST_CASE("8xA100 all_reduce (NCCL 2.18, auto algorithm) within 15% for sizes >= 16 MB") {
  check_within_15pct("--cluster dgx-a100 --op all_reduce",
                     {{8 * GiB, 231.6}, {1 * GiB, 228.1}, {256 * MiB, 213.9}, {16 * MiB, 109.2}});
}

TEST_CASE("8xH100 NVLS all_reduce (NCCL 2.18) within 15% for sizes >= 16 MB") {
  // The tuner picks NVLS on its own (checked in collectives_api_test); both spellings must agree.
  for (const char* algo : {"auto", "nvls"})
    check_within_15pct(std::string("--cluster dgx-h100 --op all_reduce --algo ") + algo,
                       {{8 * GiB, 478.9}, {1 * GiB, 466.4}, {256 * MiB, 423.4}, {16 * MiB, 234.5}});
}

TEST_CASE("8xH100 ring all_reduce and all_gather: large sizes ~365-370 GB/s") {
  // "large: ~365-370": the midpoint 367.5, at 1 GiB and 8 GiB.
  check_within_15pct("--cluster dgx-h100 --op all_reduce --algo ring", {{1 * GiB, 367.5}, {8 * GiB, 367.5}});
  check_within_15pct("--cluster dgx-h100 --op all_gather", {{1 * GiB, 367.5}, {8 * GiB, 367.5}});
}

TEST_CASE("multi-node all_reduce: DGX-A100 (8x HDR per node) 192 GB/s, 4x DGX-H100 (8x NDR) 365.8 GB/s") {
  // The A100 row gives no node count; 4 nodes is used (the ring's busbw is the per-node NIC
  // bandwidth, 8 x ~24 GB/s, for any node count). On 4 H100 nodes the tuner runs NVLS-Tree, whose
  // busiest NIC carries 2n/8 a direction (nvls_tree.cpp).
  check_within_15pct("--cluster dgx-a100 --nodes 4 --op all_reduce", {{1 * GiB, 192}, {8 * GiB, 192}});
  check_within_15pct("--cluster dgx-h100 --nodes 4 --op all_reduce", {{1 * GiB, 365.8}, {8 * GiB, 365.8}});
}

TEST_CASE("--gpus runs a partial node or spreads the ranks evenly over nodes") {
  const auto ranks = [](const std::string& args) {
    const auto r = run_cli("--op all_reduce --min-bytes 1M --max-bytes 1M --json " + args);
    REQUIRE(r.rc == 0);
    const auto doc = nlohmann::json::parse(r.out);
    return std::pair{doc.at("ranks").get<int>(), doc.at("nodes").get<int>()};
  };
  CHECK(ranks("--cluster dgx-h100 --gpus 4") == std::pair{4, 1});    // nccl-tests -g 4 on one node
  CHECK(ranks("--cluster dgx-h100 --gpus 12") == std::pair{12, 2});  // 6 on each of 2 nodes
  CHECK(ranks("--cluster dgx-h100 --gpus 8 --nodes 4") == std::pair{8, 4});
  CHECK(ranks("--cluster dgx-h100 --gpus 2 --nodes 2") == std::pair{2, 2});  // one GPU per node: tree or ring
  // A ring over 2 GPUs of one node is one step each way: busbw = algbw (factor 2(P-1)/P = 1).
  const auto two = rows("--cluster dgx-a100 --gpus 2 --op all_reduce --min-bytes 1G --max-bytes 1G");
  CHECK(two[0].at("busbw_GBps").get<double>() == doctest::Approx(two[0].at("algbw_GBps").get<double>()));
  for (const char* bad : {"--gpus 12 --nodes 1", "--gpus 7 --nodes 2", "--gpus 0", "--gpus 9",
                          "--gpus 2147483647", "--gpus 600000"}) {
    CAPTURE(bad);
    const auto r =
        run_cli(std::string("--cluster dgx-h100 --op all_reduce --min-bytes 8 --max-bytes 8 ") + bad);
    CHECK(r.rc == 2);
    CHECK(r.out.find("--gpus") != std::string::npos);
  }
}

TEST_CASE("busbw is algbw times nccl-tests' factor") {
  // P = 8: all_reduce 2(P-1)/P = 1.75, all_gather and all_to_all (P-1)/P = 0.875, sendrecv 1.
  for (auto [op, factor] : {std::pair{"all_reduce", 1.75},
                            {"all_gather", 0.875},
                            {"reduce_scatter", 0.875},
                            {"all_to_all", 0.875},
                            {"sendrecv", 1.0}}) {
    CAPTURE(op);
    const auto r = rows(std::string("--cluster dgx-a100 --op ") + op + " --min-bytes 1M --max-bytes 4M");
    REQUIRE(r.size() == 3);  // 1, 2, 4 MiB with the default factor 2
    for (const auto& row : r) {
      const double algbw =
          row.at("size_bytes").get<double>() / (row.at("time_us").get<double>() * 1e-6) / 1e9;
      CHECK(row.at("algbw_GBps").get<double>() == doctest::Approx(algbw));
      CHECK(row.at("busbw_GBps").get<double>() == doctest::Approx(algbw * factor));
      CHECK(row.at("count").get<long long>() == row.at("size_bytes").get<long long>() / 4);
    }
  }
}

TEST_CASE("JSON output is byte-identical across runs, starts with schema_version") {
  const std::string args =
      "--cluster dgx-h100 --nodes 2 --op all_to_all --min-bytes 1K --max-bytes 64M --step-factor 8 --json";
  const auto a = run_cli(args), b = run_cli(args);
  CHECK(a.rc == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.rfind("{\n  \"schema_version\": 1", 0) == 0);
}

TEST_CASE("the human table has nccl-tests' columns") {
  const auto r =
      run_cli("--cluster pcie-a100-4 --op reduce_scatter --min-bytes 1K --max-bytes 1K --network analytical");
  CHECK(r.rc == 0);
  for (const char* col : {"size(B)", "count", "type", "redop", "time(us)", "algbw", "busbw", "float", "sum"})
    CHECK(r.out.find(col) != std::string::npos);
}

TEST_CASE("bad arguments exit 2 naming the argument and the choices") {
  struct Bad {
    const char* args;
    const char* names;
    const char* lists;
  };
  for (const Bad& b :
       {Bad{"--cluster dgx-a100 --op allreduce --min-bytes 8 --max-bytes 8", "--op", "reduce_scatter"},
        Bad{"--cluster dgx-x --op all_reduce --min-bytes 8 --max-bytes 8", "--cluster", "hgx-h200"},
        Bad{"--cluster dgx-a100 --nodes 0 --op all_reduce --min-bytes 8 --max-bytes 8", "--nodes", ">= 1"},
        Bad{"--cluster dgx-a100 --op all_reduce --min-bytes 8 --max-bytes 8 --algo fast", "--algo", "ring"},
        Bad{"--cluster dgx-a100 --op all_reduce --min-bytes 8 --max-bytes 8 --protocol ll64", "--protocol",
            "ll128"},
        Bad{"--cluster dgx-a100 --op all_reduce --min-bytes 8 --max-bytes 8 --network packet", "--network",
            "analytical"},
        Bad{"--cluster dgx-a100 --op all_reduce --min-bytes 8X --max-bytes 8", "--min-bytes", "K, M, G"},
        Bad{"--cluster dgx-a100 --op all_reduce --min-bytes 64 --max-bytes 8", "--max-bytes", "--min-bytes"},
        Bad{"--cluster dgx-a100 --op all_reduce --min-bytes 8 --max-bytes 64 --step-factor 1",
            "--step-factor", "> 1"},
        Bad{"--cluster dgx-a100 --op all_reduce --algo nvls --min-bytes 8 --max-bytes 8", "--algo", "NVLS"},
        Bad{"--cluster dgx-a100 --op all_to_all --algo rhd --min-bytes 8 --max-bytes 8", "--algo",
            "pairwise, direct"},
        Bad{"--cluster dgx-h100 --nodes 4 --fabric torus --op all_gather --min-bytes 8 --max-bytes 8",
            "--fabric", "single_switch, fat_tree, rail_optimized"},
        Bad{"--cluster dgx-h100 --nodes 4 --fabric fat_tree --op all_gather --min-bytes 8 --max-bytes 8",
            "--nodes-per-leaf", ">= 1"},
        Bad{"--cluster dgx-h100 --nodes 4 --nodes-per-leaf 2 --op all_gather --min-bytes 8 --max-bytes 8",
            "--nodes-per-leaf", "--fabric fat_tree or rail_optimized"},
        Bad{"--cluster dgx-h100 --nodes 4 --fabric fat_tree --nodes-per-leaf 2 --oversubscription 0.5 --op "
            "all_gather --min-bytes 8 --max-bytes 8",
            "--oversubscription", "[1, 1e6]"},
        Bad{"--cluster dgx-h100 --nodes 4 --fabric fat_tree --nodes-per-leaf 2 --sharp --op all_reduce "
            "--min-bytes 8 --max-bytes 8",
            "--sharp", "single_switch"},
        Bad{"--cluster dgx-h100 --sharp --op all_reduce --min-bytes 8 --max-bytes 8", "--sharp", "--nodes 2"},
        Bad{"--cluster dgx-h100 --nodes 2 --op all_reduce --algo collnet_direct --min-bytes 8 --max-bytes 8",
            "--algo", "sharp"},
        Bad{"--cluster dgx-h100 --nodes 4 --no-pxn --op all_gather --min-bytes 8 --max-bytes 8", "--no-pxn",
            "--fabric rail_optimized"},
        Bad{"--cluster dgx-h100 --nodes 4 --fabric fat_tree --nodes-per-leaf 2 --no-pxn --op all_gather "
            "--min-bytes 8 --max-bytes 8",
            "--no-pxn", "rail_optimized"}}) {
    const std::string args = b.args;
    CAPTURE(args);
    const auto r = run_cli(args);
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find(b.names) != std::string::npos);
    CHECK(r.out.find(b.lists) != std::string::npos);
  }
}

TEST_CASE("--fabric fat_tree: named in the header and JSON; 4:1 uplinks bound an all-to-all across leaves") {
  const std::string common =
      "--cluster dgx-h100 --nodes 4 --op all_to_all --min-bytes 256M --max-bytes 256M ";
  const auto flat = run_cli(common + "--json");
  const auto tree = run_cli(common + "--fabric fat_tree --nodes-per-leaf 2 --oversubscription 4 --json");
  const auto text = run_cli(common + "--fabric fat_tree --nodes-per-leaf 2 --oversubscription 4");
  REQUIRE(flat.rc == 0);
  REQUIRE(tree.rc == 0);
  CHECK(text.out.find("# inter-node fabric: fat_tree, 2 nodes per leaf, 4:1 oversubscribed") !=
        std::string::npos);
  CHECK(tree.out.find("\"fabric\": \"fat_tree, 2 nodes per leaf, 4:1 oversubscribed\"") != std::string::npos);
  CHECK(flat.out.find("\"fabric\"") == std::string::npos);
  // Each of the 32 ranks sends n / 32 to every peer (n = 256 MiB). Flat: a NIC carries its GPU's data
  // to the 24 GPUs of other nodes, 0.75 n at 47.5 GB/s (ib-ndr.json). Fat tree: the 16 GPUs of a leaf
  // send n / 2 each to the other leaf, 8 n up uplinks of 16 x 47.5 / 4 = 190 GB/s. Latency adds < 1%.
  const double n = 268435456.0;
  CHECK(first_time_us(flat.out) * 1e-6 == doctest::Approx(0.75 * n / 47.5e9).epsilon(0.01));
  CHECK(first_time_us(tree.out) * 1e-6 == doctest::Approx(8 * n / 190e9).epsilon(0.01));
}

TEST_CASE("--fabric rail_optimized: PXN sends cross-rail traffic through NVLink, --no-pxn over the spine") {
  const std::string common = "--cluster dgx-h100 --nodes 4 --op all_to_all --min-bytes 256M --max-bytes 256M "
                             "--fabric rail_optimized --nodes-per-leaf 2 --oversubscription 4 ";
  const auto pxn = run_cli(common + "--json");
  const auto spine = run_cli(common + "--no-pxn --json");
  const auto text = run_cli(common + "--no-pxn");
  REQUIRE(pxn.rc == 0);
  REQUIRE(spine.rc == 0);
  CHECK(text.out.find("# inter-node fabric: rail_optimized, 2 nodes per group, 4:1 oversubscribed, no PXN") !=
        std::string::npos);
  // Two groups of 2 nodes, 8 rail leaves each with uplinks of 2 x 47.5 / 4 GB/s: 190 GB/s a group. Each
  // of the 32 ranks sends n / 32 to every peer. With PXN only the 16 messages to the other group leave
  // a group (a message reaches its destination's rail over NVLink, then stays on that rail's leaf):
  // 16 GPUs x n / 2 = 8 n up the group's uplinks, as on the fat tree above. Without, the 7 messages to
  // the other node of the group on other rails cross the spine too: 16 x 23 n / 32 = 11.5 n.
  const double n = 268435456.0;
  CHECK(first_time_us(pxn.out) * 1e-6 == doctest::Approx(8 * n / 190e9).epsilon(0.01));
  CHECK(first_time_us(spine.out) * 1e-6 == doctest::Approx(11.5 * n / 190e9).epsilon(0.01));
}

TEST_CASE("--algo takes the registry's aliases: rhd runs halving_doubling") {
  const std::string common =
      "--cluster dgx-a100 --op all_reduce --min-bytes 1K --max-bytes 1M --json --algo ";
  const auto alias = run_cli(common + "rhd");
  const auto name = run_cli(common + "halving_doubling");
  CHECK(alias.rc == 0);
  CHECK(alias.out == name.out);
  CHECK(alias.out.find("\"algorithm\": \"halving_doubling\"") != std::string::npos);
}
