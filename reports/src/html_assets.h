// The page's inline style sheet and script: no fonts, images or libraries are loaded, so the
// report opens offline and from a CI artifact.
#pragma once

namespace cuoverlap::html {

extern const char* const kStyleSheet;
// Draws every `.tl` timeline on its canvas (zoom, pan, hover). Reads packed numbers from data
// attributes and names as text (textContent) from the names table; never parses markup.
extern const char* const kScript;

}  // namespace cuoverlap::html
