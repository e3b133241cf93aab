#pragma once

// Protocol-buffer wire format, read without generated code: the readers of binary formats (XProf
// .xplane.pb, Chakra .et, XLA's HloProto) walk their messages field by field.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace podsim::core {

// Throws core::UserError: `FILE: error: at byte OFFSET: message`.
[[noreturn]] void wire_error(const std::string& path, std::size_t offset, const std::string& message);

class Wire {
  public:
    Wire(const std::string& path, const std::string& data, std::size_t begin, std::size_t end)
        : path_(path), data_(data), pos_(begin), end_(end) {}
    bool done() const { return pos_ >= end_; }
    std::size_t pos() const { return pos_; }
    const std::string& path() const { return path_; }

    std::uint64_t varint() {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= end_) wire_error(path_, pos_, "truncated varint (the file ends inside a field)");
            auto byte = static_cast<unsigned char>(data_[pos_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (byte < 0x80) return value;
        }
        wire_error(path_, pos_, "varint longer than 10 bytes: not a protobuf file");
    }
    // A varint field read as a signed 64-bit integer (int64 fields carry two's complement).
    std::int64_t int64() { return static_cast<std::int64_t>(varint()); }
    // Reads a key; returns field number and wire type.
    std::pair<std::uint32_t, int> key() {
        std::uint64_t k = varint();
        return {static_cast<std::uint32_t>(k >> 3), static_cast<int>(k & 7)};
    }
    // A length-delimited field as a sub-reader.
    Wire sub() {
        std::uint64_t length = varint();
        if (length > end_ - pos_)
            wire_error(path_, pos_,
                       "field of " + std::to_string(length) + " bytes runs past the end (" +
                           std::to_string(end_ - pos_) + " left)");
        Wire w(path_, data_, pos_, pos_ + length);
        pos_ += length;
        return w;
    }
    std::string bytes() {
        Wire w = sub();
        return data_.substr(w.pos_, w.end_ - w.pos_);
    }
    std::string_view view() {
        Wire w = sub();
        return std::string_view(data_).substr(w.pos_, w.end_ - w.pos_);
    }
    double fixed64_double() {
        if (end_ - pos_ < 8) wire_error(path_, pos_, "truncated 64-bit field");
        double v;
        std::memcpy(&v, data_.data() + pos_, 8);
        pos_ += 8;
        return v;
    }
    // A repeated integer field, packed (wire type 2) or one value (wire type 0), appended to `out`.
    template <class Vector>
    void append_integers(int wire_type, Vector& out) {
        if (wire_type == 0) {
            out.push_back(static_cast<typename Vector::value_type>(int64()));
            return;
        }
        if (wire_type != 2) {
            skip(wire_type);
            return;
        }
        Wire packed = sub();
        while (!packed.done()) out.push_back(static_cast<typename Vector::value_type>(packed.int64()));
    }
    void skip(int wire_type) {
        switch (wire_type) {
            case 0:
                varint();
                return;
            case 1:
                if (end_ - pos_ < 8) wire_error(path_, pos_, "truncated 64-bit field");
                pos_ += 8;
                return;
            case 2:
                sub();
                return;
            case 5:
                if (end_ - pos_ < 4) wire_error(path_, pos_, "truncated 32-bit field");
                pos_ += 4;
                return;
            default:
                wire_error(path_, pos_,
                           "unknown wire type " + std::to_string(wire_type) + ": not a protobuf message");
        }
    }

  private:
    const std::string& path_;
    const std::string& data_;
    std::size_t pos_;
    std::size_t end_;
};

}  // namespace podsim::core
