// Small, real media for the fixtures: a 1x1 PNG and a short WAV tone, as base64.
#pragma once

#include <string>

namespace conformance {

// A 1x1 red PNG (8-bit RGB), base64.
const std::string& red_pixel_png();
// 0.1 s of a 440 Hz tone, 8 kHz 8-bit mono PCM in a RIFF/WAVE container, base64.
const std::string& tone_wav();

std::string base64(const std::string& bytes);

}  // namespace conformance
