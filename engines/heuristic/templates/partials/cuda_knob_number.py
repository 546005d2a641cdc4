// C++, for a CUDA template's cuda_source (included inside its raw string, in its namespace).
// The i-th number of a knob's text, its numbers apart by any non-digit ("128x256x32",
// "128x128x16_64x64x16"), as a constant expression; -1 past the last.
constexpr int KnobNumber(const char* s, int i) {
  int n = 0, v = 0;
  for (; *s != '\0'; ++s) {
    if (*s >= '0' && *s <= '9') {
      v = v * 10 + (*s - '0');
    } else {
      if (n == i) return v;
      ++n;
      v = 0;
    }
  }
  return n == i ? v : -1;
}
