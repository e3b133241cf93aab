#pragma once

// Protocol-buffer wire format, read without generated code: the XProf .xplane.pb and Chakra .et
// readers walk their messages field by field.

#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "profile/measured_profile.hpp"

namespace podsim::profile {

class Wire {
  public:
    Wire(const std::string& path, const std::string& data, std::size_t begin, std::size_t end)
        : path_(path), data_(data), pos_(begin), end_(end) {}
    bool done() const { return pos_ >= end_; }
    std::size_t pos() const { return pos_; }

    std::uint64_t varint() {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= end_) profile_error(path_, pos_, "truncated varint (the file ends inside a field)");
            auto byte = static_cast<unsigned char>(data_[pos_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (byte < 0x80) return value;
        }
        profile_error(path_, pos_, "varint longer than 10 bytes: not a protobuf file");
    }
    // Reads a key; returns field number and wire type.
    std::pair<std::uint32_t, int> key() {
        std::uint64_t k = varint();
        return {static_cast<std::uint32_t>(k >> 3), static_cast<int>(k & 7)};
    }
    // A length-delimited field as a sub-reader.
    Wire sub() {
        std::uint64_t length = varint();
        if (length > end_ - pos_)
            profile_error(path_, pos_,
                          fmt::format("field of {} bytes runs past the end ({} left)", length, end_ - pos_));
        Wire w(path_, data_, pos_, pos_ + length);
        pos_ += length;
        return w;
    }
    std::string bytes() {
        Wire w = sub();
        return data_.substr(w.pos_, w.end_ - w.pos_);
    }
    double fixed64_double() {
        if (end_ - pos_ < 8) profile_error(path_, pos_, "truncated 64-bit field");
        double v;
        std::memcpy(&v, data_.data() + pos_, 8);
        pos_ += 8;
        return v;
    }
    void skip(int wire_type) {
        switch (wire_type) {
            case 0:
                varint();
                return;
            case 1:
                if (end_ - pos_ < 8) profile_error(path_, pos_, "truncated 64-bit field");
                pos_ += 8;
                return;
            case 2:
                sub();
                return;
            case 5:
                if (end_ - pos_ < 4) profile_error(path_, pos_, "truncated 32-bit field");
                pos_ += 4;
                return;
            default:
                profile_error(path_, pos_,
                              fmt::format("unknown wire type {}: not an XSpace protobuf", wire_type));
        }
    }

  private:
    const std::string& path_;
    const std::string& data_;
    std::size_t pos_;
    std::size_t end_;
};

}  // namespace podsim::profile
