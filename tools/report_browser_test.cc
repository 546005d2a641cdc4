// The HTML report in a real browser: Debian's chromium, headless, renders the GPU jobs
// (two recorded on an H200 and the one built from the case study) and the CPU job
// (tools/testdata/report) at a laptop's width (1280 px) and a narrow window's (700 px). A
// probe script, added to the page for the test only (the report has no scripts), writes
// what it measures into the DOM: the page's scroll width against the window's, how much of
// the window the page uses, and how many ids wrapped over lines; --dump-dom reads it back
// with the text the browser shows, and --screenshot writes a PNG whose size and dimensions
// are checked.
//
// Chromium must be on PATH (scripts/setup.sh installs it): without it the test fails and
// says so. KAGENT_NO_BROWSER=1 skips it (for a machine without the package); CI does not
// set it. KAGENT_KEEP_TEST_DIRS keeps the pages and screenshots (the directory is printed).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/file_io.h"
#include "common/subprocess/subprocess.h"
#include "tools/report.h"
#include "tools/report_testdata.h"

namespace kagent {
namespace {

namespace fs = std::filesystem;

// Measures the laid-out page and writes the figures as JSON into <pre id="probe">.
constexpr char kProbe[] = R"(<pre id="probe"></pre><script>
(function () {
  var d = document.documentElement, ids = document.querySelectorAll('.id'), wrapped = 0;
  for (var i = 0; i < ids.length; i++) {
    var fs = parseFloat(getComputedStyle(ids[i]).fontSize);
    if (ids[i].getBoundingClientRect().height > 2 * fs) wrapped++;
  }
  var charts = document.querySelectorAll('.chart'), widest = 0;
  for (var j = 0; j < charts.length; j++) widest = Math.max(widest, charts[j].getBoundingClientRect().width);
  document.getElementById('probe').textContent = JSON.stringify({
    inner: window.innerWidth, scroll: d.scrollWidth, ids: ids.length, wrapped: wrapped,
    body: document.body.getBoundingClientRect().width, charts: charts.length, widest_chart: widest});
})();
</script>)";

struct Rendered {
  nlohmann::json probe;
  std::string dom;
  std::string png;
};

bool Skipped() {
  const char* v = std::getenv("KAGENT_NO_BROWSER");
  return v != nullptr && std::string(v) == "1";
}

std::string Chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    absl::StatusOr<std::string> p = FindExecutable(name);
    if (p.ok()) return *p;
  }
  return "";
}

// Renders `html` at `width` x 900 into dir/<stem>.png and returns the probe, the DOM and
// the PNG's bytes.
Rendered Render(const std::string& chromium, const fs::path& dir, const std::string& stem,
                const std::string& html, int width) {
  const fs::path page = dir / (stem + ".html"), png = dir / (stem + ".png");
  std::string probed = absl::StrReplaceAll(html, {{"</body>", absl::StrCat(kProbe, "</body>")}});
  REQUIRE(WriteFileAtomically(page.string(), probed).ok());
  SubprocessOptions o;
  o.argv = {chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",                        // a container's small /dev/shm
            "--user-data-dir=" + (dir / "profile").string(),  // not under $HOME
            absl::StrCat("--window-size=", width, ",900"),
            "--screenshot=" + png.string(),
            "--dump-dom",
            "file://" + page.string()};
  o.inherit_env = true;
  o.timeout = absl::Seconds(90);
  absl::StatusOr<SubprocessResult> r = RunSubprocess(o);
  REQUIRE(r.ok());
  INFO("chromium: " << r->Describe() << "\n" << r->stderr_data);
  REQUIRE(r->ok());
  Rendered out;
  out.dom = r->stdout_data;
  const std::string open = "<pre id=\"probe\">";
  size_t b = out.dom.find(open);
  REQUIRE(b != std::string::npos);
  b += open.size();
  size_t e = out.dom.find("</pre>", b);
  REQUIRE(e != std::string::npos);
  std::string text = absl::StrReplaceAll(out.dom.substr(b, e - b), {{"&quot;", "\""}});
  INFO("probe: " << text);
  out.probe = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  REQUIRE(out.probe.is_object());
  absl::StatusOr<std::string> bytes = ReadFile(png.string());
  REQUIRE(bytes.ok());
  out.png = *bytes;
  return out;
}

// A PNG's width from its IHDR chunk (big-endian at bytes 16..19).
int PngWidth(const std::string& png) {
  if (png.size() < 24 || png.compare(1, 3, "PNG") != 0) return -1;
  auto byte = [&](int i) { return static_cast<int>(static_cast<unsigned char>(png[i])); };
  return (byte(16) << 24) | (byte(17) << 16) | (byte(18) << 8) | byte(19);
}

void CheckLayout(const Rendered& r, int width) {
  INFO("width " << width << ", probe " << r.probe.dump());
  CHECK(r.probe["inner"].get<int>() == width);
  // Nothing overflows the window horizontally (wide tables scroll inside their box).
  CHECK(r.probe["scroll"].get<int>() <= width);
  // No id wraps over lines.
  CHECK(r.probe["ids"].get<int>() > 0);
  CHECK(r.probe["wrapped"].get<int>() == 0);
  // The page uses the window's width, not half of it.
  CHECK(r.probe["body"].get<double>() >= 0.9 * width);
  // A screenshot of the window, not an empty image.
  CHECK(PngWidth(r.png) == width);
  CHECK(r.png.size() > 20000);
}

TEST_CASE("report browser: the GPU jobs and the CPU job at 1280 and 700 px") {
  if (Skipped()) {
    WARN("KAGENT_NO_BROWSER=1: the report's browser test is skipped");
    return;
  }
  const std::string chromium = Chromium();
  if (chromium.empty()) {
    FAIL(
        "chromium is not on PATH: install Debian's chromium package (bash scripts/setup.sh does), "
        "or set KAGENT_NO_BROWSER=1 to skip this test on a machine without it");
  }
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("kagent_report_browser_", ::getpid());
  fs::create_directories(dir);
  // Removed at the end of the scope, a failed REQUIRE's included, unless kept.
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      if (std::getenv("KAGENT_KEEP_TEST_DIRS") == nullptr) fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  auto gpu = report_testdata::Load("gpu_matvec_h200");
  auto cpu = report_testdata::Load("cpu_matvec_small");
  auto fast = report_testdata::Load("gpu_h200_tall_skinny");
  auto slow = report_testdata::Load("gpu_h200_square_slower");
  REQUIRE(gpu.ok());
  REQUIRE(cpu.ok());
  REQUIRE(fast.ok());
  REQUIRE(slow.ok());
  const std::string gpu_html = RenderHtmlReport(gpu->job, gpu->candidates, gpu->reflexions);
  const std::string fast_html = RenderHtmlReport(fast->job, fast->candidates, fast->reflexions);
  const std::string slow_html = RenderHtmlReport(slow->job, slow->candidates, slow->reflexions);
  const std::string cpu_html = RenderHtmlReport(cpu->job, cpu->candidates, cpu->reflexions);

  for (int width : {1280, 700}) {
    Rendered g = Render(chromium, dir, absl::StrCat("gpu_", width), gpu_html, width);
    CheckLayout(g, width);
    // Two charts side by side on a laptop, stacked in a narrow window.
    CHECK(g.probe["charts"].get<int>() == 2);
    if (width == 1280) CHECK(g.probe["widest_chart"].get<double>() < 0.6 * width);
    if (width == 700) CHECK(g.probe["widest_chart"].get<double>() > 0.8 * width);
    CHECK(absl::StrContains(g.dom, "2.01x faster"));
    CHECK(absl::StrContains(g.dom, "GPU-seconds"));
    CHECK(absl::StrContains(g.dom, "Ceilings of the NVIDIA H200"));
    CHECK(absl::StrContains(g.dom, "DUPLICATE"));
    CHECK_FALSE(absl::StrContains(g.dom, "cpu-banner"));

    // Recorded on the H200: the final run's figures as the browser shows them.
    Rendered f = Render(chromium, dir, absl::StrCat("gpu_h200_tall_skinny_", width), fast_html, width);
    CheckLayout(f, width);
    CHECK(f.probe["charts"].get<int>() == 2);
    CHECK(absl::StrContains(f.dom, "1.7725 ms"));
    CHECK(absl::StrContains(f.dom, "1.13x faster"));
    CHECK(absl::StrContains(f.dom, "1.15x faster"));
    CHECK(absl::StrContains(f.dom, "65.3%"));
    CHECK(absl::StrContains(f.dom, "Ceilings of the NVIDIA H200"));
    CHECK_FALSE(absl::StrContains(f.dom, "cpu-banner"));

    Rendered s = Render(chromium, dir, absl::StrCat("gpu_h200_square_slower_", width), slow_html, width);
    CheckLayout(s, width);
    // No profile, no roofline chart: the round chart alone.
    CHECK(s.probe["charts"].get<int>() == 1);
    CHECK(absl::StrContains(s.dom, "0.84x (1.19x slower)"));
    CHECK(absl::StrContains(s.dom, "n/a (the signature gives no FLOPs and bytes)"));
    CHECK(absl::StrContains(s.dom, "No roofline chart"));
    CHECK(absl::StrContains(s.dom, "GPU-seconds"));
    CHECK_FALSE(absl::StrContains(s.dom, "cpu-banner"));
    CHECK_FALSE(absl::StrContains(s.dom, "Not GPU times."));

    Rendered c = Render(chromium, dir, absl::StrCat("cpu_", width), cpu_html, width);
    CheckLayout(c, width);
    CHECK(absl::StrContains(c.dom, "Not GPU times."));
    CHECK(absl::StrContains(c.dom, "worker-seconds"));
    CHECK(absl::StrContains(c.dom, "n/a (no hardware counters on a CPU worker)"));
    CHECK(absl::StrContains(c.dom, "slower)"));
    CHECK_FALSE(absl::StrContains(c.dom, "0.00x"));
    CHECK_FALSE(absl::StrContains(c.dom, "GPU-seconds"));
  }
  if (std::getenv("KAGENT_KEEP_TEST_DIRS") != nullptr) {
    WARN("pages and screenshots kept in " << dir.string());
  }
}

}  // namespace
}  // namespace kagent
