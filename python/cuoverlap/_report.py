"""A report that shows as HTML in Jupyter."""

import html
import json

from . import _command


class Report:
    """The analysis of traces (`cuoverlap analyze`), rendered in each of the command's formats.

    In Jupyter it shows as the HTML report, in an iframe so that the page's styles and script stay
    apart from the notebook's; `data` is the JSON report as Python objects, str() the text report.
    """

    def __init__(self, paths, **options):
        _command.reject_options(options, "report", "format", "output", "o", "force", "color")
        self.paths = _command.path_args(paths)
        self._options = options
        self._rendered = {}
        self._data = None
        self.html = self.render("html")  # first, so that bad input raises here, not when shown

    def render(self, format):
        """The report in one of the command's formats: text, json, markdown or html."""
        if format not in self._rendered:
            args = ["analyze", "--format", format, *_command.option_args(self._options)]
            if format == "text":
                args += ["--color", "never"]
            output = _command.run([*args, *self.paths])
            self._rendered[format] = output.decode("utf-8", "replace")
        return self._rendered[format]

    @property
    def data(self):
        """The JSON report (docs/metrics.md lists its keys) as dicts, lists and numbers."""
        if self._data is None:
            self._data = json.loads(self.render("json"))
        return self._data

    def __getitem__(self, key):
        return self.data[key]

    def __str__(self):
        return self.render("text")

    def __repr__(self):
        return f"cuoverlap.Report({self.paths!r})"

    def _repr_html_(self):
        return ('<iframe style="width:100%;height:720px;border:0" '
                'onload="this.style.height=this.contentDocument.documentElement.scrollHeight+\'px\'" '
                f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>')
