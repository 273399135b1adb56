// Rows of one table, decoded ahead on a thread of its own and handed to the reading thread in
// blocks through a bounded queue.
//
// Why: reading a trace is mostly SQLite stepping and column access, one table after another; the
// three op tables can be decoded at once while one thread merges them in time order. Each
// producer has its own connection to the same file (connections are NOMUTEX: one thread each),
// and at most kQueuedBlocks blocks of kBlockRows rows wait per table, so memory stays O(block)
// whatever the trace's size. Without a second core, or when no thread can be started, the same
// stream decodes its blocks in the reading thread. A decoding error (a UserError for a bad value)
// is raised in the reading thread when it reaches that row's block.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "sqlite_db.h"

namespace cuoverlap::reader {

template <typename Row>
class TableStream {
 public:
  using Decode = void (*)(const sqlite::Statement&, Row&);
  static constexpr std::size_t kBlockRows = 1024;
  static constexpr std::size_t kQueuedBlocks = 4;

  TableStream(const sqlite::Database& main, std::string sql, Decode decode, bool threaded)
      : main_(main), sql_(std::move(sql)), decode_(decode) {
    if (threaded) {
      try {
        thread_ = std::thread([this] { produce(); });
      } catch (const std::system_error&) {
        // No thread to be had: decode in the reading thread.
      }
    }
  }

  ~TableStream() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  TableStream(const TableStream&) = delete;
  TableStream& operator=(const TableStream&) = delete;

  // Takes the first block: call once, after starting every stream that runs at the same time.
  void begin() { refill(); }
  // The current row, or nullptr once the table is exhausted.
  const Row* current() const { return position_ < block_.size() ? &block_[position_] : nullptr; }
  void advance() {
    if (++position_ >= block_.size()) refill();
  }

 private:
  // Decodes up to kBlockRows rows into `block`; false once the statement has no more rows.
  bool decodeBlock(sqlite::Statement& statement, std::vector<Row>& block) {
    block.clear();
    while (block.size() < kBlockRows) {
      if (!statement.step()) return false;
      block.emplace_back();
      decode_(statement, block.back());
    }
    return true;
  }

  void refill() {
    position_ = 0;
    if (!thread_.joinable()) {
      if (!inline_statement_) {
        inline_statement_ = std::make_unique<sqlite::Statement>(main_, sql_);
      }
      if (!inline_done_) inline_done_ = !decodeBlock(*inline_statement_, block_);
      else block_.clear();
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      block_.clear();
      if (error_) std::rethrow_exception(error_);
      return;
    }
    block_ = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all();
  }

  void produce() {
    try {
      const sqlite::Database connection(main_, sqlite::Database::Sibling{});
      sqlite::Statement statement(connection, sql_);
      bool more = true;
      while (more) {
        std::vector<Row> block;
        block.reserve(kBlockRows);
        more = decodeBlock(statement, block);
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return queue_.size() < kQueuedBlocks || cancelled_; });
        if (cancelled_) return;
        if (!block.empty()) queue_.push_back(std::move(block));
        lock.unlock();
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
  }

  const sqlite::Database& main_;
  const std::string sql_;
  const Decode decode_;
  std::vector<Row> block_;  // the reading thread's current block
  std::size_t position_ = 0;
  // Inline mode.
  std::unique_ptr<sqlite::Statement> inline_statement_;
  bool inline_done_ = false;
  // Threaded mode: guarded by mutex_.
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<Row>> queue_;
  std::exception_ptr error_;
  bool done_ = false;
  bool cancelled_ = false;
};

}  // namespace cuoverlap::reader
