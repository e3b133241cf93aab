#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

namespace podsim::parallel {

// The ops a device op waits for: a few indices, held in place up to kInline (nearly every op of a
// partitioned step has at most six), on the heap beyond. A program has one per op, so keeping them
// off the heap saves an allocation per op.
class OpDeps {
  public:
    static constexpr std::uint32_t kInline = 6;

    OpDeps() = default;
    OpDeps(std::initializer_list<int> deps) { assign(deps.begin(), deps.end()); }
    OpDeps(const OpDeps& other) { copy(other); }
    OpDeps(OpDeps&& other) noexcept { take(other); }
    OpDeps& operator=(const OpDeps& other) {
        if (this != &other) copy(other);
        return *this;
    }
    OpDeps& operator=(OpDeps&& other) noexcept {
        if (this != &other) {
            heap_.reset();
            take(other);
        }
        return *this;
    }
    OpDeps& operator=(std::initializer_list<int> deps) {
        assign(deps.begin(), deps.end());
        return *this;
    }
    ~OpDeps() = default;

    const int* begin() const { return data(); }
    const int* end() const { return data() + size_; }
    int* begin() { return data(); }
    int* end() { return data() + size_; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    int operator[](std::size_t i) const { return data()[i]; }

    // Inlined where ops are built (several pushes per op): the rare growth stays out of line.
    void push_back(int dep) {
        if (size_ == capacity_) [[unlikely]]
            grow();
        data()[size_++] = dep;
    }
    template <class It>
    void append(It first, It last) {
        for (; first != last; ++first) push_back(*first);
    }
    // Keeps the first `count` deps.
    void truncate(std::size_t count) {
        size_ = static_cast<std::uint32_t>(std::min<std::size_t>(count, size_));
    }
    void clear() { size_ = 0; }

    friend bool operator==(const OpDeps& a, const OpDeps& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

  private:
    int* data() { return heap_ ? heap_.get() : inline_; }
    const int* data() const { return heap_ ? heap_.get() : inline_; }

    template <class It>
    void assign(It first, It last) {
        size_ = 0;
        append(first, last);
    }

    // Programs are copied whole: inline deps as one fixed-size copy, not one push per dep.
    void copy(const OpDeps& other) {
        if (!heap_ && !other.heap_) {
            std::copy(other.inline_, other.inline_ + kInline, inline_);
            size_ = other.size_;
            return;
        }
        assign(other.begin(), other.end());
    }
    void take(OpDeps& other) {
        heap_ = std::move(other.heap_);
        size_ = other.size_;
        capacity_ = other.capacity_;
        if (!heap_) std::copy(other.inline_, other.inline_ + kInline, inline_);
        other.size_ = 0;
        other.capacity_ = kInline;
    }
    [[gnu::noinline]] void grow() {
        const std::size_t capacity = std::size_t{capacity_} * 2 + kInline;
        auto bigger = std::make_unique_for_overwrite<int[]>(capacity);
        std::copy(begin(), end(), bigger.get());
        heap_ = std::move(bigger);
        capacity_ = static_cast<std::uint32_t>(capacity);
    }

    std::unique_ptr<int[]> heap_;
    std::uint32_t size_ = 0;
    std::uint32_t capacity_ = kInline;
    int inline_[kInline] = {};
};

}  // namespace podsim::parallel
