// Drawing a timeline of up to millions of ops in a page a browser opens quickly: time maps to a
// 0..1000 viewBox (the script zooms by changing the viewBox, so nothing is redrawn), and within a
// lane consecutive ops shorter than one pixel (span / timeline_pixels) that follow each other
// within a pixel are merged into one block of about a pixel, drawn with an opacity that shows how
// busy it was. Each lane therefore holds at most about 2 * timeline_pixels rectangles plus its
// ops longer than a pixel, and the page says how many ops were merged.
#include "html_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>
#include <vector>

#include "cuoverlap/communication.h"
#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "render_common.h"

namespace cuoverlap::html {
namespace {

constexpr double kViewWidth = 1000.0;
constexpr int kLaneHeight = 22;
constexpr int kBarHeight = 16;

struct Scale {
  Ns t0 = 0;
  Ns span = 1;
  Ns pixel_ns = 1;
  double min_width = 1.0;
  double x(Ns t) const { return static_cast<double>(t - t0) * kViewWidth / static_cast<double>(span); }
};

// What colours an item: its engine (Engine's values 0..6) or kNvtxKind.
constexpr std::size_t kNvtxKind = static_cast<std::size_t>(Engine::kComm) + 1;
constexpr std::size_t kKinds = kNvtxKind + 1;

std::string kindClass(std::size_t kind) {
  return kind == kNvtxKind ? std::string("nvtx") : engineClass(static_cast<Engine>(kind));
}

std::string_view kindName(std::size_t kind) {
  return kind == kNvtxKind ? std::string_view("NVTX") : engineName(static_cast<Engine>(kind));
}

// One thing drawn in a lane: an op or an NVTX range.
struct LaneItem {
  Ns start = 0;
  Ns end = 0;
  const GpuOp* op = nullptr;
  const NvtxRange* range = nullptr;
  std::size_t kind = kNvtxKind;
};

std::string itemTitle(const Trace& trace, const LaneItem& item) {
  const std::string length = units::formatDuration(item.end - item.start);
  if (item.range != nullptr) return fmt::format("{} ({})", trace.str(item.range->text), length);
  const GpuOp& op = *item.op;
  if (op.kind == OpKind::kKernel) {
    return fmt::format("{} ({}, grid {}, block {})", trace.str(op.name), length, op.grid_blocks,
                       op.block_threads);
  }
  return fmt::format("{} {} {} ({})", opKindName(op.kind),
                     op.kind == OpKind::kMemcpy ? copyKindName(op.copy_kind) : "",
                     units::formatBytes(op.bytes), length);
}

// Paints one lane's items (in start order), merging runs of sub-pixel items into blocks of about
// a pixel. A block takes the colour of the engine that was busiest in it and an opacity that
// shows how much of it was busy.
class LanePainter {
 public:
  LanePainter(const Trace& trace, const Scale& scale, std::string& svg, int lane)
      : trace_(trace), scale_(scale), svg_(svg), y_(lane * kLaneHeight + (kLaneHeight - kBarHeight) / 2) {}

  void add(const LaneItem& item) {
    const bool small = item.end - item.start < scale_.pixel_ns;
    if (small && count_ > 0 && item.start - end_ <= scale_.pixel_ns &&
        item.start < start_ + scale_.pixel_ns) {
      end_ = std::max(end_, item.end);
      addToBlock(item);
      return;
    }
    flush();
    if (!small) {
      drawRect(item.start, item.end, kindClass(item.kind), itemTitle(trace_, item));
      return;
    }
    first_ = item;
    start_ = item.start;
    end_ = item.end;
    busy_ = {};
    counts_ = {};
    addToBlock(item);
  }

  void flush() {
    if (count_ == 1) drawRect(start_, end_, kindClass(first_.kind), itemTitle(trace_, first_));
    if (count_ > 1) drawBlock();
    count_ = 0;
  }

  std::uint64_t merged() const { return merged_; }
  std::uint64_t blocks() const { return blocks_; }

 private:
  void addToBlock(const LaneItem& item) {
    busy_[item.kind] += item.end - item.start;
    ++counts_[item.kind];
    ++count_;
  }

  void drawBlock() {
    merged_ += count_;
    ++blocks_;
    std::size_t busiest = 0;
    Ns busy = 0;
    std::string title = fmt::format("{} short items merged:", count_);
    for (std::size_t kind = 0; kind < kKinds; ++kind) {
      busy += busy_[kind];
      if (busy_[kind] > busy_[busiest]) busiest = kind;
      if (counts_[kind] > 0) fmt::format_to(std::back_inserter(title), " {} {},", counts_[kind], kindName(kind));
    }
    fmt::format_to(std::back_inserter(title), " {} busy, +{} to +{}", units::formatDuration(busy),
                   units::formatDuration(start_ - scale_.t0), units::formatDuration(end_ - scale_.t0));
    // At least a quarter opaque, so that sparse blocks stay visible.
    const double fill = std::clamp(
        static_cast<double>(busy) / static_cast<double>(std::max<Ns>(1, end_ - start_)), 0.25, 1.0);
    drawRect(start_, end_, kindClass(busiest) + " merged", title, fill);
  }

  void drawRect(Ns start, Ns end, const std::string& css_class, const std::string& title,
                double opacity = 1.0) {
    const double width = std::max(scale_.x(end) - scale_.x(start), scale_.min_width);
    const std::string fill = opacity < 1.0 ? fmt::format(" fill-opacity=\"{:.2f}\"", opacity) : "";
    fmt::format_to(std::back_inserter(svg_),
                   "<rect class=\"{}\" x=\"{:.3f}\" y=\"{}\" width=\"{:.3f}\" height=\"{}\"{}>"
                   "<title>{}</title></rect>\n",
                   css_class, scale_.x(start), y_, width, kBarHeight, fill, escapeHtml(title));
  }

  const Trace& trace_;
  const Scale& scale_;
  std::string& svg_;
  int y_;
  LaneItem first_;
  Ns start_ = 0;
  Ns end_ = 0;
  std::array<Ns, kKinds> busy_{};
  std::array<std::uint64_t, kKinds> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t merged_ = 0;
  std::uint64_t blocks_ = 0;
};

struct Lane {
  std::string label;
  std::vector<LaneItem> items;
};

using StreamKey = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // stream, pid, context

std::vector<Lane> collectLanes(const Trace& trace, std::uint16_t device_id, Ns start, Ns end,
                               const HtmlOptions& options) {
  std::vector<Lane> nvtx(static_cast<std::size_t>(std::max(options.max_nvtx_depth, 0)));
  for (const NvtxRange& range : trace.nvtx) {
    if (range.event_type == static_cast<std::int32_t>(schema::NvtxEventType::kDomainCreate)) continue;
    if (range.end < start || range.start > end) continue;
    if (range.depth < 0 || range.depth >= options.max_nvtx_depth) continue;
    nvtx[static_cast<std::size_t>(range.depth)].items.push_back({range.start, range.end, nullptr, &range, kNvtxKind});
  }
  std::vector<Lane> lanes;
  for (std::size_t depth = 0; depth < nvtx.size(); ++depth) {
    if (nvtx[depth].items.empty()) break;
    nvtx[depth].label = depth == 0 ? "NVTX" : fmt::format("NVTX level {}", depth + 1);
    lanes.push_back(std::move(nvtx[depth]));
  }
  std::map<StreamKey, Lane> streams;
  const CommunicationKernels communication(trace);
  for (const GpuOp& op : trace.ops) {
    if (op.device_id != device_id || op.end < start || op.start > end) continue;
    Lane& lane = streams[{op.stream_id, op.pid, op.context_id}];
    if (lane.items.empty()) lane.label = render::streamLabel(trace, op.pid, op.context_id, op.stream_id);
    lane.items.push_back({op.start, op.end, &op, nullptr, static_cast<std::size_t>(communication.engineOf(op))});
  }
  for (auto& entry : streams) lanes.push_back(std::move(entry.second));
  return lanes;
}

// Tick step of 1, 2 or 5 times a power of ten giving about eight ticks over `range_ns`.
Ns tickStep(Ns range_ns) {
  const double raw = std::max(1.0, static_cast<double>(range_ns) / 8.0);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double mantissa = raw / power;
  const double step = (mantissa <= 1 ? 1 : mantissa <= 2 ? 2 : mantissa <= 5 ? 5 : 10) * power;
  return std::max<Ns>(1, static_cast<Ns>(step));
}

void appendAxis(std::string& out, const Scale& scale) {
  out += "<div class=\"tl-axis\">";
  const Ns step = tickStep(scale.span);
  // Labels further right than 94% get cut off. floor(span * 94 / 100), without the overflow of
  // span * 94 for spans beyond 2^63 / 94 ns.
  const Ns last = scale.span / 100 * 94 + scale.span % 100 * 94 / 100;
  for (Ns t = 0; t <= last; t += step) {
    fmt::format_to(std::back_inserter(out), "<span style=\"left:{:.2f}%\">+{}</span>",
                   static_cast<double>(t) * 100.0 / static_cast<double>(scale.span),
                   units::formatDuration(t));
  }
  out += "</div>";
}

void appendGapShading(std::string& svg, const Trace& trace, const DeviceReport& device,
                      const Scale& scale, int first_stream_lane, int lanes) {
  const int top = first_stream_lane * kLaneHeight;
  const int height = (lanes - first_stream_lane) * kLaneHeight;
  for (const IdleGap& gap : device.gaps.largest) {
    const std::string title = fmt::format(
        "idle {} ({}) after {}; before {}; call {}", units::formatDuration(gap.duration()),
        gapCauseName(gap.cause), render::describeOp(&trace, gap.prev_op),
        render::describeOp(&trace, gap.next_op), render::describeCall(&trace, gap.call));
    fmt::format_to(std::back_inserter(svg),
                   "<rect class=\"gap {}\" x=\"{:.3f}\" y=\"{}\" width=\"{:.3f}\" height=\"{}\">"
                   "<title>{}</title></rect>\n",
                   gapClass(gap.cause), scale.x(gap.start), top,
                   std::max(scale.x(gap.end) - scale.x(gap.start), scale.min_width), height,
                   escapeHtml(title));
  }
}

void appendLegend(std::string& out, std::uint64_t items, std::uint64_t merged, std::uint64_t blocks) {
  out += "<div class=\"legend\">";
  for (Engine engine : {Engine::kCompute, Engine::kH2D, Engine::kD2H, Engine::kD2D,
                        Engine::kOtherCopy, Engine::kMemset, Engine::kComm}) {
    fmt::format_to(std::back_inserter(out), "<span><i class=\"sw {}\"></i>{}</span>",
                   engineClass(engine), engineName(engine));
  }
  out += "<span><i class=\"sw nvtx\"></i>NVTX</span>";
  for (GapCause cause : {GapCause::kSyncWait, GapCause::kAllocation, GapCause::kPageableStaging,
                         GapCause::kHostLaunch, GapCause::kDependency, GapCause::kModuleLoad,
                         GapCause::kHostBusy, GapCause::kUnknown}) {
    fmt::format_to(std::back_inserter(out), "<span><i class=\"sw gap {}\"></i>gap: {}</span>",
                   gapClass(cause), gapCauseName(cause));
  }
  out += "</div>";
  fmt::format_to(std::back_inserter(out),
                 "<p class=\"note\">{} items drawn. {} items shorter than a pixel were merged into "
                 "{} blocks of about a pixel (coloured by their busiest engine, fainter when partly idle; hover "
                 "for counts); the largest idle gaps are shaded by cause. Scroll "
                 "to zoom, drag to pan, double-click to reset.</p>",
                 items, merged, blocks);
}

struct DrawnLanes {
  std::string svg;
  std::uint64_t items = 0;
  std::uint64_t merged = 0;
  std::uint64_t blocks = 0;
};

// The SVG content: lane stripes, gap shading behind the stream lanes, then each lane's items.
DrawnLanes drawLanes(const Trace& trace, const DeviceReport& device, const Scale& scale,
                     const std::vector<Lane>& lanes) {
  const int lane_count = static_cast<int>(lanes.size());
  int first_stream_lane = 0;  // NVTX lanes come first
  while (first_stream_lane < lane_count && lanes[first_stream_lane].items.front().range != nullptr) {
    ++first_stream_lane;
  }
  DrawnLanes drawn;
  for (int lane = 0; lane < lane_count; lane += 2) {
    fmt::format_to(std::back_inserter(drawn.svg),
                   "<rect class=\"stripe\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                   lane * kLaneHeight, kViewWidth, kLaneHeight);
  }
  appendGapShading(drawn.svg, trace, device, scale, first_stream_lane, lane_count);
  for (int lane = 0; lane < lane_count; ++lane) {
    LanePainter painter(trace, scale, drawn.svg, lane);
    for (const LaneItem& item : lanes[lane].items) painter.add(item);
    painter.flush();
    drawn.items += lanes[lane].items.size();
    drawn.merged += painter.merged();
    drawn.blocks += painter.blocks();
  }
  return drawn;
}

}  // namespace

std::string engineClass(Engine engine) { return "e-" + std::string(engineName(engine)); }
std::string gapClass(GapCause cause) { return "g-" + std::string(gapCauseName(cause)); }

void appendTimeline(std::string& out, const Trace& trace, const DeviceReport& device, Ns start,
                    Ns end, const HtmlOptions& options) {
  Scale scale;
  scale.t0 = start;
  scale.span = std::max<Ns>(1, end - start);
  const int pixels = std::max(options.timeline_pixels, 100);
  scale.pixel_ns = std::max<Ns>(1, scale.span / pixels);
  scale.min_width = kViewWidth / pixels;
  const std::vector<Lane> lanes = collectLanes(trace, device.metrics.device_id, start, end, options);
  const DrawnLanes drawn = drawLanes(trace, device, scale, lanes);

  fmt::format_to(std::back_inserter(out), "<div class=\"tl\" data-span=\"{}\">\n", scale.span);
  out += "<div class=\"tl-controls\"><button type=\"button\" data-zoom=\"in\">zoom in</button>"
         "<button type=\"button\" data-zoom=\"out\">zoom out</button>"
         "<button type=\"button\" data-zoom=\"reset\">reset</button></div>\n"
         "<div class=\"tl-body\"><div class=\"tl-labels\">";
  for (const Lane& lane : lanes) {
    fmt::format_to(std::back_inserter(out), "<div title=\"{0}\">{0}</div>", escapeHtml(lane.label));
  }
  const int height = std::max<int>(1, static_cast<int>(lanes.size())) * kLaneHeight;
  fmt::format_to(std::back_inserter(out),
                 "</div><div class=\"tl-main\"><svg class=\"tl-plot\" data-h=\"{0}\" "
                 "viewBox=\"0 0 {1} {0}\" preserveAspectRatio=\"none\" style=\"height:{0}px\" "
                 "role=\"img\" aria-label=\"timeline\">\n{2}</svg>",
                 height, kViewWidth, drawn.svg);
  appendAxis(out, scale);
  out += "</div></div>\n";
  appendLegend(out, drawn.items, drawn.merged, drawn.blocks);
  out += "</div>\n";
}

}  // namespace cuoverlap::html
