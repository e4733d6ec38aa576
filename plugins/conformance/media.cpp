#include "media.hpp"

#include <cmath>
#include <cstdint>

namespace conformance {
namespace {

void put_le(std::string& out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

}  // namespace

std::string base64(const std::string& bytes) {
  static constexpr char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += kTable[v >> 18];
    out += kTable[(v >> 12) & 63];
    out += kTable[(v >> 6) & 63];
    out += kTable[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out += kTable[v >> 18];
    out += kTable[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kTable[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

const std::string& red_pixel_png() {
  // Made with zlib: IHDR 1x1 RGB8, one filtered row (0, ff 00 00), IEND.
  static const std::string png =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
  return png;
}

const std::string& tone_wav() {
  static const std::string wav = [] {
    constexpr uint32_t kRate = 8000;
    constexpr uint32_t kSamples = kRate / 10;
    std::string data;
    for (uint32_t i = 0; i < kSamples; ++i) {
      data += static_cast<char>(128 + static_cast<int>(100 * std::sin(2 * M_PI * 440.0 * i / kRate)));
    }
    std::string out = "RIFF";
    put_le(out, 36 + kSamples, 4);
    out += "WAVEfmt ";
    put_le(out, 16, 4);     // fmt chunk size
    put_le(out, 1, 2);      // PCM
    put_le(out, 1, 2);      // mono
    put_le(out, kRate, 4);  // sample rate
    put_le(out, kRate, 4);  // byte rate
    put_le(out, 1, 2);      // block align
    put_le(out, 8, 2);      // bits per sample
    out += "data";
    put_le(out, kSamples, 4);
    out += data;
    return base64(out);
  }();
  return wav;
}

}  // namespace conformance
