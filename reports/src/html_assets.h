// The page's inline style sheet and script: no fonts, images or libraries are loaded, so the
// report opens offline and from a CI artifact.
#pragma once

namespace cuoverlap::html {

extern const char* const kStyleSheet;
// Zoom and pan of every `.tl` timeline. Reads only numbers (data-span, data-h) from the page.
extern const char* const kScript;

}  // namespace cuoverlap::html
