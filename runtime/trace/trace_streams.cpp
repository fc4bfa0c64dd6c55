// TraceStreams: a stack per rank, one running at a time, handing the turn back and forth with the
// consumer. The ranks are fibers (ucontext: a switch is a few hundred nanoseconds and the records are
// written on the core that reads them next); sanitizer builds, whose shadow stacks do not follow a
// swapcontext, run each rank on a thread instead and hand the turn over under one mutex. Both hand
// over at the same points, so they record the same records.
#include "runtime/trace/trace_streams.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <iterator>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "runtime/core/error.hpp"
#include "runtime/trace/trace_comm.hpp"
#include "runtime/trace/trace_device.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPSIM_TRACE_THREADS 1
#include <pthread.h>
#else
#define SPSIM_TRACE_THREADS 0
#include <ucontext.h>
#endif

namespace spsim::rt::trace {

namespace {
// A rank's program runs strategy code a few calls deep; 1 MiB is room for that many times over and,
// being virtual until touched, costs 8,192 ranks no real memory. Sanitizers pad every frame.
constexpr std::size_t kStackBytes = std::size_t{SPSIM_TRACE_THREADS ? 8 : 1} << 20;
constexpr std::size_t kPooledStacks = 256;  // kept per thread between streams (virtual: 256 MiB)
}  // namespace

struct TraceStreams::Shared {
  int world = 0;
  DType dtype = DType::bf16;
  std::function<void(Device&, Comm&)> fn;
  std::size_t chunk = 0;
  std::shared_ptr<ShapeTable> shapes = std::make_shared<ShapeTable>();
#if SPSIM_TRACE_THREADS
  std::mutex mu;  // guards every Rank's turn
#else
  ucontext_t consumer{};  // where a rank's fiber returns to
#endif
};

struct TraceStreams::Rank {
  TraceStreams::Shared* shared = nullptr;
  int rank = 0;
  Recorder recorder;
  bool started = false;
  bool finished = false;  // the program returned or threw
  bool aborting = false;  // the consumer went away: run to the end recording nothing
  std::exception_ptr error;
#if SPSIM_TRACE_THREADS
  pthread_t thread{};
  bool producer_turn = false;  // the rank's thread runs; the consumer waits
  std::condition_variable cv;
#else
  ucontext_t context{};
  void* stack = nullptr;  // kStackBytes, mmap'ed, its lowest page a guard
#endif
  // With a producer (TraceStreams(..., ahead)), under Producer::mu:
  enum class Ahead { idle, queued, running, ready };
  Ahead ahead = Ahead::idle;
  std::vector<Record> ready;    // recorded by the producer, not yet pulled
  std::vector<Record> spare;    // an emptied buffer the producer records the next chunk into
  bool ready_finished = false;  // the program had ended when `ready` was handed over
  std::exception_ptr ready_error;
  // The rank's groups as of `ready`, and as of the last pull (the consumer's; groups() returns them):
  // one copy of the recorder's, shared (a world group alone is 4 bytes a rank, for every rank).
  std::shared_ptr<const std::vector<Group>> ready_groups = std::make_shared<const std::vector<Group>>();
  std::shared_ptr<const std::vector<Group>> pulled_groups = ready_groups;
  Rank(Shared* s, int r) : shared(s), rank(r), recorder(r, s->dtype, s->shapes) {}
  ~Rank() {
#if !SPSIM_TRACE_THREADS
    if (stack != nullptr) release_stack(stack);
#endif
  }
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;

  // The rank's program, from its first turn to its end; hands the turn back after every `chunk`
  // records (yield) and once more when it ends.
  void body() {
    recorder.stream_to(shared->chunk, [this] {
      yield();
      if (aborting) recorder.discard();
    });
    try {
      TraceDevice device(shared->dtype, recorder);
      TraceComm comm(rank, shared->world, recorder);
      shared->fn(device, comm);
    } catch (...) {
      if (!aborting) error = std::current_exception();
    }
    recorder.stream_to(0, {});  // a tensor freed later must not hand over a turn the rank no longer has
    finished = true;
  }

#if SPSIM_TRACE_THREADS
  void yield() {
    std::unique_lock lock(shared->mu);
    producer_turn = false;
    cv.notify_all();
    cv.wait(lock, [&] { return producer_turn; });
  }
  void resume() {
    std::unique_lock lock(shared->mu);
    producer_turn = true;
    cv.notify_all();
    cv.wait(lock, [&] { return !producer_turn; });
  }
  static void* thread_main(void* arg) {
    auto& r = *static_cast<Rank*>(arg);
    {
      std::unique_lock lock(r.shared->mu);
      r.cv.wait(lock, [&] { return r.producer_turn; });
    }
    r.body();
    std::unique_lock lock(r.shared->mu);
    r.producer_turn = false;
    r.cv.notify_all();
    return nullptr;
  }
  void start() {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, kStackBytes);
    const int rc = pthread_create(&thread, &attr, &Rank::thread_main, this);
    pthread_attr_destroy(&attr);
    if (rc != 0)
      throw std::system_error(rc, std::generic_category(),
                              "starting the trace thread of rank " + std::to_string(rank));
    started = true;
  }
  void join() {
    if (started) pthread_join(thread, nullptr);
  }
#else
  void yield() {
    swapcontext(&context, &shared->consumer);
  }
  void resume() {
    swapcontext(&shared->consumer, &context);
  }
  // makecontext passes ints: the Rank's address in two halves.
  static void fiber_main(unsigned int hi, unsigned int lo) {
    auto* r = reinterpret_cast<Rank*>((static_cast<std::uintptr_t>(hi) << 32) | lo);
    r->body();
    setcontext(&r->shared->consumer);  // never resumed again
  }
  // Stacks outlive their streams in a small per-thread pool: a sweep simulates thousands of small
  // worlds, and mapping, guarding and faulting in a fresh stack for every rank of each cost a fifth of
  // a point's time.
  static std::vector<void*>& stack_pool() {
    thread_local struct Pool {
      std::vector<void*> stacks;
      ~Pool() {
        for (void* s : stacks) munmap(s, kStackBytes);
      }
    } pool;
    return pool.stacks;
  }
  static void release_stack(void* s) {
    auto& pool = stack_pool();
    if (pool.size() < kPooledStacks) {
      pool.push_back(s);
    } else {
      munmap(s, kStackBytes);
    }
  }
  void start() {
    auto& pool = stack_pool();
    if (!pool.empty()) {
      stack = pool.back();
      pool.pop_back();
    } else {
      void* mem = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (mem == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(),
                                "mapping the trace stack of rank " + std::to_string(rank));
      stack = mem;
      mprotect(stack, 4096, PROT_NONE);  // an overflow faults instead of writing past the stack
    }
    getcontext(&context);
    context.uc_stack.ss_sp = stack;
    context.uc_stack.ss_size = kStackBytes;
    context.uc_link = nullptr;
    const auto self = reinterpret_cast<std::uintptr_t>(this);
    makecontext(&context, reinterpret_cast<void (*)()>(&Rank::fiber_main), 2,
                static_cast<unsigned int>(self >> 32), static_cast<unsigned int>(self & 0xffffffffu));
    started = true;
  }
  void join() {}
#endif
};

// The producer thread's queue: ranks to record a chunk of, in the order the consumer last pulled them
// (the order it will want them again, near enough), and the rank the consumer waits for, first.
struct TraceStreams::Producer {
  std::mutex mu;
  std::condition_variable work;    // the producer waits for a request
  std::condition_variable handed;  // the consumer waits for its chunk
  std::deque<int> queue;
  int urgent = -1;
  bool stop = false;
  std::size_t wake_batch = 1;  // queued requests that wake an idle producer (a 16th of the ranks)
  bool primed = false;         // every rank's first chunk has been asked for (the first pull)
  std::thread thread;
};

TraceStreams::TraceStreams(int world_size, DType dtype, std::function<void(Device&, Comm&)> fn,
                           std::size_t chunk, bool ahead)
    : shared_(std::make_unique<Shared>()) {
  if (world_size < 1) throw RuntimeError("TraceStreams: world size " + std::to_string(world_size) + " < 1");
  if (chunk < 1) throw RuntimeError("TraceStreams: chunk of 0 records");
  shared_->world = world_size;
  shared_->dtype = dtype;
  shared_->fn = std::move(fn);
  shared_->chunk = chunk;
  ranks_.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) ranks_.push_back(std::make_unique<Rank>(shared_.get(), r));
  if (ahead) {
    producer_ = std::make_unique<Producer>();
    producer_->wake_batch = std::max<std::size_t>(1, static_cast<std::size_t>(world_size) / 16);
    try {
      producer_->thread = std::thread([this] { produce(); });
    } catch (const std::system_error&) {
      producer_.reset();  // no thread to be had: the consumer records each chunk as it pulls, as without
    }
  }
}

void TraceStreams::produce() {
  Producer& p = *producer_;
  std::unique_lock lock(p.mu);
  while (true) {
    p.work.wait(lock, [&] { return p.stop || p.urgent >= 0 || !p.queue.empty(); });
    if (p.stop) break;
    int r = p.urgent;
    if (r >= 0) {
      p.urgent = -1;
    } else {
      r = p.queue.front();
      p.queue.pop_front();
    }
    Rank& k = *ranks_[static_cast<std::size_t>(r)];
    if (k.ahead != Rank::Ahead::queued) continue;  // recorded already, at the consumer's urgent request
    k.ahead = Rank::Ahead::running;
    std::vector<Record> batch = std::move(k.spare);
    lock.unlock();
    // Only this thread runs the ranks' fibers and touches their recorders (and the shape table they
    // share); the consumer sees a chunk once it is handed over under the lock.
    std::exception_ptr error;
    bool groups_grew = false;
    try {
      if (!k.started) k.start();
      if (!k.finished) k.resume();
      batch.clear();
      k.recorder.drain(batch);
      groups_grew = k.recorder.groups().size() != k.ready_groups->size();  // groups only grow
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (groups_grew) k.ready_groups = std::make_shared<const std::vector<Group>>(k.recorder.groups());
    k.ready = std::move(batch);
    k.ready_finished = k.finished || error != nullptr;
    k.ready_error = error != nullptr ? error : k.error;
    k.ahead = Rank::Ahead::ready;
    p.handed.notify_all();
  }
  lock.unlock();
  // The consumer went away: the ranks this thread started and that have not ended run to their end,
  // recording nothing, on the thread their fibers run on.
  for (auto& k : ranks_)
    if (k->started && !k->finished) {
      k->aborting = true;
      k->resume();
    }
}

TraceStreams::~TraceStreams() {
  if (producer_) {
    {
      std::lock_guard lock(producer_->mu);
      producer_->stop = true;
    }
    producer_->work.notify_all();
    producer_->thread.join();  // it ran the started ranks to their end
    for (auto& r : ranks_) r->join();
    return;
  }
  for (auto& r : ranks_) {
    if (r->started && !r->finished) {
      r->aborting = true;
      r->resume();  // runs to its end: with `aborting` set it never hands the turn back before
    }
    r->join();
  }
}

int TraceStreams::size() const {
  return shared_->world;
}
const std::vector<Group>& TraceStreams::groups(int rank) const {
  const Rank& r = *ranks_.at(static_cast<std::size_t>(rank));
  return producer_ ? *r.pulled_groups : r.recorder.groups();
}

void TraceStreams::fold_memory() {
  for (auto& r : ranks_) r->recorder.fold_memory();
}

std::uint64_t TraceStreams::peak_bytes(int rank) const {
  return ranks_.at(static_cast<std::size_t>(rank))->recorder.peak_bytes();
}

bool TraceStreams::pull(int rank, std::vector<Record>& out) {
  Rank& r = *ranks_.at(static_cast<std::size_t>(rank));
  if (producer_) {
    Producer& p = *producer_;
    std::unique_lock lock(p.mu);
    if (!p.primed) {
      // The consumer starts by reading every rank's first records, in rank order: the producer records
      // them in that order from now on, instead of one at a time as each is asked for, a wake-up each
      // way per rank (USP on 4,096 ranks waited 2.8 s for its chunks before, 1.5 s after).
      p.primed = true;
      for (std::size_t k = 0; k < ranks_.size(); ++k)
        if (ranks_[k]->ahead == Rank::Ahead::idle) {
          ranks_[k]->ahead = Rank::Ahead::queued;
          p.queue.push_back(static_cast<int>(k));
        }
      p.work.notify_one();
    }
    if (r.ahead == Rank::Ahead::idle) r.ahead = Rank::Ahead::queued;
    if (r.ahead == Rank::Ahead::queued) {  // not recorded yet: next
      p.urgent = rank;
      p.work.notify_one();
    }
    p.handed.wait(lock, [&] { return r.ahead == Rank::Ahead::ready; });
    const bool finished = r.ready_finished;
    const std::exception_ptr error = r.ready_error;
    r.pulled_groups = r.ready_groups;
    const std::size_t before = out.size();
    if (out.empty())
      std::swap(out, r.ready);  // the producer records the chunk after next into out's old buffer
    else
      out.insert(out.end(), std::make_move_iterator(r.ready.begin()), std::make_move_iterator(r.ready.end()));
    r.spare = std::exchange(r.ready, {});
    r.ahead = Rank::Ahead::idle;
    if (!finished) {  // record its next chunk while the consumer reads this one
      r.ahead = Rank::Ahead::queued;
      p.queue.push_back(rank);
      // An idle producer is woken for a batch of requests, not for each: a wake-up is a system call,
      // and the consumer wants this rank again only after the others.
      if (p.queue.size() >= p.wake_batch) p.work.notify_one();
    }
    lock.unlock();
    if (error) std::rethrow_exception(error);
    return out.size() > before || !finished;
  }
  if (!r.started) r.start();
  if (!r.finished) r.resume();
  if (r.error) std::rethrow_exception(r.error);
  const std::size_t before = out.size();
  r.recorder.drain(out);
  return out.size() > before || !r.finished;
}

}  // namespace spsim::rt::trace
