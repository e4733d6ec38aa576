// Unit tests of gpu-profile's readers and metrics, without the host.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cstring>
#include <thread>

#include "bridge_view.hpp"
#include "interval_union.hpp"
#include "profile_metrics.hpp"
#include "profile_report.hpp"
#include "recording_finder.hpp"
#include "suggestions.hpp"
#include "trace_reader.hpp"

namespace gp = toolhost::gpu_profile;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp dir, removed at the end of the test.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("gpu-profile-test-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
};

std::string message_of(const absl::StatusOr<gp::trace_model>& r) { return std::string(r.status().message()); }

// A minimal xctrace export: two GPU rows of one process, the second interning by ref.
constexpr const char* kSmallXml = R"xml(<?xml version="1.0"?>
<trace-query-result><node><schema name="metal-gpu-intervals">
<col><mnemonic>start</mnemonic></col><col><mnemonic>duration</mnemonic></col>
<col><mnemonic>channel-name</mnemonic></col><col><mnemonic>process</mnemonic></col></schema>
<row><start-time>1000</start-time><duration id="1">500</duration><gpu-channel-name id="2">Fragment</gpu-channel-name>
<process id="3" fmt="Game (77)"><pid id="4" fmt="77">77</pid></process></row>
<row><start-time>1200</start-time><duration ref="1"/><gpu-channel-name ref="2"/><process ref="3"/></row>
<row><start-time>5000</start-time><duration>100</duration><gpu-channel-name>Vertex</gpu-channel-name>
<process fmt="Other (9)"><pid ref="4"/></process></row>
</node></trace-query-result>
)xml";

}  // namespace

TEST_CASE("busy time is the union of intervals, with gaps between the merged runs") {
  const auto merged = gp::merge_spans({{20, 30}, {0, 10}, {5, 15}, {30, 35}, {1'000'000, 1'000'010}});
  REQUIRE(merged.size() == 3);
  CHECK(gp::total_length(merged) == 15 + 15 + 10);
  const auto gaps = gp::gaps_between(merged);
  CHECK(gaps == std::vector<int64_t>{5, 1'000'000 - 35});
  const auto h =
      gp::gap_histogram({0, 999, 1'000, 4'999, 5'000, 19'999, 20'000, 99'999, 100'000, 999'999, 1'000'000, 5'000'000});
  CHECK(h == std::array<int64_t, 6>{2, 2, 2, 2, 2, 2});
}

TEST_CASE("percentiles are nearest-rank") {
  std::vector<int64_t> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const gp::distribution d = gp::describe(v);
  CHECK(d.count == 100);
  CHECK(d.p50 == 50);
  CHECK(d.p95 == 95);
  CHECK(d.p99 == 99);
  CHECK(d.min == 1);
  CHECK(d.max == 100);
  CHECK(d.mean == Approx(50.5));
  const gp::distribution one = gp::describe({7});
  CHECK(one.p50 == 7);
  CHECK(one.p99 == 7);
  CHECK(gp::describe({}).count == 0);
}

TEST_CASE("xctrace reader resolves id/ref interning, nested values included") {
  temp_dir dir;
  auto trace = gp::read_xctrace_xml(dir.write("t.xml", kSmallXml));
  REQUIRE(trace.ok());
  REQUIRE(trace->intervals.size() == 3);
  CHECK(trace->intervals[1].end_ns - trace->intervals[1].start_ns == 500);  // duration by ref
  CHECK(trace->intervals[1].pid == 77);                                     // process by ref
  CHECK(trace->tracks[trace->intervals[1].track] == "Fragment");
  CHECK(trace->intervals[2].pid == 77);  // <pid ref="4"/> nested in a new process element
  CHECK(trace->process_names.at(77) == "Game");

  const gp::profile p = gp::compute_profile(*trace, {});
  CHECK(p.busy_ns == 700 + 100);  // [1000,1700) and [5000,5100): overlap counted once
  CHECK(p.summed_ns == 1100);
}

TEST_CASE("xctrace reader refuses malformed, truncated and foreign XML with a clear error") {
  temp_dir dir;
  const std::string xml = kSmallXml;
  auto cut = gp::read_xctrace_xml(dir.write("cut.xml", xml.substr(0, xml.size() / 2)));
  REQUIRE_FALSE(cut.ok());
  CHECK_THAT(message_of(cut), Catch::Contains("truncated") && Catch::Contains("line"));

  auto bad_ref = gp::read_xctrace_xml(
      dir.write("ref.xml", std::string(kSmallXml).replace(xml.find("ref=\"1\""), 7, "ref=\"99\"")));
  REQUIRE_FALSE(bad_ref.ok());
  CHECK_THAT(message_of(bad_ref), Catch::Contains("ref=\"99\"") && Catch::Contains("no earlier id"));

  auto toc = gp::read_xctrace_xml(dir.write("toc.xml", "<trace-toc><run number=\"1\"/></trace-toc>"));
  REQUIRE_FALSE(toc.ok());
  CHECK_THAT(message_of(toc), Catch::Contains("table of contents"));

  auto other = gp::read_xctrace_xml(
      dir.write("other.xml",
                "<trace-query-result><node><schema "
                "name=\"time-profile\"><col><mnemonic>time</mnemonic></col></schema></node></trace-query-result>"));
  REQUIRE_FALSE(other.ok());
  CHECK_THAT(message_of(other), Catch::Contains("no metal-gpu-intervals") && Catch::Contains("time-profile"));

  auto wide = gp::read_xctrace_xml(dir.write(
      "wide.xml",
      "<trace-query-result><node><schema name=\"metal-gpu-intervals\"><col><mnemonic>start</mnemonic></col></schema>"
      "<row><a>1</a><b>2</b></row></node></trace-query-result>"));
  REQUIRE_FALSE(wide.ok());
  CHECK_THAT(message_of(wide), Catch::Contains("2 values for 1 columns"));
}

TEST_CASE("Chrome reader: both forms, B/E pairs, PyTorch kernels and launches") {
  temp_dir dir;
  // The bare array form may lack its closing bracket.
  const std::string array_form = R"([
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"python"}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":2,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":"stream 7","ts":12.5,"dur":10,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":"stream 8","ts":15,"dur":10},
)";
  auto trace = gp::read_chrome_json(dir.write("a.json", array_form));
  REQUIRE(trace.ok());
  REQUIRE(trace->source == gp::gpu_source::device);
  REQUIRE(trace->intervals.size() == 2);
  CHECK(trace->intervals[0].cpu_to_gpu_ns == 2'500);
  const gp::profile p = gp::compute_profile(*trace, {});
  CHECK(p.busy_ns == 12'500);  // [12.5, 25) us
  CHECK(p.tracks_total == 2);

  const std::string chromium = R"({"traceEvents":[
{"ph":"B","name":"Draw","pid":3,"tid":4,"ts":100},
{"ph":"X","name":"Inner","pid":3,"tid":4,"ts":101,"dur":1},
{"ph":"E","name":"Draw","pid":3,"tid":4,"ts":110},
{"ph":"X","name":"Browser work","pid":2,"tid":2,"ts":100,"dur":50},
{"ph":"I","name":"Display::FrameDisplayed","pid":3,"tid":4,"ts":1000},
{"ph":"I","name":"Display::FrameDisplayed","pid":3,"tid":4,"ts":17667},
{"ph":"I","name":"Display::FrameDisplayed","pid":3,"tid":4,"ts":51000},
{"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"GPU Process"}}],"displayTimeUnit":"ms"})";
  auto c = gp::read_chrome_json(dir.write("c.json", chromium));
  REQUIRE(c.ok());
  CHECK(c->source == gp::gpu_source::gpu_process);
  const gp::profile q = gp::compute_profile(*c, {});
  CHECK(q.busy_ns == 10'000);  // the B/E slice; the browser's work is not GPU work
  REQUIRE(q.frames);
  CHECK(q.frames->count == 2);
  CHECK(q.frames->missed == 1);  // 33.3 ms at 60 Hz
  CHECK(q.frames->missed_refreshes == 1);
}

TEST_CASE("Chrome reader refuses truncated, malformed and foreign JSON") {
  temp_dir dir;
  auto cut = gp::read_chrome_json(dir.write("cut.json", R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2},)"));
  REQUIRE_FALSE(cut.ok());
  CHECK_THAT(message_of(cut), Catch::Contains("truncated"));
  auto mid_event = gp::read_chrome_json(dir.write("mid.json", R"([{"ph":"X","cat":"kernel","name":"a","ts":1,)"));
  REQUIRE_FALSE(mid_event.ok());
  CHECK_THAT(message_of(mid_event), Catch::Contains("truncated"));
  auto bad = gp::read_chrome_json(dir.write("bad.json", R"({"traceEvents":[{"ph":"X",,}]})"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(message_of(bad), Catch::Contains("malformed") && Catch::Contains("byte"));
  auto foreign = gp::read_chrome_json(dir.write("f.json", R"({"name":"package.json"})"));
  REQUIRE_FALSE(foreign.ok());
  CHECK_THAT(message_of(foreign), Catch::Contains("no \"traceEvents\""));
  auto empty = gp::read_chrome_json(
      dir.write("e.json", R"({"traceEvents":[{"ph":"X","name":"x","pid":1,"tid":1,"ts":1,"dur":1}]})"));
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(message_of(empty), Catch::Contains("no GPU work"));
}

TEST_CASE("nsys reader refuses non-databases and databases without CUDA activity") {
  temp_dir dir;
  // Starts like SQLite, so read_trace hands it to the nsys reader, but it is not a database.
  auto fake = gp::read_trace(dir.write("fake.sqlite", std::string("SQLite format 3\0", 16) + std::string(200, 'x')));
  REQUIRE_FALSE(fake.ok());
  CHECK_THAT(message_of(fake), Catch::Contains("fake.sqlite"));

  const fs::path empty = dir.path / "empty.sqlite";
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(empty.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto none = gp::read_nsys_sqlite(empty);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(message_of(none), Catch::Contains("no CUDA activity"));
}

TEST_CASE("read_trace picks the reader from the content and names what it cannot read") {
  temp_dir dir;
  CHECK_THAT(message_of(gp::read_trace(dir.write("e.json", ""))), Catch::Contains("is empty"));
  CHECK_THAT(message_of(gp::read_trace(dir.write("x.bin", "\x01\x02garbage"))),
             Catch::Contains("not a trace this tool reads"));
  fs::create_directories(dir.path / "run.trace");
  CHECK_THAT(message_of(gp::read_trace(dir.path / "run.trace")), Catch::Contains("xctrace export"));
  auto xml = gp::read_trace(dir.write("t.json", kSmallXml));  // content wins over the extension
  CHECK(xml.ok());
}

TEST_CASE("the newest recording is the most recently modified trace in the folder") {
  temp_dir dir;
  CHECK_FALSE(gp::newest_recording(dir.path / "missing"));
  CHECK_FALSE(gp::newest_recording(dir.path));
  const auto old_file = dir.write("old.json", "{}");
  const auto new_file = dir.write("new.sqlite", "x");
  dir.write("notes.txt", "not a trace");
  dir.write(".hidden.json", "{}");
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(old_file, now - std::chrono::hours(2));
  fs::last_write_time(new_file, now - std::chrono::hours(1));
  fs::last_write_time(dir.path / "notes.txt", now);
  fs::last_write_time(dir.path / ".hidden.json", now);
  REQUIRE(gp::newest_recording(dir.path));
  CHECK(gp::newest_recording(dir.path)->filename() == "new.sqlite");
  CHECK_THAT(gp::how_to_record(dir.path), Catch::Contains("Record a GPU run") && Catch::Contains("nsys"));
}

TEST_CASE("the process setting picks which process's GPU work is analysed") {
  gp::trace_model m;
  m.process_names = {{1, "WindowServer"}, {2, "MyGame"}};
  const uint32_t track = m.track_id("Fragment");
  m.intervals.push_back({0, 1000, track, m.label_id("a"), 1});
  m.intervals.push_back({0, 100, track, m.label_id("b"), 2});
  CHECK(gp::compute_profile(m, {}).pid == 1);  // the busiest by default
  gp::profile_options mine;
  mine.process = "mygame";
  const gp::profile p = gp::compute_profile(m, mine);
  CHECK(p.pid == 2);
  CHECK(p.busy_ns == 100);
  CHECK(p.other_processes == std::vector<std::string>{"WindowServer (1)"});
  mine.process = "nothing";
  const gp::profile q = gp::compute_profile(m, mine);
  CHECK(q.pid == 1);
  REQUIRE_FALSE(q.notes.empty());
  CHECK_THAT(q.notes.back(), Catch::Contains("nothing"));
}

TEST_CASE("late frames are called GPU-bound or CPU-bound from the GPU time inside them") {
  gp::trace_model m;
  const uint32_t track = m.track_id("GPU");
  const int64_t ms = 1'000'000;
  for (int64_t t : {0 * ms, 16 * ms, 32 * ms, 80 * ms}) m.presents.push_back({t});
  m.intervals.push_back({33 * ms, 78 * ms, track, m.label_id("heavy")});  // 45 of the late frame's 48 ms
  gp::profile_options o;
  o.refresh_hz = 62.5;  // 16 ms
  const gp::profile p = gp::compute_profile(m, o);
  REQUIRE(p.frames);
  CHECK(p.frames->missed == 1);
  CHECK(p.frames->missed_refreshes == 2);
  CHECK(p.frames->late_gpu_busy_percent == Approx(100.0 * 45 / 48));
  const auto s = gp::suggest(p);
  CHECK_THAT(s.at(1), Catch::Contains("GPU-bound"));
  const std::string json = gp::report_json(p, {"x.json", ""}, s);
  CHECK_THAT(json, Catch::Contains("\"missed\":1") && Catch::Contains("\"refresh_source\":\"settings\""));
}

namespace {

// A one-shot window bridge: accepts one connection, reads one line, answers `reply`.
struct fake_bridge {
  std::string path;
  std::string request;
  std::thread thread;
  int listener = -1;

  fake_bridge(const fs::path& dir, std::string reply) : path((dir / "bridge.sock").string()) {
    listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 1) == 0);
    thread = std::thread([this, reply = std::move(reply)] {
      const int c = ::accept(listener, nullptr, nullptr);
      if (c < 0) return;
      char ch;
      while (::read(c, &ch, 1) == 1 && ch != '\n') request += ch;
      if (!reply.empty()) (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    });
  }
  // What the client sent, once the exchange is over.
  const std::string& received() {
    if (thread.joinable()) thread.join();
    return request;
  }
  ~fake_bridge() {
    if (thread.joinable()) thread.join();
    ::close(listener);
  }
};

}  // namespace

TEST_CASE("the open file comes from the window's current_view over the bridge") {
  temp_dir dir;
  {
    fake_bridge bridge(
        dir.path,
        R"({"id":1,"ok":true,"text":"{\"file\":\"/Apps/Example.app\",\"function\":null,\"address\":null,\"view\":null}"})"
        "\n");
    auto file = gp::open_file_from_bridge(bridge.path, "Claude", "c_1");
    REQUIRE(file.ok());
    CHECK(*file == "/Apps/Example.app");
    CHECK_THAT(bridge.received(),
               Catch::Contains("\"tool\":\"current_view\"") && Catch::Contains("\"agent\":\"Claude\""));
  }
  {
    fs::create_directories(dir.path / "second");
    fake_bridge bridge(dir.path / "second",
                       R"({"id":1,"ok":false,"error":"No file is open in Eleven. Ask the user to open one."})"
                       "\n");
    auto file = gp::open_file_from_bridge(bridge.path, "", "");
    REQUIRE_FALSE(file.ok());
    CHECK(file.status().message() == "No file is open in Eleven. Ask the user to open one.");
  }
  auto gone = gp::open_file_from_bridge((dir.path / "nobody.sock").string(), "", "");
  REQUIRE_FALSE(gone.ok());
  CHECK_THAT(std::string(gone.status().message()), Catch::Contains("Is the window open?"));
}

TEST_CASE("a read stops when the call is cancelled, and reports its progress") {
  const fs::path fixtures = GPU_PROFILE_FIXTURES;
  for (const char* name : {"chromium_animation.json", "metal_system_trace.xml", "nsys_cuda.sqlite"}) {
    INFO(name);
    gp::read_control stop;
    int polls = 0;
    stop.cancelled = [&polls] { return ++polls > 0; };
    auto r = gp::read_trace(fixtures / name, stop);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kCancelled);
    CHECK(polls > 0);

    gp::read_control watch;
    uint64_t last = 0;
    watch.cancelled = [] { return false; };
    watch.progress = [&last](uint64_t done, uint64_t) { last = done; };
    CHECK(gp::read_trace(fixtures / name, watch).ok());
    if (std::string(name).ends_with(".json")) CHECK(last > 0);
  }
}
