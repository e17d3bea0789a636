"""``bargein inspect``: a static site to listen to a release and look at its labels.

    from bargein.inspector import write_site
    write_site("release/demo", "site/demo")      # then open site/demo/index.html
"""

from bargein.inspector.site import InspectReport, write_site

__all__ = ["InspectReport", "write_site"]
