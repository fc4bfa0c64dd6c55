// NcclComm on one rank (the most a one-GPU machine can run in one process): every collective is then
// the identity on the data, which still exercises the NCCL calls, the pack/unpack permutes for
// dim > 0, the stream/event ordering, and split. Multi-rank behaviour is checked by scripts/gpu-check.
#ifdef SPSIM_WITH_CUDA
#include <doctest/doctest.h>

#include "runtime/cuda/cuda_device.hpp"
#include "runtime/nccl/nccl_comm.hpp"
#include "tests/gpu/reference.hpp"

namespace spsim::gpu_test {
namespace {

TEST_CASE("NcclComm with one rank: collectives reproduce their input") {
  rt::CudaDevice dev(rt::DType::f32, 0);
  rt::NcclComm comm(dev);
  REQUIRE(comm.size() == 1);
  REQUIRE(comm.rank() == 0);
  const Vec x = random_vec(2 * 6 * 4, 3);  // integers would do too; any values survive a 1-rank sum
  rt::Tensor t = dev.from_host(x, {2, 6, 4});

  SUBCASE("all_reduce: the sum over one rank is the tensor") {
    rt::Work w = comm.all_reduce(t);
    w.wait();
    check_close(dev.to_host(t), x, 0);
  }
  SUBCASE("reduce_scatter and all_gather along dims 0, 1 and 2") {
    for (int dim = 0; dim < 3; ++dim) {
      CAPTURE(dim);
      rt::Tensor rs = dev.empty(t.shape()), ag = dev.empty(t.shape());
      comm.reduce_scatter(t, rs, dim).wait();
      comm.all_gather(rs, ag, dim).wait();
      check_close(dev.to_host(rs), x, 0);
      check_close(dev.to_host(ag), x, 0);
    }
  }
  SUBCASE("all_to_all with different split and concat dims") {
    rt::Tensor out = dev.empty(t.shape());
    comm.all_to_all(t, out, 1, 2).wait();
    check_close(dev.to_host(out), x, 0);
  }
  SUBCASE("sendrecv to itself copies, a dropped Work still orders the compute stream") {
    rt::Tensor in = dev.zeros(t.shape());
    { (void)comm.ring_exchange(t, in); }  // Work destroyed without wait(): its destructor orders
    check_close(dev.to_host(in), x, 0);
  }
  SUBCASE("barrier returns and split by one color gives a one-rank group") {
    comm.barrier();
    auto sub = comm.split({0});
    CHECK(sub->size() == 1);
    CHECK(sub->rank() == 0);
    rt::Tensor u = dev.from_host(x, t.shape());
    sub->all_reduce(u).wait();
    check_close(dev.to_host(u), x, 0);
  }
  SUBCASE("shape errors are reported") {
    rt::Tensor wrong = dev.empty({2, 6, 5});
    CHECK_THROWS_AS((void)comm.all_gather(t, wrong, 2), rt::RuntimeError);
    CHECK_THROWS_AS((void)comm.send(t, 1), rt::RuntimeError);
    CHECK_THROWS_AS((void)comm.split({0, 1}), rt::RuntimeError);
  }
}

}  // namespace
}  // namespace spsim::gpu_test
#endif
