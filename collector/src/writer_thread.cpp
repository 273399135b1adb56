#include "writer_thread.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <thread>

#include "collector_options.h"
#include "cupti/activity_translation.h"
#include "trace_schema.h"

namespace cuoverlap::collector {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

WriterThread::WriterThread(std::unique_ptr<TraceWriter> writer, BufferPool& pool,
                           std::chrono::milliseconds commit_interval)
    : writer_(std::move(writer)), pool_(pool), commit_interval_(commit_interval) {}

void WriterThread::start() {
  // No asynchronous signal lands on this thread (it inherits the mask): the collector's handlers
  // wake the lifecycle thread, which waits for this one to finish the file.
  sigset_t all, previous;
  sigfillset(&all);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigdelset(&all, synchronous);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  // Detached: the thread must never be joined from an exit path that may run on any thread.
  std::thread([this] { run(); }).detach();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void WriterThread::submit(std::uint8_t* buffer, std::size_t valid_size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) {
      queue_.push_back({buffer, valid_size});
      buffer = nullptr;
    }
  }
  if (buffer != nullptr) pool_.release(buffer, valid_size);  // arrived after the file was closed
  wake_.notify_one();
}

void WriterThread::submitGpuMetrics(GpuMetricBatch batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    metrics_.push_back(std::move(batch));
  }
  wake_.notify_one();
}

void WriterThread::submitOpBuffers(std::vector<OpBufferRow> rows) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    op_buffers_.push_back(std::move(rows));
  }
  wake_.notify_one();
}

void WriterThread::setSessionValue(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  session_values_[key] = value;
}

bool WriterThread::stop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  wake_.notify_one();
  return done_cv_.wait_for(lock, timeout, [this] { return done_; });
}

void WriterThread::writeBuffers(const std::vector<Completed>& buffers) {
  for (const Completed& c : buffers) {
    if (!failed_) {
      try {
        translateBuffer(c.buffer, c.valid_size, *writer_);
        writer_->endOfBuffer();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cuoverlap: warning: trace writing stopped: %s\n", printableForLog(e.what()).c_str());
        failed_ = true;
      }
    }
    pool_.release(c.buffer, c.valid_size);
  }
}

// Writes each batch with `write` until a write fails; after that nothing more is written.
template <typename Batch, typename Write>
void WriterThread::writeEach(const std::vector<Batch>& batches, Write write) {
  for (const Batch& batch : batches) {
    if (failed_) return;
    try {
      write(batch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cuoverlap: warning: trace writing stopped: %s\n", printableForLog(e.what()).c_str());
      failed_ = true;
    }
  }
}

void WriterThread::writeGpuMetrics(const std::vector<GpuMetricBatch>& batches) {
  writeEach(batches, [this](const GpuMetricBatch& batch) { writer_->onGpuMetrics(batch); });
}

void WriterThread::writeOpBuffers(const std::vector<std::vector<OpBufferRow>>& batches) {
  writeEach(batches, [this](const std::vector<OpBufferRow>& rows) { writer_->onOpBuffers(rows); });
}

void WriterThread::run() {
  std::vector<Completed> batch;
  std::vector<GpuMetricBatch> metrics;
  std::vector<std::vector<OpBufferRow>> op_buffers;
  auto last_commit = Clock::now(), last_flush = Clock::now();
  for (;;) {
    if (periodic_flush_ && Clock::now() - last_flush >= commit_interval_) {
      periodic_flush_();
      last_flush = Clock::now();
    }
    bool stopping;
    std::map<std::string, std::string> values;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, commit_interval_ / 2,
                     [this] { return !queue_.empty() || !metrics_.empty() || !op_buffers_.empty() || stopping_; });
      batch.swap(queue_);
      metrics.swap(metrics_);
      op_buffers.swap(op_buffers_);
      values.swap(session_values_);
      stopping = stopping_;
    }
    auto begin = Clock::now();
    writeBuffers(batch);
    batch.clear();
    writeGpuMetrics(metrics);
    metrics.clear();
    writeOpBuffers(op_buffers);
    op_buffers.clear();
    for (const auto& [key, value] : values) writer_->setSessionValue(key, value);
    busy_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - begin).count();
    if (stopping) return finish();
    if (Clock::now() - last_commit >= commit_interval_ && !failed_) {
      writer_->setSessionValue(std::string(schema::session_key::kWriterBusyNs),
                               std::to_string(busy_ns_));
      try {
        writer_->commit();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cuoverlap: warning: trace writing stopped: %s\n", printableForLog(e.what()).c_str());
        failed_ = true;
      }
      last_commit = Clock::now();
    }
  }
}

void WriterThread::finish() {
  std::vector<Completed> rest;
  std::vector<GpuMetricBatch> metrics;
  std::vector<std::vector<OpBufferRow>> op_buffers;
  std::map<std::string, std::string> values;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rest.swap(queue_);
    metrics.swap(metrics_);
    op_buffers.swap(op_buffers_);
    values.swap(session_values_);
  }
  writeBuffers(rest);
  writeGpuMetrics(metrics);
  writeOpBuffers(op_buffers);
  bool closed_complete = false;
  if (!failed_) {
    try {
      for (const auto& [key, value] : values) writer_->setSessionValue(key, value);
      writer_->setSessionValue(std::string(schema::session_key::kWriterBusyNs),
                               std::to_string(busy_ns_));
      writer_->close();
      const bool removed = !writer_->holdsActivity() && !keep_empty_.load();
      if (removed) writer_->removeFile();
      closed_complete = !removed;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cuoverlap: warning: trace not finished: %s\n", printableForLog(e.what()).c_str());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  closed_complete_ = closed_complete;
  done_ = true;
  done_cv_.notify_all();
}

bool WriterThread::closedCompleteFile() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && closed_complete_;
}

}  // namespace cuoverlap::collector
